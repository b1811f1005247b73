// collective_report: confine the paths, run the multi-rank collective report,
// optionally write its CSV tables.
#include <fmt/format.h>

#include "engine/engine.h"
#include "mcp/tool.h"
#include "mcp/tools/critical_path_common.h"

namespace jarvis::mcp {
namespace {

std::string collective_summary_text(const json& result) {
  std::string text = fmt::format("{} ranks, {} matched collective instances.\n",
                                 result["ranks"].size(), result["instance_count"].get<size_t>());
  size_t listed = 0;
  for (const auto& row : result["summary"])
    if (++listed <= 10)
      text += fmt::format(
          "  {} {} x{}: comm {:.1f} us total, mean skew {:.1f} us, straggler rank {}\n",
          row["collective"].get<std::string>(), row["dtype"].get<std::string>(),
          row["count"].get<int64_t>(), row["total_comm_us"].get<double>(),
          row["start_skew_us_mean"].get<double>(), row["straggler_rank"].get<int64_t>());
  return text;
}

ToolResult collective_report_tool(const json& args, ToolContext& ctx) {
  std::vector<std::string> paths;
  for (const auto& p : args.at("traces"))
    paths.push_back(ctx.paths().trace_path(p.get<std::string>()).string());
  std::string out_dir;
  if (args.contains("output_dir"))
    out_dir =
        ctx.output_dir(args.at("output_dir").get<std::string>(), args.at("overwrite").get<bool>())
            .string();
  // One rank trace is parsed at a time (only its analysis is kept): the
  // largest one's estimated parse is reserved under --max-memory.
  TraceCache::Reservation reservation = cp_tools::reserve_ranks(ctx, paths, /*all_at_once=*/false);
  engine::CollectiveReportOptions options;
  options.alignment = args.at("align").get<std::string>() == "none"
                          ? engine::TimeAlignment::None
                          : engine::TimeAlignment::CollectiveEnd;
  options.progress = [&ctx](size_t done, size_t total) {
    ctx.report_progress(static_cast<double>(done), static_cast<double>(total + 1),
                        fmt::format("{} of {} rank traces loaded", done, total));
    return !ctx.cancelled();
  };
  engine::CollectiveReportResult result;
  try {
    result = engine::collective_report(paths, options);
  } catch (const engine::CollectiveError& e) {
    throw ToolError(e.what());
  } catch (const TraceError& e) {
    throw ToolError(e.what());
  }
  json structured = engine::multi_rank_json(result, args.at("top_n").get<size_t>());
  structured["files"] = json::array();
  if (!out_dir.empty()) {
    try {
      structured["files"] = engine::write_collective_tables(result.tables, out_dir);
      ctx.paths().mark_output_dir(out_dir);
    } catch (const std::runtime_error& e) {
      throw ToolError(fmt::format("cannot write the tables to {}: {}", out_dir, e.what()));
    }
  }
  return {structured, collective_summary_text(structured)};
}

}  // namespace
JARVIS_MCP_TOOL(collective_report, collective_report_tool);
}  // namespace jarvis::mcp
