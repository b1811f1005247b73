// The work a rank does for a task, and the message packing. The sweep task
// reuses the per-run cache format (run_data_to_json) on the wire, so rank 0
// reads a remote run exactly as it reads a cache hit; the collectives task
// sends the per-rank stage of the collective report (rank_analysis_to_text).
#include "scaleout/tasks.h"

#include <charconv>
#include <stdexcept>

#include <fmt/format.h>

#include "collectives/collectives.h"
#include "sweep/sweep.h"

namespace jarvis::scaleout::detail {

Counters& counters() {
  static Counters c;
  return c;
}

std::string pack(const std::vector<std::string>& fields) {
  std::string out;
  for (const auto& f : fields) out += fmt::format("{}:", f.size()) + f;
  return out;
}

std::vector<std::string> unpack(std::string_view text) {
  std::vector<std::string> fields;
  while (!text.empty()) {
    size_t colon = text.find(':');
    size_t size = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + std::min(colon, text.size()), size);
    if (colon == std::string_view::npos || ec != std::errc() || end != text.data() + colon ||
        size > text.size() - colon - 1)
      throw std::runtime_error("malformed scale-out message");
    fields.emplace_back(text.substr(colon + 1, size));
    text.remove_prefix(colon + 1 + size);
  }
  return fields;
}

std::string run_sweep_task(const std::string& payload) {
  auto f = unpack(payload);
  if (f.size() != 3) throw std::runtime_error("malformed sweep task");
  sweep::RunInput input;
  input.kind = static_cast<sweep::RunKind>(std::stoi(f[0]));
  input.path = f[2];
  sweep::RunOutcome outcome;
  try {
    outcome = sweep::analyse_run(input, f[1]);
  } catch (const std::exception& e) {
    // Filesystem errors outside the analysis (e.g. the path vanished): the
    // run fails, the job goes on, as in the single-process load.
    outcome.failure = sweep::RunFailure{input.path, e.what()};
  }
  Counters& c = counters();
  ++c.tasks;
  if (outcome.failure) {
    ++c.runs_parsed;
    ++c.failed;
    return pack({"failure", "0", outcome.failure->reason});
  }
  ++(outcome.run->from_cache ? c.cache_hits : c.runs_parsed);
  return pack(
      {"run", outcome.run->from_cache ? "1" : "0", sweep::run_data_to_json(outcome.run->data)});
}

std::string run_collectives_task(const std::string& payload) {
  auto f = unpack(payload);
  if (f.size() != 3) throw std::runtime_error("malformed collectives task");
  Counters& c = counters();
  ++c.tasks;
  ++c.runs_parsed;
  try {
    auto analysis = collectives::analyse_rank(f[0], std::stoll(f[1]), f[2] == "1");
    return pack({"rank", collectives::rank_analysis_to_text(analysis)});
  } catch (const TraceError& e) {
    ++c.failed;
    return pack({"error", e.what(), "trace"});
  } catch (const collectives::CollectiveError& e) {
    ++c.failed;
    return pack({"error", e.what(), "collective"});
  } catch (const std::exception& e) {
    ++c.failed;
    return pack({"error", e.what(), "other"});
  }
}

std::string run_task(const std::string& kind, const std::string& payload) {
  if (kind == kSweepRunTask) return run_sweep_task(payload);
  if (kind == kCollectivesRankTask) return run_collectives_task(payload);
  throw std::runtime_error("unknown scale-out task " + kind);
}

}  // namespace jarvis::scaleout::detail
