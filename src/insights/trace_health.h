// Trace health: can this trace support conclusions about GPU performance?
// A trace cut before the steady state, a CUDA-graph capture, kernels that no
// op launched or a GPU that is almost never busy all make the usual analyses
// misleading; this block says so before an agent draws conclusions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/gpu_timeline.h"
#include "trace/trace.h"
#include "tree/call_tree.h"

namespace jarvis::insights {

struct StepModelRef;    // insights.h
struct InsightContext;  // insights.h

// Host interference whose gaps are this many times the fastest iteration's
// (or more) lowers confidence by one step: the un-profiled estimate then
// rests on scaling a large part of a step back, not on the trace as recorded.
inline constexpr double kInterferenceStrikeRatio = 1.5;

struct TraceHealth {
  size_t gpu_events = 0;
  size_t linked_gpu_events = 0;  // launched by a host op the tree knows
  double gpu_busy_share = 0;     // busy / GPU span (0 without GPU events)
  double gpu_span_us = 0;
  size_t profiler_steps = 0;  // ProfilerStep#N annotations
  // Without two ProfilerStep#N: iterations found as repeats of the launch
  // sequence (critical_path::detect_repeats), 0 when it does not repeat.
  size_t detected_iterations = 0;
  // When the whole sequence does not repeat: the repeats after a different
  // first part (critical_path::detect_trailing_repeats: decode steps after a
  // prefill), their launches each and the launches before them; 0 when none.
  size_t trailing_iterations = 0;
  // The repeats were found inside the last ProfilerStep#N (a generate() call
  // per step: its decode steps), not over the whole trace.
  bool trailing_in_profiler_step = false;
  size_t trailing_period = 0;
  size_t leading_launches = 0;
  size_t graph_launches = 0;      // cudaGraphLaunch / hipGraphLaunch calls
  double graph_kernel_share = 0;  // share of GPU time launched by graph launches
  bool links_without_flows = false;
  size_t negative_durations = 0;  // events whose dur < 0 the loader clamped to 0
  // Python stack tracing (with_stack=True) records python_function events;
  // the profiler's cost per event inflates host time.
  size_t python_events = 0;
  size_t cpu_ops = 0;
  // The step as recorded and as estimated without the profiler's host cost
  // (critical_path::analyse_unprofiled), and what bounds it in each; absent
  // when no dependency graph can be built.
  std::optional<double> recorded_step_us, estimated_unprofiled_step_us;
  double profiler_host_us_per_step = 0;
  // GPU work queued before profiling (launched before the first step, or
  // with no launch in the trace) that ran inside the first step: left out of
  // the un-profiled step, kept in the recorded one (critical_path::Graph::
  // backlog_us). Once per trace, not per step.
  double gpu_backlog_left_out_us = 0;
  std::string recorded_bound_by, unprofiled_bound_by;
  // How the step model found its iterations (critical_path::kFrom*; "" when
  // no graph). kFromDecodeStepsInProfilerStep: each ProfilerStep#N holds one
  // generate() call and its decode steps are the iterations, so the step
  // figures above are per decode step (a token); per ProfilerStep (per call)
  // beside them: recorded and un-profiled, the un-profiled parts before the
  // decode steps (set-up and prefill) and after them (the tail), which lie
  // outside every iteration, and the decode steps per call.
  std::string iterations_source;
  std::optional<double> recorded_per_profiler_step_us, estimated_unprofiled_per_profiler_step_us;
  double unprofiled_before_decode_us_per_profiler_step = 0,
         unprofiled_after_decode_us_per_profiler_step = 0, decode_steps_per_profiler_step = 0;
  // The un-profiled critical path's time over every iteration on each side,
  // as shares of the iterations' length (GPU ops; host calls, gaps, launch
  // latency, syncs; collectives): what unprofiled_bound_by stands on. Shares
  // of the whole traced loop, the same per step when the steps are alike.
  double unprofiled_path_gpu_share = 0, unprofiled_path_host_share = 0,
         unprofiled_path_communication_share = 0;
  // The GPU's busy time per step: the union over streams of the GPU work
  // launched inside the iterations (the backlog queued before them left
  // out), over the iterations; and its share of the un-profiled step (at
  // most 1). It stands beside the path shares, which count only the GPU time
  // the step waits for: a host-bound step's GPU can be busy most of it.
  std::optional<double> gpu_busy_us_per_step;
  double unprofiled_step_gpu_busy_share = 0;
  // Iterations whose host ran the same calls with longer gaps than the
  // fastest one (something else on the host), from analyse_unprofiled's
  // notes; also listed among the warnings. The longest ratio of their gaps
  // to the fastest iteration's: from kInterferenceStrikeRatio the
  // un-profiled estimate leans on scaling those gaps back, a strike against
  // confidence (high -> medium).
  std::vector<std::string> interference;
  double interference_max_ratio = 0;
  // What the profiler did to the host, in words ("" when it changed little):
  // information beside the warnings, not a strike against the trace.
  std::string profiler_note;
  // The profiler-cost model of the un-profiled estimate: "built-in" or this
  // host's calibration (`jarvis calibrate`; critical_path/calibration.h).
  std::string profiler_calibration = "built-in";
  std::string confidence;  // high / medium / low
  std::vector<std::string> warnings;
};

// `timeline`: compute_gpu_timeline(trace, tree) when the caller has it (null:
// computed here, or absent for a trace without linked GPU events).
// `step`: the trace's step model (build_step_model) when the caller keeps one
// (null: the graph and its analyses are built here).
TraceHealth trace_health(const Trace& trace, const CallTree& tree,
                         const GpuTimeline* timeline = nullptr, const StepModelRef* step = nullptr);
// The health of the trace `context` was made for, from its step model and
// GPU timeline (neither built again): the findings and the health of one
// page or prepared directory read one model.
TraceHealth trace_health(const InsightContext& context);
nlohmann::json to_json(const TraceHealth& health);

}  // namespace jarvis::insights
