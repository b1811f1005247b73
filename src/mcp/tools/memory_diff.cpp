// memory_diff: peak and per-step memory of two runs, and the ops whose
// holdings at the peak changed most.
#include "engine/engine.h"
#include "mcp/result_shape.h"
#include "mcp/tool.h"
#include "mcp/tools/trace_arg.h"

namespace jarvis::mcp {
namespace {

ToolResult memory_diff_tool(const json& args, ToolContext& ctx) {
  auto reference = trace_arg({{"trace", args.at("reference")}}, ctx);
  auto target = trace_arg({{"trace", args.at("target")}}, ctx);
  auto diff =
      engine::diff_memory(*engine::trace_memory(*reference), *engine::trace_memory(*target));
  json result = engine::memory_diff_json(diff, row_limit(args));
  result["reference"] = reference->handle();
  result["target"] = target->handle();
  ToolResult r{result, result.at("summary").get<std::string>()};
  r.rows("/groups", diff.groups.size()).rows("/steps");
  r.suggest("memory_summary", {{"trace", target->handle()}},
            "the target's holders at its peak, leaks and findings");
  return r;
}

}  // namespace
JARVIS_MCP_TOOL(memory_diff, memory_diff_tool);
}  // namespace jarvis::mcp
