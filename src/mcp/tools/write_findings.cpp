// write_findings: saves an agent's findings markdown for a category,
// atomically, inside the prepared output directory.
#include "categories/findings.h"
#include "mcp/tool.h"

namespace jarvis::mcp {
namespace {

ToolResult write_findings_tool(const json& args, ToolContext& ctx) {
  auto dir = ctx.resolve_path(args.at("output_dir").get<std::string>(), true, false);
  std::string category = args.at("category").get<std::string>();
  std::string markdown = args.at("markdown").get<std::string>();
  std::string path;
  try {
    // The final path goes through the policy too: a symlinked findings dir
    // must not lead outside the roots, and a file jarvis did not write is
    // replaced only on request.
    auto target = ctx.output_file(analysis::findings_path(dir.string(), category), ".md",
                                  args.at("overwrite").get<bool>());
    path = analysis::write_findings(dir.string(), category, markdown);
    ctx.paths().note_written(target);
  } catch (const std::invalid_argument& e) {
    throw ToolError(e.what());
  }
  json result = {{"category", category}, {"path", path}, {"bytes", markdown.size()}};
  return {result, "Wrote " + path + " (" + std::to_string(markdown.size()) + " bytes)."};
}

}  // namespace
JARVIS_MCP_TOOL(write_findings, write_findings_tool);
}  // namespace jarvis::mcp
