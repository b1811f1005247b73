// The step of a host-only trace (CPU PyTorch: no GPU work, so no dependency
// graph for the critical path) without the profiler: each ProfilerStep#N
// less the profiler's estimated cost of the events recorded inside it on its
// thread, with the per-event costs of critical_path::measure_profiler_cost
// and the same cost model (built in or this host's calibration). Used by
// `jarvis calibrate` (the check of a fit) and by `jarvis ab`'s prediction on
// a CPU arm (docs/ab.md, "CPU traces").
#pragma once

#include <optional>

#include "critical_path/calibration.h"
#include "critical_path/critical_path.h"
#include "trace/trace.h"
#include "tree/call_tree.h"

namespace jarvis::ab {

struct HostStep {
  size_t steps = 0;                 // ProfilerStep#N annotations
  double recorded_step_us = 0;      // their median length
  double profiler_us_per_step = 0;  // estimated profiler cost inside one
  double estimated_unprofiled_step_us = 0;
  // Host time of a step outside its top-level recorded ops (Python between
  // the ops: batch preparation, the loop, the optimizer's Python), less the
  // profiler's records that fall there. Each figure is the median over the
  // steps (one step disturbed by another process moves a mean of a few).
  double untraced_us_per_step = 0;
  critical_path::ProfilerCost cost;
};

// Whether the trace has GPU events (then the critical path models its step).
bool has_gpu_work(const Trace& trace);

// nullopt when the trace has no ProfilerStep#N annotation with a duration.
std::optional<HostStep> host_only_step(const Trace& trace, const CallTree& tree,
                                       const critical_path::ProfilerCostModel& model);

}  // namespace jarvis::ab

namespace jarvis::ab {

// The recorded host events of a trace's steps, per step (mean over its
// ProfilerStep#N, on each step's thread; the step's length is their median,
// as host_only_step's): what calibrate fits the per-event costs on. nullopt
// without a ProfilerStep#N.
struct StepEvents {
  size_t steps = 0;
  double recorded_step_us = 0;
  double ops = 0, inputs = 0, python_frames = 0, memory_events = 0, runtime_calls = 0;
  double op_gap_us = 0;      // the trace's own op gap (critical_path::ProfilerCost)
  size_t gaps_measured = 0;  // the gaps it stands on (few: the built-in default gap)
  bool record_shapes = false;
};
std::optional<StepEvents> step_events(const Trace& trace, const CallTree& tree);

}  // namespace jarvis::ab
