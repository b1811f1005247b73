// compare_sweeps: baseline vs candidate sweep per config and per GEMM row,
// with each change marked inside or beyond run-to-run noise.
#include <fmt/format.h>

#include "mcp/result_shape.h"
#include "mcp/tool.h"
#include "mcp/tools/sweep_common.h"

namespace jarvis::mcp {
namespace {

ToolResult compare_sweeps_tool(const json& args, ToolContext& ctx) {
  auto base = sweep_tools::get_sweep(args, "base");
  auto cand = sweep_tools::get_sweep(args, "candidate");
  std::vector<Table> tables;
  try {
    tables = engine::compare_sweeps(*base, *cand);
  } catch (const engine::SweepError& e) {
    throw ToolError(e.what());
  }
  size_t max_rows = row_limit(args);
  json result = {{"base", args.at("base")},
                 {"candidate", args.at("candidate")},
                 {"gpu_timeline", sweep_tools::rows_json(tables[0], max_rows)},
                 {"gemm_kernels", sweep_tools::rows_json(tables[1], max_rows)},
                 {"gemm_kernel_row_count", tables[1].rows.size()},
                 {"files", sweep_tools::write_if_asked(args, ctx, tables)}};
  ToolResult out{
      result,
      fmt::format("compare_sweeps {} -> {}: {} GPU-timeline rows, {} GEMM kernel rows.\n",
                  args.at("base").get<std::string>(), args.at("candidate").get<std::string>(),
                  tables[0].rows.size(), tables[1].rows.size())};
  out.rows("/gpu_timeline", tables[0].rows.size()).rows("/gemm_kernels", tables[1].rows.size());
  return out;
}

}  // namespace
JARVIS_MCP_TOOL(compare_sweeps, compare_sweeps_tool);
}  // namespace jarvis::mcp
