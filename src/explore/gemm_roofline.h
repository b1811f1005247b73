// GEMM roofline view (seed gemm-analysis-skill.md, gemm-visualization notes):
// one entry per GEMM shape of the report's GEMM sheet with FLOPs, bytes,
// arithmetic intensity, ridge point, bound, achieved TFLOPS/s and TB/s,
// efficiency against the bound's roof, share of compute time, the skill's
// priority rule, and flags (tiny batched shapes, quantized dtypes, GEMMs
// without a perf model); plus forward / backward pairing of linear layers
// and an optional SVG roofline plot.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "categories/category_analysis_common.h"
#include "report/report.h"
#include "report/table.h"
#include "trace/trace.h"
#include "tree/call_tree.h"

namespace jarvis::analysis {

struct GemmRooflineFilters {
  std::string op_contains;  // keep ops whose name contains this ("" = all)
  std::string dtype;        // keep shapes of this precision (bf16, fp8, ...; "" = all)
  double min_percent = 0;   // keep shapes with at least this % of compute time
  size_t top_n = 50;        // most expensive shapes first
};

struct GemmRooflineInputs {
  const Table* gemm_sheet = nullptr;  // report sheet "GEMM" (required)
  const Table* unified = nullptr;     // unified_perf_summary (for missing models)
  // ops_summary_by_category: the GEMM total with each kernel counted once
  // (optional; without it the GEMM sheet's subtree kernel time is the total).
  const Table* ops_by_category = nullptr;
  ojson arch;                      // arch dict (mem_bw_gbps, max_achievable_tflops, name)
  double computation_time_us = 0;  // gpu_timeline computation_time (share base)
  double total_time_us = 0;        // gpu_timeline total_time
  // True when the event at a UID runs in autograd's backward pass (optional).
  std::function<bool(Uid)> is_backward;
  // The precision the GEMM under the op at a UID computes in ("bf16",
  // "fp16", "fp8"; "" when the trace does not say; insights::
  // gemm_compute_precision) (optional). Under autocast an op recorded fp32
  // runs bf16 kernels.
  std::function<std::string(Uid)> kernel_precision;
  // True when `inner` runs inside `outer`'s subtree (optional).
  std::function<bool(Uid outer, Uid inner)> encloses;
};

// Priority of the GEMM skill: Critical (>15 % of compute and <30 %
// efficiency), High (>10 % or <40 %), Medium (>5 % or a batching pattern),
// Low otherwise. Unknown efficiency counts as not low.
std::string gemm_priority(double percent_of_compute, std::optional<double> efficiency_percent,
                          bool batching_pattern);

// Tiny dims: max(M, N, K) <= 256 or min(M, N, K) <= 16. A batching pattern is
// tiny dims with >= 1000 launches or a batch >= 64.
bool gemm_is_tiny(double m, double n, double k);
bool gemm_batching_pattern(double m, double n, double k, double batch, double count);

// {arch, peak_hbm_bw_tbs, gemm_time_us, computation_time_us, shape_count,
//  shapes[], missing_perf_model[], linear_layers[], summary{...}}.
// A shape whose kernels compute in another precision than its inputs were
// recorded in (autocast) is judged at its kernels' precision: peak, ridge,
// bound, efficiency and priority; `efficiency_percent_recorded_dtype` keeps
// the rating against the recorded dtype's peak (TraceLens's). When such a
// wrapper encloses a GEMM of the same M, N, K with its own row, `wraps_shape`
// names that row: the wrapper's kernel time (the sheet's subtree sum)
// counts the inner GEMM's kernels again.
ojson gemm_roofline(const GemmRooflineInputs& inputs, const GemmRooflineFilters& filters = {});

// gemm_roofline over a built report of the trace (its GEMM, unified and
// ops_summary_by_category sheets and its timeline). `arch` is a bundled arch
// name or an arch JSON path.
ojson gemm_roofline_for_report(const Trace& trace, const CallTree& tree, const Report& report,
                               const std::string& arch, const GemmRooflineFilters& filters = {});

// Builds the report for a trace and runs gemm_roofline_for_report on it.
ojson gemm_roofline_for_trace(const Trace& trace, const CallTree& tree, const std::string& arch,
                              const GemmRooflineFilters& filters = {});

// Log-log roofline plot of a gemm_roofline result (one point per shape).
std::string gemm_roofline_svg(const ojson& roofline);

}  // namespace jarvis::analysis
