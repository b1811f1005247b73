// insights: the rule engine's judgments on a loaded trace (src/insights).
#include <algorithm>
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/phase_timer.h"
#include "engine/engine.h"
#include "mcp/result_shape.h"
#include "mcp/tool.h"
#include "mcp/tools/insights_analysis.h"
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

// What insights derives of one trace for one arch, whatever the call's
// other arguments (a rule, a limit, a detail): every finding (its full row,
// its text line), the plan and the lines around them. Kept on the trace
// (ToolContext::keep) under kept_key, so the next insights call, of any
// arguments, formats it instead of running the rules again (issue 75 point
// 2); the handle is put in by the call that formats it.
json derive_analysis(const LoadedTrace& entry, const std::optional<GpuArch>& arch,
                     const std::string& arch_name) {
  auto tree = engine::trace_call_tree(entry);
  auto timeline = engine::trace_timeline(entry);
  const auto step_model = loaded_step_model(entry);
  // The perf rows for this arch (load_trace's when it is the trace's own)
  // and the facts of the trace alone: made in the server beside the step
  // model, else here.
  engine::TraceHeadStart made{engine::trace_perf_rows(entry, arch ? arch_name : "none"), {}};
  try {
    made.facts = *loaded_trace_facts(entry);
  } catch (const std::runtime_error&) {
    // None kept: the analysis makes its facts and meets the error as it would have.
  }
  auto [context, found] = engine::analyse_trace(entry.trace(), *tree, arch ? &*arch : nullptr,
                                                timeline.get(), *step_model, made);
  json findings = json::array();
  for (const auto& i : found) {
    json row = engine::to_json(i);
    row["uid_count"] = i.uids.size();
    row["kernel_count"] = i.kernel_names.size();
    findings.push_back({{"row", std::move(row)}, {"line", text_line(i)}});
  }
  const auto plan = engine::plan_changes(context, found);
  return {{"arch", arch ? json(arch->name) : json()},
          {"rules", engine::rule_ids()},
          {"total_kernel_time_us", context.total_kernel_time_us},
          {"findings", std::move(findings)},
          {"units", context.step
                        ? units_line(step_model.get(), context.step->measured.iterations.size())
                        : std::string()},
          {"plan", plan.steps.empty() ? json() : engine::to_json(plan, found)},
          {"plan_text", engine::plan_text(plan, found)}};
}

// The key of a trace's analysis for an arch ("" or "none": none).
std::string kept_key(const std::string& arch_name) {
  return "insights:" + (arch_name.empty() ? std::string("none") : arch_name);
}

// The arch the call names (resolved), else the trace's.
std::string arch_of_call(const json& args, ToolContext& ctx, const LoadedTrace& entry) {
  std::string arch_name = ctx.arch(args.value("arch", std::string()));
  if (arch_name.empty()) arch_name = engine::detect_arch_name(entry.trace());
  return arch_name;
}

// The reply to `args` from an analysis (derive_analysis): what the tool
// answered when it derived the findings in the same call.
ToolResult format_analysis(const json& args, const json& analysis, const std::string& handle) {
  const std::string rule = args.value("rule", std::string());
  const size_t top_n = row_limit(args);
  const json& findings = analysis.at("findings");
  json rows = json::array();
  std::string lines;
  size_t matched = 0, row_bytes = 0;
  const bool brief = default_reply(args);
  const bool summary = detail_of(args) == Detail::Summary;
  bool full_rows = false;  // a default reply reached its bytes: later rows are left out
  for (const auto& finding : findings) {
    const json& kept_row = finding.at("row");
    if (!rule.empty() && kept_row.at("rule").get<std::string>() != rule) continue;
    if (++matched > top_n || full_rows) continue;
    json row = kept_row;
    // Ready to pass to what_if as it stands: the trace is this handle.
    if (row.contains("what_if") && row["what_if"].is_object()) row["what_if"]["trace"] = handle;
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
    if (!summary && (brief || rows.size() <= kTextInsights))
      lines += finding.at("line").get<std::string>();
  }
  // The count is of what the call asked for: one rule's findings when
  // filtered, with the whole trace's beside it.
  std::string text = rule.empty()
                         ? fmt::format("{} insights on {}", matched, handle)
                         : fmt::format("{} {} insight{} on {} (of {} insights)", matched, rule,
                                       matched == 1 ? "" : "s", handle, findings.size());
  const bool has_arch = !analysis.at("arch").is_null();
  text += has_arch ? "\n" : " (no GPU arch: rules needing peaks skipped)\n";
  // The first answer: the top changes one after the other, each sized once
  // (no plan for one rule's findings).
  if (!lines.empty()) text += analysis.at("units").get<std::string>();
  if (rule.empty()) text += analysis.at("plan_text").get<std::string>();
  text += lines;
  if (!brief && !summary && rows.size() > kTextInsights)
    text += fmt::format("(the first {} listed here; all {} in the structured result)\n",
                        kTextInsights, rows.size());
  json result = {{"trace", handle},
                 {"arch", analysis.at("arch")},
                 {"rules", analysis.at("rules")},
                 {"total_kernel_time_us", analysis.at("total_kernel_time_us")},
                 {"insight_count", matched},
                 {"insights", rows}};
  if (rule.empty() && !analysis.at("plan").is_null()) result["plan"] = analysis.at("plan");
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
    out.suggest("parent_chain", {{"trace", handle}, {"uid", rows[0]["uids"][0]}},
                "the call stack behind the top insight");
  out.suggest("make_replay",
              {{"trace", handle}, {"output_dir", "<dir>"}, {"op", "<op of an insight>"}},
              "a standalone reproducer to verify a fix before applying it");
  return out;
}

ToolResult insights_tool(const json& args, ToolContext& ctx) {
  auto entry = trace_arg(args, ctx);
  const auto analysis = insights_analysis(*entry, arch_of_call(args, ctx, *entry), ctx);
  PhaseTimer t("insights/format_analysis");
  return format_analysis(args, *analysis, entry->handle());
}

// The server's answer from an analysis a call kept on this trace, without a
// worker; nullopt when none was kept for the call's arch.
std::optional<ToolResult> insights_from_kept(const json& args, ToolContext& ctx) {
  // Only a handle this session lists, whose trace is resident: a trace path
  // (stateless clients) or an evicted trace would be parsed here, in the
  // server, where the worker parses it otherwise.
  const std::string handle = args.at("trace").get<std::string>();
  const auto listed = ctx.traces().list();
  const auto it = std::find_if(listed.begin(), listed.end(),
                               [&](const TraceStore::HandleInfo& h) { return h.handle == handle; });
  if (it == listed.end()) return std::nullopt;
  try {
    if (!ctx.traces().cache().find_resident(identify_file(it->path))) return std::nullopt;
  } catch (const TraceError&) {
    return std::nullopt;
  }
  auto entry = ctx.traces().get(handle);
  // Its health block first: trace_arg notes it, and in the server it must
  // not be computed here (a trace parsed again after an eviction).
  if (!entry || !loaded_trace_health_ready(*entry)) return std::nullopt;
  auto analysis = kept_insights_analysis(*entry, arch_of_call(args, ctx, *entry), ctx);
  if (!analysis) return std::nullopt;
  trace_arg(args, ctx);  // the trace's caveats, as the worker notes them
  return format_analysis(args, *analysis, entry->handle());
}

}  // namespace

std::shared_ptr<const json> kept_insights_analysis(const LoadedTrace& entry,
                                                   const std::string& arch_name,
                                                   const ToolContext& ctx) {
  return ctx.kept(entry, kept_key(arch_name == "none" ? "" : arch_name));
}

std::shared_ptr<const json> insights_analysis(const LoadedTrace& entry,
                                              const std::string& arch_name, ToolContext& ctx) {
  if (auto kept = kept_insights_analysis(entry, arch_name, ctx)) return kept;
  std::optional<GpuArch> arch;
  try {
    if (!arch_name.empty() && arch_name != "none") arch = engine::load_gpu_arch(arch_name);
  } catch (const engine::GpuArchError& e) {
    throw ToolError(e.what());
  }
  std::optional<PhaseTimer> t(std::in_place, "insights/derive_analysis");
  auto derived = std::make_shared<const json>(derive_analysis(entry, arch, arch_name));
  t.emplace("insights/keep");
  ctx.keep(entry, kept_key(arch_name == "none" ? "" : arch_name), derived);
  return derived;
}

JARVIS_MCP_TOOL(insights, insights_tool);
JARVIS_MCP_TOOL_KEPT(insights, insights_from_kept);
}  // namespace jarvis::mcp
