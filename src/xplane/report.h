// TraceLens's JAX perf report sheets that jarvis computes for an XPlane
// trace (TraceLens/Reporting/generate_perf_report_jax.py):
//   * gpu_timeline: one 8-row breakdown per GPU (pid N+1 of /device:GPU:N),
//     with a gpu_pid column, GPUs in the order TraceLens's Python set of pids
//     iterates them;
//   * gpu_events_averages: the per-GPU metrics averaged over the GPUs.
// TraceLens's JAX rules (JaxGPUEventAnalyser): GPU events are those on lines
// named "Stream #..."; a name starting with copy / memcpy / memset
// (case-insensitive) is memcpy, a communication name (nccl/rccl) is
// communication, everything else computation.
#pragma once

#include <cstdint>
#include <vector>

#include "report/gpu_timeline.h"
#include "report/table.h"
#include "trace/trace.h"

namespace jarvis::xplane {

struct DeviceTimeline {
  int64_t gpu_pid = 0;
  GpuTimeline timeline;
};

// One entry per GPU pid holding GPU events, in TraceLens's order. Throws
// TraceError (Unsupported) when the trace has no GPU events.
std::vector<DeviceTimeline> device_timelines(const Trace& trace);
// The mean of each metric over the devices.
GpuTimeline average_timeline(const std::vector<DeviceTimeline>& devices);

Table gpu_timeline_by_device_table(const std::vector<DeviceTimeline>& devices);
Table gpu_events_averages_table(const GpuTimeline& average);

// TraceLens's JAX report sheets of an XPlane trace, in its order:
// gpu_timeline, gpu_events_averages, kernel_launchers_summary,
// kernel_launchers_summary_by_category, xla_summary, then the HLO sheets
// (perf_sheets.h: kernel_launchers, kernel_launchers_unique_args,
// df_xla_perf, op_<category>): TraceLens's JAX report. Throws as
// device_timelines does. (`jarvis report` adds the collectives sheet:
// analysis::xplane_report_tables.)
std::vector<Table> jax_report_tables(const Trace& trace);

// The order in which CPython iterates a set of small non-negative ints built
// by adding `values` in this order (slot = value & mask, table grown as
// CPython's set grows it; linear probing for collisions).
std::vector<int64_t> python_set_order(const std::vector<int64_t>& values);

}  // namespace jarvis::xplane
