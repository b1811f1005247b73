// Shared by the tool adapters that work on one loaded trace: the lookup of
// the "trace" argument.
#pragma once

#include <memory>

#include "engine/engine.h"
#include "mcp/tool.h"

namespace jarvis::mcp {

// The loaded trace args["trace"] names (a handle, or a trace path under the
// roots); a not-found ToolError naming the handle and how to get one otherwise.
// Notes the trace's health warnings on ctx (note_trace_health).
std::shared_ptr<const LoadedTrace> trace_arg(const json& args, ToolContext& ctx);

// Adds a loaded trace's health warnings (insights/trace_health.h) to the
// call's result (ToolContext::add_trace_caveats), for tools that reach a
// trace by another way than trace_arg.
void note_trace_health(const LoadedTrace& entry, ToolContext& ctx);

}  // namespace jarvis::mcp
