// unload_trace: forget a handle.
#include "engine/engine.h"
#include "mcp/tool.h"

namespace jarvis::mcp {
namespace {

ToolResult unload_trace_tool(const json& args, ToolContext& ctx) {
  std::string handle = args.at("trace").get<std::string>();
  if (!ctx.traces().unload(handle))
    throw ToolError(
        "unknown trace handle \"" + handle + "\"; call list_traces to see the loaded traces",
        ErrorKind::NotFound);
  return json{{"trace", handle}, {"unloaded", true}, {"remaining", ctx.traces().size()}};
}

}  // namespace
JARVIS_MCP_TOOL(unload_trace, unload_trace_tool);
}  // namespace jarvis::mcp
