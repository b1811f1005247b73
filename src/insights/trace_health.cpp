#include "insights/trace_health.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "critical_path/calibration.h"
#include "critical_path/critical_path.h"
#include "critical_path/internal.h"
#include "insights/insights.h"
#include "report/gpu_timeline.h"
#include "xplane/space.h"

namespace jarvis::insights {
namespace {

// Below these, conclusions about kernels rest on too little.
constexpr double kLowBusyShare = 0.1;
constexpr double kLowLinkedShare = 0.5;
constexpr size_t kMinSteps = 2;
constexpr double kHighGraphShare = 0.5;
constexpr size_t kFewGpuEvents = 50;
// Python frames per op from which stack tracing dominates host time (the
// decode servers' traces record 15-31 per op; training scripts 1-3).
constexpr double kHeavyPythonPerOp = 10.0;

// Most iterations' bound, "" when there are none.
std::string majority_bound(const critical_path::Analysis& a) {
  std::map<std::string, size_t> n;
  for (const auto& it : a.iterations) ++n[it.bound_by];
  std::string best;
  size_t most = 0;
  for (const auto& [side, count] : n)
    if (count > most) std::tie(best, most) = std::tie(side, count);
  return best;
}

// The GPU work the iterations launched (launch call inside them on the
// graph's first rank), busy time as the union over streams, over the
// iterations: GPU work queued before the first step (the backlog) is left out.
std::optional<double> health_gpu_busy_per_step(const Trace& trace, const CallTree& tree,
                                               const critical_path::Graph& g) {
  if (g.iterations.empty() || g.ranks.empty()) return std::nullopt;
  const int64_t rank = g.ranks.front();
  const double offset = g.clock_offset_us.count(rank) ? g.clock_offset_us.at(rank) : 0.0;
  double from = 1e300, to = -1e300;
  for (const auto& it : g.iterations) {
    from = std::min(from, it.start - offset);
    to = std::max(to, it.end - offset);
  }
  std::vector<std::pair<double, double>> spans;
  for (Uid u : tree.runtime_uids()) {
    const Event& call = trace.events[u];
    if (!call.has_ts() || call.ts() < from || call.ts() >= to) continue;
    for (Uid k : tree.gpu_events(u)) {
      const Event& e = trace.events[k];
      if (e.has_ts() && e.has_dur() && e.dur() > 0) spans.emplace_back(e.ts(), e.end());
    }
  }
  const double busy = intervals_length(merge_intervals(std::move(spans)));
  return busy / static_cast<double>(g.iterations.size());
}

// The ratio in an interference note ("... with gaps 1.77x as long ..."), 0
// when the note has none.
double health_interference_ratio(const std::string& note) {
  constexpr std::string_view kAt = "with gaps ";
  const size_t at = note.find(kAt);
  if (at == std::string::npos) return 0;
  const char* begin = note.c_str() + at + kAt.size();
  char* end = nullptr;
  const double ratio = std::strtod(begin, &end);
  return end != begin && std::isfinite(ratio) ? ratio : 0;
}

// The recorded step beside the un-profiled estimate, with a warning when the
// profiler changes what bounds it.
void add_step_estimate(const Trace& trace, const CallTree& tree, TraceHealth& h,
                       const StepModelRef* step) {
  h.profiler_calibration = critical_path::profiler_cost_model_for(trace).source;
  try {
    // The step model is these analyses of this graph (none: the graph could
    // not be built or has no iteration, where no figure is given either).
    const auto model = step ? step->model : build_step_model(trace, tree);
    if (!model) return;
    const auto& recorded = model->recorded;
    const auto& unprofiled = model->measured;
    // A degenerate graph (no step of any length) gives no figure rather than
    // a NaN that a reply would carry as null.
    if (!std::isfinite(recorded.step_time_us) || !std::isfinite(unprofiled.step_time_us) ||
        !std::isfinite(unprofiled.profiler_host_us_per_step))
      return;
    h.recorded_step_us = recorded.step_time_us;
    h.estimated_unprofiled_step_us = unprofiled.step_time_us;
    h.profiler_host_us_per_step = unprofiled.profiler_host_us_per_step;
    h.gpu_backlog_left_out_us = unprofiled.gpu_backlog_left_out_us;
    h.recorded_bound_by = majority_bound(recorded);
    h.unprofiled_bound_by = majority_bound(unprofiled);
    h.iterations_source = unprofiled.iterations_source;
    if (!unprofiled.profiler_steps.empty()) {  // decode steps inside generate() calls
      h.recorded_per_profiler_step_us = unprofiled.recorded_profiler_step_us;
      h.estimated_unprofiled_per_profiler_step_us = unprofiled.profiler_step_us;
      h.unprofiled_before_decode_us_per_profiler_step = unprofiled.profiler_step_before_us;
      h.unprofiled_after_decode_us_per_profiler_step = unprofiled.profiler_step_after_us;
      h.decode_steps_per_profiler_step = static_cast<double>(unprofiled.iterations.size()) /
                                         static_cast<double>(unprofiled.profiler_steps.size());
    }
    double length = 0, gpu = 0, host = 0, communication = 0;
    for (const auto& it : unprofiled.iterations) {
      length += it.length_us;
      for (const auto& seg : it.path) {
        const std::string_view category = seg.category();
        if (critical_path::detail::is_host_category(category))
          host += seg.dur_us;
        else if (category == "communication")
          communication += seg.dur_us;
        else if (category != "gpu_idle" && category != "untraced" && category != "step_end")
          gpu += seg.dur_us;
      }
    }
    if (length > 0) {
      h.unprofiled_path_gpu_share = gpu / length;
      h.unprofiled_path_host_share = host / length;
      h.unprofiled_path_communication_share = communication / length;
    }
    if (const auto busy = health_gpu_busy_per_step(trace, tree, model->graph)) {
      h.gpu_busy_us_per_step = *busy;
      h.unprofiled_step_gpu_busy_share =
          unprofiled.step_time_us > 0 ? std::min(1.0, *busy / unprofiled.step_time_us) : 0;
    }
    for (const std::string& note : unprofiled.notes)
      if (note.starts_with(critical_path::kInterferenceNote)) {
        h.interference.push_back(note);
        h.interference_max_ratio =
            std::max(h.interference_max_ratio, health_interference_ratio(note));
      }
    if (recorded.step_time_us > 1.2 * unprofiled.step_time_us)
      h.profiler_note = fmt::format(
          "the profiler slowed the host: the recorded step ({:.2f} ms) is estimated at {:.2f} ms "
          "without it{}; step times and savings are given for the un-profiled step",
          recorded.step_time_us / 1e3, unprofiled.step_time_us / 1e3,
          h.recorded_bound_by != h.unprofiled_bound_by
              ? fmt::format(", {}-bound where the trace looks {}-bound", h.unprofiled_bound_by,
                            h.recorded_bound_by)
              : "");
    if (h.gpu_backlog_left_out_us > 0)
      h.profiler_note += fmt::format(
          "{}{:.2f} ms of GPU work queued before profiling ran in the first step: the "
          "un-profiled step leaves it out (the recorded one keeps it)",
          h.profiler_note.empty() ? "" : "; ", h.gpu_backlog_left_out_us / 1e3);
  } catch (const std::runtime_error&) {
    // No graph (no GPU work, no launches): nothing to estimate.
  }
}

// The time window of the trace's last ProfilerStep#N (host annotation).
std::optional<std::pair<double, double>> last_profiler_step(const Trace& trace) {
  std::optional<std::pair<double, double>> out;
  for (Uid u = 0; u < trace.events.size(); ++u) {
    const Event& e = trace.events[u];
    if (e.cat != Cat::UserAnnotation || !e.has_ts() || !e.has_dur() ||
        !trace.name(u).starts_with("ProfilerStep#"))
      continue;
    if (!out || e.ts() > out->first) out = std::make_pair(e.ts(), e.end());
  }
  return out;
}

bool is_graph_launch(std::string_view name) {
  return name == "cudaGraphLaunch" || name == "hipGraphLaunch";
}

void count_events(const Trace& trace, const CallTree& tree, TraceHealth& h, double& graph_time_us,
                  double& gpu_time_us) {
  for (size_t u = 0; u < trace.events.size(); ++u) {
    const Event& e = trace.events[u];
    std::string_view name = trace.name(static_cast<Uid>(u));
    if (e.cat == Cat::UserAnnotation && name.starts_with("ProfilerStep#")) ++h.profiler_steps;
    if (e.is_runtime() && is_graph_launch(name)) ++h.graph_launches;
    if (e.cat == Cat::PythonFunction) ++h.python_events;
    if (e.cat == Cat::CpuOp) ++h.cpu_ops;
    if (!e.is_gpu()) continue;
    ++h.gpu_events;
    double dur = e.has_dur() && e.dur() > 0 ? e.dur() : 0;
    gpu_time_us += dur;
    if (!tree.is_linked(static_cast<Uid>(u))) continue;
    ++h.linked_gpu_events;
    Uid launcher = tree.parent(static_cast<Uid>(u));
    if (launcher != kNoUid && is_graph_launch(trace.name(launcher))) graph_time_us += dur;
  }
}

// `jax_profile`: the trace is an XSpace (XProf's switches, not PyTorch's);
// `zero_span`: its GPU events have a timeline whose span has no length.
void add_warnings(TraceHealth& h, bool jax_profile, bool zero_span) {
  double linked_share =
      h.gpu_events ? static_cast<double>(h.linked_gpu_events) / static_cast<double>(h.gpu_events)
                   : 0;
  int strikes = 0;
  auto warn = [&](std::string text, int weight) {
    h.warnings.push_back(std::move(text));
    strikes += weight;
  };
  if (h.gpu_events == 0) warn("no GPU events: nothing about kernels can be concluded", 2);

  if (h.gpu_events && h.gpu_events < kFewGpuEvents)
    warn(fmt::format("only {} GPU events: too few to rank kernels or categories (a graph "
                     "capture, or a trace cut before the steady state?)",
                     h.gpu_events),
         1);
  if (h.gpu_events && linked_share < kLowLinkedShare)
    warn(fmt::format("only {:.0f}% of GPU events are linked to a launching op: op-level tables "
                     "miss the rest",
                     100 * linked_share),
         2);
  if (zero_span)
    warn(
        "the GPU events span no time (each lasts 0 us): the GPU timeline has no shares and "
        "kernel times say nothing",
        2);
  else if (h.gpu_events && h.gpu_busy_share < kLowBusyShare)
    warn(fmt::format("the GPU is busy {:.1f}% of its span: the trace is host- or launch-bound, "
                     "or covers mostly idle time",
                     100 * h.gpu_busy_share),
         1);
  // Inference servers and hand-rolled loops rarely record ProfilerStep#N; a
  // launch sequence that repeats shows the iterations as well (information,
  // not a strike), and only a trace with neither is one iteration or less.
  if (h.profiler_steps < kMinSteps) {
    if (h.detected_iterations >= kMinSteps)
      warn(fmt::format("{} ProfilerStep annotation(s); {} iterations found as repeats of the "
                       "launch sequence stand in for them",
                       h.profiler_steps, h.detected_iterations),
           0);
    else if (h.trailing_iterations > 0)
      warn(fmt::format("{} ProfilerStep annotation(s); the launch sequence repeats {} times "
                       "({} launches each) after {} other launches: decode steps after a "
                       "prefill, or steps after a warm-up; the repeats are the steady state",
                       h.profiler_steps, h.trailing_iterations, h.trailing_period,
                       h.leading_launches),
           0);
    else
      warn(fmt::format("{} ProfilerStep annotation(s), no repeating launch sequence: steady "
                       "state cannot be told from warm-up (schedule active>=2)",
                       h.profiler_steps),
           1);
  }
  if (h.trailing_in_profiler_step && h.estimated_unprofiled_per_profiler_step_us)
    warn(fmt::format(
             "each ProfilerStep holds one generate() call: a prefill, then decode steps that "
             "repeat one launch sequence ({} launches each, {:.1f} a call); the decode steps are "
             "the iterations, so per-step figures are per decode step (a token); per "
             "ProfilerStep (per generate() call) {:.2f} ms recorded, {:.2f} ms estimated without "
             "the profiler, of which {:.2f} ms before the decode steps (set-up and prefill) and "
             "{:.2f} ms after them lie outside the iterations",
             h.trailing_period, h.decode_steps_per_profiler_step,
             h.recorded_per_profiler_step_us.value_or(0) / 1e3,
             *h.estimated_unprofiled_per_profiler_step_us / 1e3,
             h.unprofiled_before_decode_us_per_profiler_step / 1e3,
             h.unprofiled_after_decode_us_per_profiler_step / 1e3),
         0);
  else if (h.trailing_in_profiler_step)
    warn(fmt::format("each ProfilerStep holds a prefill and decode steps: in the last one the "
                     "launch sequence repeats {} times ({} launches each) after {} other "
                     "launches (a generate() call per step); per-step figures are per call, "
                     "the decode steps are its steady state",
                     h.trailing_iterations, h.trailing_period, h.leading_launches),
         0);
  if (h.graph_kernel_share >= kHighGraphShare)
    warn(fmt::format("{:.0f}% of GPU time was launched by CUDA/HIP graphs: per-op attribution "
                     "inside graphs is by graph, not by op",
                     100 * h.graph_kernel_share),
         1);
  if (h.links_without_flows)
    warn(
        "no launch flow events: kernels were linked to launches by correlation only (older "
        "Kineto schema)",
        0);
  if (h.python_events) {
    double per_op = h.cpu_ops
                        ? static_cast<double>(h.python_events) / static_cast<double>(h.cpu_ops)
                        : static_cast<double>(h.python_events);
    bool heavy = per_op >= kHeavyPythonPerOp;
    // The switch to name is the profiler's own: PyTorch's with_stack, or
    // XProf's Python tracer for a JAX profile (issue 64 point 3).
    const char* again = jax_profile ? "; profile again with jax.profiler.ProfileOptions "
                                      "python_tracer_level=0 to size them"
                                    : "; profile again with with_stack=False to size them";
    warn(fmt::format("recorded with Python stack tracing on ({} python_function events, {:.1f} "
                     "per op): the profiler's cost per frame inflates host time, so host-side "
                     "findings (idle, launch-bound, host gaps) are upper bounds{}",
                     h.python_events, per_op, heavy ? again : ""),
         heavy ? 1 : 0);
  }
  if (h.negative_durations)
    warn(fmt::format("{} events had a negative duration (clock or timebase problems); "
                     "the loader set them to 0",
                     h.negative_durations),
         1);
  // Each note is information; gaps scaled back from kInterferenceStrikeRatio
  // times the fastest iteration's are one strike in all.
  for (const std::string& note : h.interference) warn(note, 0);
  if (h.interference_max_ratio >= kInterferenceStrikeRatio)
    warn(fmt::format("the un-profiled step scales back host gaps up to {:.2f}x the fastest "
                     "iteration's (interference at or above {:.1f}x lowers confidence): profile "
                     "again on a quiet host to measure it",
                     h.interference_max_ratio, kInterferenceStrikeRatio),
         1);
  h.confidence = strikes == 0 ? "high" : strikes == 1 ? "medium" : "low";
}

// What an XPlane (JAX / XLA) trace lacks, from the bridge's counts: xprof
// >= 2.20.8 drops hlo_op and correlation_id from GPU kernel events
// (TraceLens#456), and XLA programs have no PyTorch module tree.
void add_xplane_notes(const Trace& trace, TraceHealth& h) {
  if (!xplane::is_xplane_trace(trace)) return;
  // XPlane has no flow events at all: the Kineto note would call it an old schema.
  for (std::string& w : h.warnings)
    if (w.rfind("no launch flow events", 0) == 0)
      w = "XPlane: launches and their GPU work share a correlation_id (no flow events)";
  xplane::BridgeCounts c = xplane::counts_of(trace);
  if (c.kernels_without_hlo_op > 0)
    h.warnings.push_back(fmt::format(
        "XPlane: {} GPU kernels carry no hlo_op (xprof >= 2.20.8 drops it): their XLA op "
        "category falls back to the kernel name, and they have no HLO shapes (no FLOPs / bytes, "
        "no collective message size or bandwidth)",
        c.kernels_without_hlo_op));
  if (c.kernels_without_correlation > 0)
    h.warnings.push_back(fmt::format(
        "XPlane: {} GPU kernels carry no correlation_id (xprof >= 2.20.8 drops it): they "
        "cannot be linked to their host launch (launch latency, host-side views), and NCCL "
        "kernels without one are not counted as collectives",
        c.kernels_without_correlation));
  size_t collectives_without_hlo = 0;
  for (Uid u = 0; u < trace.events.size(); ++u)
    if (trace.events[u].cat == Cat::Kernel && trace.is_communication(u) &&
        !trace.arg(u, "Collective name"))
      ++collectives_without_hlo;
  if (collectives_without_hlo > 0)
    h.warnings.push_back(fmt::format(
        "XPlane: {} NCCL/RCCL kernels name no HLO collective instruction: no message size, "
        "group size or bandwidth for them",
        collectives_without_hlo));
  if (c.aggregated_skipped > 0)
    h.warnings.push_back(
        fmt::format("XPlane: {} aggregated events (num_occurrences, no timestamp) were skipped",
                    c.aggregated_skipped));
  if (c.hlo_modules == 0)
    h.warnings.push_back(
        "XPlane: no HLO protos in /host:metadata: kernels have no shapes, so no FLOPs / bytes "
        "(op_* sheets) or input dims");
  else if (c.kernels_hlo_unresolved > 0)
    h.warnings.push_back(fmt::format(
        "XPlane: {} GPU kernels name an hlo_op / hlo_module the HLO protos lack: they have no "
        "shapes",
        c.kernels_hlo_unresolved));
  h.warnings.push_back(
      "XPlane (JAX/XLA) trace: no PyTorch module tree or aten ops; the host ops above a kernel "
      "are XLA's runtime (py_xla_execute, thunks); per-GPU timelines, XLA op categories and "
      "HLO-shape rooflines come from `jarvis report` (docs/jax.md)");
}

}  // namespace

TraceHealth trace_health(const Trace& trace, const CallTree& tree, const GpuTimeline* timeline,
                         const StepModelRef* step) {
  TraceHealth h;
  double graph_time_us = 0, gpu_time_us = 0;
  count_events(trace, tree, h, graph_time_us, gpu_time_us);
  if (h.profiler_steps < kMinSteps) {
    if (auto repeats = critical_path::detect_repeats(trace, tree)) {
      h.detected_iterations = repeats->count;
    } else if (auto trailing = critical_path::detect_trailing_repeats(trace, tree)) {
      h.trailing_iterations = trailing->count;
      h.trailing_period = trailing->period;
      h.leading_launches = trailing->first;
    }
  } else if (auto last = last_profiler_step(trace)) {
    // A generate() call per ProfilerStep: a prefill, then decode steps.
    if (auto trailing = critical_path::detect_trailing_repeats(trace, tree, last)) {
      h.trailing_iterations = trailing->count;
      h.trailing_period = trailing->period;
      h.leading_launches = trailing->first;
      h.trailing_in_profiler_step = true;
    }
  }
  h.links_without_flows = tree.links_without_flows();
  h.negative_durations = trace.clamped_negative_durations;
  h.graph_kernel_share = gpu_time_us > 0 ? graph_time_us / gpu_time_us : 0;
  std::optional<GpuTimeline> computed;
  if (!timeline) {
    try {
      computed = compute_gpu_timeline(trace, tree);
      timeline = &*computed;
    } catch (const std::runtime_error&) {
      // No linked GPU events: the warnings below say so.
    }
  }
  if (timeline) {
    h.gpu_span_us = timeline->total_time;
    h.gpu_busy_share = timeline->total_time > 0 ? timeline->busy_time / timeline->total_time : 0;
  }
  add_step_estimate(trace, tree, h, step);
  add_warnings(h, xplane::is_xplane_trace(trace), timeline && !(timeline->total_time > 0));
  add_xplane_notes(trace, h);
  return h;
}

TraceHealth trace_health(const InsightContext& context) {
  const StepModelRef model{context.step};
  return trace_health(context.trace, context.tree, context.timeline.get(), &model);
}

nlohmann::json to_json(const TraceHealth& h) {
  nlohmann::json out = {
      {"confidence", h.confidence},
      {"warnings", h.warnings},
      {"gpu_events", h.gpu_events},
      {"linked_gpu_events", h.linked_gpu_events},
      {"gpu_busy_share", h.gpu_busy_share},
      {"gpu_span_us", h.gpu_span_us},
      {"profiler_steps", h.profiler_steps},
      {"detected_iterations", h.detected_iterations},
      {"trailing_iterations", h.trailing_iterations},
      {"trailing_in_profiler_step", h.trailing_in_profiler_step},
      {"trailing_period", h.trailing_period},
      {"leading_launches", h.leading_launches},
      {"graph_launches", h.graph_launches},
      {"graph_kernel_share", h.graph_kernel_share},
      {"links_without_flows", h.links_without_flows},
      {"negative_durations", h.negative_durations},
      {"python_events", h.python_events},
      {"cpu_ops", h.cpu_ops},
      {"recorded_step_us", h.recorded_step_us ? nlohmann::json(*h.recorded_step_us) : nullptr},
      {"estimated_unprofiled_step_us",
       h.estimated_unprofiled_step_us ? nlohmann::json(*h.estimated_unprofiled_step_us) : nullptr},
      {"profiler_host_us_per_step", h.profiler_host_us_per_step},
      {"gpu_backlog_left_out_us_total", h.gpu_backlog_left_out_us},
      {"recorded_bound_by", h.recorded_bound_by},
      {"unprofiled_bound_by", h.unprofiled_bound_by},
      {"unprofiled_path_gpu_share", h.unprofiled_path_gpu_share},
      {"unprofiled_path_host_share", h.unprofiled_path_host_share},
      {"unprofiled_path_communication_share", h.unprofiled_path_communication_share},
      {"interference", h.interference},
      {"interference_max_ratio", h.interference_max_ratio},
      {"gpu_busy_us_per_step",
       h.gpu_busy_us_per_step ? nlohmann::json(*h.gpu_busy_us_per_step) : nullptr},
      {"unprofiled_step_gpu_busy_share", h.unprofiled_step_gpu_busy_share},
      {"profiler_note", h.profiler_note},
      {"profiler_calibration", h.profiler_calibration}};
  if (h.estimated_unprofiled_per_profiler_step_us) {  // decode steps inside generate() calls
    out["iterations_source"] = h.iterations_source;
    out["per_profiler_step"] = {
        {"what",
         "per ProfilerStep#N, one generate() call each (the step figures above are per decode "
         "step): set-up and prefill before the decode steps and the tail after them lie outside "
         "the iterations"},
        {"recorded_us", h.recorded_per_profiler_step_us.value_or(0)},
        {"estimated_unprofiled_us", *h.estimated_unprofiled_per_profiler_step_us},
        {"unprofiled_before_decode_steps_us", h.unprofiled_before_decode_us_per_profiler_step},
        {"unprofiled_after_decode_steps_us", h.unprofiled_after_decode_us_per_profiler_step},
        {"decode_steps", h.decode_steps_per_profiler_step}};
  }
  return out;
}

}  // namespace jarvis::insights
