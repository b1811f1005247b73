// Expectations computed from raw events for the insight tests: the GPU
// events launched from inside given host frames, found through the
// correlation ids of their runtime launch calls.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "trace/trace.h"

namespace jarvis::testing {

// GPU events (kernels only, or every GPU op) whose launch call lies inside
// one of `frames` (host events: ops, Python frames) on the launching thread:
// their count and time, from the raw events and correlation ids.
struct Launched {
  size_t count = 0;
  double time_us = 0;
};

inline Launched launched_inside(const jarvis::Trace& t,
                                const std::vector<const jarvis::Event*>& frames,
                                bool kernels_only) {
  std::map<int64_t, const jarvis::Event*> launch_of;  // correlation -> runtime call
  for (const auto& e : t.events)
    if (e.is_runtime()) launch_of[t.correlation(e)] = &e;
  Launched out;
  for (const auto& e : t.events) {
    if (kernels_only ? e.cat != jarvis::Cat::Kernel : !e.is_gpu()) continue;
    auto it = launch_of.find(t.correlation(e));
    if (it == launch_of.end()) continue;
    for (const auto* f : frames)
      if (f->thread == it->second->thread && it->second->ts() >= f->ts() &&
          it->second->ts() < f->end()) {
        ++out.count;
        out.time_us += e.dur();
        break;
      }
  }
  return out;
}

}  // namespace jarvis::testing
