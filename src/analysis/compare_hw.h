// Hardware-expected ratios for a cross-platform comparison (beyond TraceLens).
//
// For every op present in both reports' unified_perf_summary with a perf
// model (GFLOPS, Data Moved, Compute Spec), the roofline time of one call is
// computed on each GPU from its arch file:
//     roofline_us = max(GFLOPS / peak_TFLOPS[Compute Spec], bytes / HBM_BW)
// and the expected time ratio is roofline_target / roofline_reference. It
// reduces to the HBM bandwidth ratio (bw_ref / bw_target) for an op that is
// memory-bound on both GPUs (FLOPS/Byte below both ridge points) and to the
// peak-compute ratio (peak_ref / peak_target of the op's matrix_/vector_ dtype
// entry) for one that is compute-bound on both; in between it is the ratio
// of the two roofline times.
//
// The measured ratio is target / reference mean kernel time per call (so a
// different number of profiled iterations does not matter). gap =
// measured / expected: 1 means the target is exactly as much slower (or
// faster) as its hardware explains.
//
// Flag (documented threshold): gap > 1.2 (the target takes over 20% more
// time than the hardware difference explains — more than run-to-run noise and
// the spread between achievable and peak rates) and the op's total kernel
// time is >= 1% of the target's kernel time. Such ops are what to
// investigate on the target (kernel selection, tuning, lowering). gap < 1/1.2
// means the reference is the one slower than its hardware explains.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/compare.h"
#include "perf/gpu_arch.h"
#include "report/table.h"

namespace jarvis {

struct HardwareGapOptions {
  double gap_threshold = 1.2;      // measured / expected above this: investigate
  double min_target_share = 0.01;  // ...when the op is at least this share of target time
};

// Status values of the analysis, worded neutrally.
inline constexpr const char* kGapInvestigate = "investigate on target";
inline constexpr const char* kGapSmallShare = "beyond hardware expectation, small share";
inline constexpr const char* kGapWithin = "within hardware expectation";
inline constexpr const char* kGapReferenceSlower = "reference slower than hardware explains";
inline constexpr const char* kGapNoModel = "no perf model";
inline constexpr const char* kGapNoArchEntry = "arch lacks compute spec";

struct HardwareGapRow {
  std::string name, input_type, input_dims, input_strides, concrete_inputs;
  std::string category;
  std::string compute_spec;
  std::optional<double> gflops, data_moved_mb, flops_per_byte;
  std::optional<double> ridge_reference, ridge_target;  // FLOPs/byte where compute = memory time
  std::string bound_reference, bound_target;            // COMPUTE_BOUND / MEMORY_BOUND
  std::string expected_basis;  // "HBM bandwidth", "peak compute (matrix_bf16)", "roofline mix"
  int64_t count_reference = 0, count_target = 0;
  double mean_us_reference = 0, mean_us_target = 0;
  double sum_us_reference = 0, sum_us_target = 0;
  double target_share = 0;  // sum_us_target / target kernel time
  double measured_ratio = 0;
  std::optional<double> expected_ratio, gap;
  // Target kernel time beyond what the hardware explains (may be negative).
  std::optional<double> excess_us_target;
  std::string status;
};

struct HardwareGapAnalysis {
  std::string reference_tag, target_tag;
  GpuArch arch_reference, arch_target;
  HardwareGapOptions options;
  double target_kernel_time_us = 0;  // all ops of the target's unified_perf_summary
  // Sorted: ops with an expected ratio by excess target time (largest
  // first), then the others by target time.
  std::vector<HardwareGapRow> rows;

  // Rows flagged kGapInvestigate, in row order.
  std::vector<const HardwareGapRow*> flagged() const;
  // hardware_gap_analysis sheet (one row per matched op).
  Table table() const;
  // The analysis as JSON: archs, ratios, thresholds, flagged ops (top_n; 0 =
  // all), counts per status and, with all_rows, every row ("rows").
  nlohmann::json to_json(size_t top_n = 0, bool all_rows = false) const;
};

// HBM bandwidth ratio reference/target: the expected time ratio of an op
// memory-bound on both GPUs.
double hbm_time_ratio(const GpuArch& reference, const GpuArch& target);
// Peak-compute ratio reference/target for a Compute Spec, when both list it.
std::optional<double> compute_time_ratio(const GpuArch& reference, const GpuArch& target,
                                         const std::string& compute_spec);
// Expected target/reference time of one call of an op (roofline ratio), or
// nullopt when an arch lacks the spec or the op has no FLOPs.
std::optional<double> expected_time_ratio(const GpuArch& reference, const GpuArch& target,
                                          const std::string& compute_spec, double gflops,
                                          double data_moved_mb);

// Matches the unified_perf_summary ops of the two reports (same five keys as
// the TraceLens comparison) and rates each. Throws std::runtime_error when a
// report lacks unified_perf_summary.
HardwareGapAnalysis analyze_hardware_gaps(const NamedReport& reference, const NamedReport& target,
                                          const GpuArch& arch_reference, const GpuArch& arch_target,
                                          const HardwareGapOptions& options = {});

}  // namespace jarvis
