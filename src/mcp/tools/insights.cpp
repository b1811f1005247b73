// insights: the rule engine's judgments on a loaded trace (src/insights).
#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "engine/engine.h"
#include "mcp/result_shape.h"
#include "mcp/tool.h"
#include "mcp/tools/trace_arg.h"

namespace jarvis::mcp {
namespace {

// Insights the text lists when a limit or detail=full asks for more rows
// than a summary reads well with; a default reply's text lists every row it
// carries (issue 73 point 8).
constexpr size_t kTextInsights = 10;
// A default reply's rows (without their uid and kernel lists) keep to this
// many bytes, so that the 16 KB structured budget (result_shape.h) keeps
// every row and the text lists the same ones; the rest is the envelope (the
// rule list, health caveats, next calls, truncation notes).
constexpr size_t kDefaultRowBytes = kDefaultStructuredBytes - 4 * 1024;

bool default_reply(const json& args) {
  if (detail_of(args) != Detail::Rows) return false;
  for (const char* key : kLimitNames)
    if (args.contains(key)) return false;
  return true;
}

// A row as a default reply carries it (its lists only counted).
size_t brief_row_bytes(json row) {
  row.erase("uids");
  row.erase("kernel_names");
  if (row.contains("what_if") && row["what_if"].is_object()) {
    row["what_if"].erase("kernel_uids");
    row["what_if"].erase("remove_uids");
  }
  return row.dump().size() + 1;
}

// A finding's line: its saving per step first (what the blind run read the
// title's whole-trace totals as), then whether it adds to the ones above.
std::string text_line(const engine::Insight& i) {
  std::string saving;
  if (i.step_saving_us) {
    const double per_step_ms =
        *i.step_saving_us / static_cast<double>(std::max<size_t>(1, i.steps)) / 1e3;
    saving = fmt::format(" saves {:.2f} ms/step alone", per_step_ms);
    if (!i.shares_time_with.empty())
      saving +=
          fmt::format(" (shares time with {}: not additive)", fmt::join(i.shares_time_with, ", "));
    if (!i.step_saving_note.empty()) saving += fmt::format(" [{}]", i.step_saving_note);
  }
  return fmt::format("[{}] {}{}: {}\n", i.severity, i.rule, saving, i.title);
}

// What the figures of the lines are: the savings per step of the
// un-profiled step, the titles' times and counts over every step.
std::string units_line(const engine::StepModelRef* step, size_t steps) {
  if (!step || !step->model) return {};
  return fmt::format(
      "Un-profiled step {:.2f} ms (recorded {:.2f} ms), {} step(s). 'saves ... alone' = "
      "the finding's what-if, per step of the un-profiled step, its change alone; titles' times "
      "and counts "
      "are over all {} steps.\n",
      step->model->measured.step_time_us / 1e3, step->model->recorded.step_time_us / 1e3, steps,
      steps);
}

ToolResult insights_tool(const json& args, ToolContext& ctx) {
  auto entry = trace_arg(args, ctx);
  std::string arch_name = ctx.arch(args.value("arch", std::string()));
  if (arch_name.empty()) arch_name = engine::detect_arch_name(entry->trace());
  std::optional<GpuArch> arch;
  try {
    if (!arch_name.empty() && arch_name != "none") arch = engine::load_gpu_arch(arch_name);
  } catch (const engine::GpuArchError& e) {
    throw ToolError(e.what());
  }
  std::string rule = args.value("rule", std::string());
  size_t top_n = row_limit(args);
  auto tree = engine::trace_call_tree(*entry);
  auto timeline = engine::trace_timeline(*entry);
  const auto step_model = loaded_step_model(*entry);
  auto context = engine::make_context(entry->trace(), *tree, arch ? &*arch : nullptr,
                                      timeline.get(), step_model.get());
  auto found = engine::run_insights(context);
  json rows = json::array();
  std::string lines;
  size_t matched = 0, row_bytes = 0;
  const bool brief = default_reply(args);
  const bool summary = detail_of(args) == Detail::Summary;
  bool full_rows = false;  // a default reply reached its bytes: later rows are left out
  for (const auto& i : found) {
    if (!rule.empty() && i.rule != rule) continue;
    if (++matched > top_n || full_rows) continue;
    json row = engine::to_json(i);
    // Ready to pass to what_if as it stands: the trace is this handle.
    if (row.contains("what_if") && row["what_if"].is_object())
      row["what_if"]["trace"] = entry->handle();
    row["uid_count"] = i.uids.size();
    row["kernel_count"] = i.kernel_names.size();
    if (brief) {
      row_bytes += brief_row_bytes(row);
      if (!rows.empty() && row_bytes > kDefaultRowBytes) {
        full_rows = true;
        continue;
      }
    }
    rows.push_back(std::move(row));
    // detail=summary carries no rows: its text lists none either (the plan
    // above them is the summary).
    if (!summary && (brief || rows.size() <= kTextInsights)) lines += text_line(i);
  }
  // The count is of what the call asked for: one rule's findings when
  // filtered, with the whole trace's beside it.
  std::string text = rule.empty()
                         ? fmt::format("{} insights on {}", matched, entry->handle())
                         : fmt::format("{} {} insight{} on {} (of {} insights)", matched, rule,
                                       matched == 1 ? "" : "s", entry->handle(), found.size());
  text += arch ? "\n" : " (no GPU arch: rules needing peaks skipped)\n";
  // The first answer: the top changes one after the other, each sized once.
  const auto plan = rule.empty() ? engine::plan_changes(context, found) : engine::ChangePlan{};
  if (!lines.empty() && context.step)
    text += units_line(step_model.get(), context.step->measured.iterations.size());
  text += engine::plan_text(plan, found);
  text += lines;
  if (!brief && !summary && rows.size() > kTextInsights)
    text += fmt::format("(the first {} listed here; all {} in the structured result)\n",
                        kTextInsights, rows.size());
  json result = {
      {"trace", entry->handle()},    {"arch", arch ? json(arch->name) : json()},
      {"rules", engine::rule_ids()}, {"total_kernel_time_us", context.total_kernel_time_us},
      {"insight_count", matched},    {"insights", rows}};
  if (!plan.steps.empty()) result["plan"] = engine::to_json(plan, found);
  if (!rows.empty() && args.value("detail", std::string("rows")) != "full")
    text +=
        "(each insight's uids, kernel names and its what_if's kernel_uids / remove_uids: "
        "detail=full; counts in uid_count, kernel_count)\n";
  ToolResult out{result, text};
  out.rows("/insights", matched);  // a cut by bytes or limit is reported as `truncated`
  // The op and kernel lists were most of a reply (12 insights, 38.7 KB):
  // counted by default, listed with detail=full (issue 64 point 4).
  out.full_only = {"/insights/*/uids", "/insights/*/kernel_names",
                   "/insights/*/what_if/kernel_uids", "/insights/*/what_if/remove_uids"};
  if (!rows.empty() && !rows[0]["uids"].empty())
    out.suggest("parent_chain", {{"trace", entry->handle()}, {"uid", rows[0]["uids"][0]}},
                "the call stack behind the top insight");
  out.suggest("make_replay",
              {{"trace", entry->handle()}, {"output_dir", "<dir>"}, {"op", "<op of an insight>"}},
              "a standalone reproducer to verify a fix before applying it");
  return out;
}

}  // namespace
JARVIS_MCP_TOOL(insights, insights_tool);
}  // namespace jarvis::mcp
