// sweep_gpu_timeline: the GPU timeline of every configuration side by side
// (mean over the ranks of a config).
#include <fmt/format.h>

#include "mcp/result_shape.h"
#include "mcp/tool.h"
#include "mcp/tools/sweep_common.h"

namespace jarvis::mcp {
namespace {

ToolResult sweep_gpu_timeline_tool(const json& args, ToolContext& ctx) {
  auto s = sweep_tools::get_sweep(args);
  std::vector<Table> tables = engine::gpu_timeline_tables(*s);
  for (Table& t : tables) t.name = "gpu_timeline_" + t.name;
  const size_t all = row_limit(args);
  json result = {{"sweep", args.at("sweep")},
                 {"summary_by_config", sweep_tools::rows_json(tables[3], all)},
                 {"pivot_time_ms", sweep_tools::rows_json(tables[1], all)},
                 {"pivot_percent", sweep_tools::rows_json(tables[2], all)},
                 {"files", sweep_tools::write_if_asked(args, ctx, tables)}};
  ToolResult out{result, fmt::format("sweep_gpu_timeline {}: {} configurations.\n",
                                     args.at("sweep").get<std::string>(), tables[3].rows.size())};
  out.rows("/summary_by_config", tables[3].rows.size())
      .rows("/pivot_time_ms", tables[1].rows.size())
      .rows("/pivot_percent", tables[2].rows.size());
  return out;
}

}  // namespace
JARVIS_MCP_TOOL(sweep_gpu_timeline, sweep_gpu_timeline_tool);
}  // namespace jarvis::mcp
