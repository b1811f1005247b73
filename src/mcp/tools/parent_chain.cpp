// parent_chain: call stack (parents) and subtree of one event of a loaded trace.
#include <fmt/format.h>

#include "engine/engine.h"
#include "mcp/tool.h"
#include "mcp/tools/trace_arg.h"

namespace jarvis::mcp {
namespace {

ToolResult parent_chain_tool(const json& args, ToolContext& ctx) {
  auto entry = trace_arg(args, ctx);
  engine::ParentChainQuery q;
  if (args.contains("uid")) {
    // Read wide and range-check: get<Uid>() would wrap 2^32 + 1 to event 1.
    uint64_t uid = args.at("uid").get<uint64_t>();
    if (uid >= entry->trace().events.size())
      throw ToolError(fmt::format("uid {} is out of range: the trace has {} events (0 to {})", uid,
                                  entry->trace().events.size(), entry->trace().events.size() - 1));
    q.uid = static_cast<Uid>(uid);
  }
  q.op_name = args.value("op_name", std::string());
  q.kernel_name = args.value("kernel_name", std::string());
  q.index = args.at("index").get<size_t>();
  q.subtree_depth = args.at("subtree_depth").get<int>();
  q.prune_non_gpu = args.at("prune_non_gpu").get<bool>();
  q.max_children = args.at("max_children").get<size_t>();
  engine::ParentChainResult r;
  try {
    r = engine::parent_chain(entry->trace(), *engine::trace_call_tree(*entry), q);
  } catch (const std::invalid_argument& e) {
    throw ToolError(e.what());
  }
  json result(r.json);
  result["trace"] = entry->handle();
  ToolResult out{result, r.text};
  // The structured `text` repeats the content text (the tree as TraceLens
  // prints it): kept at detail=full only, so a deep subtree is not sent twice.
  out.full_only.push_back("/text");
  return out;
}

}  // namespace
JARVIS_MCP_TOOL(parent_chain, parent_chain_tool);
}  // namespace jarvis::mcp
