// Inside src/scaleout: the task handlers a rank runs, the per-process
// counters they keep, and the length-prefixed packing of MPI messages.
#pragma once

#include <atomic>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace jarvis::scaleout::detail {

// Counters of this process, sent to rank 0 with every request (--stats).
struct Counters {
  std::atomic<size_t> tasks{0}, runs_parsed{0}, cache_hits{0}, failed{0};
};
Counters& counters();

// The sweep task: payload = pack({run kind, cache dir, path}); result =
// pack({"run"|"failure", from_cache, RunData JSON | reason}). Never throws
// for a bad run: a run that fails to load is a result.
inline constexpr const char* kSweepRunTask = "sweep-run";
std::string run_sweep_task(const std::string& payload);

// The collectives task: payload = pack({path, rank from order, overlap 0|1});
// result = pack({"rank", rank_analysis_to_text}) or pack({"error", what(),
// "trace"|"collective"|"other"}): rank 0 rethrows the error of the first
// failing trace as one process would have thrown it.
inline constexpr const char* kCollectivesRankTask = "collectives-rank";
std::string run_collectives_task(const std::string& payload);

// Runs the handler of `kind` (throws std::runtime_error for an unknown one).
std::string run_task(const std::string& kind, const std::string& payload);

// Fields as "<size>:<bytes>" one after another: any bytes, newlines included.
std::string pack(const std::vector<std::string>& fields);
// Throws std::runtime_error on a malformed message.
std::vector<std::string> unpack(std::string_view text);

}  // namespace jarvis::scaleout::detail
