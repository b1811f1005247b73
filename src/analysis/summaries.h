// Compact JSON summaries of loaded traces, as the MCP tools return them.
// (The MCP layer only forwards these; the numbers are computed here.)
#pragma once

#include <nlohmann/json.hpp>

#include "analysis/trace_store.h"

namespace jarvis::analysis {

// {trace, path, platform, gpu_name, file_bytes, json_bytes, load_seconds,
//  events: {total, cpu_op, python_function, user_annotation, gpu_user_annotation,
//           cuda_runtime, cuda_driver, kernel, gpu_memcpy, gpu_memset, other}}
nlohmann::json trace_overview(const LoadedTrace& entry);

}  // namespace jarvis::analysis
