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
  std::string reason = engine::nccl_empty_reason(*s);
  json result = {{"sweep", args.at("sweep")},
                 {"row_count", t.rows.size()},
                 {"rows", sweep_tools::rows_json(t, row_limit(args))},
                 {"files", sweep_tools::write_if_asked(args, ctx, {t})}};
  if (!reason.empty()) result["reason"] = reason;
  ToolResult out{result, reason.empty()
                             ? fmt::format("sweep_nccl {}: {} rows (configuration x collective).\n",
                                           args.at("sweep").get<std::string>(), t.rows.size())
                             : fmt::format("sweep_nccl {}: 0 rows: {}.\n",
                                           args.at("sweep").get<std::string>(), reason)};
  out.rows("/rows", t.rows.size());
  return out;
}

}  // namespace
JARVIS_MCP_TOOL(sweep_nccl, sweep_nccl_tool);
}  // namespace jarvis::mcp
