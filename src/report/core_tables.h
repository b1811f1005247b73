// The core TraceLens report sheets built from the call tree (spec
// tree-and-timeline.md §8-§13): kernel launchers and their summaries
// (ops_summary_by_category, ops_summary, ops_unique_args) and the per-kernel
// sheets (kernel_summary, short_kernel_histogram, short_kernels_summary).
#pragma once

#include <string_view>
#include <unordered_map>
#include <vector>

#include "report/kernel_details.h"
#include "report/table.h"
#include "trace/trace.h"
#include "tree/call_tree.h"

namespace jarvis::report {

// One kernel launcher (spec §8.2).
struct LauncherRow {
  Uid uid = kNoUid;
  std::string_view name;
  std::string_view category;        // §9 on the launcher with its direct kernels
  double direct_time = 0;           // busy time of the direct kernels (us)
  double subtree_time = 0;          // busy time of all gpu_events (us)
  KernelDetailList kernel_details;  // direct kernels sorted by ts
};

// Launchers in TraceLens order (ts, stable).
std::vector<LauncherRow> kernel_launcher_rows(const Trace& trace, const CallTree& tree);

// §9 op category of any host event: registry, name patterns, then the
// kernel-name fallback on the event's first direct kernel by ts (only
// launchers have direct kernels; other events fall through to "other").
std::string_view op_category_of(const Trace& trace, const CallTree& tree, Uid uid);

// op_category_of for many events of one trace, the name registry's answer
// kept per interned name (the registry hashes the text): a report asks for
// the categories of tens of thousands of ops that share a few hundred names.
class OpCategories {
 public:
  OpCategories(const Trace& trace, const CallTree& tree) : trace_(trace), tree_(tree) {}
  // The registry's category of the event's name; "" when it is not registered.
  std::string_view registered(Uid uid);
  // op_category_of(trace, tree, uid).
  std::string_view of(Uid uid);

 private:
  const Trace& trace_;
  const CallTree& tree_;
  std::unordered_map<uint32_t, std::string_view> by_name_;
};

// GPU-only trace: no cpu_op event at all.
bool is_gpu_only(const Trace& trace);

Table ops_summary_by_category_table(const std::vector<LauncherRow>& launchers);
Table ops_summary_table(const std::vector<LauncherRow>& launchers);
Table ops_unique_args_table(const Trace& trace, const std::vector<LauncherRow>& launchers);

// Cell value of a cpu_op arg as pandas shows TraceLens's tuple-converted
// value: tuple repr for lists, raw text for strings, missing when absent.
Cell arg_cell(const Trace& trace, Uid uid, std::string_view key);
// Python str() of the same value (grouping key; "None" when absent).
std::string arg_key(const Trace& trace, Uid uid, std::string_view key);

// kernel_summary (§13.2); total_time_ms is the gpu_timeline total.
Table kernel_summary_table(const Trace& trace, const CallTree& tree, double total_time_ms);
// short_kernel_histogram (§13.3): NumPy histogram of kernel durations below
// the threshold.
Table short_kernel_histogram_table(const Trace& trace, const CallTree& tree, double threshold_us,
                                   int bins);
// np.histogram(values, bins) as the short_kernel_histogram sheet
// (bin_start, bin_end, count); no rows when values is empty.
Table numpy_histogram_table(const std::vector<double>& values, int bins);
// short_kernels_summary (§13.3).
Table short_kernels_summary_table(const Trace& trace, const CallTree& tree, double threshold_us,
                                  double total_time_ms);

}  // namespace jarvis::report
