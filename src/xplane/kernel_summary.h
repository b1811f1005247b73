// Kernel summaries of an XPlane trace by XLA op category, as TraceLens's JAX
// report computes them (TraceLens/Trace2Tree/trace_to_tree.py
// _categorize_gpu_kernel_ops; TreePerf get_df_kernel_launchers_summary*):
//   * a kernel is a GPU event on a "Stream #" line whose name does not start
//     with copy / memcpy / memset (case-insensitive);
//   * its category is the first of GEMM, FA BWD, FA FWD, FA V3, Conv, TE,
//     Communication rccl/nccl whose keywords occur in its name; the hlo_op
//     arg, when present, overrides that (first match again) unless the name
//     matched an FA category; otherwise "Uncategorized Events/XLA";
//   * in JAX each kernel is its own launcher (direct time = duration).
// Sheets: kernel_launchers_summary (by name), kernel_launchers_summary_by_
// category, xla_summary (the XLA-category kernels by name without digits,
// loop_slice_fusion_202 -> loop_slice_fusion_). Columns are those of
// TraceLens's reference CSVs for the JAX conv sample.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "report/table.h"
#include "trace/trace.h"

namespace jarvis::xplane {

inline constexpr std::string_view kXlaCategory = "Uncategorized Events/XLA";

// TraceLens's JAX kernel category of a kernel name and its hlo_op ("" when none).
std::string_view kernel_op_category(std::string_view name, std::string_view hlo_op);

struct KernelLaunch {
  Uid uid = kNoUid;
  int64_t gpu_pid = 0;
  std::string_view name;
  std::string_view category;
  double dur_us = 0;
};

// The kernels of the trace, in event order.
std::vector<KernelLaunch> kernel_launches(const Trace& trace);

Table kernel_launchers_summary_table(const std::vector<KernelLaunch>& kernels);
Table kernel_launchers_summary_by_category_table(const std::vector<KernelLaunch>& kernels);
Table xla_summary_table(const std::vector<KernelLaunch>& kernels);

}  // namespace jarvis::xplane
