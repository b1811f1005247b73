// JARVIS_PROFILE_PHASES=1: each timed scope prints its wall time to stderr
// ("phase insights/rule/launch_bound 12.345 ms rss 98 MB hwm 103 MB cpu 11.9
// ms sys 0.4 ms faults 210 from 812.0 ms": the process's resident and peak resident memory at the
// scope's end, the calling thread's CPU time (its system part: page faults,
// zeroing) and minor page faults within
// the scope: a forked worker writing pages it shares with the server pays a
// fault and a copy for each; when the scope began after the first timer), a
// diagnostic of where an analysis spends its time and memory where perf is
// unavailable. Off (the default), a
// timer costs one branch on a cached flag.
#pragma once

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#if defined(__linux__)
#include <sys/resource.h>
#endif

namespace jarvis {

inline bool profile_phases_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("JARVIS_PROFILE_PHASES");
    return v && *v && *v != '0';
  }();
  return on;
}

class PhaseTimer {
 public:
  explicit PhaseTimer(std::string what) {
    if (!profile_phases_enabled()) return;
    what_ = std::move(what);
    start_ = std::chrono::steady_clock::now();
    (void)first_start();
    thread_start_ = thread_usage();
  }
  ~PhaseTimer() {
    if (what_.empty()) return;
    const std::chrono::duration<double, std::milli> ms = std::chrono::steady_clock::now() - start_;
    const ThreadUsage used = thread_usage();
    const std::chrono::duration<double, std::milli> since = start_ - first_start();
    std::fprintf(stderr, "phase %s %.3f ms%s cpu %.1f ms sys %.1f ms faults %ld from %.1f ms\n",
                 what_.c_str(), ms.count(), resident_memory_note().c_str(),
                 used.cpu_ms - thread_start_.cpu_ms, used.sys_ms - thread_start_.sys_ms,
                 used.minor_faults - thread_start_.minor_faults, since.count());
  }
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;

 private:
  // When the process's first timer started: each line says when its scope
  // began after it ("from N ms"), so that scopes on two threads line up.
  static std::chrono::steady_clock::time_point first_start() {
    static const auto first = std::chrono::steady_clock::now();
    return first;
  }
  struct ThreadUsage {
    double cpu_ms = 0;
    double sys_ms = 0;
    long minor_faults = 0;
  };
  // The calling thread's user + system time, its system time and minor faults (zero where
  // RUSAGE_THREAD is unknown).
  static ThreadUsage thread_usage() {
#if defined(__linux__) && defined(RUSAGE_THREAD)
    rusage u{};
    if (getrusage(RUSAGE_THREAD, &u) == 0)
      return {(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 +
                  (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3,
              u.ru_stime.tv_sec * 1e3 + u.ru_stime.tv_usec / 1e3, u.ru_minflt};
#endif
    return {};
  }

  // " rss N MB hwm M MB" from /proc/self/status (Linux), else "".
  static std::string resident_memory_note() {
    std::FILE* f = std::fopen("/proc/self/status", "r");
    if (!f) return {};
    long rss_kb = -1, hwm_kb = -1;
    char line[256];
    while (std::fgets(line, sizeof line, f)) {
      std::sscanf(line, "VmRSS: %ld", &rss_kb);
      std::sscanf(line, "VmHWM: %ld", &hwm_kb);
    }
    std::fclose(f);
    if (rss_kb < 0 || hwm_kb < 0) return {};
    char note[64];
    std::snprintf(note, sizeof note, " rss %ld MB hwm %ld MB", rss_kb >> 10, hwm_kb >> 10);
    return note;
  }

  std::string what_;
  std::chrono::steady_clock::time_point start_;
  ThreadUsage thread_start_;
};

}  // namespace jarvis
