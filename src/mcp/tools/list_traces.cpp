// list_traces: the session's loaded traces, in load order.
#include "engine/engine.h"
#include "mcp/tool.h"

namespace jarvis::mcp {
namespace {

ToolResult list_traces_tool(const json&, ToolContext& ctx) {
  json traces = json::array();
  for (const auto& info : ctx.traces().list())
    traces.push_back({{"trace", info.handle},
                      {"path", info.path},
                      {"platform", platform_name(info.platform)},
                      {"gpu_name", info.gpu_name},
                      {"events", static_cast<int64_t>(info.events)},
                      {"file_bytes", info.file_bytes}});
  json result = {{"traces", traces}};
  // Stateless clients' handles are capabilities: never listed, so no client
  // learns another's traces.
  if (!ctx.traces().lists_handles())
    return {result,
            "Handles of stateless (2026-07-28) requests are not listed; keep the handle "
            "load_trace returned."};
  return result;
}

}  // namespace
JARVIS_MCP_TOOL(list_traces, list_traces_tool);
}  // namespace jarvis::mcp
