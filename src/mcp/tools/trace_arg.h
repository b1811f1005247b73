// Shared by the tool adapters that work on one loaded trace: the lookup of
// the "trace" argument.
#pragma once

#include <memory>

#include "explore/trace_store.h"
#include "mcp/tool.h"

namespace jarvis::mcp {

// The loaded trace args["trace"] names (a handle, or a trace path under the
// roots); a not-found ToolError naming the handle and how to get one otherwise.
std::shared_ptr<const LoadedTrace> trace_arg(const json& args, ToolContext& ctx);

}  // namespace jarvis::mcp
