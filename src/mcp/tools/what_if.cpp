// what_if: confine the paths, build the graph, apply the scenario and return
// the replayed step time with the new critical path.
#include "mcp/tools/critical_path_common.h"

namespace jarvis::mcp {
namespace {

using namespace cp_tools;

ToolResult what_if_tool(const json& args, ToolContext& ctx) {
  engine::WhatIfRequest request;
  try {
    request = engine::parse_what_if_request(args);
  } catch (const engine::CriticalPathError& e) {
    throw ToolError(e.what());
  }
  engine::WhatIfScenario& sc = request.scenario;
  const std::optional<engine::HostGapSelector>& gaps = request.host_gaps;
  const engine::HostRemoval& rm = request.removal;
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
