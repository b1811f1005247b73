// Where and why the GPU sat idle: the gaps of each device's busy time (the
// union of its kernels, copies and sets over all streams, as gpu_timeline
// counts idle time), each given one cause and one place.
//
// Causes, the first that applies:
//   compilation       a torch.compile guard check, compilation or autotuning
//                     event (TorchDynamo Cache Lookup, compile_inner,
//                     compile_fx, _inductor, autotune) overlaps the gap;
//   data_loading      a DataLoader event overlaps the gap;
//   sync              a synchronising runtime call (…Synchronize) or blocking
//                     copy (cudaMemcpy, hipMemcpy, hipMemcpyWithStream,
//                     aten::_local_scalar_dense) ends inside the gap: the
//                     host waited for the queue to drain before issuing more;
//   launch_latency    a gap of at most `latency_threshold_us`: queue and
//                     launch latency between back-to-back launches;
//   host_work         the op after the gap was launched after the gap began:
//                     the GPU waited for Python / framework work on the host;
//   other             it was launched before (waits on other streams or
//                     events), or it is not linked to a launch.
// Place: the innermost user annotation above the launch of the op after the
// gap, else its outermost cpu_op.
//
// Kernel counts come from the raw kernel events (TraceLens's cpu_idle count
// reads a column its ops_summary does not have, and says 0).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trace/trace.h"
#include "tree/call_tree.h"

namespace jarvis::insights {

enum class IdleCause { Compilation, DataLoading, Sync, LaunchLatency, HostWork, Other };
inline constexpr size_t kIdleCauseCount = 6;
const char* idle_cause_name(IdleCause cause);

struct IdleGap {
  int64_t device = kNoInt;
  double start_us = 0, dur_us = 0;
  IdleCause cause = IdleCause::Other;
  Uid before = kNoUid;      // the GPU op whose end opened the gap
  Uid after = kNoUid;       // the GPU op that closed it
  Uid place = kNoUid;       // annotation or top-level op of after's launch
  Uid host_event = kNoUid;  // the compile / data / sync event behind the cause
  // Its place among the gaps in start order (IdleGaps::by_start), in what
  // was the struct's padding.
  uint32_t start_rank = 0;
};

struct IdlePlace {
  Uid uid = kNoUid;  // the first event of that name met
  std::string name;
  size_t gaps = 0;
  double idle_us = 0;
};

struct IdleGaps {
  double latency_threshold_us = 0;
  double short_kernel_us = 0;
  double long_gap_us = 0;
  size_t kernels = 0, short_kernels = 0;
  double short_kernel_time_us = 0;
  double span_us = 0, busy_us = 0;  // summed over devices
  // The GPU events the idle is measured over (all of them) and those the
  // trace does not link to a launch, which TraceLens's gpu_timeline leaves out.
  size_t gpu_events = 0, unlinked_gpu_events = 0;
  size_t long_gaps = 0;
  double long_gaps_us = 0;
  std::vector<IdleGap> gaps;  // by size, largest first
  // Indices into gaps in start order (equal starts in no set order): the
  // gaps near a time are found by a search of these.
  std::vector<uint32_t> by_start;
  std::array<double, kIdleCauseCount> idle_us_by_cause{};  // indexed by IdleCause
  std::array<size_t, kIdleCauseCount> gaps_by_cause{};     // indexed by IdleCause
  std::vector<IdlePlace> places;                           // by idle time, largest first
  double idle_us() const { return span_us - busy_us; }
};

inline constexpr double kShortKernelUs = 10.0;  // TraceLens's short-kernel threshold
inline constexpr double kLongGapUs = 100.0;

IdleGaps idle_gaps(const Trace& trace, const CallTree& tree, double latency_threshold_us = 20.0);

struct InsightContext;  // insights.h
// idle_gaps(context.trace, context.tree), made once per context and kept in
// it: the gaps the rules read, without a second scan of the trace.
const IdleGaps& idle_gaps(const InsightContext& context);

// {kernels, short_kernels, ..., by_cause: {cause: {gaps, idle_us}},
//  by_place: [...max_rows], largest_gaps: [...max_rows]}
nlohmann::json idle_gaps_json(const Trace& trace, const IdleGaps& idle, size_t max_rows = 8);

}  // namespace jarvis::insights
