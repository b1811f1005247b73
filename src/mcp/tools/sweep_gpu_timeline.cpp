// sweep_gpu_timeline: the GPU timeline of every configuration side by side
// (mean over the ranks of a config).
#include <algorithm>

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
  engine::KernelChangeOptions kopt;
  kopt.top_n = args.at("top_kernels").get<size_t>();
  if (args.contains("reference")) kopt.reference = args.at("reference").get<std::string>();
  Table changed = engine::what_changed_table(*s, kopt);
  Table kernels = engine::what_changed_kernels_table(*s, kopt);
  const std::string why_no_kernels = engine::kernel_changes_empty_reason(*s);
  tables.push_back(changed);
  tables.push_back(kernels);
  json result = {{"sweep", args.at("sweep")},
                 {"summary_by_config", sweep_tools::rows_json(tables[3], all)},
                 {"what_changed", sweep_tools::rows_json(changed, all)},
                 {"what_changed_kernels", sweep_tools::rows_json(kernels, all)},
                 {"kernel_reference",
                  why_no_kernels.empty() ? engine::kernel_reference(*s, kopt) : std::string()},
                 {"kernel_changes_reason", why_no_kernels},
                 {"pivot_time_ms", sweep_tools::rows_json(tables[1], all)},
                 {"pivot_percent", sweep_tools::rows_json(tables[2], all)},
                 {"files", sweep_tools::write_if_asked(args, ctx, tables)}};
  // The key numbers: configurations ranked by time per unit of work.
  const Table& sum = tables[3];
  std::string text = fmt::format("sweep_gpu_timeline {}: {} configurations",
                                 args.at("sweep").get<std::string>(), sum.rows.size());
  std::vector<size_t> order;
  for (size_t r = 0; r < sum.rows.size(); ++r)
    if (!sum.at(r, "rank_by_normalised").missing()) order.push_back(r);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return sum.at(a, "rank_by_normalised").number() < sum.at(b, "rank_by_normalised").number();
  });
  if (!order.empty()) {
    const size_t f = order.front(), l = order.back();
    text += fmt::format(
        ", ranked by ms per {} ({}): fastest {} {:.4g} ms, slowest {} {:.4g} ms "
        "({:+.2f} %).\n",
        sum.at(f, "unit").text(), sum.at(f, "normalisation").text(),
        sum.at(f, "full_config").text(), sum.at(f, "normalised_ms").number(),
        sum.at(l, "full_config").text(), sum.at(l, "normalised_ms").number(),
        100 * (sum.at(l, "normalised_ms").number() / sum.at(f, "normalised_ms").number() - 1));
  } else {
    text += ".\n";
  }
  text += why_no_kernels.empty() ? fmt::format("{}.\n", engine::kernel_changes_summary(kernels))
                                 : fmt::format("kernel changes: {}.\n", why_no_kernels);
  for (size_t r = 0; r < changed.rows.size() && r < 6; ++r)
    text += fmt::format("- {}: {}\n", changed.at(r, "full_config").text(),
                        changed.at(r, "explanation").text().substr(0, 400));
  ToolResult out{result, text};
  // The long texts stay out of a default reply, so that every configuration's
  // row fits: kernel_changes repeats what_changed_kernels, whose notes spell
  // out the test its verdict, noise, sample sizes and p_value already give.
  out.full_only.push_back("/what_changed/*/kernel_changes");
  out.full_only.push_back("/what_changed_kernels/*/note");
  out.rows("/summary_by_config", tables[3].rows.size())
      .rows("/what_changed", changed.rows.size())
      .rows("/what_changed_kernels", kernels.rows.size())
      .rows("/pivot_time_ms", tables[1].rows.size())
      .rows("/pivot_percent", tables[2].rows.size());
  return out;
}

}  // namespace
JARVIS_MCP_TOOL(sweep_gpu_timeline, sweep_gpu_timeline_tool);
}  // namespace jarvis::mcp
