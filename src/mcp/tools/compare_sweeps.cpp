// compare_sweeps: baseline vs candidate sweep per config and per GEMM row,
// with each change marked inside or beyond run-to-run noise.
#include <map>

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
  std::string text =
      fmt::format("compare_sweeps {} -> {}: {} GPU-timeline rows, {} GEMM kernel rows.\n",
                  args.at("base").get<std::string>(), args.at("candidate").get<std::string>(),
                  tables[0].rows.size(), tables[1].rows.size());
  // Verdict counts per table: what the comparison can and cannot claim.
  for (const Table* t : {&tables[0], &tables[1]}) {
    std::map<std::string, size_t> counts;
    for (size_t r = 0; r < t->rows.size(); ++r) counts[t->at(r, "verdict").text()]++;
    json c = counts;
    result[t == &tables[0] ? "gpu_timeline_verdicts" : "gemm_kernel_verdicts"] = c;
    std::string parts;
    for (const auto& [v, n] : counts)
      parts += fmt::format("{}{} {}", parts.empty() ? "" : ", ", n, v);
    text += fmt::format("{}: {}\n", t == &tables[0] ? "timeline" : "GEMM rows", parts);
  }
  if (!tables[0].rows.empty() && tables[0].at(0, "verdict").text() == "cannot tell")
    text += "Runs are the unit (the claim is about configurations): " +
            tables[0].at(0, "note").text().substr(0, 300) + "\n";
  ToolResult out{result, text};
  out.rows("/gpu_timeline", tables[0].rows.size()).rows("/gemm_kernels", tables[1].rows.size());
  return out;
}

}  // namespace
JARVIS_MCP_TOOL(compare_sweeps, compare_sweeps_tool);
}  // namespace jarvis::mcp
