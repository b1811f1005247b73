#include "compare/compare_hw.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "compare/compare_frame.h"
#include "report/op_regime.h"

namespace jarvis {

namespace {

constexpr const char* kNoKernelTime = "no kernel time on reference";
constexpr double kBytesPerMiB = 1024.0 * 1024.0;  // Data Moved (MB) is MiB

Table prefixed(const Table& table, const std::string& prefix) {
  Table t = table;
  for (auto& c : t.columns)
    if (std::find(frame::kOpKeys.begin(), frame::kOpKeys.end(), c) == frame::kOpKeys.end())
      c = prefix + c;
  return t;
}

// Read access to one merged row by column name; absent columns read as missing.
struct RowView {
  const Table& table;
  size_t row;
  const Cell& cell(const std::string& column) const {
    static const Cell kMissing;
    int c = table.col(column);
    return c < 0 ? kMissing : table.rows[row][static_cast<size_t>(c)];
  }
  std::string text(const std::string& column) const {
    const Cell& c = cell(column);
    return c.missing() ? "" : c.to_csv_text(c.is_double());
  }
  std::optional<double> number(const std::string& column) const {
    const Cell& c = cell(column);
    if (!c.is_number() || std::isnan(c.number())) return std::nullopt;
    return c.number();
  }
};

double total_kernel_time(const Table& unified) {
  int c = unified.col("Kernel Time (µs)_sum");
  if (c < 0) return 0;
  double total = 0;
  for (const auto& row : unified.rows)
    if (row[static_cast<size_t>(c)].is_number()) total += row[static_cast<size_t>(c)].number();
  return total;
}

std::string basis_of(const HardwareGapRow& r) {
  if (r.regime == "latency-bound") return "launch latency";
  if (r.bound_reference == "MEMORY_BOUND" && r.bound_target == "MEMORY_BOUND")
    return "HBM bandwidth";
  if (r.bound_reference == "COMPUTE_BOUND" && r.bound_target == "COMPUTE_BOUND")
    return "peak compute (" + r.compute_spec + ")";
  return "roofline mix";
}

// Latency-bound when the op is on both platforms (op_regime.h, the
// classifier of the single-trace analyses); otherwise the bound both share.
std::string regime_of(const HardwareGapRow& r, double floor_ref, double floor_tgt) {
  if (classify_op_regime(r.roofline_us_reference, floor_ref, r.bound_reference) ==
          OpRegime::LatencyBound &&
      classify_op_regime(r.roofline_us_target, floor_tgt, r.bound_target) == OpRegime::LatencyBound)
    return "latency-bound";
  if (r.bound_reference == "MEMORY_BOUND" && r.bound_target == "MEMORY_BOUND")
    return "memory-bound";
  if (r.bound_reference == "COMPUTE_BOUND" && r.bound_target == "COMPUTE_BOUND")
    return "compute-bound";
  return "mixed";
}

// Fills the model columns (bounds, ridges, regime, expected ratio) of one op.
// The spec a side's op really ran at: an fp32 GEMM with TF32 off runs on the
// SIMT cores, so one measured below the vector_fp32 peak is rated against it
// rather than against matrix_fp32 (TF32's tensor-core peak), as an fp32 run
// against a bf16 one needs (GPT-2's LM head: 53 TFLOPS of 67 in fp32, 0.064x
// the time in bf16, as 67 against 989 TFLOPS expects).
std::string effective_spec(const std::string& spec, double gflops, double mean_us,
                           const GpuArch& arch) {
  if (spec != "matrix_fp32" || !(mean_us > 0)) return spec;
  const auto vector_peak = arch.peak_tflops("vector_fp32");
  const double achieved_tflops = gflops / mean_us * 1e-3;
  return vector_peak && achieved_tflops <= *vector_peak ? "vector_fp32" : spec;
}

void rate_against_hardware(HardwareGapRow& r, const GpuArch& ref_arch, const GpuArch& tgt_arch,
                           double floor_ref, double floor_tgt) {
  if (r.compute_spec.empty() || !r.gflops || !(*r.gflops > 0) || !r.data_moved_mb) {
    r.status = kGapNoModel;
    return;
  }
  // A dtype change: the target's roofline from its own spec and bytes.
  const bool changed = r.dtype_changed();
  if (changed && (r.compute_spec_target.empty() || !r.gflops_target || !r.data_moved_mb_target)) {
    r.status = kGapNoModel;
    return;
  }
  const double tgt_gflops = changed ? *r.gflops_target : *r.gflops;
  const double tgt_mb = changed ? *r.data_moved_mb_target : *r.data_moved_mb;
  const std::string ref_spec =
      changed ? effective_spec(r.compute_spec, *r.gflops, r.mean_us_reference, ref_arch)
              : r.compute_spec;
  const std::string tgt_spec =
      changed ? effective_spec(r.compute_spec_target, tgt_gflops, r.mean_us_target, tgt_arch)
              : r.compute_spec;
  if (changed) {
    r.compute_spec = ref_spec;
    r.compute_spec_target = tgt_spec;
  }
  r.ridge_reference = ref_arch.ridge_point(ref_spec);
  r.ridge_target = tgt_arch.ridge_point(tgt_spec);
  auto ref = perf::compute_roofline(ref_arch, ref_spec, *r.gflops, *r.data_moved_mb * kBytesPerMiB,
                                    r.mean_us_reference);
  auto tgt = perf::compute_roofline(tgt_arch, tgt_spec, tgt_gflops, tgt_mb * kBytesPerMiB,
                                    r.mean_us_target);
  if (!ref || !tgt || !(ref->time_us > 0)) {
    r.status = kGapNoArchEntry;
    return;
  }
  r.bound_reference = ref->bound;
  r.bound_target = tgt->bound;
  r.roofline_us_reference = ref->time_us;
  r.roofline_us_target = tgt->time_us;
  r.roofline_ratio = tgt->time_us / ref->time_us;
  r.regime = regime_of(r, floor_ref, floor_tgt);
  r.expected_basis = basis_of(r);
  if (!(r.mean_us_reference > 0)) return;  // judged as "no kernel time" below
  double explained = std::min(ref->time_us, r.mean_us_reference);
  r.roofline_share_reference = explained / r.mean_us_reference;
  if (changed && r.regime != "latency-bound") {
    // Another dtype is another kernel: its time beyond the roofline does not
    // carry over. Each side at the same share of its own roofline.
    r.expected_ratio = *r.roofline_ratio;
    return;
  }
  double rest_scale = r.regime == "latency-bound" ? floor_tgt / floor_ref : 1.0;
  double expected_us = tgt->time_us + (r.mean_us_reference - explained) * rest_scale;
  r.expected_ratio = expected_us / r.mean_us_reference;
}

std::string why_of(const HardwareGapRow& r) {
  std::string model =
      r.dtype_changed() && r.regime != "latency-bound"
          ? fmt::format(
                "{} ({}): each side at the same share of its own roofline: expected "
                "{:.2f}x",
                r.regime, r.expected_basis, *r.expected_ratio)
      : r.regime == "latency-bound"
          ? fmt::format(
                "latency-bound (roofline {:.2f} us per call, below both platforms' kernel "
                "latency floor): expected {:.2f}x",
                *r.roofline_us_reference, *r.expected_ratio)
          : fmt::format(
                "{} ({}): the roofline explains {:.0f}% of the reference time and scales "
                "{:.2f}x, the rest stays: expected {:.2f}x",
                r.regime, r.expected_basis, 100.0 * *r.roofline_share_reference, *r.roofline_ratio,
                *r.expected_ratio);
  std::string dtype;
  if (r.dtype_changed())
    dtype = fmt::format("dtype {} -> {} ({} -> {}): ", r.input_type, r.input_type_target,
                        r.compute_spec, r.compute_spec_target);
  return fmt::format("{}{}; measured {:.2f}x, gap {:.2f}", dtype, model, r.measured_ratio, *r.gap);
}

void judge(HardwareGapRow& r, const HardwareGapOptions& options) {
  if (!r.status.empty()) return;  // no model / no arch entry
  if (!(r.mean_us_reference > 0) || !r.expected_ratio) {
    r.status = kNoKernelTime;
    return;
  }
  r.gap = r.measured_ratio / *r.expected_ratio;
  double expected_target_us = *r.expected_ratio * r.mean_us_reference * r.count_target;
  r.excess_us_target = r.sum_us_target - expected_target_us;
  if (*r.gap > options.gap_threshold)
    r.status = r.target_share >= options.min_target_share ? kGapInvestigate : kGapSmallShare;
  else if (*r.gap < 1.0 / options.gap_threshold)
    r.status = kGapReferenceSlower;
  else
    r.status = kGapWithin;
  r.why = why_of(r);
}

// A row from the merged table: the reference's columns from `v`, the
// target's from `t` (the same row, or for a dtype change the target's own).
HardwareGapRow make_row(const RowView& v, const RowView& t, double target_total) {
  HardwareGapRow r;
  r.name = v.text("name");
  r.input_type = v.text("Input type");
  r.input_dims = v.text("Input Dims");
  r.input_strides = v.text("Input Strides");
  r.concrete_inputs = v.text("Concrete Inputs");
  r.category = v.text("ref::op category");
  r.compute_spec = v.text("ref::Compute Spec");
  if (r.compute_spec.empty() && &v.table == &t.table && v.row == t.row)
    r.compute_spec = t.text("tgt::Compute Spec");
  r.gflops = v.number("ref::GFLOPS");
  r.data_moved_mb = v.number("ref::Data Moved (MB)");
  r.flops_per_byte = v.number("ref::FLOPS/Byte");
  r.count_reference = static_cast<int64_t>(v.number("ref::operation_count").value_or(0));
  r.count_target = static_cast<int64_t>(t.number("tgt::operation_count").value_or(0));
  r.mean_us_reference = v.number("ref::Kernel Time (µs)_mean").value_or(0);
  r.mean_us_target = t.number("tgt::Kernel Time (µs)_mean").value_or(0);
  r.sum_us_reference = v.number("ref::Kernel Time (µs)_sum").value_or(0);
  r.sum_us_target = t.number("tgt::Kernel Time (µs)_sum").value_or(0);
  r.target_share = target_total > 0 ? r.sum_us_target / target_total : 0;
  r.measured_ratio = r.mean_us_reference > 0 ? r.mean_us_target / r.mean_us_reference : NAN;
  return r;
}

void sort_rows(std::vector<HardwareGapRow>& rows) {
  std::stable_sort(rows.begin(), rows.end(), [](const HardwareGapRow& a, const HardwareGapRow& b) {
    if (a.excess_us_target.has_value() != b.excess_us_target.has_value())
      return a.excess_us_target.has_value();
    if (a.excess_us_target) return *a.excess_us_target > *b.excess_us_target;
    return a.sum_us_target > b.sum_us_target;
  });
}

Cell opt_cell(const std::optional<double>& x) {
  return x ? Cell(*x) : Cell();
}
Cell text_cell(const std::string& s) {
  return s.empty() ? Cell() : Cell(s);
}
nlohmann::json opt_json(const std::optional<double>& x) {
  return x ? nlohmann::json(*x) : nlohmann::json();
}
nlohmann::json finite_json(double x) {
  return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json();
}

nlohmann::json arch_json(const GpuArch& arch) {
  return {{"name", arch.name},
          {"mem_bw_gbps", arch.mem_bw_gbps},
          {"memory_gb", arch.memory_gb},
          {"max_achievable_tflops", arch.max_achievable_tflops}};
}

nlohmann::json row_json(const HardwareGapRow& r) {
  nlohmann::json j = {{"name", r.name},
                      {"input_dims", r.input_dims},
                      {"input_type", r.input_type},
                      {"category", r.category},
                      {"compute_spec", r.compute_spec},
                      {"flops_per_byte", opt_json(r.flops_per_byte)},
                      {"bound_reference", r.bound_reference},
                      {"bound_target", r.bound_target},
                      {"expected_basis", r.expected_basis},
                      {"regime", r.regime},
                      {"roofline_share_reference", opt_json(r.roofline_share_reference)},
                      {"roofline_ratio", opt_json(r.roofline_ratio)},
                      {"count_reference", r.count_reference},
                      {"count_target", r.count_target},
                      {"mean_us_reference", r.mean_us_reference},
                      {"mean_us_target", r.mean_us_target},
                      {"sum_us_target", r.sum_us_target},
                      {"target_share_pct", 100.0 * r.target_share},
                      {"measured_ratio", finite_json(r.measured_ratio)},
                      {"expected_ratio", opt_json(r.expected_ratio)},
                      {"gap", opt_json(r.gap)},
                      {"excess_us_target", opt_json(r.excess_us_target)},
                      {"status", r.status},
                      {"why", r.why}};
  if (r.dtype_changed()) {
    j["input_type_target"] = r.input_type_target;
    j["compute_spec_target"] = r.compute_spec_target;
  }
  return j;
}

}  // namespace

double hbm_time_ratio(const GpuArch& reference, const GpuArch& target) {
  if (!(reference.mem_bw_gbps > 0) || !(target.mem_bw_gbps > 0))
    throw std::runtime_error("arch files need mem_bw_gbps for the HBM bandwidth ratio");
  return reference.mem_bw_gbps / target.mem_bw_gbps;
}

std::optional<double> compute_time_ratio(const GpuArch& reference, const GpuArch& target,
                                         const std::string& compute_spec) {
  auto ref = reference.peak_tflops(compute_spec);
  auto tgt = target.peak_tflops(compute_spec);
  if (!ref || !tgt || !(*tgt > 0)) return std::nullopt;
  return *ref / *tgt;
}

std::optional<double> expected_time_ratio(const GpuArch& reference, const GpuArch& target,
                                          const std::string& compute_spec, double gflops,
                                          double data_moved_mb) {
  double bytes = data_moved_mb * kBytesPerMiB;
  auto ref = perf::compute_roofline(reference, compute_spec, gflops, bytes, 0);
  auto tgt = perf::compute_roofline(target, compute_spec, gflops, bytes, 0);
  if (!ref || !tgt || !(ref->time_us > 0)) return std::nullopt;
  return tgt->time_us / ref->time_us;
}

HardwareGapAnalysis analyze_hardware_gaps(const NamedReport& reference, const NamedReport& target,
                                          const GpuArch& arch_reference, const GpuArch& arch_target,
                                          const HardwareGapOptions& options) {
  const Table* ref = reference.sheet("unified_perf_summary");
  const Table* tgt = target.sheet("unified_perf_summary");
  if (!ref || !tgt)
    throw std::runtime_error("hardware gap analysis needs unified_perf_summary in both reports");
  HardwareGapAnalysis a;
  a.reference_tag = reference.tag;
  a.target_tag = target.tag;
  a.arch_reference = arch_reference;
  a.arch_target = arch_target;
  a.options = options;
  a.target_kernel_time_us = total_kernel_time(*tgt);
  a.latency_floor_us_reference = latency_floor_us(*ref);
  a.latency_floor_us_target = latency_floor_us(*tgt);

  Table merged = frame::outer_merge(prefixed(*ref, "ref::"), prefixed(*tgt, "tgt::"),
                                    frame::kOpKeys, frame::MergeOrder::FirstAppearance);
  // Rows on one side only, by their four keys other than the input type.
  std::map<std::string, std::vector<size_t>> only_reference, only_target;
  for (size_t r = 0; r < merged.rows.size(); ++r) {
    RowView v{merged, r};
    const bool in_reference = v.number("ref::Kernel Time (µs)_sum").has_value();
    const bool in_target = v.number("tgt::Kernel Time (µs)_sum").has_value();
    if (in_reference != in_target) {
      const std::string key = v.text("name") + '\x1f' + v.text("Input Dims") + '\x1f' +
                              v.text("Input Strides") + '\x1f' + v.text("Concrete Inputs");
      (in_reference ? only_reference : only_target)[key].push_back(r);
    }
    if (!in_reference || !in_target) continue;  // not in both reports
    HardwareGapRow row = make_row(v, v, a.target_kernel_time_us);
    rate_against_hardware(row, arch_reference, arch_target, a.latency_floor_us_reference,
                          a.latency_floor_us_target);
    judge(row, options);
    a.rows.push_back(std::move(row));
  }
  // The same op with another dtype on each side: one row each, paired.
  for (const auto& [key, refs] : only_reference) {
    auto it = only_target.find(key);
    if (refs.size() != 1 || it == only_target.end() || it->second.size() != 1) continue;
    RowView v{merged, refs.front()}, t{merged, it->second.front()};
    HardwareGapRow row = make_row(v, t, a.target_kernel_time_us);
    row.input_type_target = t.text("Input type");
    row.compute_spec_target = t.text("tgt::Compute Spec");
    row.gflops_target = t.number("tgt::GFLOPS");
    row.data_moved_mb_target = t.number("tgt::Data Moved (MB)");
    rate_against_hardware(row, arch_reference, arch_target, a.latency_floor_us_reference,
                          a.latency_floor_us_target);
    judge(row, options);
    a.rows.push_back(std::move(row));
  }
  sort_rows(a.rows);
  return a;
}

std::vector<const HardwareGapRow*> HardwareGapAnalysis::dtype_changes() const {
  std::vector<const HardwareGapRow*> out;
  for (const auto& r : rows)
    if (r.dtype_changed()) out.push_back(&r);
  return out;
}

std::vector<const HardwareGapRow*> HardwareGapAnalysis::flagged() const {
  std::vector<const HardwareGapRow*> out;
  for (const auto& r : rows)
    if (r.status == kGapInvestigate) out.push_back(&r);
  return out;
}

Table HardwareGapAnalysis::table() const {
  const std::string& rt = reference_tag;
  const std::string& tt = target_tag;
  Table t("hardware_gap_analysis", {"name",
                                    "Input type",
                                    tt + "::Input type (dtype changed)",
                                    "Input Dims",
                                    "Input Strides",
                                    "Concrete Inputs",
                                    "op category",
                                    "Compute Spec",
                                    tt + "::Compute Spec (dtype changed)",
                                    "GFLOPS",
                                    "Data Moved (MB)",
                                    "FLOPS/Byte",
                                    rt + "::ridge FLOPS/Byte",
                                    tt + "::ridge FLOPS/Byte",
                                    rt + "::Roofline Bound",
                                    tt + "::Roofline Bound",
                                    "expected basis",
                                    "regime",
                                    rt + "::roofline time (µs)",
                                    tt + "::roofline time (µs)",
                                    "roofline share of reference time",
                                    "roofline ratio (target/reference)",
                                    rt + "::operation_count",
                                    tt + "::operation_count",
                                    rt + "::Kernel Time (µs)_mean",
                                    tt + "::Kernel Time (µs)_mean",
                                    tt + "::Kernel Time (µs)_sum",
                                    tt + "::share of kernel time (%)",
                                    "measured ratio (target/reference)",
                                    "expected ratio (target/reference)",
                                    "gap (measured/expected)",
                                    "target time beyond hardware expectation (µs)",
                                    "status",
                                    "why"});
  for (const auto& r : rows) {
    auto& row = t.add_row();
    row = {text_cell(r.name),
           text_cell(r.input_type),
           text_cell(r.input_type_target),
           text_cell(r.input_dims),
           text_cell(r.input_strides),
           text_cell(r.concrete_inputs),
           text_cell(r.category),
           text_cell(r.compute_spec),
           text_cell(r.compute_spec_target),
           opt_cell(r.gflops),
           opt_cell(r.data_moved_mb),
           opt_cell(r.flops_per_byte),
           opt_cell(r.ridge_reference),
           opt_cell(r.ridge_target),
           text_cell(r.bound_reference),
           text_cell(r.bound_target),
           text_cell(r.expected_basis),
           text_cell(r.regime),
           opt_cell(r.roofline_us_reference),
           opt_cell(r.roofline_us_target),
           opt_cell(r.roofline_share_reference),
           opt_cell(r.roofline_ratio),
           Cell(r.count_reference),
           Cell(r.count_target),
           Cell(r.mean_us_reference),
           Cell(r.mean_us_target),
           Cell(r.sum_us_target),
           Cell(100.0 * r.target_share),
           std::isfinite(r.measured_ratio) ? Cell(r.measured_ratio) : Cell(),
           opt_cell(r.expected_ratio),
           opt_cell(r.gap),
           opt_cell(r.excess_us_target),
           text_cell(r.status),
           text_cell(r.why)};
  }
  return t;
}

namespace {

// What the dtype changes amount to: the ops, their time on each side, the
// type pairs; null when the runs share every dtype.
nlohmann::json dtype_changes_json(const HardwareGapAnalysis& a) {
  const auto changes = a.dtype_changes();
  if (changes.empty()) return nullptr;
  double reference_us = 0, target_us = 0;
  std::map<std::string, int> pairs;
  nlohmann::json ops = nlohmann::json::array();
  for (const HardwareGapRow* r : changes) {
    reference_us += r->sum_us_reference;
    target_us += r->sum_us_target;
    pairs[r->input_type + " -> " + r->input_type_target]++;
  }
  std::vector<const HardwareGapRow*> largest = changes;
  std::stable_sort(largest.begin(), largest.end(), [](const auto* x, const auto* y) {
    return x->sum_us_reference > y->sum_us_reference;
  });
  for (size_t k = 0; k < largest.size() && k < 5; ++k)
    ops.push_back({{"name", largest[k]->name},
                   {"input_dims", largest[k]->input_dims},
                   {"input_type_reference", largest[k]->input_type},
                   {"input_type_target", largest[k]->input_type_target},
                   {"sum_us_reference", largest[k]->sum_us_reference},
                   {"sum_us_target", largest[k]->sum_us_target},
                   {"measured_ratio", finite_json(largest[k]->measured_ratio)},
                   {"expected_ratio", opt_json(largest[k]->expected_ratio)},
                   {"status", largest[k]->status}});
  return {{"ops", changes.size()},
          {"sum_us_reference", reference_us},
          {"sum_us_target", target_us},
          {"type_pairs", pairs},
          {"largest", ops}};
}

}  // namespace

nlohmann::json HardwareGapAnalysis::to_json(size_t top_n, bool all_rows) const {
  nlohmann::json compute_ratios = nlohmann::json::object();
  for (const auto& [spec, peak] : arch_reference.max_achievable_tflops)
    if (auto ratio = compute_time_ratio(arch_reference, arch_target, spec))
      compute_ratios[spec] = *ratio;
  nlohmann::json hbm_ratio;  // null when an arch lacks mem_bw_gbps
  if (arch_reference.mem_bw_gbps > 0 && arch_target.mem_bw_gbps > 0)
    hbm_ratio = hbm_time_ratio(arch_reference, arch_target);
  std::map<std::string, int> counts;
  for (const auto& r : rows) counts[r.status]++;
  nlohmann::json flagged_ops = nlohmann::json::array();
  for (const auto* r : flagged()) {
    if (top_n && flagged_ops.size() >= top_n) break;
    flagged_ops.push_back(row_json(*r));
  }
  nlohmann::json out = {
      {"reference", {{"tag", reference_tag}, {"arch", arch_json(arch_reference)}}},
      {"target", {{"tag", target_tag}, {"arch", arch_json(arch_target)}}},
      {"hbm_time_ratio", hbm_ratio},
      {"compute_time_ratios", compute_ratios},
      {"thresholds",
       {{"gap_threshold", options.gap_threshold},
        {"min_target_share_pct", 100.0 * options.min_target_share}}},
      {"target_kernel_time_us", target_kernel_time_us},
      {"latency_floor_us",
       {{"reference", latency_floor_us_reference}, {"target", latency_floor_us_target}}},
      {"model",
       "expected = roofline_target + (measured_reference - roofline_reference) * k; k = 1, "
       "or the ratio of latency floors for a latency-bound op"},
      {"matched_ops", rows.size()},
      {"dtype_changes", dtype_changes_json(*this)},
      {"status_counts", counts},
      {"flagged_count", flagged().size()},
      {"flagged", flagged_ops}};
  if (all_rows) {
    out["rows"] = nlohmann::json::array();
    for (const auto& r : rows) out["rows"].push_back(row_json(r));
  }
  return out;
}

}  // namespace jarvis
