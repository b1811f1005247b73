// sweep_gpu_timeline: the GPU timeline of every configuration side by side
// (mean over the ranks of a config).
#include "mcp/tool.h"
#include "mcp/tools/sweep_common.h"

namespace jarvis::mcp {
namespace {

ToolResult sweep_gpu_timeline_tool(const json& args, ToolContext& ctx) {
  auto s = sweep_tools::get_sweep(args);
  std::vector<Table> tables = sweep::gpu_timeline_tables(*s);
  for (Table& t : tables) t.name = "gpu_timeline_" + t.name;
  const size_t all = 100000;
  json result = {{"sweep", args.at("sweep")},
                 {"summary_by_config", sweep_tools::rows_json(tables[3], all)},
                 {"pivot_time_ms", sweep_tools::rows_json(tables[1], all)},
                 {"pivot_percent", sweep_tools::rows_json(tables[2], all)},
                 {"files", sweep_tools::write_if_asked(args, ctx, tables)}};
  return result;
}

}  // namespace
JARVIS_MCP_TOOL(sweep_gpu_timeline, sweep_gpu_timeline_tool);
}  // namespace jarvis::mcp
