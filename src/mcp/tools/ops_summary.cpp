// ops_summary: the report's ops_summary rows with perf-model aggregates.
#include <fmt/format.h>

#include "engine/engine.h"
#include "mcp/result_shape.h"
#include "mcp/tool.h"
#include "mcp/tools/insights_analysis.h"
#include "mcp/tools/trace_arg.h"

namespace jarvis::mcp {
namespace {

// Rows the text summary lists; structuredContent has up to `limit`.
constexpr size_t kTextRows = 10;

std::string rows_text(const json& result) {
  // Every figure of the rows is a total over the whole trace, as profiled:
  // the header says so, with the steps' mean beside it (issue 73 point 6).
  std::string text = fmt::format(
      "ops_summary of {} ({} of {} ops shown, total direct kernel time {:.4f} ms {}; the rows' "
      "times are totals too):\n",
      result["trace"].get<std::string>(), result["rows"].size(),
      result["matched_rows"].get<int64_t>(), result["total_direct_kernel_time_ms"].get<double>(),
      result.contains("scope")
          ? step_scope_text(result["scope"], "total_direct_kernel_time_ms", "ms")
          : std::string("over the whole trace, profiled"));
  size_t listed = 0;
  for (const auto& row : result["rows"]) {
    if (++listed > kTextRows) break;
    double ms = row["total_direct_kernel_time_ms"].is_number()
                    ? row["total_direct_kernel_time_ms"].get<double>()
                    : 0;
    double pct = row["percent"].is_number() ? row["percent"].get<double>() : 0;
    text += fmt::format("  {:>7.3f} ms {:6.2f}%  x{:<5} {}", ms, pct, row["count"].get<int64_t>(),
                        row["name"].get<std::string>());
    if (row["perf"].is_object() && row["perf"]["tflops_per_s"].is_number())
      text += fmt::format(
          "  [{:.2f} TFLOPS/s, {:.3f} TB/s, {}]", row["perf"]["tflops_per_s"].get<double>(),
          row["perf"]["tb_per_s"].is_number() ? row["perf"]["tb_per_s"].get<double>() : 0.0,
          row["perf"]["roofline_bound"].is_string()
              ? row["perf"]["roofline_bound"].get<std::string>()
              : "?");
    if (row["perf"].is_object() &&
        row["perf"].value("pct_roofline_above_roof_reason", json()).is_string())
      text += fmt::format(" {:.1f}% of the roofline, {}", row["perf"]["pct_roofline"].get<double>(),
                          row["perf"]["pct_roofline_above_roof_reason"].get<std::string>());
    text += "\n";
  }
  if (result.contains("collectives")) {
    const json& c = result["collectives"];
    text += fmt::format("  collectives: {} kernels, {:.3f} ms busy, {:.3f} ms exposed\n",
                        c["count"].get<int64_t>(), c["total_us"].get<double>() / 1e3,
                        c["exposed_us"].get<double>() / 1e3);
  }
  if (result.contains("model_failures"))
    for (const auto& f : result["model_failures"])
      text += fmt::format("  perf model failed for {} op(s) of {}: {}\n", f["count"].get<int64_t>(),
                          f["op"].get<std::string>(), f["reason"].get<std::string>());
  for (const auto& i : result["insights"])
    text += fmt::format("insight [{}] {}: {}\n", i["severity"].get<std::string>(),
                        i["rule"].get<std::string>(), i["title"].get<std::string>());
  return text;
}

// The five insights with the largest recoverable time (of the category when
// one is asked for), in short form; the insights tool has the full objects.
// Read from the insights analysis of the trace (insights_analysis.h): kept by
// an earlier insights or ops_summary call, or derived here and kept for them.
json top_insights(const LoadedTrace& entry, const std::string& arch_name,
                  const std::string& category, ToolContext& ctx) {
  const auto analysis = insights_analysis(entry, arch_name, ctx);
  json out = json::array();
  for (const json& finding : analysis->at("findings")) {
    const json& full = finding.at("row");
    if (!category.empty() &&
        !engine::category_named_by(full.at("category").get<std::string>(), category))
      continue;
    if (out.size() == 5) break;
    out.push_back({{"rule", full["rule"]},
                   {"severity", full["severity"]},
                   {"title", full["title"]},
                   {"recoverable_us_total", full["recoverable_us_total"]},
                   {"recoverable_us_per_step", full["recoverable_us_per_step"]},
                   {"step_saving_us_per_step", full["step_saving_us_per_step"]},
                   {"recoverable_method", full["recoverable_method"]}});
  }
  return out;
}

// rocprofv3 traces have no ops: the kernel summary answers instead, one row
// per kernel name (no perf model, no insights: both need the op tree).
ToolResult rocprof_fallback(const std::string& handle, const engine::RocprofProfile& profile,
                            const engine::OpsSummaryQuery& query) {
  json result;
  try {
    result = engine::rocprof_ops_summary_rows(profile, query);
  } catch (const std::invalid_argument& e) {
    throw ToolError(e.what());
  }
  result["trace"] = handle;
  result["arch"] = nullptr;
  result["insights"] = json::array();
  std::string text = fmt::format(
      "{} is a rocprofv3 trace (no CPU ops): kernel summary instead of ops_summary, rows are "
      "kernel names.\n",
      handle);
  ToolResult out{result, text + rows_text(result)};
  out.rows("/rows", result["matched_rows"].get<size_t>());
  return out;
}

ToolResult ops_summary_tool(const json& args, ToolContext& ctx) {
  std::string handle = args.at("trace").get<std::string>();
  auto entry = trace_arg(args, ctx);
  engine::OpsSummaryQuery query;
  query.top_n = row_limit(args);
  query.sort_by = args.at("sort_by").get<std::string>();
  query.category = args.value("category", std::string());
  query.min_percent = args.at("min_percent").get<double>();
  if (auto profile = engine::rocprof_profile(*entry))
    return rocprof_fallback(handle, *profile, query);
  std::string arch = ctx.arch(args.value("arch", std::string()));
  std::string used_arch = arch.empty() ? engine::detect_arch_name(entry->trace()) : arch;
  std::shared_ptr<const Report> report;
  try {
    report = engine::trace_report(*entry, arch);
  } catch (const engine::GpuArchError& e) {
    throw ToolError(fmt::format("{}; pass arch as one of the bundled names or 'none'", e.what()));
  }
  json result;
  try {
    result = engine::ops_summary_rows(*report, query);
  } catch (const std::invalid_argument& e) {
    throw ToolError(e.what());
  }
  result["trace"] = handle;
  result["source"] = "ops_summary";
  result["scope"] = step_scope_json(*entry, result["total_direct_kernel_time_ms"].get<double>(),
                                    "total_direct_kernel_time_ms");
  result["arch"] = used_arch.empty() || used_arch == "none" ? json() : json(used_arch);
  if (json coll = engine::loaded_trace_collectives_json(*entry); !coll.is_null())
    result["collectives"] = coll;
  result["insights"] = top_insights(*entry, used_arch, query.category, ctx);
  if (!report->model_failures.empty()) {
    json failures = json::array();
    for (const ModelFailure& f : report->model_failures)
      failures.push_back({{"op", f.op}, {"reason", f.reason}, {"count", f.count}});
    result["model_failures"] = std::move(failures);
  }
  ToolResult out{result, rows_text(result)};
  out.rows("/rows", result["matched_rows"].get<size_t>());  // insights: five at most
  if (!result["rows"].empty())
    out.suggest("parent_chain",
                {{"trace", handle}, {"op_name", result["rows"][0]["name"]}, {"subtree_depth", 1}},
                "where the top op is called from and which kernels it launches");
  bool has_gemm = false;
  for (const auto& row : result["rows"])
    for (const auto& c : row.value("perf_categories", json::array()))
      has_gemm = has_gemm || c == "GEMM";
  if (has_gemm)
    out.suggest("gemm_roofline", {{"trace", handle}}, "per-shape GEMM efficiency and bound");
  out.suggest("insights", {{"trace", handle}}, "ranked fixes with the time they could recover");
  return out;
}

}  // namespace
JARVIS_MCP_TOOL(ops_summary, ops_summary_tool);
}  // namespace jarvis::mcp
