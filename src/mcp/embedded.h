// Files compiled into the binary by cmake/mcp.cmake: the tool schemas
// (tools_schema/*.json) and the skill documents served as prompts (skills/).
#pragma once

#include <string_view>
#include <vector>

namespace jarvis::mcp {

struct EmbeddedFile {
  std::string_view path;     // relative to tools_schema/ or skills/
  std::string_view content;  // the file's bytes
};

const std::vector<EmbeddedFile>& embedded_tool_schemas();
const std::vector<EmbeddedFile>& embedded_skills();

}  // namespace jarvis::mcp
