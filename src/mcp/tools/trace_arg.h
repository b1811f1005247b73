// Shared by the tool adapters that work on one loaded trace: the lookup of
// the "trace" argument.
#pragma once

#include <memory>
#include <string>

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

// The health block of a loaded Kineto trace (insights/trace_health.h's JSON),
// computed once per entry; null for a rocprofv3 trace.
json loaded_trace_health(const LoadedTrace& entry);
// The health of a loaded Kineto trace, computed once per entry (load_trace
// computes it in the server, so a worker forked later inherits it).
std::shared_ptr<const engine::TraceHealth> loaded_trace_health_block(const LoadedTrace& entry);
// Whether loaded_trace_health(entry) is computed already (a rocprofv3
// trace's is its own: true), so a call may note it without computing it.
bool loaded_trace_health_ready(const LoadedTrace& entry);

// The step model of a loaded trace (its dependency graph with the what-if
// base, the recorded and the un-profiled analyses), built once per entry and
// shared by its health, insights and what-ifs: load_trace builds it in the
// server, so the workers of later calls inherit it instead of rebuilding it.
std::shared_ptr<const engine::StepModelRef> loaded_step_model(const LoadedTrace& entry);

// The facts of a loaded trace's events and call tree the insights rules read
// (engine::make_shared_trace_facts), made once per entry: load_trace makes
// them in the server beside the step model, so the workers of later calls
// inherit them.
std::shared_ptr<const engine::SharedTraceFacts> loaded_trace_facts(const LoadedTrace& entry);

// What a tool's totals cover (issue 73 point 6): `figures` says they are
// over the whole trace and as profiled, `steps` the trace's steps
// (ProfilerStep#N, else launch-sequence repeats; null when none) with
// `steps_source`, and `<field>_per_step` the total `total` over them (null
// without steps): the work outside the steps is in the total, so per step is
// the whole trace's mean. step_scope_text says the same in words:
// "over the whole trace's 3 steps (4.123 ms per step), profiled".
json step_scope_json(const LoadedTrace& entry, double total, const std::string& field);
// The same from a health block (a prepared directory's, category_insights).
json step_scope_json(const json& health, double total, const std::string& field);
std::string step_scope_text(const json& scope, const std::string& field, const char* unit);

}  // namespace jarvis::mcp
