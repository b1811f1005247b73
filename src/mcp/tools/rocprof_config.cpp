// rocprof_config: a rocprofv3 job tracing exactly the top-variance GEMM
// kernels of a sweep (or the kernel_name column of a CSV).
#include "mcp/tool.h"
#include "mcp/tools/sweep_common.h"

namespace jarvis::mcp {
namespace {

std::vector<std::string> kernels_of(const json& args, ToolContext& ctx) {
  if (args.contains("csv")) {
    std::string csv = ctx.resolve_path(args.at("csv").get<std::string>(), true, false).string();
    try {
      return engine::kernels_from_csv(csv);
    } catch (const std::runtime_error& e) {
      throw ToolError(e.what());
    }
  }
  if (!args.contains("sweep")) throw ToolError("give `sweep` (a handle) or `csv`");
  auto s = sweep_tools::get_sweep(args);
  Table t = engine::gemm_variance_table(*s, args.at("top_k").get<size_t>());
  if (t.rows.empty()) throw ToolError("nothing to profile: " + engine::gemm_empty_reason(*s));
  std::vector<std::string> names;
  for (size_t r = 0; r < t.rows.size(); ++r) names.push_back(t.at(r, "kernel_name").text());
  return names;
}

ToolResult rocprof_config_tool(const json& args, ToolContext& ctx) {
  engine::RocprofConfig cfg;
  try {
    std::vector<std::string> kernels = kernels_of(args, ctx);
    // rocprofv3 and the SQ_* counters exist on AMD GPUs only: an NVIDIA
    // sweep gets the Nsight Compute job that answers the same question.
    if (std::string(engine::kernel_vendor(kernels)) == "nvidia")
      throw ToolError(
          "these are NVIDIA kernels (nvjet / sm90 / CUTLASS / cuBLAS names): rocprofv3 and its "
          "SQ_* counters do not apply. Profile them with Nsight Compute instead:\n" +
              engine::nsight_compute_command(kernels) +
              "\n(or `nsys profile --cuda-graph-trace=node -o jarvis_sweep <app>` for the "
              "timeline); nothing was written",
          ErrorKind::Unsupported);
    cfg = engine::rocprof_config(kernels);
  } catch (const engine::SweepError& e) {
    throw ToolError(e.what());
  }
  // Each of the three files under the rule of every tool's writes: the
  // JSON and kernel list beside the job may replace a file of the user's too.
  std::string given = args.at("output").get<std::string>();
  bool overwrite = args.value("overwrite", false);
  std::vector<std::string> siblings;
  try {
    siblings = engine::rocprof_config_files(given);
  } catch (const engine::SweepError& e) {
    throw ToolError(e.what());
  }
  std::string out =
      ctx.paths()
          .output_file(siblings[0], siblings[0].substr(siblings[0].rfind('.')), overwrite)
          .string();
  ctx.paths().output_file(siblings[1], ".json", overwrite);
  ctx.paths().output_file(siblings[2], ".txt", overwrite);
  json files = json::array();
  try {
    for (const auto& f : engine::write_rocprof_config(cfg, out)) {
      ctx.paths().note_written(f);
      files.push_back(f);
    }
  } catch (const std::runtime_error& e) {
    throw ToolError(std::string("cannot write the rocprof files: ") + e.what());
  }
  json result = {{"kernels", cfg.kernels},
                 {"kernel_include_regex", cfg.regex},
                 {"yaml", cfg.yaml},
                 {"files", files}};
  return result;
}

}  // namespace
JARVIS_MCP_TOOL(rocprof_config, rocprof_config_tool);
}  // namespace jarvis::mcp
