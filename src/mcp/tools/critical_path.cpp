// critical_path: confine the paths, build the cross-rank dependency graph,
// return each iteration's critical path attribution (and write its files).
#include "mcp/tools/critical_path_common.h"

namespace jarvis::mcp {
namespace {

using namespace cp_tools;

ToolResult critical_path_tool(const json& args, ToolContext& ctx) {
  const std::string dir = out_dir(args, ctx);
  const JobGraph job = load_job(args, ctx);
  engine::CriticalPathAnalysis analysis =
      engine::critical_path_analysis(job.graph(), args.value("recorded_host", false));
  json structured = engine::critical_path_json(analysis, args.at("top_n").get<size_t>());
  structured["files"] =
      write_files(ctx, dir, [&] { return engine::write_critical_path(analysis, dir); });
  std::string text =
      fmt::format("{}\nstep time {:.1f} us {}({} iterations, {} ranks); on the path:\n",
                  analysis.summary, analysis.step_time_us,
                  analysis.estimated_unprofiled_step_us
                      ? fmt::format("without the profiler (estimated; recorded {:.1f} us) ",
                                    analysis.recorded_step_time_us)
                      : std::string("as recorded "),
                  analysis.iterations.size(), analysis.ranks.size());
  return {structured, text + top_text(structured)};
}

}  // namespace
JARVIS_MCP_TOOL(critical_path, critical_path_tool);
}  // namespace jarvis::mcp
