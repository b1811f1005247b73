// render_findings: one self-contained HTML page from the findings markdown
// of an output directory, with the charts they reference embedded.
#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>

#include "engine/engine.h"
#include "mcp/tool.h"

namespace jarvis::mcp {
namespace {

ToolResult render_findings_tool(const json& args, ToolContext& ctx) {
  auto dir = ctx.resolve_path(args.at("output_dir").get<std::string>(), true, false);
  std::string output = args.contains("output") ? args.at("output").get<std::string>()
                                               : (dir / "findings.html").string();
  auto out = ctx.output_file(output, output.ends_with(".htm") ? ".htm" : ".html",
                             args.at("overwrite").get<bool>());
  engine::FindingsPage page;
  try {
    page = engine::render_findings_page(dir.string());
  } catch (const std::invalid_argument& e) {
    throw ToolError(e.what());
  }
  write_file_atomic(out.string(), page.html);
  ctx.paths().note_written(out);
  json result = {{"path", out.string()},
                 {"bytes", page.html.size()},
                 {"files", page.files},
                 {"images_embedded", page.images_embedded},
                 {"images_missing", page.images_missing},
                 {"images_refused", page.images_refused}};
  return {result, fmt::format("Wrote {} ({} findings files, {} images embedded, {} missing, {} "
                              "refused).",
                              out.string(), page.files.size(), page.images_embedded,
                              page.images_missing.size(), page.images_refused.size())};
}

}  // namespace
JARVIS_MCP_TOOL(render_findings, render_findings_tool);
}  // namespace jarvis::mcp
