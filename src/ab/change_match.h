// Which of arm A's findings stands for the change arm B made (docs/ab.md,
// "Which finding stands for the change"): the finding whose own work is gone
// from arm B's trace. Each finding names its work: its evidence uids, the
// kernels of its what-if (`kernel_uids`), the ops its what-if removes
// (`remove_uids`, `remove_ops`). Those events are compared across the arms
// by signature, not by uid (the uids of two traces are unrelated):
//   - a host op: its name and its recorded input shapes (`Input Dims`);
//   - a kernel (any GPU event): its name and the signature of the op that
//     launched it (CallTree::nearest_cpu_op);
//   - an op the what-if names by name (`remove_ops`): the name alone.
// A finding's footprint in a trace is the summed duration and the count of
// the events with one of its signatures (host time for ops, GPU time for
// kernels), per ProfilerStep#N. A finding stands for the change when at
// least kGoneShare of its footprint is gone in arm B (kernels: their time;
// host ops: their count, see gone_share) and the time gone is not a rounding
// of the step (`floor_ms`); of several, the one with the most time gone. The
// rule needs no description of the change: fused AdamW removes the foreach
// kernels of `foreach_optimizer`, a multiplied mask removes the
// aten::nonzero / aten::index of `host_sync`, a padded vocabulary removes
// the [.., 32001] GEMM of `gemm_unaligned_dims`.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "insights/insights.h"
#include "trace/trace.h"
#include "tree/call_tree.h"

namespace jarvis::ab {

// A finding's footprint in both arms.
struct FootprintChange {
  size_t index = 0;  // into the findings given
  std::string rule;
  size_t signatures = 0;                        // distinct signatures of its work
  bool kernels = false;                         // its work is kernels (else host ops)
  double a_ms_per_step = 0, b_ms_per_step = 0;  // their time in each arm
  double a_events_per_step = 0, b_events_per_step = 0;
  double gone_ms() const { return a_ms_per_step - b_ms_per_step; }
  // The share of arm A's footprint gone in arm B (0 when A has none;
  // negative when B runs more of it): kernels by their GPU time (gone or
  // shorter), host ops by their count (gone or not: a host op's time is also
  // what it waits for, and a sync's wait moves with the GPU's backlog, not
  // with the change).
  double gone_share() const {
    if (kernels) return a_ms_per_step > 0 ? gone_ms() / a_ms_per_step : 0;
    return a_events_per_step > 0 ? (a_events_per_step - b_events_per_step) / a_events_per_step : 0;
  }
};

inline constexpr double kGoneShare = 0.5;

// One entry per finding with a footprint (findings of trace scope without
// named work, such as launch_bound's "no launch gaps", have none), in the
// findings' order.
std::vector<FootprintChange> footprint_changes(const Trace& a, const CallTree& a_tree,
                                               const std::vector<insights::Insight>& findings,
                                               const Trace& b, const CallTree& b_tree);

// The entry that stands for the change (see the header's comment), or
// nullopt when no finding's work is gone in arm B.
std::optional<FootprintChange> change_finding(const std::vector<FootprintChange>& changes,
                                              double floor_ms);

// The host's ProfilerStep#N annotations with a duration (at least 1).
size_t profiler_steps(const Trace& trace);

}  // namespace jarvis::ab
