// What the insights tool derives of one trace for one arch, shared with the
// tools that show its findings (ops_summary's top insights): derived once
// and kept on the trace (ToolContext::keep, issue 75 point 2), so a session
// pays for it once, whichever of them asks first. Defined in insights.cpp.
#pragma once

#include <memory>
#include <string>

#include "engine/engine.h"
#include "mcp/tool.h"

namespace jarvis::mcp {

// The analysis of `entry` for `arch_name` (a resolved arch name or path;
// "" or "none": no arch), kept on the trace: every finding as
// {"row": its full insights row, "line": its text line}, in rank order, with
// "arch", "rules", "total_kernel_time_us", "units", "plan" and "plan_text".
// Derives and keeps it when no call kept it yet. Throws ToolError for an
// arch that does not load.
std::shared_ptr<const json> insights_analysis(const LoadedTrace& entry,
                                              const std::string& arch_name, ToolContext& ctx);

// The same when a call kept it already, else null (derives nothing).
std::shared_ptr<const json> kept_insights_analysis(const LoadedTrace& entry,
                                                   const std::string& arch_name,
                                                   const ToolContext& ctx);

}  // namespace jarvis::mcp
