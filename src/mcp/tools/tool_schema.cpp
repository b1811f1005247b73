// tool_schema: one tool's whole definition. tools/list leaves the output
// schemas out by default (they were half of its 95 KB, paid by every client
// in every conversation); this is the one call that brings a tool's back,
// with its fields flattened into lines an agent reads at a glance.
#include <fmt/format.h>

#include "mcp/tool.h"

namespace jarvis::mcp {
namespace {

std::string type_of(const json& schema) {
  if (!schema.is_object() || !schema.contains("type")) return "any";
  const json& t = schema["type"];
  if (t.is_string()) return t.get<std::string>();
  std::string out;
  for (const json& one : t) {
    if (!out.empty()) out += '|';
    out += one.get<std::string>();
  }
  return out;
}

// "rows[].name  string  meaning" for every property, depth first.
void flatten(const json& schema, const std::string& at, std::vector<std::string>& lines) {
  if (!schema.is_object()) return;
  if (schema.contains("items")) flatten(schema["items"], at + "[]", lines);
  if (!schema.contains("properties") || !schema["properties"].is_object()) return;
  for (auto it = schema["properties"].begin(); it != schema["properties"].end(); ++it) {
    const std::string path = at.empty() ? it.key() : at + "." + it.key();
    const json& p = it.value();
    std::string line = fmt::format("{}  {}", path, type_of(p));
    if (p.is_object() && p.contains("description") && p["description"].is_string())
      line += "  " + p["description"].get<std::string>();
    lines.push_back(std::move(line));
    flatten(p, path, lines);
  }
}

ToolResult tool_schema_tool(const json& args, ToolContext&) {
  const std::string name = args.at("tool").get<std::string>();
  std::vector<std::string> problems;
  for (const ToolSpec& spec : builtin_tools(problems)) {
    if (spec.name != name) continue;
    const json& def = spec.definition;
    json output = def.value("outputSchema", json::object());
    std::vector<std::string> lines;
    flatten(output, "", lines);
    std::string text = fmt::format("{}: {}\nstructuredContent fields ({}):\n", name,
                                   def.value("description", ""), lines.size());
    for (const std::string& line : lines) text += line + "\n";
    return {json{{"tool", name},
                 {"inputSchema", def.value("inputSchema", json::object())},
                 {"outputSchema", output},
                 {"fields", lines.size()}},
            text};
  }
  throw ToolError(fmt::format("no tool named \"{}\"; tools/list names them", name),
                  ErrorKind::NotFound);
}

}  // namespace
JARVIS_MCP_TOOL(tool_schema, tool_schema_tool);
}  // namespace jarvis::mcp
