// Compact JSON summaries of loaded traces, as the MCP tools return them.
// (The MCP layer only forwards these; the numbers are computed here.)
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "explore/trace_store.h"
#include "report/report.h"

namespace jarvis::analysis {

// {trace, path, platform, gpu_name, file_bytes, json_bytes, load_seconds,
//  events: {total, cpu_op, python_function, user_annotation, gpu_user_annotation,
//           cuda_runtime, cuda_driver, kernel, gpu_memcpy, gpu_memset, other}}
nlohmann::json trace_overview(const LoadedTrace& entry);

// The GPU timeline of a loaded trace (linked GPU events, cached) as
// gpu_timeline_json, or null when the trace has no linked GPU event.
nlohmann::json trace_gpu_timeline(const LoadedTrace& entry);

// The gpu_timeline sheet as {type: {time_ms, percent}} (TraceLens rows).
nlohmann::json gpu_timeline_json(const GpuTimeline& timeline);

struct OpsSummaryQuery {
  size_t top_n = 20;
  // total_direct_kernel_time | total_subtree_kernel_time | count | name
  std::string sort_by = "total_direct_kernel_time";
  std::string category;    // keep rows whose Categories include it ("" = all)
  double min_percent = 0;  // drop rows whose Percentage (%) is below
};

// Rows of the report's ops_summary sheet (one per op name), filtered, sorted
// and cut to top_n, each with the perf-model aggregate of the op's
// unified_perf_summary rows (null when the op has no perf model):
// {total_rows, matched_rows, total_direct_kernel_time_ms, rows: [{name, count,
//  categories, total_direct_kernel_time_us/_ms, total_subtree_kernel_time_us/_ms,
//  percent, cumulative_percent, perf}]}
// perf = {unique_arg_rows, operation_count, gflops, data_moved_mb, kernel_time_us,
//  tflops_per_s, tb_per_s, compute_spec, roofline_bound, pct_roofline}: sums over
// the op's rows (GFLOPS and data moved times operation_count), rates from the
// sums, spec and bound of the row with the most kernel time, roofline percent
// weighted by kernel time.
nlohmann::json ops_summary_rows(const Report& report, const OpsSummaryQuery& query);

}  // namespace jarvis::analysis
