// critical_path: confine the paths, build the cross-rank dependency graph,
// return each iteration's critical path attribution (and write its files).
#include "mcp/tools/critical_path_common.h"

namespace jarvis::mcp {
namespace {

using namespace cp_tools;

ToolResult critical_path_tool(const json& args, ToolContext& ctx) {
  const std::string dir = out_dir(args, ctx);
  const JobGraph job = load_job(args, ctx);
  const bool recorded_host = args.value("recorded_host", false);
  // A loaded trace's step model holds both analyses of its graph already.
  std::optional<engine::CriticalPathAnalysis> computed;
  if (!job.step) computed = engine::critical_path_analysis(job.graph(), recorded_host);
  const engine::CriticalPathAnalysis& analysis = computed        ? *computed
                                                 : recorded_host ? job.step->model->recorded
                                                                 : job.step->model->measured;
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
