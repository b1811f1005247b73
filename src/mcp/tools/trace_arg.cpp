#include "mcp/tools/trace_arg.h"

#include <string>

namespace jarvis::mcp {

std::shared_ptr<const LoadedTrace> trace_arg(const json& args, ToolContext& ctx) {
  std::string handle = args.at("trace").get<std::string>();
  auto entry = ctx.traces().get(handle);
  if (!entry)
    throw ToolError(
        "unknown trace handle \"" + handle + "\"; call load_trace first (or list_traces)",
        ErrorKind::NotFound);
  return entry;
}

}  // namespace jarvis::mcp
