// sweep_gemm_variance: the GEMM rows whose kernel time varies most per run,
// the cross-run spread per GEMM row, and optionally their instances with
// timestamps and collective overlap.
#include <fmt/format.h>

#include "mcp/result_shape.h"
#include "mcp/tool.h"
#include "mcp/tools/sweep_common.h"

namespace jarvis::mcp {
namespace {

ToolResult sweep_gemm_variance_tool(const json& args, ToolContext& ctx) {
  auto s = sweep_tools::get_sweep(args);
  size_t top_k = args.at("top_k").get<size_t>();
  size_t max_rows = row_limit(args);
  std::vector<Table> tables = {engine::gemm_variance_table(*s, top_k),
                               engine::gemm_kernel_spread_table(*s)};
  std::string instances = args.at("instances").get<std::string>();
  if (instances == "timestamps") tables.push_back(engine::gemm_timestamps_table(*s, top_k));
  if (instances == "overlap") tables.push_back(engine::gemm_overlap_table(*s, top_k));
  json result = {{"sweep", args.at("sweep")},
                 {"top_k", top_k},
                 {"variance_row_count", tables[0].rows.size()},
                 {"variance", sweep_tools::rows_json(tables[0], max_rows)},
                 {"by_kernel", sweep_tools::rows_json(tables[1], max_rows)},
                 {"instances",
                  tables.size() > 2 ? sweep_tools::rows_json(tables[2], max_rows) : json::array()},
                 {"files", sweep_tools::write_if_asked(args, ctx, tables)}};
  ToolResult out{
      result,
      fmt::format("sweep_gemm_variance {}: {} variance rows (top {} per run), {} GEMM "
                  "rows across runs{}.\n",
                  args.at("sweep").get<std::string>(), tables[0].rows.size(), top_k,
                  tables[1].rows.size(),
                  tables.size() > 2 ? fmt::format(", {} instances", tables[2].rows.size()) : "")};
  out.rows("/variance", tables[0].rows.size()).rows("/by_kernel", tables[1].rows.size());
  if (tables.size() > 2) out.rows("/instances", tables[2].rows.size());
  out.suggest("rocprof_config", {{"sweep", args.at("sweep")}, {"output", "<file.yaml>"}},
              "profile exactly these kernels with hardware counters");
  return out;
}

}  // namespace
JARVIS_MCP_TOOL(sweep_gemm_variance, sweep_gemm_variance_tool);
}  // namespace jarvis::mcp
