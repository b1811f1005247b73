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
  std::vector<std::string> names;
  for (size_t r = 0; r < t.rows.size(); ++r) names.push_back(t.at(r, "kernel_name").text());
  return names;
}

ToolResult rocprof_config_tool(const json& args, ToolContext& ctx) {
  engine::RocprofConfig cfg;
  try {
    cfg = engine::rocprof_config(kernels_of(args, ctx));
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
