// category_filter: TraceLens orchestrator preparation for one category (or
// all) of a loaded trace, written under a confined output directory.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "engine/engine.h"
#include "mcp/tool.h"
#include "mcp/tools/trace_arg.h"

namespace jarvis::mcp {
namespace {

// A category's kernel time as the other tools give it: each kernel once,
// under the op that launched it (direct). TraceLens's gpu_kernel_time_ms sums
// subtrees (the casts autocast runs inside a GEMM op count as GEMM time); it
// is named beside the direct total when the two differ.
double kernel_time_ms(const json& e) {
  if (e["direct_kernel_time_ms"].is_number()) return e["direct_kernel_time_ms"].get<double>();
  return e["gpu_kernel_time_ms"].is_number() ? e["gpu_kernel_time_ms"].get<double>() : -1.0;
}

std::string time_text(const json& e) {
  if (!e["direct_kernel_time_ms"].is_number())
    return e["gpu_kernel_time_ms"].is_number()
               ? fmt::format("{:.3f} ms", e["gpu_kernel_time_ms"].get<double>())
               : "";
  double direct = e["direct_kernel_time_ms"].get<double>();
  std::string text = fmt::format("{:.3f} ms", direct);
  if (e["gpu_kernel_time_ms"].is_number() &&
      std::abs(e["gpu_kernel_time_ms"].get<double>() - direct) >= 0.0005)
    text +=
        fmt::format(" (TraceLens subtree total {:.3f} ms)", e["gpu_kernel_time_ms"].get<double>());
  return text;
}

ToolResult category_filter_tool(const json& args, ToolContext& ctx) {
  auto entry = trace_arg(args, ctx);
  std::string arch = ctx.arch(args.value("arch", std::string()));
  if (arch.empty()) arch = engine::detect_arch_name(entry->trace());
  if (arch.empty())
    throw ToolError("cannot detect the GPU arch from the trace; pass arch (e.g. MI300X, H100)");
  auto out =
      ctx.output_dir(args.at("output_dir").get<std::string>(), args.at("overwrite").get<bool>());
  engine::TracePrepareOptions o;
  o.platform = arch;
  o.output_dir = out.string();
  o.category = args.at("category").get<std::string>();
  o.trace_path = entry->path();
  o.tree_data = args.at("tree_data").get<bool>();
  engine::PrepareResult r;
  std::shared_ptr<const Report> report;
  try {
    report = engine::trace_report(*entry, arch);  // built (or found cached) before the cancel check
    ctx.throw_if_cancelled();
    r = engine::prepare_from_loaded_trace(*entry, o);
    ctx.paths().mark_output_dir(out);
  } catch (const engine::GpuArchError& e) {
    throw ToolError(e.what());
  } catch (const std::invalid_argument& e) {
    throw ToolError(e.what());
  }
  std::map<std::string, double> direct_ms;
  if (const Table* by_category = report->find("ops_summary_by_category"))
    direct_ms = engine::direct_kernel_time_ms_by_key(*by_category);
  json cats = json::array();
  std::string text = fmt::format("Prepared {} in {} (arch {}):\n", o.category, o.output_dir, arch);
  for (const auto& c : r.manifest["categories"]) {
    json e = {
        {"name", c["name"]},
        {"display_name", c["display_name"]},
        {"skill",
         engine::prompt_for_category(c["name"].get<std::string>(), c["skill"].get<std::string>())},
        {"tracelens_skill", c["skill"]},
        {"tier", c["tier"]},
        {"ops_count", c["ops_count"]},
        {"gpu_kernel_time_ms",
         c.contains("gpu_kernel_time_ms") ? json(c["gpu_kernel_time_ms"].get<double>()) : json()}};
    auto direct = direct_ms.find(c["name"].get<std::string>());
    e["direct_kernel_time_ms"] = direct == direct_ms.end() ? json() : json(direct->second);
    text += fmt::format("  {:<14} {:<16} ops={:<4} {}\n", c["name"].get<std::string>(),
                        c["tier"].get<std::string>(), c["ops_count"].dump(), time_text(e));
    cats.push_back(e);
  }
  json result = {{"trace", entry->handle()},
                 {"output_dir", o.output_dir},
                 {"arch", arch},
                 {"category", o.category},
                 {"gpu_utilization", json(r.gpu_utilization)},
                 {"categories", cats},
                 {"files", r.files}};
  ToolResult res{result, text};
  // The compute categories with the most kernel time first, then the system ones.
  std::vector<std::pair<double, std::string>> order;
  for (const auto& c : cats)
    order.emplace_back(c["tier"] != "system" ? kernel_time_ms(c) : -1.0,
                       c["name"].get<std::string>());
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t k = 0; k < order.size() && k < 3; ++k)
    res.suggest("analyze_category", {{"output_dir", o.output_dir}, {"category", order[k].second}},
                order[k].first >= 0 ? fmt::format("{:.3f} ms of kernel time", order[k].first)
                                    : "system analysis");
  return res;
}

}  // namespace
JARVIS_MCP_TOOL(category_filter, category_filter_tool);
}  // namespace jarvis::mcp
