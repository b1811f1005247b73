// jarvis_bench --in-process [--repeat N] TRACE...
//
// The load as a long-running process sees it (an MCP server answering
// load_trace): the same process loads each trace from its JSON, then from the
// snapshot that the first snapshot-enabled load wrote into a private cache
// directory, best of N each. No process start is in either time, unlike the
// main table's child processes, where a snapshot load of a small trace is
// half process start.
#include <fmt/format.h>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include "trace/snapshot.h"
#include "trace_args.h"

namespace {

namespace fs = std::filesystem;

// Best wall time of `repeat` loads; the event count of the last.
double best_load_s(const std::string& path, const jarvis::SnapshotOptions& snapshot, int repeat,
                   size_t& events) {
  double best = 1e30;
  for (int r = 0; r < repeat; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    jarvis::Trace t = jarvis::load_trace(path, {}, snapshot);
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    events = t.events.size();
  }
  return best;
}

}  // namespace

int in_process_bench(int argc, char** argv) {
  auto args = parse_trace_args(argc, argv, "jarvis_bench --in-process [--repeat N] TRACE...");
  if (!args) return 2;
  const int repeat = args->repeat;
  const std::vector<std::string>& traces = args->traces;
  fs::path cache = fs::temp_directory_path() / fmt::format("jarvis_bench_inproc.{}", getpid());
  fmt::print("| trace | events | load from JSON s | load from snapshot s | snapshot / JSON |\n");
  fmt::print("|---|---:|---:|---:|---:|\n");
  int failures = 0;
  for (const std::string& trace : traces) {
    try {
      jarvis::SnapshotOptions off;
      off.enabled = false;
      jarvis::SnapshotOptions on;
      on.cache_dir = cache.string();
      on.log = [](std::string_view) {};
      size_t events = 0, snapshot_events = 0;
      double cold = best_load_s(trace, off, repeat, events);
      jarvis::load_trace(trace, {}, on);  // writes the snapshot
      double warm = best_load_s(trace, on, repeat, snapshot_events);
      if (snapshot_events != events) throw std::runtime_error("the snapshot lost events");
      fs::path p(trace);  // named by its folder and file, as the main table does
      fmt::print("| {} | {} | {:.4f} | {:.4f} | {:.3f} |\n",
                 (p.parent_path().filename() / p.filename()).string(), events, cold, warm,
                 warm / cold);
    } catch (const std::exception& e) {
      fmt::print(stderr, "{}: {}\n", trace, e.what());
      ++failures;
    }
  }
  std::error_code ec;
  fs::remove_all(cache, ec);
  return failures == 0 ? 0 : 1;
}
