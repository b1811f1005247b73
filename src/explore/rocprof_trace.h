// rocprofv3 traces in the trace store: the profile behind a loaded rocprofv3
// trace, and the summaries the MCP tools give for it (no CPU op tree, so the
// op-level tools fall back to kernels or refuse with a clear message).
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "explore/summaries.h"
#include "explore/trace_store.h"
#include "rocprof/profile.h"

namespace jarvis::analysis {

// Keeps the profile on the entry (done once by TraceStore::load).
void attach_rocprof_profile(const LoadedTrace& entry, rocprof::Profile profile);
// The profile of a rocprofv3 trace; nullptr for any other trace.
std::shared_ptr<const rocprof::Profile> rocprof_profile(const LoadedTrace& entry);

// Why a tool that needs the CPU op tree cannot run on this rocprofv3 trace,
// and what to use instead.
std::string rocprof_no_tree_message(const LoadedTrace& entry);

// load_trace's gpu_timeline and health members for a rocprofv3 trace.
nlohmann::json rocprof_gpu_timeline_json(const rocprof::Profile& profile);
nlohmann::json rocprof_health_json(const rocprof::Profile& profile);
// {format, pid, hostname, dispatches, kernels, memory_copies, counters[], counter_samples}
nlohmann::json rocprof_info_json(const rocprof::Profile& profile);

// ops_summary's answer from the kernel summary: one row per kernel name with
// count, category, kernel time (us, correct units), percent and cumulative
// percent; same filters and sort keys as ops_summary_rows. Throws
// std::invalid_argument for an unknown category (listing the trace's).
nlohmann::json rocprof_ops_summary_rows(const rocprof::Profile& profile,
                                        const OpsSummaryQuery& query);

}  // namespace jarvis::analysis
