// jarvis insights TRACE [--arch NAME|FILE|none] [--json FILE] [--top N]:
// the insight rules over one trace, ranked by recoverable time.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <memory>
#include <optional>

#include "base/atomic_file.h"
#include "base/duration_text.h"
#include "base/phase_timer.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "engine/engine.h"

namespace jarvis::cli {
namespace {

struct InsightsArgs {
  std::string trace, arch, json;
  size_t top = 20;
  bool mkdirs = false;
  ProgressFlags progress;
};

void print_insight(const engine::Insight& i, const engine::InsightContext& context) {
  fmt::print("[{}] {} — {}\n", i.severity, i.rule, i.title);
  const double steps = static_cast<double>(std::max<size_t>(1, i.steps));
  if (i.recoverable_us) {
    double base = i.scope == "trace" && context.timeline ? context.timeline->total_time
                                                         : context.total_kernel_time_us;
    std::string shares = i.shares_time_with.empty()
                             ? std::string()
                             : fmt::format("; the rest of its time is claimed by {}",
                                           fmt::join(i.shares_time_with, ", "));
    if (*i.recoverable_us < 0.05)
      fmt::print("    recoverable: nothing left ({}{})\n", i.recoverable_method, shares);
    else {
      // A trace-scope finding recovers idle time: its share is of the GPU
      // timeline's span (busy and idle), which the text names with the busy
      // share beside it, never as "GPU time" (issue 73 point 9).
      const bool span = i.scope == "trace" && context.timeline;
      const std::string of =
          span ? fmt::format("the trace's {} GPU span, busy {:.0f}% of it",
                             duration_text(context.timeline->total_time),
                             context.timeline->total_time > 0
                                 ? 100 * context.timeline->busy_time / context.timeline->total_time
                                 : 0.0)
               : std::string("all kernel time");
      fmt::print(
          "    recoverable: {} per step, {} over {} step(s) ({:.1f}% of {}; {}{})\n",
          duration_range_text(i.recoverable_low_us.value_or(0) / steps, *i.recoverable_us / steps),
          duration_text(*i.recoverable_us), i.steps,
          base > 0 ? 100 * *i.recoverable_us / base : 0.0, of, i.recoverable_method, shares);
    }
  }
  if (i.step_saving_us)
    fmt::print("    step what-if (without the profiler): {} per step{}{}\n",
               duration_text(*i.step_saving_us / steps), i.step_saving_note.empty() ? "" : "; ",
               i.step_saving_note);
  fmt::print("    model: {}\n    kernel: {}\n", i.action_model, i.action_kernel);
}

int run_insights(const InsightsArgs& a) {
  check_output_parent(a.json, a.mkdirs, "--json");
  Progress progress(a.progress.resolve(), "insights");
  progress.phase("load");
  std::optional<PhaseTimer> timer(std::in_place, "insights/load");
  // The step model's graph file of this state of the trace, when it is one
  // before and after the load (the file did not change in between).
  const auto graph_file_before = engine::graph_file_of_path(a.trace);
  Trace trace = engine::load_any_trace(a.trace);
  const auto graph_file = engine::graph_file_of_path(a.trace);
  const bool graph_file_usable = engine::same_trace_state(graph_file_before, graph_file);
  progress.phase("call tree");
  timer.emplace("insights/call_tree");
  CallTree tree(trace);
  timer.reset();
  std::string arch_name = a.arch.empty() ? engine::detect_arch_name(trace) : a.arch;
  std::optional<GpuArch> arch;
  if (!arch_name.empty() && arch_name != "none") arch = engine::load_gpu_arch(arch_name);
  progress.phase("rules");
  auto [context, found] = engine::analyse_trace(trace, tree, arch ? &*arch : nullptr,
                                                graph_file_usable ? &*graph_file : nullptr);
  progress.finish();
  timer.emplace("insights/print");
  fmt::print("{} insights ({}; {})\n", found.size(), trace.gpu_name(),
             arch ? arch->name : std::string("no arch: rules needing peaks skipped"));
  fmt::print("{}", engine::plan_text(engine::plan_changes(context, found), found));
  for (size_t k = 0; k < found.size() && k < a.top; ++k) print_insight(found[k], context);
  if (!a.json.empty()) {
    nlohmann::json all = nlohmann::json::array();
    for (const auto& i : found) all.push_back(engine::to_json(i));
    write_file_atomic(a.json, all.dump(1) + "\n");
  }
  return 0;
}

}  // namespace

Runner add_insights(CLI::App& app) {
  auto a = std::make_shared<InsightsArgs>();
  CLI::App* cmd = app.add_subcommand(
      "insights", "expert insights beyond TraceLens, ranked by recoverable time");
  cmd->add_option("TRACE", a->trace, "Kineto trace (.json/.json.gz)")->required();
  cmd->add_option("--arch", a->arch,
                  "GPU arch for rooflines: name, JSON file or none (default: detected)");
  cmd->add_option("--json", a->json, "also write every insight as JSON to FILE");
  cmd->add_option("--top", a->top, "insights printed")->default_str("20");
  cmd->add_flag("--mkdirs", a->mkdirs, "create a missing parent directory of --json");
  add_progress_flags(cmd, a->progress);
  cmd->footer(
      "Unaligned GEMM dims, kernels built for an older GPU arch, autocast dtype mismatches,\n"
      "tiny GEMMs to batch, launch-bound traces. Each with evidence (UIDs, kernel names),\n"
      "impact and the action on both paths (model change / kernel tuning).");
  return [a] { return run_insights(*a); };
}

}  // namespace jarvis::cli
