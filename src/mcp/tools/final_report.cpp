// final_report: every category's checked findings in one report ranked by
// recoverable time (categories/final_report.h), written into the output
// directory.
#include <fmt/format.h>

#include "engine/engine.h"
#include "mcp/tool.h"
#include "mcp/tools/trace_arg.h"

namespace jarvis::mcp {
namespace {

ToolResult final_report_tool(const json& args, ToolContext& ctx) {
  auto dir = ctx.resolve_path(args.at("output_dir").get<std::string>(), true, false);
  engine::FinalReport report;
  try {
    report = engine::build_final_report(dir.string());
  } catch (const std::invalid_argument& e) {
    throw ToolError(e.what());
  }
  // A jarvis output directory (category_filter marked it), or refused by the
  // write policy; the files are replaced by an atomic rename, never written
  // through a symlink.
  ctx.output_dir(dir.string());
  ctx.add_trace_caveats(dir.string(), report.trace_health);
  json result = report.to_json();
  // recoverable_ms is a total over the whole trace (recoverable_pct of its
  // end-to-end time), as profiled: the scope says so and each item gets its
  // per-step share beside it where the steps are known (issue 73 point 6).
  double recoverable_total = 0;
  for (const auto& i : report.ranked) recoverable_total += i.recoverable_ms.value_or(0);
  result["scope"] = step_scope_json(report.trace_health, recoverable_total, "recoverable_ms");
  const json steps = result["scope"]["steps"];
  for (auto& item : result["ranked"])
    item["recoverable_ms_per_step"] =
        steps.is_number() && item["recoverable_ms"].is_number()
            ? json(item["recoverable_ms"].get<double>() / steps.get<double>())
            : json();
  result["files"] = engine::write_final_report(report);
  for (const auto& f : result["files"]) ctx.paths().note_written(f.get<std::string>());
  const auto md = dir / "final_report.md";
  std::string text = fmt::format(
      "Final report: {} ranked recommendation(s), {} system finding(s), {} findings file(s) left "
      "out; wrote {}. Recoverable times are {}.\n",
      report.ranked.size(), report.system.size(), report.skipped.size(), md.string(),
      steps.is_number() ? fmt::format("totals over the whole trace's {} steps, as profiled (per "
                                      "step beside them)",
                                      steps.get<size_t>())
                        : std::string("totals over the whole trace, as profiled"));
  for (size_t k = 0; k < report.ranked.size() && k < 5; ++k) {
    const auto& i = report.ranked[k];
    std::string ms;
    if (i.recoverable_ms)
      ms = steps.is_number()
               ? fmt::format(" ({:.3f} ms over the trace, {:.3f} ms per step)", *i.recoverable_ms,
                             *i.recoverable_ms / steps.get<double>())
               : fmt::format(" ({:.3f} ms over the trace)", *i.recoverable_ms);
    text += fmt::format("  {}. {} P{}: {} — {:.2f} % of E2E{}\n", k + 1, i.category, i.p_item,
                        i.title, i.impact_mid.value_or(0), ms);
  }
  for (const auto& s : report.skipped)
    text += fmt::format("  left out {}: {} problem(s)\n", s.category, s.problems.size());
  ToolResult out{result, text};
  out.rows("/ranked").rows("/system").rows("/skipped");
  out.suggest("render_findings", {{"output_dir", dir.string()}},
              "one HTML page of the findings with their charts");
  return out;
}

}  // namespace
JARVIS_MCP_TOOL(final_report, final_report_tool);
}  // namespace jarvis::mcp
