// sweep_plots: the seeds' pictures for agents: the variance plots (box and
// violin per field, thread x channel interaction) as SVG files, the sweep's
// HTML page, and with `candidate` the two-sweep comparison page.
#include <fmt/format.h>

#include "base/atomic_file.h"
#include "mcp/result_shape.h"
#include "mcp/tool.h"
#include "mcp/tools/sweep_common.h"

namespace jarvis::mcp {
namespace {

ToolResult sweep_plots_tool(const json& args, ToolContext& ctx) {
  auto s = sweep_tools::get_sweep(args);
  bool overwrite = args.value("overwrite", false);
  const PathPolicy& paths = ctx.paths();
  std::filesystem::path dir = paths.output_dir(args.at("output_dir").get<std::string>(), overwrite);
  size_t top_k = args.at("top_k").get<size_t>();
  std::vector<Table> tables = engine::sweep_tables(*s, top_k);
  json files = json::array();
  try {
    std::filesystem::create_directories(dir);
    for (const auto& f : engine::write_variance_svgs(*s, tables.front(), dir.string())) {
      paths.note_written(f);
      files.push_back(f);
    }
    std::string page = (dir / "sweep.html").string();
    write_file_atomic(page, engine::sweep_html_page(*s, tables));
    paths.note_written(page);
    files.push_back(page);
    if (args.contains("candidate")) {
      auto cand = sweep_tools::get_sweep(args, "candidate");
      std::string cmp = (dir / "compare.html").string();
      write_file_atomic(
          cmp, engine::sweep_compare_html_page(*s, *cand, engine::compare_sweeps(*s, *cand),
                                               args.at("sweep").get<std::string>(),
                                               args.at("candidate").get<std::string>()));
      paths.note_written(cmp);
      files.push_back(cmp);
    }
  } catch (const engine::SweepError& e) {
    throw ToolError(e.what());
  } catch (const std::filesystem::filesystem_error& e) {
    throw ToolError(std::string("cannot write the plots to ") + dir.string() + ": " + e.what());
  }
  paths.mark_output_dir(dir);
  json result = {{"sweep", args.at("sweep")}, {"files", files}};
  std::string text = fmt::format("sweep_plots {}: {} files in {}",
                                 args.at("sweep").get<std::string>(), files.size(), dir.string());
  if (tables.front().rows.empty()) {
    result["reason"] = "no variance plots: " + engine::gemm_empty_reason(*s);
    text += "; " + result["reason"].get<std::string>();
  }
  ToolResult out{result, text + "\n"};
  out.rows("/files");
  return out;
}

}  // namespace
JARVIS_MCP_TOOL(sweep_plots, sweep_plots_tool);
}  // namespace jarvis::mcp
