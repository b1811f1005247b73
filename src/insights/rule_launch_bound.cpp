// A launch-bound trace: most kernels are short and the GPU is idle for a
// large share of the time between them, so the host (Python, dispatcher,
// launch latency) sets the pace, not the GPU. Typical of decode steps and
// small-batch inference; the fix is on the host side (CUDA/HIP graphs,
// torch.compile with mode="reduce-overhead", fusing small ops).
#include <fmt/format.h>

#include "insights/idle_breakdown.h"
#include "insights/rules_internal.h"

namespace jarvis::insights {
namespace {

constexpr double kShortKernelUs = 10.0;  // TraceLens's short-kernel threshold
constexpr double kMinIdleShare = 0.3;
constexpr double kMinShortShare = 0.5;

// Calls that only a CUDA/HIP graph capture makes. A trace holding them
// recorded the capture (each kernel enqueued once into a graph, the GPU idle
// while the host records), not a step that runs the graph: its idle time is
// paid once, and graphs are already in use.
size_t graph_capture_calls(const Trace& trace) {
  size_t calls = 0;
  for (const Event& e : trace.events) {
    if (e.cat != Cat::CudaRuntime && e.cat != Cat::CudaDriver) continue;
    std::string_view name = trace.str(e.name);
    if (name.find("BeginCapture") != std::string_view::npos ||
        name.find("GetCaptureInfo") != std::string_view::npos ||
        name.find("GraphInstantiate") != std::string_view::npos)
      ++calls;
  }
  return calls;
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
  if (idle_share < kMinIdleShare || short_share < kMinShortShare) return;
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
  if (size_t capture = graph_capture_calls(c.trace); capture > 0) {
    // Context, not a saving: the same numbers, said for what they are.
    i.severity = "low";
    i.gain_upper_bound_us = 0.0;
    i.title = fmt::format(
        "Graph capture, not a steady-state step: GPU idle {:.1f}% of {:.2f} ms while the host "
        "records the graph ({} capture/instantiate calls)",
        100 * idle_share, c.timeline->total_time / 1e3, capture);
    i.detail =
        "The trace recorded a CUDA/HIP graph capture: kernels are enqueued into the graph, "
        "not run step after step, so its idle time is a one-off capture cost and says nothing "
        "about launch overhead in serving. Profile the replay (after capture) to judge it.";
    i.evidence = {{"graph_capture_calls", capture},
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
  i.action_model =
      "Capture the step in a CUDA/HIP graph (torch.cuda.graphs, torch.compile "
      "mode=\"reduce-overhead\") and fuse chains of small ops.";
  i.action_kernel =
      "Fuse consecutive short kernels (e.g. norm + activation + residual) so fewer "
      "launches remain; kernel speed-ups of short kernels do not help here.";
  i.verify =
      "Look at the cpu_idle / multi_kernel categories and the short-kernel histogram; "
      "check the trace covers steady-state steps (not warm-up or a graph capture).";
  out.push_back(std::move(i));
}

}  // namespace jarvis::insights
