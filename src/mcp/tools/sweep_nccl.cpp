// sweep_nccl: collective counts, latency, bandwidth and cross-rank skew per
// configuration.
#include "mcp/tool.h"
#include "mcp/tools/sweep_common.h"

namespace jarvis::mcp {
namespace {

ToolResult sweep_nccl_tool(const json& args, ToolContext& ctx) {
  auto s = sweep_tools::get_sweep(args);
  Table t = sweep::nccl_table(*s);
  json result = {{"sweep", args.at("sweep")},
                 {"row_count", t.rows.size()},
                 {"rows", sweep_tools::rows_json(t, args.at("max_rows").get<size_t>())},
                 {"files", sweep_tools::write_if_asked(args, ctx, {t})}};
  return result;
}

}  // namespace
JARVIS_MCP_TOOL(sweep_nccl, sweep_nccl_tool);
}  // namespace jarvis::mcp
