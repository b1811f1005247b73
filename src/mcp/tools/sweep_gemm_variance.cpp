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
  // The same rows by absolute spread (max - min of the per-run means, µs):
  // a large CV on a tiny kernel matters less than a small CV on a long one.
  Table by_spread = tables[1];
  int lo = by_spread.col("min_us"), hi = by_spread.col("max_us");
  auto spread = [&](const std::vector<Cell>& r) {
    return r[lo].missing() || r[hi].missing() ? -1.0 : r[hi].number() - r[lo].number();
  };
  std::stable_sort(by_spread.rows.begin(), by_spread.rows.end(),
                   [&](const auto& a, const auto& b) { return spread(a) > spread(b); });
  result["by_kernel_by_spread"] = sweep_tools::rows_json(by_spread, max_rows);
  std::string text;
  if (tables[0].rows.empty()) {
    std::string reason = engine::gemm_empty_reason(*s);
    result["reason"] = reason;
    text = fmt::format("sweep_gemm_variance {}: 0 rows: {}.\n", args.at("sweep").get<std::string>(),
                       reason);
  } else {
    text = fmt::format(
        "sweep_gemm_variance {}: {} variance rows (top {} per run), {} GEMM rows across runs{}.\n",
        args.at("sweep").get<std::string>(), tables[0].rows.size(), top_k, tables[1].rows.size(),
        tables.size() > 2 ? fmt::format(", {} instances", tables[2].rows.size()) : "");
    const Table& v = tables[0];
    text += fmt::format(
        "Largest within-run spread: {} ({}) {:.2f} .. {:.2f} µs in {} (max - min of {} "
        "instances inside one run, not run-to-run noise).\n",
        v.at(0, "op").text(), v.at(0, "kernel_name").text().substr(0, 60),
        v.at(0, "kernel_time_min_us").number(), v.at(0, "kernel_time_max_us").number(),
        v.at(0, "config").text(), v.at(0, "count").number());
    if (!tables[1].rows.empty() && !tables[1].at(0, "cv").missing())
      text += fmt::format("Largest cross-run CV: {:.2f} % for {} over {} runs.\n",
                          100 * tables[1].at(0, "cv").number(), tables[1].at(0, "op").text(),
                          tables[1].at(0, "runs").number());
  }
  bool nvidia = false;
  if (!tables[0].rows.empty()) {
    std::vector<std::string> names;
    for (size_t r = 0; r < tables[0].rows.size(); ++r)
      names.push_back(tables[0].at(r, "kernel_name").text());
    // rocprofv3 counters are AMD's: NVIDIA kernels get the Nsight Compute job.
    nvidia = std::string(engine::kernel_vendor(names)) == "nvidia";
    if (nvidia) {
      result["follow_up"] = engine::nsight_compute_command(names);
      text += "Follow up on NVIDIA with Nsight Compute: see follow_up.\n";
    }
  }
  ToolResult out{result, text};
  out.rows("/variance", tables[0].rows.size())
      .rows("/by_kernel", tables[1].rows.size())
      .rows("/by_kernel_by_spread", by_spread.rows.size());
  if (tables.size() > 2) out.rows("/instances", tables[2].rows.size());
  if (!tables[0].rows.empty() && !nvidia)
    out.suggest("rocprof_config", {{"sweep", args.at("sweep")}, {"output", "<file.yaml>"}},
                "profile exactly these kernels with hardware counters");
  return out;
}

}  // namespace
JARVIS_MCP_TOOL(sweep_gemm_variance, sweep_gemm_variance_tool);
}  // namespace jarvis::mcp
