// write_findings: checks an agent's findings markdown for a category (the
// structure TraceLens's validator expects, the numbers against the category's
// data; categories/findings_check.h) and saves it atomically inside the
// prepared output directory.
#include <filesystem>

#include <fmt/format.h>

#include "engine/engine.h"
#include "mcp/tool.h"

namespace jarvis::mcp {
namespace {

ToolResult write_findings_tool(const json& args, ToolContext& ctx) {
  auto dir = ctx.resolve_path(args.at("output_dir").get<std::string>(), true, false);
  std::string category = args.at("category").get<std::string>();
  std::string markdown = args.at("markdown").get<std::string>();
  bool force = args.at("force").get<bool>();
  // The final path goes through the policy first: a symlinked findings dir
  // must not lead outside the roots, and a file jarvis did not write is
  // replaced only on request.
  std::filesystem::path target;
  try {
    target = ctx.output_file(engine::findings_path(dir.string(), category), ".md",
                             args.at("overwrite").get<bool>());
  } catch (const std::invalid_argument& e) {
    throw ToolError(e.what());
  }
  engine::FindingsValidation check;
  try {
    check = engine::validate_findings_in(dir.string(), category, markdown);
  } catch (const std::runtime_error& e) {
    throw ToolError(fmt::format("cannot read the {} metrics to check the findings against: {}",
                                category, e.what()));
  }
  if (!check.valid() && !force) {
    std::string text = fmt::format(
        "The {} findings were not written: {} problem(s) against TraceLens's findings structure "
        "and the category's data (skills/writing-findings.md has the template; "
        "analyze_category(write_draft=true) drafts a file that passes):\n",
        category, check.problems.size());
    for (const auto& p : check.problems) text += "- " + p + "\n";
    text += "Fix them and call write_findings again (force=true writes anyway).";
    throw ToolError(text);
  }
  std::string path;
  try {
    path = engine::write_findings(dir.string(), category, markdown);
    ctx.paths().note_written(target);
  } catch (const std::invalid_argument& e) {
    throw ToolError(e.what());
  }
  json result = {{"category", category},
                 {"path", path},
                 {"bytes", markdown.size()},
                 {"validation", check.to_json()}};
  std::string text = fmt::format(
      "Wrote {} ({} bytes, {} P-items, {}).\n", path, markdown.size(), check.p_items,
      check.valid() ? "checked" : fmt::format("{} problems, forced", check.problems.size()));
  for (const auto& w : check.warnings) text += "warning: " + w + "\n";
  ToolResult out{result, text};
  out.suggest("final_report", {{"output_dir", dir.string()}},
              "one ranked report from every category's checked findings");
  return out;
}

}  // namespace
JARVIS_MCP_TOOL(write_findings, write_findings_tool);
}  // namespace jarvis::mcp
