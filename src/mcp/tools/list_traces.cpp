// list_traces: the session's loaded traces, in load order.
#include "analysis/trace_store.h"
#include "mcp/tool.h"

namespace jarvis::mcp {
namespace {

ToolResult list_traces_tool(const json&, ToolContext& ctx) {
  json traces = json::array();
  for (const auto& entry : ctx.traces().list()) {
    const Trace& trace = entry->trace();
    traces.push_back({{"trace", entry->handle()},
                      {"path", entry->path()},
                      {"platform", platform_name(trace.platform)},
                      {"gpu_name", trace.gpu_name()},
                      {"events", static_cast<int64_t>(trace.events.size())},
                      {"file_bytes", entry->file_size()}});
  }
  return json{{"traces", traces}};
}

}  // namespace
JARVIS_MCP_TOOL(list_traces, list_traces_tool);
}  // namespace jarvis::mcp
