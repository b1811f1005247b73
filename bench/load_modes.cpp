// jarvis_bench --load-modes [--repeat N] TRACE...
//
// The loader's gzip inflate modes (trace/loader.h GzipInflate) against each
// other: every mode loads every trace in a fresh child process, best of N;
// printed are wall and CPU seconds (user + system) and peak RSS. All modes
// give the identical Trace (tests/trace/test_loader_formats.cpp).
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "trace/gzip_inflate.h"
#include "trace/loader.h"
#include "trace_args.h"

namespace {

struct Run {
  double wall_s = 1e30;
  double cpu_s = 1e30;
  long maxrss_kb = 0;
  size_t events = 0;
  bool ok = true;
};

Run failed_run() {
  Run r;
  r.ok = false;
  return r;
}

double secs(const timeval& tv) {
  return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) * 1e-6;
}

// One load in a child process, which sends its event count through a pipe.
Run load_once(const std::string& path, jarvis::GzipInflate mode) {
  int fds[2];
  if (pipe(fds) != 0) return failed_run();
  auto t0 = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid < 0) return failed_run();
  if (pid == 0) {
    close(fds[0]);
    size_t n = 0;
    try {
      n = jarvis::load_trace(path, {}, mode).events.size();
    } catch (const std::exception& e) {
      fmt::print(stderr, "{}\n", e.what());
      _exit(1);
    }
    if (write(fds[1], &n, sizeof n) != static_cast<ssize_t>(sizeof n)) _exit(2);
    _exit(0);
  }
  close(fds[1]);
  Run r;
  if (read(fds[0], &r.events, sizeof r.events) != static_cast<ssize_t>(sizeof r.events))
    r.ok = false;
  close(fds[0]);
  int status = 0;
  rusage ru{};
  if (wait4(pid, &status, 0, &ru) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    r.ok = false;
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.cpu_s = secs(ru.ru_utime) + secs(ru.ru_stime);
  r.maxrss_kb = ru.ru_maxrss;
  return r;
}

}  // namespace

int load_modes_bench(int argc, char** argv) {
  auto args = parse_trace_args(argc, argv, "jarvis_bench --load-modes [--repeat N] TRACE...");
  if (!args) return 2;
  const int repeat = args->repeat;
  const std::vector<std::string>& traces = args->traces;
  const std::pair<const char*, jarvis::GzipInflate> modes[] = {
      {"ISA-L, one thread", jarvis::GzipInflate::IsalStream},
      {"ISA-L pipelined (2 threads)", jarvis::GzipInflate::IsalPipelined},
      {"zlib, one thread", jarvis::GzipInflate::ZlibStream},
      {"zlib pipelined (2 threads)", jarvis::GzipInflate::ZlibPipelined},
      {"libdeflate whole file", jarvis::GzipInflate::Libdeflate},
  };
  fmt::print("| trace | events | inflate | wall s | CPU s | peak RSS MB |\n");
  fmt::print("|---|---:|---|---:|---:|---:|\n");
  int failures = 0;
  for (const auto& trace : traces) {
    std::string name = trace.substr(trace.find_last_of('/') + 1);
    // Rounds interleave the modes, so machine load drifts hit each alike.
    std::vector<Run> best(std::size(modes));
    for (int r = 0; r < repeat; ++r)
      for (size_t m = 0; m < std::size(modes); ++m) {
        Run x = load_once(trace, modes[m].second);
        if (!x.ok) {
          best[m].ok = false;
          continue;
        }
        best[m].events = x.events;
        best[m].wall_s = std::min(best[m].wall_s, x.wall_s);
        best[m].cpu_s = std::min(best[m].cpu_s, x.cpu_s);
        best[m].maxrss_kb = std::max(best[m].maxrss_kb, x.maxrss_kb);
      }
    for (size_t m = 0; m < std::size(modes); ++m) {
      if (!best[m].ok) {
        fmt::print(stderr, "{}: load failed ({})\n", trace, modes[m].first);
        ++failures;
        continue;
      }
      fmt::print("| {} | {} | {} | {:.3f} | {:.3f} | {:.1f} |\n", name, best[m].events,
                 modes[m].first, best[m].wall_s, best[m].cpu_s,
                 static_cast<double>(best[m].maxrss_kb) * 1024 / 1e6);
    }
  }
  return failures == 0 ? 0 : 1;
}
