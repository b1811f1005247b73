// JARVIS_PROFILE_PHASES=1: each timed scope prints its wall time to stderr
// ("phase insights/rule/launch_bound 12.345 ms"), a diagnostic of where an
// analysis spends its time where perf is unavailable. Off (the default), a
// timer costs one branch on a cached flag.
#pragma once

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

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
  }
  ~PhaseTimer() {
    if (what_.empty()) return;
    const std::chrono::duration<double, std::milli> ms = std::chrono::steady_clock::now() - start_;
    std::fprintf(stderr, "phase %s %.3f ms\n", what_.c_str(), ms.count());
  }
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;

 private:
  std::string what_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace jarvis
