// A launch-bound trace: most kernels are short and the GPU is idle for a
// large share of the time between them, so the host (Python, dispatcher,
// launch latency) sets the pace, not the GPU. Typical of decode steps and
// small-batch inference; the fix is on the host side (CUDA/HIP graphs,
// torch.compile with mode="reduce-overhead", fusing small ops).
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "insights/idle_breakdown.h"
#include "insights/rules_internal.h"
#include "insights/trace_facts.h"
#include "report/gpu_timeline.h"
#include "xplane/executions.h"
#include "xplane/space.h"

namespace jarvis::insights {
namespace {

constexpr double kShortKernelUs = 10.0;  // TraceLens's short-kernel threshold
constexpr double kMinIdleShare = 0.3;
constexpr double kMinShortShare = 0.5;

// What the dependency graph says of a host-bound step: most iterations are
// bound by the host, and an ideal host (no gaps between runtime calls, what
// CUDA graphs approach) would shorten them.
struct HostBound {
  size_t host_iterations = 0, iterations = 0;
  double step_us = 0, ideal_host_step_us = 0, saving_us = 0;  // saving: over all iterations
  nlohmann::json host_ops = nlohmann::json::array();          // the host time on the path, by op
};

std::optional<HostBound> host_bound_step(const InsightContext& c) {
  if (!c.step) return std::nullopt;
  const auto& m = *c.step;
  HostBound h;
  h.iterations = m.measured.iterations.size();
  h.host_iterations = m.host_bound_iterations();
  if (h.iterations == 0 || 2 * h.host_iterations <= h.iterations) return std::nullopt;
  critical_path::Scenario ideal;
  ideal.remove_launch_gaps = true;
  const auto r = detail::step_time_what_if(c, ideal);
  h.step_us = r.measured_step_time_us;
  h.ideal_host_step_us = r.predicted_step_time_us;
  h.saving_us = std::max(0.0, h.step_us - h.ideal_host_step_us) * static_cast<double>(h.iterations);
  constexpr size_t kTopOps = 8;
  for (const auto& k : m.measured.contributors) {
    if (k.op.empty() || (k.category != "host_gap" && k.category != "host_runtime")) continue;
    h.host_ops.push_back({{"op", k.op}, {"category", k.category}, {"time_per_step_us", k.time_us}});
    if (h.host_ops.size() == kTopOps) break;
  }
  return h;
}

// A JAX step run op by op (jax.disable_jit, eager primitives, or a Python
// loop of small jitted calls): many small XLA executions a step, each
// dispatched from Python, so per-op dispatch bounds the step. jax.jit of the
// whole step runs one executable: what is left is the GPU work the step
// keeps and that one executable's dispatch. A CUDA graph of the same
// launches keeps every dispatch before them (issue 73 point 5).
constexpr double kOpByOpMinExecutionsPerStep = 10;

struct JaxOpByOp {
  size_t executions = 0;  // inside the steps
  double executions_per_step = 0;
  std::vector<std::pair<size_t, std::string>> modules;  // (executions, module), most first
  double gpu_us_per_step = 0;                           // GPU busy inside the steps, per step
  double dispatch_us = 0;                               // one execution's host time (median)
  double jit_step_us = 0;                               // gpu_us_per_step + dispatch_us
  double saving_us = 0;                                 // over all iterations
};

std::optional<JaxOpByOp> jax_op_by_op(const InsightContext& c, const HostBound& host) {
  if (!xplane::is_xplane_trace(c.trace) || !c.step || host.iterations == 0) return std::nullopt;
  const detail::StepWindow window = detail::step_window(c);
  JaxOpByOp j;
  std::map<std::string, size_t> by_module;
  std::vector<double> durations;
  for (const xplane::XlaExecution& x : xplane::xla_executions(c.trace)) {
    if (!window.contains(x.ts)) continue;
    ++j.executions;
    ++by_module[std::string(x.module)];
    durations.push_back(x.dur);
  }
  const double steps = static_cast<double>(host.iterations);
  j.executions_per_step = static_cast<double>(j.executions) / steps;
  if (j.executions_per_step < kOpByOpMinExecutionsPerStep) return std::nullopt;
  for (const auto& [module, n] : by_module) j.modules.emplace_back(n, module);
  std::sort(j.modules.begin(), j.modules.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  std::sort(durations.begin(), durations.end());
  j.dispatch_us = durations[durations.size() / 2];
  // The GPU work the jitted step keeps: the busy time (union) of the GPU
  // events that start inside the steps, cut at the last step's end.
  std::vector<std::pair<double, double>> spans;
  for (const Event& e : c.trace.events)
    if (e.is_gpu() && e.has_ts() && e.has_dur() && window.contains(e.ts()))
      spans.emplace_back(e.ts(), std::min(e.end(), window.to_us));
  const double busy = intervals_length(merge_intervals(std::move(spans)));
  j.gpu_us_per_step = busy / steps;
  j.jit_step_us = j.gpu_us_per_step + j.dispatch_us;
  j.saving_us = std::max(0.0, host.step_us - j.jit_step_us) * steps;
  return j;
}

}  // namespace

void rule_launch_bound(const InsightContext& c, std::vector<Insight>& out) {
  if (!c.timeline || !(c.timeline->total_time > 0)) return;
  size_t kernels = 0, short_kernels = 0;
  double short_time_us = 0;
  for (const Event& e : c.trace.events) {
    if (e.cat != Cat::Kernel || !e.has_dur()) continue;
    ++kernels;
    if (e.dur() < kShortKernelUs) ++short_kernels, short_time_us += e.dur();
  }
  if (kernels == 0) return;
  double idle_share = c.timeline->idle_time / c.timeline->total_time;
  double short_share = static_cast<double>(short_kernels) / static_cast<double>(kernels);
  const bool short_and_idle = idle_share >= kMinIdleShare && short_share >= kMinShortShare;
  // A step the host bounds is launch-bound whatever its kernels' sizes
  // (GPT-2 training: long backward GEMMs, a forward pass that waits for
  // launches). Graph captures are judged below, before the path is asked.
  const bool capture = detail::graph_capture_calls(c) > 0;
  const std::optional<HostBound> host = capture ? std::nullopt : host_bound_step(c);
  if (!short_and_idle && !(host && host->saving_us > 0)) return;
  Insight i;
  i.rule = "launch_bound";
  i.scope = "trace";
  i.time_us = c.timeline->idle_time;
  i.share = idle_share;
  i.severity = idle_share >= 0.5 ? "high" : "medium";
  i.gain_upper_bound_us = c.timeline->idle_time;
  i.title = fmt::format(
      "Launch-bound: GPU idle {:.1f}% of {:.2f} ms; {} of {} kernels ({:.0f}%) run under {} us",
      100 * idle_share, c.timeline->total_time / 1e3, short_kernels, kernels, 100 * short_share,
      kShortKernelUs);
  if (size_t capture_calls = detail::graph_capture_calls(c); capture_calls > 0) {
    // Context, not a saving: the same numbers, said for what they are.
    i.severity = "low";
    i.gain_upper_bound_us = 0.0;
    i.title = fmt::format(
        "Graph capture, not a steady-state step: GPU idle {:.1f}% of {:.2f} ms while the host "
        "records the graph ({} capture/instantiate calls)",
        100 * idle_share, c.timeline->total_time / 1e3, capture_calls);
    i.detail =
        "The trace recorded a CUDA/HIP graph capture: kernels are enqueued into the graph, "
        "not run step after step, so its idle time is a one-off capture cost and says nothing "
        "about launch overhead in serving. Profile the replay (after capture) to judge it.";
    i.evidence = {{"graph_capture_calls", capture_calls},
                  {"kernels", kernels},
                  {"short_kernels", short_kernels},
                  {"idle_time_us", c.timeline->idle_time},
                  {"total_time_us", c.timeline->total_time}};
    i.action_model =
        "Start the profiler after the graphs are captured (warm-up first) to see the steps "
        "that replay them.";
    i.action_kernel = "None from this trace: kernel times inside a capture are not a step's.";
    i.verify =
        "The runtime calls *BeginCapture / *GetCaptureInfo / *GraphInstantiate* are in "
        "the trace.";
    out.push_back(std::move(i));
    return;
  }
  if (!host && c.step) {
    // Not host-bound without the profiler: what a CUDA graph of the step
    // saves there bounds the claim (the recorded idle is largely the
    // profiler's own host time).
    critical_path::Scenario graph;
    graph.remove_launch_gaps = true;
    const double saving = detail::step_saving_total_us(c, graph);
    i.gain_upper_bound_us = std::min(c.timeline->idle_time, saving);
    i.gain_method =
        "the what-if of a CUDA graph of the step on the un-profiled step (launch calls and host "
        "gaps removed), capped at the measured GPU idle";
    i.step_saving_us = saving;
    i.what_if = {{"remove_launch_gaps", true}};
    if (saving < 0.05 * c.timeline->idle_time) {
      i.severity = "low";
      i.step_saving_note =
          "GPU-bound without the profiler: the idle time in the trace is mostly the profiler's "
          "own host cost";
    }
  }
  // A CUDA graph cannot capture a step that syncs with the host (.item(),
  // nonzero / boolean indexing, a blocking copy): the capture fails at the
  // sync. The graph's figure is then reachable only once those syncs are
  // gone (host_sync), or in part by graphs of the stretches between them.
  // A sync outside any op (the script's own torch.cuda.synchronize()) sits
  // outside what a graph of the model's step captures, and so do a sync at
  // the step's end and a blocking copy to the device (a graph's replay starts
  // from inputs copied into its static buffers): only the mid-step syncs of
  // an op count (HostSyncSite::capture_blocking).
  std::vector<detail::HostSyncSite> syncs;
  if (c.step && !xplane::is_xplane_trace(c.trace))
    for (auto& s : detail::step_host_sync_sites(c))
      if (!s.inner_op.empty() && s.capture_blocking > 0) syncs.push_back(std::move(s));
  const double sync_steps =
      c.step ? static_cast<double>(std::max<size_t>(1, c.step->measured.iterations.size())) : 1.0;
  std::string syncs_text;
  std::vector<std::string> named;  // the sync sites, most calls first (three at most)
  if (!syncs.empty()) {
    size_t calls = 0;
    for (const auto& s : syncs) {
      calls += s.capture_blocking;
      if (named.size() < 3)
        named.push_back(s.inner_op.empty() || s.inner_op == s.op
                            ? s.op
                            : fmt::format("{} ({})", s.op, s.inner_op));
    }
    syncs_text = fmt::format(
        "a graph cannot capture a step that syncs with the host: {:.1f} syncs per step at {}; "
        "host_sync",
        static_cast<double>(calls) / sync_steps, fmt::join(named, ", "));
  }
  IdleBreakdown idle = idle_breakdown(c.trace, c.tree);
  double gap_us = idle.total.total_us();
  double host_share = gap_us > 0 ? idle.total.host_wait_us / gap_us : 0;
  i.detail = fmt::format(
      "Of {:.2f} ms of gaps between GPU operations, {:.0f}% is the GPU waiting for the host to "
      "issue the next one, {:.0f}% launch latency of work already issued (gaps up to {} us) "
      "and {:.0f}% longer waits (syncs, other streams). Kernel tuning cannot recover this "
      "time; removing launches can.",
      gap_us / 1e3, 100 * host_share, gap_us > 0 ? 100 * idle.total.launch_latency_us / gap_us : 0,
      idle.latency_threshold_us, gap_us > 0 ? 100 * idle.total.other_us / gap_us : 0);
  i.evidence = {{"kernels", kernels},
                {"short_kernels", short_kernels},
                {"short_kernel_threshold_us", kShortKernelUs},
                {"short_kernel_time_us", short_time_us},
                {"idle_time_us", c.timeline->idle_time},
                {"busy_time_us", c.timeline->busy_time},
                {"total_time_us", c.timeline->total_time},
                {"mean_kernel_us", c.timeline->busy_time / static_cast<double>(kernels)},
                {"idle_breakdown", idle_breakdown_json(idle)}};
  if (host) {
    // Sized by the measured idle the host opened (the GPU waiting for a
    // launch that came after it went idle), capped by what an ideal host
    // saves on the dependency graph. Queue and launch latency between work
    // already issued stays: no host-side fix removes it. Claimed by place,
    // so a finding about one place (the optimizer step) keeps its own gaps.
    const std::map<std::string, double> host_idle = detail::host_work_idle_by_place(c);
    double host_idle_us = 0;
    for (const auto& entry : host_idle) host_idle_us += entry.second;
    const double bound = std::min(host->saving_us, host_idle_us);
    const double scale = host_idle_us > 0 ? bound / host_idle_us : 0;
    for (const auto& [place, us] : host_idle) i.idle_claim_us[place] = us * scale;
    i.gain_upper_bound_us = bound;
    i.gain_method =
        "measured GPU idle the host opened (gaps before late launches), capped by the what-if "
        "of a CUDA graph of the step on the un-profiled dependency graph";
    i.step_saving_us = host->saving_us;
    // The what_if tool's arguments that replay it (issue 73 point 4).
    i.what_if = {{"remove_launch_gaps", true}};
    if (host->saving_us > bound + 1e-6)
      i.step_saving_note =
          "a CUDA graph also removes launch latency and the host's lead before the first "
          "kernel, which the recoverable time does not count";
    std::vector<std::pair<double, std::string>> places;
    for (const auto& [place, us] : host_idle) places.emplace_back(us, place);
    std::sort(places.rbegin(), places.rend());
    nlohmann::json by_place = nlohmann::json::array();
    for (size_t k = 0; k < places.size() && k < 8; ++k)
      by_place.push_back({{"place", places[k].second}, {"idle_us", places[k].first}});
    i.evidence["host_idle_us"] = host_idle_us;
    i.evidence["host_idle_by_place"] = std::move(by_place);
    i.severity = host->saving_us >= 0.2 * host->step_us * static_cast<double>(host->iterations)
                     ? "high"
                     : "medium";
    // By path time; host gap and runtime of one op once; host time under no
    // op (an XPlane's dispatch) has no name to list, and a path of only that
    // lists none (it read "Host time on the path: " with nothing after).
    std::vector<std::string> ops;
    for (const auto& o : host->host_ops)
      if (const std::string op = o["op"].get<std::string>();
          !op.empty() && std::find(ops.begin(), ops.end(), op) == ops.end())
        ops.push_back(op);
    i.title = fmt::format(
        "Host-bound step: {} of {} iterations wait for the host's launches (GPU idle {:.1f}% of "
        "the "
        "recorded span); "
        "a CUDA graph of the step cuts it from {:.2f} to {:.2f} ms (without the profiler){}.{}",
        host->host_iterations, host->iterations, 100 * idle_share, host->step_us / 1e3,
        host->ideal_host_step_us / 1e3,
        syncs.empty() ? "" : fmt::format(", once its host syncs are gone ({})", syncs_text),
        ops.empty() ? std::string()
                    : fmt::format(" Host time on the path: {}", fmt::join(ops, ", ")));
    i.evidence["critical_path"] = {{"host_bound_iterations", host->host_iterations},
                                   {"iterations", host->iterations},
                                   {"step_time_us", host->step_us},
                                   {"no_host_gaps_step_time_us", host->ideal_host_step_us},
                                   {"host_ops_on_path", host->host_ops}};
    i.detail +=
        " The critical path runs through the host: GPU speed-ups are absorbed until "
        "the host issues work faster.";
  }
  const std::optional<JaxOpByOp> op_by_op = host ? jax_op_by_op(c, *host) : std::nullopt;
  if (op_by_op) {
    // Sized as the jit re-run is: the step minus the GPU work it keeps and
    // one executable's dispatch, not as a CUDA graph of the same launches.
    const double steps = static_cast<double>(host->iterations);
    std::vector<std::string> top;
    for (size_t k = 0; k < op_by_op->modules.size() && k < 5; ++k)
      top.push_back(fmt::format("{} x{:.0f}", op_by_op->modules[k].second,
                                static_cast<double>(op_by_op->modules[k].first) / steps));
    i.title = fmt::format(
        "Host-bound step run op by op: {:.0f} XLA executions per step ({} programs: {}); jax.jit "
        "of the whole step cuts it from {:.2f} to {:.2f} ms (without the profiler: the {:.2f} ms "
        "of GPU work it keeps and one dispatch of {:.3f} ms)",
        op_by_op->executions_per_step, op_by_op->modules.size(), fmt::join(top, ", "),
        host->step_us / 1e3, op_by_op->jit_step_us / 1e3, op_by_op->gpu_us_per_step / 1e3,
        op_by_op->dispatch_us / 1e3);
    i.severity = "high";
    i.gain_upper_bound_us = op_by_op->saving_us;
    i.step_saving_us = op_by_op->saving_us;
    // No what-if replays a jit: the CUDA graph's figure is in the note.
    i.what_if = nullptr;
    i.gain_method =
        "jax.jit of the whole step: the un-profiled step minus the GPU work inside the steps "
        "(busy time of their kernels, copies and memsets) and one jitted executable's dispatch "
        "(the median host time of the trace's XLA executions)";
    i.step_saving_note = fmt::format(
        "no what-if replays a jit; a CUDA graph of the same launches (what_if "
        "remove_launch_gaps) gives {:.2f} ms per step and keeps each op's dispatch",
        host->saving_us / steps / 1e3);
    // The idle claims follow the size (the host's gaps are the dispatch).
    double claimed = 0;
    for (const auto& entry : i.idle_claim_us) claimed += entry.second;
    if (claimed > op_by_op->saving_us && claimed > 0)
      for (auto& entry : i.idle_claim_us) entry.second *= op_by_op->saving_us / claimed;
    nlohmann::json modules = nlohmann::json::array();
    for (size_t k = 0; k < op_by_op->modules.size() && k < 12; ++k)
      modules.push_back(
          {{"module", op_by_op->modules[k].second},
           {"executions_per_step", static_cast<double>(op_by_op->modules[k].first) / steps}});
    i.evidence["op_by_op"] = {{"executions", op_by_op->executions},
                              {"executions_per_step", op_by_op->executions_per_step},
                              {"programs", op_by_op->modules.size()},
                              {"modules", modules},
                              {"gpu_us_per_step", op_by_op->gpu_us_per_step},
                              {"dispatch_us", op_by_op->dispatch_us},
                              {"jit_step_us", op_by_op->jit_step_us},
                              {"step_us", host->step_us},
                              {"cuda_graph_step_saving_us_per_step", host->saving_us / steps}};
    i.detail +=
        " The step runs op by op: each primitive is its own XLA executable, dispatched from "
        "Python one after the other, so the dispatch, not the GPU, sets the step.";
  }
  if (xplane::is_xplane_trace(c.trace)) {
    // XLA already compiles and fuses: what is left is dispatch between
    // executables and Python work between steps.
    i.action_model =
        op_by_op
            ? "jit the whole step (jax.jit of the training step, no jax.disable_jit): one "
              "executable instead of one per op; move Python loops over layers or "
              "micro-batches into lax.scan / fori_loop, keep host work (logging, "
              ".item()/device_get) off the step and let dispatch run ahead."
            : "jit the whole step (one executable instead of several dispatches), move Python "
              "loops over layers or micro-batches into lax.scan / fori_loop, keep host work "
              "(logging, .item()/device_get, data preparation) off the step and let dispatch run "
              "ahead (no block_until_ready inside the loop); on GPU, XLA's command buffers "
              "(--xla_gpu_enable_command_buffer) replay a step's kernels as CUDA graphs.";
    i.action_kernel =
        "Fewer, larger fusions (XLA fusion flags) so fewer launches remain; kernel speed-ups "
        "of short kernels do not help here.";
    i.verify =
        "Look at the idle gaps by place (which executable or host op precedes them) and check "
        "the trace covers steady-state steps, not the first (compiling) ones.";
  } else {
    i.action_model =
        "Capture the step in a CUDA/HIP graph (torch.cuda.graphs, torch.compile "
        "mode=\"reduce-overhead\") and fuse chains of small ops.";
    if (!syncs.empty() && !i.what_if.is_null()) {
      // The graph's saving stands on the syncs' removal: said where the
      // figure is, in the evidence and in the action.
      nlohmann::json sites = nlohmann::json::array();
      for (const auto& s : syncs)
        sites.push_back({{"op", s.op},
                         {"inner_op", s.inner_op},
                         {"syncs_per_step", static_cast<double>(s.capture_blocking) / sync_steps}});
      i.evidence["graph_capturable"] = false;
      i.evidence["host_syncs"] = std::move(sites);
      const std::string needs = fmt::format(
          "needs the host syncs removed first ({}): the what-if replays the graph with the "
          "syncs still waiting, so the figure is reachable only after them, or in part by graphs "
          "of the stretches between them",
          syncs_text);
      i.step_saving_note =
          i.step_saving_note.empty() ? needs : fmt::format("{}; {}", needs, i.step_saving_note);
      i.action_model = fmt::format(
          "First take the host syncs out of the step ({}): a CUDA graph cannot capture a step "
          "that waits for the host. Then capture the step in a CUDA/HIP graph "
          "(torch.cuda.graphs, torch.compile mode=\"reduce-overhead\") and fuse chains of "
          "small ops.",
          fmt::join(named, ", "));
    }
    i.action_kernel =
        "Fuse consecutive short kernels (e.g. norm + activation + residual) so fewer "
        "launches remain; kernel speed-ups of short kernels do not help here.";
    i.verify =
        "Look at the cpu_idle / multi_kernel categories and the short-kernel histogram; "
        "check the trace covers steady-state steps (not warm-up or a graph capture).";
  }
  out.push_back(std::move(i));
}

}  // namespace jarvis::insights
