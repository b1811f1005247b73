// TraceLens's rocprof perf report (TraceLens_generate_perf_report_rocprof)
// from a rocprofv3 profile: gpu_timeline, kernel_summary,
// kernel_summary_by_category, kernel_details, short_kernels_summary and
// short_kernel_histogram, with its columns, row order and arithmetic.
//
// TraceLens keeps rocprofv3's nanosecond durations but labels them as
// microseconds (and their sums, divided by 1000, as milliseconds); its
// short-kernel threshold is compared against nanoseconds, and the
// cumulative percentages are summed in name order before the rows are
// sorted. By default the tables reproduce all of that (docs/deviations.md);
// fix_units writes every time in the unit its header names and sums the
// cumulative percentages in the written row order.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "report/report.h"
#include "report/table.h"
#include "rocprof/profile.h"

namespace jarvis::rocprof {

struct ReportOptions {
  bool kernel_summary = true;  // kernel_summary and kernel_summary_by_category
  bool kernel_details = false;
  std::optional<size_t> topk_kernels;  // kernel_details: longest N dispatches only
  bool short_kernel_study = true;
  double short_kernel_threshold_us = 10;
  int short_kernel_bins = 100;
  bool fix_units = false;

  // The options a rocprofv3 report shares with a Kineto one (kernel summary,
  // short-kernel study), plus the rocprof-only ones: one conversion for the
  // CLI and the Python API.
  static ReportOptions from_shared(const jarvis::ReportOptions& shared, bool kernel_details,
                                   std::optional<size_t> topk_kernels, bool fix_units) {
    ReportOptions o;
    o.kernel_summary = shared.kernel_summary;
    o.short_kernel_study = shared.short_kernel_study;
    o.short_kernel_threshold_us = shared.short_kernel_threshold_us;
    o.short_kernel_bins = shared.short_kernel_bins;
    o.kernel_details = kernel_details;
    o.topk_kernels = topk_kernels;
    o.fix_units = fix_units;
    return o;
  }
};

// TraceLens's rocprof kernel category from the name: GEMM, Elementwise,
// Reduction, Convolution, Normalization, Attention, Memory, COMM or Other.
std::string_view kernel_category(std::string_view name);

// One kernel name's dispatch durations, in integer nanoseconds.
struct KernelStats {
  std::string name;
  std::string_view category;
  int64_t count = 0;
  int64_t total_ns = 0;
  double mean_ns = 0;
  double median_ns = 0;
  double std_ns = 0;  // sample (n - 1); NaN for one dispatch
  int64_t min_ns = 0;
  int64_t max_ns = 0;
};

// Per kernel name, sorted by total time descending (TraceLens's row order:
// NumPy's unstable quicksort, ties as it leaves them).
std::vector<KernelStats> kernel_stats_by_time(const Profile& profile);

// Time bounds of the run: the tool's init / fini timestamps when known,
// else the first start and last end of the dispatches and copies.
std::pair<int64_t, int64_t> run_bounds_ns(const Profile& profile);

// gpu_timeline: total_time, kernel, memory, busy_time, idle (ms, percent).
Table gpu_timeline_table(const Profile& profile);
Table kernel_summary_table(const Profile& profile, bool fix_units = false);
Table kernel_summary_by_category_table(const Profile& profile, bool fix_units = false);
Table kernel_details_table(const Profile& profile, std::optional<size_t> topk,
                           bool fix_units = false);
Table short_kernels_summary_table(const Profile& profile, double threshold_us,
                                  bool fix_units = false);
Table short_kernel_histogram_table(const Profile& profile, double threshold_us, int bins,
                                   bool fix_units = false);

// The sheets TraceLens writes for these options, in its order.
std::vector<Table> report_tables(const Profile& profile, const ReportOptions& options);

}  // namespace jarvis::rocprof
