// Why the GPU sat idle: every gap between consecutive GPU operations of a
// stream, split by cause (after HTA's idle-time breakdown, with our own
// definitions):
//   host_wait       the host had not yet issued the next operation when the
//                   previous one ended (Python, dispatcher, a blocking call):
//                   the part of the gap before the next launch call started;
//   launch_latency  the rest of a gap that is at most `latency_threshold_us`:
//                   queue and launch latency of work already issued;
//   other           the rest of longer gaps (waits on events of other
//                   streams, synchronisations, unlinked work).
// Only launch-recovering changes (graphs, fusion, a faster host) shrink
// host_wait; kernel tuning shrinks none of the three.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "trace/trace.h"
#include "tree/call_tree.h"

namespace jarvis::insights {

struct IdleCauses {
  double host_wait_us = 0;
  double launch_latency_us = 0;
  double other_us = 0;
  size_t gaps = 0;
  double total_us() const { return host_wait_us + launch_latency_us + other_us; }
};

struct StreamIdle {
  int64_t device = kNoInt;
  int64_t stream = kNoInt;
  size_t ops = 0;      // kernels, copies and sets on the stream
  double busy_us = 0;  // their summed duration
  double span_us = 0;  // first start to last end
  IdleCauses idle;     // gaps between consecutive ops
};

struct IdleBreakdown {
  double latency_threshold_us = 0;
  IdleCauses total;                 // summed over streams
  std::vector<StreamIdle> streams;  // by idle time, largest first
};

inline constexpr double kDefaultLaunchLatencyUs = 20.0;

IdleBreakdown idle_breakdown(const Trace& trace, const CallTree& tree,
                             double latency_threshold_us = kDefaultLaunchLatencyUs);

// {latency_threshold_us, gaps, host_wait_us, launch_latency_us, other_us,
//  streams: [{device, stream, ops, busy_us, span_us, gaps, host_wait_us, ...}]}
// with at most `max_streams` streams.
nlohmann::json idle_breakdown_json(const IdleBreakdown& idle, size_t max_streams = 8);

}  // namespace jarvis::insights
