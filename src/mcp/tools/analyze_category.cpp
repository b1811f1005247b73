// analyze_category: runs one TraceLens category analysis on a prepared
// directory (category_filter output) and returns its markdown digest.
#include <filesystem>

#include <fmt/format.h>
#include "engine/engine.h"

#include "mcp/result_shape.h"
#include "mcp/tool.h"
#include "mcp/tools/trace_arg.h"

namespace jarvis::mcp {
namespace {

bool is_system(const std::string& kind) {
  return kind == "cpu_idle" || kind == "multi_kernel" || kind == "kernel_fusion";
}

// The what-if impact ranges, loading the prepared trace only inside the roots.
engine::ojson what_if_of(const engine::AnalyzeResult& r, const std::string& dir, ToolContext& ctx) {
  std::string trace = engine::prepared_trace_path(dir);
  if (!trace.empty()) {
    try {
      trace = ctx.resolve_path(trace, true, false).string();
    } catch (const ToolError&) {
      trace.clear();  // outside the allowed roots: not read
    }
  }
  return engine::what_if_impacts(r.metrics, trace);
}

// The metrics for the agent: the first top_ops operations, each with its
// regime and tuning headroom (categories/op_regimes.h).
json summary_of(const engine::ojson& m, const engine::ojson& regimes, size_t top_ops) {
  engine::ojson annotated = m;
  if (annotated.contains("operations"))
    engine::annotate_operations(annotated["operations"], regimes);
  json s(annotated);
  if (s.contains("operations") && s["operations"].size() > top_ops) {
    s["operations_omitted"] = s["operations"].size() - top_ops;
    s["operations"].erase(s["operations"].begin() + static_cast<long>(top_ops),
                          s["operations"].end());
  }
  return s;
}

// The digest's opening (title, overview, first bottlenecks), cut at a line
// boundary: the text summary. The whole digest is in structured `markdown`
// at detail=full.
std::string digest_head(const std::string& markdown, size_t max_bytes) {
  if (markdown.size() <= max_bytes) return markdown;
  size_t cut = markdown.rfind('\n', max_bytes);
  if (cut == std::string::npos) cut = max_bytes;
  return markdown.substr(0, cut + 1) +
         fmt::format(
             "... ({} more bytes of the digest: pass detail=full for all of it in "
             "`markdown`)\n",
             markdown.size() - cut - 1);
}

// Bytes of the digest the text summary keeps.
constexpr size_t kTextDigestBytes = 1152;

ToolResult analyze_category_tool(const json& args, ToolContext& ctx) {
  auto dir = ctx.resolve_path(args.at("output_dir").get<std::string>(), true, false);
  std::string category = args.at("category").get<std::string>();
  engine::AnalyzeResult r;
  try {
    r = engine::analyze_category(dir.string(), category);
  } catch (const std::invalid_argument& e) {
    throw ToolError(e.what());
  }
  const json health(engine::prepared_trace_health(dir.string()));
  ctx.add_trace_caveats(dir.string(), health);
  if (args.at("what_if").get<bool>() && r.status == "OK" && !is_system(r.kind))
    r.impact_what_if = what_if_of(r, dir.string(), ctx);
  json result = {{"category", category},
                 {"kind", r.kind},
                 {"status", r.status},
                 {"metrics_path", r.metrics_path},
                 {"metrics", summary_of(r.metrics, r.regimes, row_limit(args))},
                 {"markdown", r.markdown},
                 {"insights", json(r.insights)},
                 {"impact_what_if", json(r.impact_what_if)},
                 {"regimes", json(r.regimes)},
                 {"idle", json(r.idle)},
                 {"draft_findings_path", nullptr}};
  // The metrics' times, the tuning headroom and the impact estimates are
  // totals over the whole trace, as profiled (issue 73 point 6): the scope
  // says so, with the headroom per step where the steps are known.
  const double headroom_ms = r.regimes.is_object() && r.regimes.contains("tuning_headroom_ms") &&
                                     r.regimes["tuning_headroom_ms"].is_number()
                                 ? r.regimes["tuning_headroom_ms"].get<double>()
                                 : 0.0;
  result["scope"] = step_scope_json(health, headroom_ms, "tuning_headroom_ms");
  std::string scope_line;
  if (result["scope"]["steps"].is_number())
    scope_line = fmt::format(
        "Times below are totals over the whole trace ({} steps), as profiled; the tuning "
        "headroom is {:.3f} ms per step.\n",
        result["scope"]["steps"].get<size_t>(),
        result["scope"]["tuning_headroom_ms_per_step"].get<double>());
  else
    scope_line = "Times below are totals over the whole trace, as profiled.\n";
  if (args.at("write_draft").get<bool>() && r.status != "ERROR") {
    std::string path = engine::findings_path(dir.string(), category);
    if (!std::filesystem::exists(path)) {
      auto target = ctx.output_file(path, ".md");  // no symlinks, inside the roots
      result["draft_findings_path"] =
          engine::write_findings(dir.string(), category, engine::draft_findings(r));
      ctx.paths().note_written(target);
    }
  }
  ToolResult out{result, engine::regimes_summary(r.regimes) + scope_line +
                             digest_head(r.markdown, kTextDigestBytes)};
  out.rows("/metrics/operations", result["metrics"].contains("operations")
                                      ? result["metrics"]["operations"].size() +
                                            result["metrics"].value("operations_omitted", size_t{0})
                                      : 0)
      .rows("/insights")
      .rows("/metrics/category_findings")
      .rows("/metrics/impact_estimates")
      .rows("/impact_what_if/estimates");
  if (r.idle.is_object()) out.rows("/idle/largest_gaps").rows("/idle/by_place");
  // The per-op regimes are on /metrics/operations; the list repeats them.
  out.full_only.push_back("/regimes/ops");
  out.full_only.push_back("/regimes/floor_basis");
  out.full_only.push_back("/regimes/by_regime");  // the text summary line says it
  // Below detail=full: the per-row fields the markdown and the other fields
  // already carry, and the lists the metrics file keeps (metrics_path).
  // warning / is_anomaly are the row's efficiency_warning (present when
  // there is one); the tuning headroom is in /regimes/ops.
  for (const char* field :
       {"Input Dims", "Input type", "call_chain", "module_chain", "kernel_name_trunc",
        "FLOPS~1Byte", "efficiency/warning", "efficiency/is_anomaly", "tuning_headroom_ms"})
    out.full_only.push_back(std::string("/metrics/operations/*/") + field);
  // A category_findings member repeats its group's bound, library and method.
  for (const char* field : {"category", "type", "estimate_method", "bound_type", "library"})
    out.full_only.push_back(std::string("/metrics/category_findings/*/members/*/") + field);
  // A what-if estimate repeats its operation's shapes and the metrics' own range.
  for (const char* field :
       {"args", "trace_time_impact_low", "trace_time_impact_high", "factor_low", "estimate_method",
        "time_ms", "factor_high", "kernels", "kernel_time_ms"})
    out.full_only.push_back(std::string("/impact_what_if/estimates/*/") + field);
  out.full_only.push_back("/markdown");
  out.full_only.push_back("/metrics/high_confidence_kernel_map");
  out.full_only.push_back("/metrics/impact_estimates/*/affected_gpu_kernels");
  if (r.kind != "kernel_fusion") out.full_only.push_back("/metrics/impact_estimates");
  if (result["draft_findings_path"].is_null())
    out.suggest("analyze_category",
                {{"output_dir", dir.string()}, {"category", category}, {"write_draft", true}},
                "write a findings draft to edit");
  out.suggest("write_findings",
              {{"output_dir", dir.string()}, {"category", category}, {"markdown", "<findings>"}},
              "store the checked findings for this category");
  return out;
}

}  // namespace
JARVIS_MCP_TOOL(analyze_category, analyze_category_tool);
}  // namespace jarvis::mcp
