// memory_summary: the allocator timeline, the holders at the peak, leaks and
// growth of one trace recorded with profile_memory=True.
#include <stdexcept>

#include "engine/engine.h"
#include "mcp/result_shape.h"
#include "mcp/tool.h"
#include "mcp/tools/trace_arg.h"

namespace jarvis::mcp {
namespace {

ToolResult memory_summary_tool(const json& args, ToolContext& ctx) {
  auto entry = trace_arg(args, ctx);
  auto analysis = engine::trace_memory(*entry);  // Unsupported without [memory] events
  engine::MemorySummaryOptions options;
  options.device = args.value("device", std::string());
  options.timeline_points = args.at("timeline_points").get<size_t>();
  options.max_rows = row_limit(args);
  json result;
  std::string text;
  try {
    result = engine::memory_summary_json(*analysis, options);
    text = engine::memory_summary_text(*analysis, options.device);
  } catch (const std::invalid_argument& e) {
    throw ToolError(e.what(), ErrorKind::NotFound);
  }
  result["trace"] = entry->handle();
  ToolResult r{result, text};
  // Every list is cut by limit / detail: a trace with 50,000 devices has as
  // many device rows and three findings each (issue 63 point 4).
  r.rows("/steps").rows("/at_peak").rows("/top_allocations").rows("/never_freed");
  r.rows("/devices").rows("/findings");
  const json& at_peak = result.at("at_peak");
  if (!at_peak.empty() && at_peak.front().at("op_uid").is_number())
    r.suggest("parent_chain", {{"trace", entry->handle()}, {"uid", at_peak.front().at("op_uid")}},
              "where the op holding the most memory at the peak runs (module, step, callers)");
  return r;
}

}  // namespace
JARVIS_MCP_TOOL(memory_summary, memory_summary_tool);
}  // namespace jarvis::mcp
