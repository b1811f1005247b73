// Named tool profiles for `jarvis serve --profile NAME` and the explicit
// `--tools a,b,c` selection: a smaller tools/list for an agent that does one
// kind of work (issue 50: all 30 tools take 92 KB at 2025-06-18). The
// tools themselves, their descriptions and schemas, stay in tools_schema/;
// a profile only names which of them the server lists and runs.
#pragma once

#include <string>
#include <vector>

namespace jarvis::mcp {

struct ToolProfile {
  std::string name;  // "single-trace", "multi-rank", "sweep"
  std::string what;  // one line for --help and the docs
  std::vector<std::string> tools;
};

// The built-in tools' names, from the schema files of tools_schema/.
std::vector<std::string> builtin_tool_names();

// The named profiles, in --help order.
const std::vector<ToolProfile>& tool_profiles();

// The union of the profiles' tools and the listed tool names, sorted and
// without repeats; empty when both are empty (every tool). Throws
// std::invalid_argument naming an unknown profile or tool (with the known
// names); `known_tools` is the set the server serves.
std::vector<std::string> select_tools(const std::vector<std::string>& profiles,
                                      const std::vector<std::string>& tools,
                                      const std::vector<std::string>& known_tools);

}  // namespace jarvis::mcp
