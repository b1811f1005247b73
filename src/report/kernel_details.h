// Kernel-details summaries (spec tree-and-timeline.md §14): the position-wise
// statistics TraceLens writes into `kernel_details_summary` and the short
// `trunc_kernel_details` view, for ops_unique_args and unified_perf_summary.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "report/table.h"
#include "trace/trace.h"

namespace jarvis::report {

// One kernel of an op instance: {name, dur, stream}.
struct KernelDetail {
  std::string_view name;
  double dur = 0.0;
  int64_t stream = kNoInt;  // kNoInt = None
};
using KernelDetailList = std::vector<KernelDetail>;

// Kernel details of a list of GPU events, in the order given.
KernelDetailList kernel_details_of(const Trace& trace, std::span<const Uid> gpu_uids);
// Same, sorted by kernel ts (stable), as TraceLens stores them on launchers.
KernelDetailList kernel_details_by_ts(const Trace& trace, std::span<const Uid> gpu_uids);

// One position of the summary.
struct KernelStat {
  std::string_view name;
  int64_t stream = kNoInt;
  size_t count = 0;
  double total_duration_us = 0.0;
  bool has_stats = false;  // false when no duration was collected (count 0)
  double mean = 0, median = 0, std_dev = 0, min = 0, max = 0;
};

// TraceLens _summarize_kernel_stats with agg [mean, median, std, min, max]:
// template = first non-empty list; rows of another length are skipped;
// nullptr rows (missing) are ignored; result sorted by (total, name).
std::vector<KernelStat> summarize_kernel_details(std::span<const KernelDetailList* const> rows);

// summarize_kernel_details of kernel_details_of(trace, row) for every row,
// without building the detail lists.
std::vector<KernelStat> summarize_kernels(const Trace& trace,
                                          std::span<const std::span<const Uid>> rows);

// Python repr of the summary list, e.g.
// [{'name': 'attn_fwd', 'stream': 0, 'count': 24, 'total_duration_us': 3908.798, ...}]
std::string kernel_stats_repr(const std::vector<KernelStat>& stats);
// `trunc_kernel_details`: names cut to 64 characters + "...", mean rounded to
// 2 decimals; missing cell when the summary is empty.
Cell trunc_kernel_details_cell(const std::vector<KernelStat>& stats);

}  // namespace jarvis::report
