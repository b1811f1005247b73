// Hardware-expected ratios for a cross-platform comparison (beyond TraceLens).
//
// For every op present in both reports' unified_perf_summary with a perf
// model (GFLOPS, Data Moved, Compute Spec), the roofline time of one call is
// computed on each GPU from its arch file:
//     roofline_us = max(GFLOPS / peak_TFLOPS[Compute Spec], bytes / HBM_BW)
// The roofline ratio roofline_target / roofline_reference is the HBM
// bandwidth ratio for an op memory-bound on both GPUs and the peak-compute
// ratio for one compute-bound on both (TraceLens has no such column).
//
// The roofline ratio alone is wrong for most real ops: only the part of the
// reference time that the roofline explains scales with the hardware. The
// expected target time of one call is therefore
//     expected_us = roofline_target + (measured_reference - roofline_reference) * k
// (the rest, clamped at 0, is launch latency, ramp-up and kernel
// inefficiency; it does not move with HBM bandwidth or peak FLOPs). k = 1,
// except for a latency-bound op, whose rest scales with the platforms'
// measured kernel latency floors: k = floor_target / floor_reference. The
// floor of a report is the median of the shortest tenth (at least 3) of the
// mean per-call kernel times of the ops in its unified_perf_summary: what the
// platform's cheapest kernels cost, robust against one odd op.
// An op is latency-bound when its roofline time is below the floor on both
// platforms: no change of bandwidth or FLOPs can make it faster. Such an op's
// expected ratio is ~1 between GPUs of one generation, whatever their HBM.
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
// means the reference is the one slower than its hardware explains. Each
// judged row says why in words (`why`).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compare/compare.h"
#include "perf/gpu_arch.h"
#include "report/op_regime.h"  // latency_floor_us
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
  // An op whose dtype differs between the runs (an fp32 run against a bf16
  // one): the target's input types, compute spec and bytes, which its
  // roofline uses; empty / unset when the op matched on all five keys.
  std::string input_type_target, compute_spec_target;
  std::optional<double> gflops_target, data_moved_mb_target;
  bool dtype_changed() const { return !input_type_target.empty(); }
  std::optional<double> ridge_reference, ridge_target;  // FLOPs/byte where compute = memory time
  std::string bound_reference, bound_target;            // COMPUTE_BOUND / MEMORY_BOUND
  // "launch latency", "HBM bandwidth", "peak compute (matrix_bf16)", "roofline mix"
  std::string expected_basis;
  std::string regime;  // latency-bound / memory-bound / compute-bound / mixed
  std::optional<double> roofline_us_reference, roofline_us_target;  // one call
  std::optional<double> roofline_ratio;  // roofline_target / roofline_reference
  // Share of the measured reference time the roofline explains (0..1).
  std::optional<double> roofline_share_reference;
  int64_t count_reference = 0, count_target = 0;
  double mean_us_reference = 0, mean_us_target = 0;
  double sum_us_reference = 0, sum_us_target = 0;
  double target_share = 0;  // sum_us_target / target kernel time
  double measured_ratio = 0;
  std::optional<double> expected_ratio, gap;
  // Target kernel time beyond what the hardware explains (may be negative).
  std::optional<double> excess_us_target;
  std::string status;
  std::string why;  // the judgment in words, for every judged row
};

struct HardwareGapAnalysis {
  std::string reference_tag, target_tag;
  GpuArch arch_reference, arch_target;
  HardwareGapOptions options;
  double target_kernel_time_us = 0;  // all ops of the target's unified_perf_summary
  // Measured kernel latency floor of each platform (see latency_floor_us).
  double latency_floor_us_reference = 0, latency_floor_us_target = 0;
  // Sorted: ops with an expected ratio by excess target time (largest
  // first), then the others by target time.
  std::vector<HardwareGapRow> rows;

  // The rows paired across a dtype change (HardwareGapRow::dtype_changed).
  std::vector<const HardwareGapRow*> dtype_changes() const;
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
// Roofline time ratio target/reference of one call of an op, or nullopt when
// an arch lacks the spec or the op has no FLOPs.
std::optional<double> expected_time_ratio(const GpuArch& reference, const GpuArch& target,
                                          const std::string& compute_spec, double gflops,
                                          double data_moved_mb);

// Matches the unified_perf_summary ops of the two reports (same five keys as
// the TraceLens comparison) and rates each. An op left on one side only whose
// name, dims, strides and concrete inputs match exactly one op of the other
// side is paired with it as a dtype change (its roofline on each side from
// that side's compute spec and bytes: fp32 against bf16 expects the ratio of
// the two peaks). Throws std::runtime_error when a report lacks
// unified_perf_summary.
HardwareGapAnalysis analyze_hardware_gaps(const NamedReport& reference, const NamedReport& target,
                                          const GpuArch& arch_reference, const GpuArch& arch_target,
                                          const HardwareGapOptions& options = {});

}  // namespace jarvis
