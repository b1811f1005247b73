// what_if: confine the paths, build the graph, apply the scenario and return
// the replayed step time with the new critical path.
#include "mcp/tools/critical_path_common.h"

namespace jarvis::mcp {
namespace {

using namespace cp_tools;

engine::WhatIfScenario scenario(const json& args) {
  engine::WhatIfScenario sc;
  if (args.contains("rank")) sc.select.rank = args.at("rank").get<int64_t>();
  sc.select.category = args.value("category", "");
  sc.select.op = args.value("op", "");
  sc.select.kernel = args.value("kernel", "");
  if (args.contains("kernel_uids"))
    for (const auto& u : args.at("kernel_uids")) {
      const uint64_t uid = u.get<uint64_t>();
      if (uid >= kNoUid) throw ToolError(fmt::format("uid {} is not an event of the trace", uid));
      sc.select.gpu_uids.push_back(static_cast<Uid>(uid));
    }
  sc.factor = args.value("factor", 1.0);
  sc.median_rank = args.at("median_rank").get<bool>();
  sc.remove_launch_gaps = args.at("remove_launch_gaps").get<bool>();
  sc.overlap_collective = args.value("overlap_collective", "");
  sc.recorded_host = args.value("recorded_host", false);
  if (sc.median_rank && args.contains("factor"))
    throw ToolError("give either factor or median_rank, not both");
  return sc;
}

// Host events an agent takes out: by name, uid or python frame.
engine::HostRemoval removal(const json& args) {
  engine::HostRemoval rm;
  if (args.contains("rank")) rm.rank = args.at("rank").get<int64_t>();
  if (args.contains("remove_ops")) rm.ops = args.at("remove_ops").get<std::vector<std::string>>();
  if (args.contains("remove_uids"))
    for (const auto& u : args.at("remove_uids")) {
      const uint64_t uid = u.get<uint64_t>();
      if (uid >= kNoUid) throw ToolError(fmt::format("uid {} is not an event of the trace", uid));
      rm.uids.push_back(static_cast<Uid>(uid));
    }
  rm.python_frame = args.value("remove_python_frame", "");
  rm.waits_only = args.value("remove_waits_only", false);
  if (rm.waits_only && rm.empty())
    throw ToolError("remove_waits_only needs remove_ops, remove_uids or remove_python_frame");
  return rm;
}

// Host time no event records taken out: the stretches remove_host_gaps
// selects (docs/critical-path.md, "Host time no op records").
std::optional<engine::HostGapSelector> host_gaps(const json& args) {
  if (!args.contains("remove_host_gaps")) return std::nullopt;
  const json& g = args.at("remove_host_gaps");
  engine::HostGapSelector sel;
  if (args.contains("rank")) sel.rank = args.at("rank").get<int64_t>();
  sel.after = g.value("after", "");
  sel.before = g.value("before", "");
  sel.min_us = g.value("min_us", sel.min_us);
  return sel;
}

ToolResult what_if_tool(const json& args, ToolContext& ctx) {
  engine::WhatIfScenario sc = scenario(args);
  const std::optional<engine::HostGapSelector> gaps = host_gaps(args);
  const engine::HostRemoval rm = removal(args);
  const std::string dir = out_dir(args, ctx);
  const JobGraph job = load_job(args, ctx);
  engine::WhatIfResult result;
  try {
    if (!rm.empty()) job.add_host_removal(rm, sc);
    if (gaps && job.ranks) engine::add_host_gap_removal(*job.ranks, *gaps, sc);
    if (gaps && !job.ranks)
      engine::add_host_gap_removal({{&job.entry->trace(), job.tree.get(), -1}}, job.graph(), *gaps,
                                   sc);
    result = engine::what_if(job.graph(), sc);
  } catch (const engine::CriticalPathError& e) {
    throw ToolError(e.what());
  }
  json structured = engine::what_if_json(result, sc, args.at("top_n").get<size_t>());
  structured["files"] =
      write_files(ctx, dir, [&] { return engine::write_what_if(result, sc, dir); });
  std::string text = result.summary + "\n";
  for (const std::string& c : result.changes) text += c + "\n";
  text += fmt::format(
      "step time {}: {:.1f} us, predicted {:.1f} us ({:+.1f}%); as recorded {:.1f} us, predicted "
      "{:.1f} us; new path:\n",
      result.model == "unprofiled" ? "without the profiler (estimated)" : "as recorded",
      result.measured_step_time_us, result.predicted_step_time_us,
      100 * (result.predicted_step_time_us / result.measured_step_time_us - 1),
      result.recorded_step_time_us, result.predicted_profiled_step_time_us);
  return {structured, text + top_text(structured["predicted"])};
}

}  // namespace
JARVIS_MCP_TOOL(what_if, what_if_tool);
}  // namespace jarvis::mcp
