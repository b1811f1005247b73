// Hardware-expected ratios of a cross-platform comparison: constructed
// memory-bound, compute-bound and mixed ops with hand-computed numbers, and
// the real H100 vs MI300X reports.
#include <doctest/doctest.h>

#include <string>

#include "analysis/compare.h"
#include "analysis/compare_frame.h"
#include "analysis/compare_hw.h"
#include "golden.h"
#include "perf/gpu_arch.h"

using doctest::Approx;
using jarvis::GpuArch;
using jarvis::HardwareGapRow;
using jarvis::NamedReport;
using jarvis::Table;

namespace {

// Reference: 2000 GB/s, matrix_bf16 1000 TFLOPS (ridge 500 FLOPs/B),
// vector_bf16 100 (ridge 50). Target: 4000 GB/s, matrix_bf16 500 (ridge 125),
// vector_bf16 100 (ridge 25).
GpuArch arch(const std::string& name, double bw, double matrix, double vector) {
  GpuArch a;
  a.name = name;
  a.mem_bw_gbps = bw;
  a.memory_gb = 64;
  a.max_achievable_tflops = {{"matrix_bf16", matrix}, {"vector_bf16", vector}};
  return a;
}

const char* kHeader =
    "name,Input type,Input Dims,Input Strides,Concrete Inputs,op category,operation_count,"
    "GFLOPS,Data Moved (MB),FLOPS/Byte,Compute Spec,Kernel Time (µs)_mean,"
    "Kernel Time (µs)_sum\n";

NamedReport report(const std::string& tag, const std::string& rows) {
  Table t = jarvis::parse_csv(std::string(kHeader) + rows, "unified_perf_summary");
  jarvis::frame::infer_column_types(t);
  return NamedReport{tag, {t}};
}

// Ops (same keys in both reports unless noted):
//  copy   vector_bf16, 0.1 GFLOP, 200 MiB: memory-bound on both -> expected 0.5
//  mm     matrix_bf16, 100 GFLOP, 10 MiB: compute-bound on both -> expected 2.0
//  mix    matrix_bf16, 26.2144 GFLOP, 100 MiB (250 FLOPs/B): memory-bound on the
//         reference (ridge 500), compute-bound on the target (ridge 125);
//         both roofline times are 52.4288 us -> expected 1.0
//  add    vector_bf16 memory-bound, target 4x faster -> reference slower
//  cat    no perf model;  fp8mm  spec missing from both archs
//  big    target only (counts toward the target's total time only)
NamedReport reference_report() {
  return report("ref",
                "copy,bf16,(1),(1),(),elementwise,10,0.1,200.0,0.476837158203125,vector_bf16,"
                "110.0,1100.0\n"
                "mm,bf16,(2),(1),(),GEMM,10,100.0,10.0,9536.7431640625,matrix_bf16,120.0,1200.0\n"
                "mix,bf16,(3),(1),(),GEMM,1,26.2144,100.0,250.0,matrix_bf16,60.0,60.0\n"
                "add,bf16,(4),(1),(),elementwise,1,0.1,200.0,0.476837158203125,vector_bf16,"
                "200.0,200.0\n"
                "cat,bf16,(5),(1),(),other,2,,,,,30.0,60.0\n"
                "fp8mm,fp8,(6),(1),(),GEMM,1,10.0,1.0,9536.7431640625,matrix_fp8,9.0,9.0\n");
}
NamedReport target_report() {
  return report("tgt",
                "big,bf16,(9),(1),(),other,1,,,,,20000.0,20000.0\n"
                "mm,bf16,(2),(1),(),GEMM,10,100.0,10.0,9536.7431640625,matrix_bf16,230.0,2300.0\n"
                "copy,bf16,(1),(1),(),elementwise,10,0.1,200.0,0.476837158203125,vector_bf16,"
                "88.0,880.0\n"
                "mix,bf16,(3),(1),(),GEMM,1,26.2144,100.0,250.0,matrix_bf16,100.0,100.0\n"
                "add,bf16,(4),(1),(),elementwise,1,0.1,200.0,0.476837158203125,vector_bf16,"
                "50.0,50.0\n"
                "cat,bf16,(5),(1),(),other,2,,,,,45.0,90.0\n"
                "fp8mm,fp8,(6),(1),(),GEMM,1,10.0,1.0,9536.7431640625,matrix_fp8,9.0,9.0\n");
}

const HardwareGapRow& row_named(const jarvis::HardwareGapAnalysis& a, const std::string& name) {
  for (const auto& r : a.rows)
    if (r.name == name) return r;
  FAIL("no row " << name);
  throw 0;
}

}  // namespace

TEST_CASE("hardware ratios: HBM and peak-compute ratios") {
  GpuArch ref = arch("R", 2000, 1000, 100), tgt = arch("T", 4000, 500, 100);
  CHECK(jarvis::hbm_time_ratio(ref, tgt) == Approx(0.5));
  CHECK(*jarvis::compute_time_ratio(ref, tgt, "matrix_bf16") == Approx(2.0));
  CHECK_FALSE(jarvis::compute_time_ratio(ref, tgt, "matrix_fp8").has_value());
  // Memory-bound on both: the HBM ratio.
  CHECK(*jarvis::expected_time_ratio(ref, tgt, "vector_bf16", 0.1, 200.0) == Approx(0.5));
  // Compute-bound on both: the peak ratio.
  CHECK(*jarvis::expected_time_ratio(ref, tgt, "matrix_bf16", 100.0, 10.0) == Approx(2.0));
  // Memory-bound on the reference, compute-bound on the target: roofline
  // times 52.4288 us on both.
  CHECK(*jarvis::expected_time_ratio(ref, tgt, "matrix_bf16", 26.2144, 100.0) == Approx(1.0));
  CHECK_FALSE(jarvis::expected_time_ratio(ref, tgt, "matrix_bf16", 0.0, 100.0).has_value());
}

TEST_CASE("hardware gaps: constructed ops are rated and flagged") {
  GpuArch ref = arch("R", 2000, 1000, 100), tgt = arch("T", 4000, 500, 100);
  auto a = jarvis::analyze_hardware_gaps(reference_report(), target_report(), ref, tgt);
  CHECK(a.target_kernel_time_us == Approx(20000 + 2300 + 880 + 100 + 50 + 90 + 9));
  REQUIRE(a.rows.size() == 6);  // "big" is target-only

  const auto& copy = row_named(a, "copy");
  CHECK(copy.bound_reference == "MEMORY_BOUND");
  CHECK(copy.bound_target == "MEMORY_BOUND");
  CHECK(copy.expected_basis == "HBM bandwidth");
  CHECK(*copy.ridge_reference == Approx(50.0));
  CHECK(*copy.ridge_target == Approx(25.0));
  CHECK(copy.measured_ratio == Approx(0.8));
  CHECK(*copy.expected_ratio == Approx(0.5));
  CHECK(*copy.gap == Approx(1.6));
  CHECK(*copy.excess_us_target == Approx(880 - 0.5 * 110 * 10));  // 330 us
  CHECK(copy.target_share == Approx(880.0 / 23429.0));            // 3.8%
  CHECK(copy.status == std::string(jarvis::kGapInvestigate));

  const auto& mm = row_named(a, "mm");
  CHECK(mm.bound_reference == "COMPUTE_BOUND");
  CHECK(mm.bound_target == "COMPUTE_BOUND");
  CHECK(mm.expected_basis == "peak compute (matrix_bf16)");
  CHECK(*mm.expected_ratio == Approx(2.0));
  CHECK(*mm.gap == Approx((230.0 / 120.0) / 2.0));
  CHECK(*mm.excess_us_target == Approx(-100.0));
  CHECK(mm.status == std::string(jarvis::kGapWithin));

  const auto& mix = row_named(a, "mix");
  CHECK(mix.bound_reference == "MEMORY_BOUND");
  CHECK(mix.bound_target == "COMPUTE_BOUND");
  CHECK(mix.expected_basis == "roofline mix");
  CHECK(*mix.expected_ratio == Approx(1.0));
  CHECK(*mix.gap == Approx(100.0 / 60.0));
  CHECK(mix.status == std::string(jarvis::kGapSmallShare));  // 0.43% of target time

  CHECK(row_named(a, "add").status == std::string(jarvis::kGapReferenceSlower));
  CHECK(*row_named(a, "add").gap == Approx(0.5));
  CHECK(row_named(a, "cat").status == std::string(jarvis::kGapNoModel));
  CHECK_FALSE(row_named(a, "cat").expected_ratio.has_value());
  CHECK(row_named(a, "fp8mm").status == std::string(jarvis::kGapNoArchEntry));

  // Order: by target time beyond expectation, then unrated ops by target time.
  std::vector<std::string> order;
  for (const auto& r : a.rows) order.push_back(r.name);
  CHECK(order == std::vector<std::string>{"copy", "mix", "add", "mm", "cat", "fp8mm"});

  auto flagged = a.flagged();
  REQUIRE(flagged.size() == 1);
  CHECK(flagged[0]->name == "copy");

  auto j = a.to_json(5);
  CHECK(j["hbm_time_ratio"].get<double>() == Approx(0.5));
  CHECK(j["compute_time_ratios"]["matrix_bf16"].get<double>() == Approx(2.0));
  CHECK(j["flagged_count"] == 1);
  CHECK(j["flagged"][0]["name"] == "copy");
  CHECK(j["flagged"][0]["target_share_pct"].get<double>() == Approx(100.0 * 880.0 / 23429.0));
  CHECK(j["status_counts"][jarvis::kGapWithin] == 1);

  Table t = a.table();
  CHECK(t.name == "hardware_gap_analysis");
  CHECK(t.rows.size() == 6);
  CHECK(t.col("ref::ridge FLOPS/Byte") >= 0);
  CHECK(t.at(0, "status").text() == jarvis::kGapInvestigate);
}

TEST_CASE("hardware gaps: thresholds are options") {
  GpuArch ref = arch("R", 2000, 1000, 100), tgt = arch("T", 4000, 500, 100);
  jarvis::HardwareGapOptions options;
  options.gap_threshold = 1.7;  // copy's gap 1.6 is now within
  options.min_target_share = 0.001;
  auto a = jarvis::analyze_hardware_gaps(reference_report(), target_report(), ref, tgt, options);
  CHECK(row_named(a, "copy").status == std::string(jarvis::kGapWithin));
  CHECK(row_named(a, "mix").status == std::string(jarvis::kGapWithin));  // 1.667 < 1.7
  CHECK(row_named(a, "add").status == std::string(jarvis::kGapReferenceSlower));
}

TEST_CASE("hardware gaps: H100 vs MI300X reports with the bundled arch files") {
  std::string conf = jarvis::golden::shared_dir() + "/conformance/";
  auto h100 = jarvis::load_report_dir(conf + "h100_qwen1.5-0.5b/perf_report_csvs", "h100");
  auto mi300 = jarvis::load_report_dir(conf + "mi300_qwen1.5-0.5b/perf_report_csvs", "mi300");
  GpuArch h = jarvis::perf::load_gpu_arch("H100"), m = jarvis::perf::load_gpu_arch("MI300X");
  auto a = jarvis::analyze_hardware_gaps(h100, mi300, h, m);
  CHECK(a.rows.size() == 35);  // unified_perf_summary_intersect_mi300 has 35 rows
  // aten::mm 8944x1024 @ 1024x2816 bf16: 692.8 FLOPs/B, above both ridge points
  // (H100 989e12/3350e9 = 295.2, MI300X 708e12/5300e9 = 133.6).
  const HardwareGapRow* mm = nullptr;
  for (const auto& r : a.rows)
    if (r.name == "aten::mm" && r.input_dims == "((8944, 1024), (1024, 2816))") mm = &r;
  REQUIRE(mm);
  CHECK(mm->bound_reference == "COMPUTE_BOUND");
  CHECK(mm->bound_target == "COMPUTE_BOUND");
  CHECK(*mm->expected_ratio == Approx(989.0 / 708.0));
  // Measured from the reports: 84.4844258626302 us on H100; MI300 + 26.1046.
  CHECK(mm->measured_ratio == Approx((84.4844258626302 + 26.104604085286496) / 84.4844258626302));
  CHECK(*mm->ridge_reference == Approx(989e12 / 3350e9));
  for (const auto& r : a.rows) {
    CAPTURE(r.name);
    CHECK_FALSE(r.status.empty());
    if (r.expected_ratio) {
      CHECK(r.gap.has_value());
    }
  }
}
