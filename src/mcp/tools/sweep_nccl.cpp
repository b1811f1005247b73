// sweep_nccl: collective counts, latency, bandwidth and cross-rank skew per
// configuration.
#include <fmt/format.h>

#include "mcp/result_shape.h"
#include "mcp/tool.h"
#include "mcp/tools/sweep_common.h"

namespace jarvis::mcp {
namespace {

ToolResult sweep_nccl_tool(const json& args, ToolContext& ctx) {
  auto s = sweep_tools::get_sweep(args);
  Table t = engine::nccl_table(*s);
  json result = {{"sweep", args.at("sweep")},
                 {"row_count", t.rows.size()},
                 {"rows", sweep_tools::rows_json(t, row_limit(args))},
                 {"files", sweep_tools::write_if_asked(args, ctx, {t})}};
  ToolResult out{result, fmt::format("sweep_nccl {}: {} rows (configuration x collective).\n",
                                     args.at("sweep").get<std::string>(), t.rows.size())};
  out.rows("/rows", t.rows.size());
  return out;
}

}  // namespace
JARVIS_MCP_TOOL(sweep_nccl, sweep_nccl_tool);
}  // namespace jarvis::mcp
