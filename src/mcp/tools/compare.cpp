// compare: TraceLens report comparison of a reference and a target trace plus
// hardware-expected ratios. Adapter only: resolves each input (handle, trace
// path, report directory or workbook) and the output directory through the session's
// root confinement, then calls the engine (compare/compare_traces.h), which
// also tells traces from report directories and workbooks.
#include <cmath>
#include <filesystem>

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "engine/engine.h"
#include "mcp/result_shape.h"
#include "mcp/tool.h"
#include "mcp/tools/trace_arg.h"

namespace jarvis::mcp {
namespace {

struct Input {
  PreparedReport prepared;
  json handle;  // the trace handle, or null for a report directory
};

// Runs `read`, naming the argument in the message of a plain
// std::runtime_error (input detection, report reading); tool, trace and arch
// errors pass through unchanged.
template <class F>
Input for_argument(const std::string& argument, F&& read) {
  try {
    return read();
  } catch (const ToolError&) {
    throw;
  } catch (const TraceError&) {
    throw;
  } catch (const engine::GpuArchError&) {
    throw;
  } catch (const std::runtime_error& e) {
    throw ToolError(argument + ": " + e.what());
  }
}

Input prepare_input(const std::string& argument, const std::string& value, const std::string& tag,
                    const std::string& arch, ToolContext& ctx) {
  // A trace path is loaded under a handle of this session (reported back),
  // not served per call as other tools' path arguments are.
  bool trace_file = value.ends_with(".json") || value.ends_with(".gz");
  auto entry = trace_file ? nullptr : ctx.traces().get(value);
  if (entry) {
    note_trace_health(*entry, ctx);
    return {engine::prepare_loaded_trace(*entry, tag, arch), entry->handle()};
  }
  auto path = ctx.resolve_path(value, /*must_exist=*/true, /*for_write=*/false);
  return for_argument(argument, [&]() -> Input {
    // The engine tells traces from report directories and workbooks.
    CompareInput input = engine::detect_compare_input(path.string());
    if (input.kind != CompareInputKind::Trace)
      return {engine::prepare_report_input(input, tag, arch), json()};
    // A trace goes through load_trace's checks (trace names, nothing we wrote).
    auto loaded = ctx.traces().load(ctx.paths().trace_path(input.path).string()).entry;
    note_trace_health(*loaded, ctx);
    return {engine::prepare_loaded_trace(*loaded, tag, arch), loaded->handle()};
  });
}

std::string num(const json& j, const char* fmt_spec = "{:.3f}") {
  return j.is_number() ? fmt::format(fmt::runtime(fmt_spec), j.get<double>()) : "-";
}

std::string compare_summary_text(const json& r) {
  std::string ref = r["reference"]["tag"], tgt = r["target"]["tag"];
  std::string text = fmt::format("Comparison: reference {} vs target {}.\n", ref, tgt);
  if (r["gpu_timeline"].is_array()) {
    text += "gpu_timeline (ms, reference -> target, diff %):\n";
    for (const auto& row : r["gpu_timeline"])
      text += fmt::format("  {:<20} {} -> {} ({}%)\n", row["type"].get<std::string>(),
                          num(row["reference_ms"]), num(row["target_ms"]),
                          num(row["diff_pct"], "{:+.1f}"));
  }
  if (r["ops_summary"].is_array() && !r["ops_summary"].empty()) {
    // The largest changes first: what the comparison is about.
    std::vector<const json*> rows;
    for (const auto& row : r["ops_summary"])
      if (row["diff_ms"].is_number()) rows.push_back(&row);
    std::stable_sort(rows.begin(), rows.end(), [](const json* a, const json* b) {
      return std::fabs((*a)["diff_ms"].get<double>()) > std::fabs((*b)["diff_ms"].get<double>());
    });
    text += "largest op changes (kernel ms, reference -> target, diff):\n";
    for (size_t k = 0; k < rows.size() && k < 5; ++k)
      text += fmt::format("  {:<28} {} -> {} ({} ms, {}%)\n", (*rows[k])["name"].get<std::string>(),
                          num((*rows[k])["reference_ms"]), num((*rows[k])["target_ms"]),
                          num((*rows[k])["diff_ms"], "{:+.3f}"),
                          num((*rows[k])["diff_pct"], "{:+.1f}"));
  }
  if (r["hardware_gaps"].is_object()) {
    const auto& g = r["hardware_gaps"];
    text +=
        fmt::format("{} of {} matched ops to investigate on the target (measured/expected > {}):\n",
                    g["flagged_count"].get<size_t>(), g["matched_ops"].get<size_t>(),
                    g["thresholds"]["gap_threshold"].get<double>());
    size_t listed = 0;
    for (const auto& op : g["flagged"])
      if (++listed <= 10)
        text += fmt::format("  {:5.1f}% of target  {} {}: {}\n",
                            op["target_share_pct"].get<double>(), op["name"].get<std::string>(),
                            op["input_dims"].get<std::string>(), op["why"].get<std::string>());
  }
  for (const auto& n : r["notes"]) text += "note: " + n.get<std::string>() + "\n";
  return text;
}

ToolResult compare_tool(const json& args, ToolContext& ctx) {
  CompareTracesOptions options;
  options.reference_tag = args.at("reference_tag").get<std::string>();
  options.target_tag = args.at("target_tag").get<std::string>();
  options.arch_reference = ctx.arch(args.value("arch_reference", std::string()));
  options.arch_target = ctx.arch(args.value("arch_target", std::string()));
  options.compare.sheet_groups = args.at("sheets").get<std::vector<std::string>>();
  options.gaps.gap_threshold = args.at("gap_threshold").get<double>();
  options.gaps.min_target_share = args.at("min_target_share_pct").get<double>() / 100.0;
  options.iteration = args.at("iteration").get<size_t>();
  options.iterations = args.at("iterations").get<std::string>();
  if (options.reference_tag == options.target_tag)
    throw ToolError("reference_tag and target_tag must differ");
  if (args.contains("output_dir"))
    options.output_dir =
        ctx.output_dir(args.at("output_dir").get<std::string>(), args.at("overwrite").get<bool>())
            .string();
  Input ref, tgt;
  try {
    ctx.report_progress(0, 3, "reference report");
    ref = prepare_input("reference_trace", args.at("reference_trace").get<std::string>(),
                        options.reference_tag, options.arch_reference, ctx);
    ctx.throw_if_cancelled();
    ctx.report_progress(1, 3, "target report");
    tgt = prepare_input("target_trace", args.at("target_trace").get<std::string>(),
                        options.target_tag, options.arch_target, ctx);
    ctx.throw_if_cancelled();
  } catch (const engine::GpuArchError& e) {
    throw ToolError(
        fmt::format("{}; pass a bundled arch name, an arch JSON path, or 'none'", e.what()));
  }
  ctx.report_progress(2, 3, "comparing");
  TraceComparison c = engine::compare_prepared_reports(
      std::move(ref.prepared.report), std::move(tgt.prepared.report), std::move(ref.prepared.arch),
      std::move(tgt.prepared.arch), options);
  engine::add_step_views(c, ref.prepared, tgt.prepared, options);
  if (!options.output_dir.empty()) ctx.paths().mark_output_dir(options.output_dir);
  json result = c.summary(row_limit(args));
  result["reference"]["handle"] = ref.handle;
  result["target"]["handle"] = tgt.handle;
  ToolResult out{result, compare_summary_text(result)};
  out.rows("/ops_summary");
  if (result["hardware_gaps"].is_object())
    out.rows("/hardware_gaps/flagged", result["hardware_gaps"]["flagged_count"].get<size_t>());
  if (result["hardware_gaps"].is_object() && !result["hardware_gaps"]["flagged"].empty() &&
      tgt.handle.is_string())
    out.suggest("parent_chain",
                {{"trace", tgt.handle}, {"op_name", result["hardware_gaps"]["flagged"][0]["name"]}},
                "where the largest unexplained target op runs");
  return out;
}

}  // namespace
JARVIS_MCP_TOOL(compare, compare_tool);
}  // namespace jarvis::mcp
