// Hardware-expected ratios of a cross-platform comparison: constructed
// memory-bound, compute-bound and mixed ops with hand-computed numbers, and
// the real H100 vs MI300X reports.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "compare/compare.h"
#include "compare/compare_frame.h"
#include "compare/compare_hw.h"
#include "compare/compare_traces.h"
#include "golden.h"
#include "perf/gpu_arch.h"
#include "trace/loader.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

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
  // Roofline of one call: 200 MiB at 2000 / 4000 GB/s. Only that share of the
  // 110 us scales with the hardware; the rest (5.1424 us) stays.
  const double copy_roof_ref = 200.0 * 1024 * 1024 / 2000e9 * 1e6;  // 104.8576 us
  const double copy_roof_tgt = copy_roof_ref / 2;
  const double copy_expected = (copy_roof_tgt + (110.0 - copy_roof_ref)) / 110.0;
  CHECK(*copy.roofline_us_reference == Approx(copy_roof_ref));
  CHECK(*copy.roofline_ratio == Approx(0.5));
  CHECK(*copy.roofline_share_reference == Approx(copy_roof_ref / 110.0));
  CHECK(copy.regime == "memory-bound");
  CHECK(*copy.expected_ratio == Approx(copy_expected));  // 0.5234
  CHECK(*copy.gap == Approx(0.8 / copy_expected));
  CHECK(*copy.excess_us_target == Approx(880 - copy_expected * 110 * 10));
  CHECK(copy.why.find("memory-bound") != std::string::npos);
  CHECK(copy.target_share == Approx(880.0 / 23429.0));  // 3.8%
  CHECK(copy.status == std::string(jarvis::kGapInvestigate));

  const auto& mm = row_named(a, "mm");
  CHECK(mm.bound_reference == "COMPUTE_BOUND");
  CHECK(mm.bound_target == "COMPUTE_BOUND");
  CHECK(mm.expected_basis == "peak compute (matrix_bf16)");
  // 100 GFLOP at 1000 / 500 TFLOPS: 100 / 200 us of the 120 us measured.
  const double mm_expected = (200.0 + (120.0 - 100.0)) / 120.0;
  CHECK(*mm.roofline_ratio == Approx(2.0));
  CHECK(mm.regime == "compute-bound");
  CHECK(*mm.expected_ratio == Approx(mm_expected));
  CHECK(*mm.gap == Approx((230.0 / 120.0) / mm_expected));
  CHECK(*mm.excess_us_target == Approx(2300.0 - mm_expected * 120 * 10));  // 100 us
  CHECK(mm.status == std::string(jarvis::kGapWithin));

  const auto& mix = row_named(a, "mix");
  CHECK(mix.bound_reference == "MEMORY_BOUND");
  CHECK(mix.bound_target == "COMPUTE_BOUND");
  CHECK(mix.expected_basis == "roofline mix");
  CHECK(mix.regime == "mixed");
  CHECK(*mix.expected_ratio == Approx(1.0));  // both rooflines 52.4288 us
  CHECK(*mix.gap == Approx(100.0 / 60.0));
  CHECK(mix.status == std::string(jarvis::kGapSmallShare));  // 0.43% of target time

  CHECK(row_named(a, "add").status == std::string(jarvis::kGapReferenceSlower));
  // add: 104.8576 us of its 200 us scale 0.5x.
  CHECK(*row_named(a, "add").gap ==
        Approx(0.25 / ((copy_roof_tgt + (200.0 - copy_roof_ref)) / 200.0)));
  // Floors: median of the 3 shortest per-call means (9, 30, 60 / 9, 45, 50).
  CHECK(a.latency_floor_us_reference == Approx(30.0));
  CHECK(a.latency_floor_us_target == Approx(45.0));
  CHECK(row_named(a, "cat").status == std::string(jarvis::kGapNoModel));
  CHECK_FALSE(row_named(a, "cat").expected_ratio.has_value());
  CHECK(row_named(a, "fp8mm").status == std::string(jarvis::kGapNoArchEntry));

  // Order: by target time beyond expectation, then unrated ops by target time.
  std::vector<std::string> order;
  for (const auto& r : a.rows) order.push_back(r.name);
  CHECK(order == std::vector<std::string>{"copy", "mm", "mix", "add", "cat", "fp8mm"});

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
  options.gap_threshold = 1.7;  // copy's gap 1.53 is now within
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
  CHECK(*mm->roofline_ratio == Approx(989.0 / 708.0));
  CHECK(mm->regime == "compute-bound");
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

TEST_CASE("hardware gaps: a latency-bound op expects the ratio of the latency floors") {
  // "tiny" moves 0.01 MiB (5 ns of HBM time): below both floors, so neither
  // the bandwidth nor the FLOPs ratio applies. Floors: median of the three
  // shortest per-call means, 9 us (4, 9, 30) and 13.5 us (6, 13.5, 45).
  GpuArch ref = arch("R", 2000, 1000, 100), tgt = arch("T", 4000, 500, 100);
  auto r = report("ref",
                  "tiny,bf16,(7),(1),(),elementwise,100,0.000001,0.01,0.1,vector_bf16,4.0,400.0\n"
                  "a,bf16,(8),(1),(),other,1,,,,,9.0,9.0\n"
                  "b,bf16,(9),(1),(),other,1,,,,,30.0,30.0\n");
  auto t = report("tgt",
                  "tiny,bf16,(7),(1),(),elementwise,100,0.000001,0.01,0.1,vector_bf16,6.0,600.0\n"
                  "a,bf16,(8),(1),(),other,1,,,,,13.5,13.5\n"
                  "b,bf16,(9),(1),(),other,1,,,,,45.0,45.0\n");
  auto a = jarvis::analyze_hardware_gaps(r, t, ref, tgt);
  CHECK(a.latency_floor_us_reference == Approx(9.0));
  CHECK(a.latency_floor_us_target == Approx(13.5));
  const auto& tiny = row_named(a, "tiny");
  CHECK(tiny.regime == "latency-bound");
  CHECK(tiny.expected_basis == "launch latency");
  const double roof_ref = 0.01 * 1024 * 1024 / 2000e9 * 1e6;
  const double expected = (roof_ref / 2 + (4.0 - roof_ref) * (13.5 / 9.0)) / 4.0;  // ~1.5
  CHECK(*tiny.expected_ratio == Approx(expected));
  CHECK(*tiny.gap == Approx(1.5 / expected));
  CHECK(tiny.status == std::string(jarvis::kGapWithin));  // not flagged: latency explains it
  // Without the latency term the roofline ratio (0.5) would call it 3x too slow.
  CHECK(*tiny.roofline_ratio == Approx(0.5));
}

TEST_CASE("hardware gaps: H100 vs H200 (same compute, 1.43x HBM) flag nothing latency-bound") {
  // Real traces of one workload on both GPUs (../shared/hw_pairs/README.md):
  // tiny kernels must be expected at ~1x, large HBM-saturating ones near the
  // bandwidth ratio, and the hardware explains everything of >= 1% share.
  GpuArch h100 = jarvis::perf::load_gpu_arch("H100"), h200 = jarvis::perf::load_gpu_arch("H200");
  for (std::string workload : {"gpt2_train", "resnet50_train"}) {
    CAPTURE(workload);
    std::string dir = jarvis::golden::shared_dir() + "/hw_pairs/" + workload;
    auto c = jarvis::compare_traces(dir + "/h100.json.gz", dir + "/h200.json.gz",
                                    jarvis::CompareTracesOptions{});
    REQUIRE(c.hardware_gaps.has_value());
    const auto& a = *c.hardware_gaps;
    CHECK(a.flagged().empty());
    size_t latency_bound = 0, saturating = 0;
    for (const auto& r : a.rows) {
      CAPTURE(r.name);
      CAPTURE(r.input_dims);
      if (r.regime == "latency-bound") {
        ++latency_bound;
        CHECK(r.status != std::string(jarvis::kGapInvestigate));
        // Mostly the floor ratio (~0.88 here), never the bare 0.70 HBM ratio.
        CHECK(*r.expected_ratio > *r.roofline_ratio + 0.05);
      }
      // Memory-bound ops that reach >= 80% of the H100's HBM roofline and run
      // >= 20 us: the measured ratio lands near the bandwidth ratio.
      if (r.regime == "memory-bound" && *r.roofline_share_reference >= 0.8 &&
          r.mean_us_reference >= 20) {
        ++saturating;
        CHECK(r.measured_ratio == Approx(3350.0 / 4800.0).epsilon(0.1));
        CHECK(r.status == std::string(jarvis::kGapWithin));
      }
    }
    CHECK(latency_bound > 0);
    CHECK(saturating > 0);
  }
}

TEST_CASE("compare: the verdict says when a step is host-bound (ResNet-50 on H100 vs H200)") {
  // From the raw events: each side's GPU idle share of its span (first GPU
  // start to last GPU end), the idle_time row's percent in TraceLens's table.
  auto raw_idle_pct = [](const std::string& path) {
    jarvis::Trace t = jarvis::load_trace(path);
    std::vector<std::pair<double, double>> busy;
    double lo = 1e300, hi = -1e300;
    for (const auto& e : t.events)
      if (e.is_gpu() && e.has_ts() && e.has_dur()) {
        busy.emplace_back(e.ts(), e.end());
        lo = std::min(lo, e.ts());
        hi = std::max(hi, e.end());
      }
    std::sort(busy.begin(), busy.end());
    double covered = 0, end = -1e300;
    for (const auto& [a, b] : busy) {
      if (b <= end) continue;
      covered += b - std::max(a, end);
      end = b;
    }
    return 100.0 * (1.0 - covered / (hi - lo));
  };
  const std::string dir = jarvis::golden::shared_dir() + "/hw_pairs/resnet50_train";
  auto c = jarvis::compare_traces(dir + "/h100.json.gz", dir + "/h200.json.gz",
                                  jarvis::CompareTracesOptions{});
  const auto verdict = c.summary()["verdict"];
  REQUIRE(verdict.is_object());
  const double h100 = raw_idle_pct(dir + "/h100.json.gz"),
               h200 = raw_idle_pct(dir + "/h200.json.gz");
  REQUIRE(h100 > 50);
  REQUIRE(h200 > 40);  // the H200's faster memory shortens its busy time: 47% idle
  CHECK(verdict["reference_idle_pct"].get<double>() == Approx(h100).epsilon(1e-3));
  CHECK(verdict["target_idle_pct"].get<double>() == Approx(h200).epsilon(1e-3));
  CHECK(verdict["reference_host_bound"] == true);
  CHECK(verdict["target_host_bound"] == true);
  CHECK(verdict["text"].get<std::string>().find("host-bound") != std::string::npos);
  CHECK(verdict["method"].get<std::string>().starts_with("critical path"));
  // GPT-2 on the H100 idles only a third of its span, yet its steps are host-bound (the
  // critical path; tests/critical_path checks from the raw events that the
  // GPU has caught up before every optimizer step): the verdict follows the
  // path, not the idle share.
  const std::string gpt2 = jarvis::golden::shared_dir() + "/hw_pairs/gpt2_train";
  REQUIRE(raw_idle_pct(gpt2 + "/h100.json.gz") < 50);
  auto g = jarvis::compare_traces(gpt2 + "/h100.json.gz", gpt2 + "/h200.json.gz",
                                  jarvis::CompareTracesOptions{});
  const auto gv = g.summary()["verdict"];
  CHECK(gv["reference_host_bound"] == true);
  CHECK(gv["method"].get<std::string>().starts_with("critical path"));
  // Report directories carry no trace: the idle share of their gpu_timeline
  // decides (Qwen on H100 and MI300: GPU-bound on both).
  const std::string conf = jarvis::golden::shared_dir() + "/conformance/";
  auto reports = jarvis::compare_traces(conf + "h100_qwen1.5-0.5b/perf_report_csvs",
                                        conf + "mi300_qwen1.5-0.5b/perf_report_csvs",
                                        jarvis::CompareTracesOptions{});
  CHECK_FALSE(reports.step_reference.has_value());
  const auto rv = reports.summary()["verdict"];
  REQUIRE(rv.is_object());
  CHECK(rv["method"] == "GPU idle at least 50% of the span");
  CHECK(rv["reference_host_bound"] == (rv["reference_idle_pct"].get<double>() >= 50));
}

TEST_CASE("compare: two traces with memory samples carry the memory diff") {
  // BERT on H100 and MI300, both recorded with profile_memory=True: the
  // first device pair's peaks equal the largest `Total Allocated` of each
  // trace's GPU samples (raw events; CUDA = 1, HIP = 6 as device types).
  auto raw_gpu_peak = [](const std::string& path) {
    jarvis::Trace t = jarvis::load_trace(path);
    double peak = 0;
    for (jarvis::Uid u = 0; u < t.events.size(); ++u) {
      if (t.name(u) != "[memory]") continue;
      const auto* type = t.arg(u, "Device Type");
      const auto* total = t.arg(u, "Total Allocated");
      if (type && total && type->kind == jarvis::PyValue::Kind::Int &&
          (type->i == 1 || type->i == 6))
        peak = std::max(peak, total->as_double());
    }
    return peak;
  };
  const std::string conf = jarvis::golden::shared_dir() + "/conformance/";
  const std::string h100 = conf + "h100_bert-small/trace.json.gz";
  const std::string mi300 = conf + "mi300_bert-small/trace.json.gz";
  auto c = jarvis::compare_traces(h100, mi300, jarvis::CompareTracesOptions{});
  const auto memory = c.summary()["memory"];
  REQUIRE(memory.is_object());
  REQUIRE_FALSE(memory["devices"].empty());
  const auto& d = memory["devices"][0];
  CHECK(d["reference"]["peak_allocated_bytes"].get<double>() == raw_gpu_peak(h100));
  CHECK(d["target"]["peak_allocated_bytes"].get<double>() == raw_gpu_peak(mi300));
  CHECK(memory["summary"].get<std::string>().find("peak") != std::string::npos);
  // GPT-2 was recorded without memory: no diff.
  const std::string gpt2 = jarvis::golden::shared_dir() + "/hw_pairs/gpt2_train";
  auto g = jarvis::compare_traces(gpt2 + "/h100.json.gz", gpt2 + "/h200.json.gz",
                                  jarvis::CompareTracesOptions{});
  CHECK(g.summary()["memory"].is_null());
}

TEST_CASE("issue 64 point 3: an fp32 run against a bf16 run pairs its ops across the dtype") {
  // GPT-2 (4 layers) training on one H200, fp32 (TF32 off) and bf16
  // (../shared/ab_pairs): the five-key match leaves every GEMM on one side
  // only. Paired across the dtype, the largest reference op is a GEMM whose
  // roofline on the bf16 side expects it many times faster, and the notes
  // lead with the dtype change.
  const std::string ab = jarvis::golden::shared_dir() + "/ab_pairs/";
  auto c = jarvis::compare_traces(ab + "s_tf32_A_fp32.json.gz", ab + "s_adam_A_foreach.json.gz",
                                  jarvis::CompareTracesOptions{});
  REQUIRE(c.hardware_gaps.has_value());
  const auto changes = c.hardware_gaps->dtype_changes();
  REQUIRE_FALSE(changes.empty());
  // Each pair is the reference's row and the target's row of the same op:
  // their kernel time sums are the two unified_perf_summary rows'.
  auto summary_sum = [](const jarvis::NamedReport& report, const jarvis::HardwareGapRow& r,
                        const std::string& type) {
    const jarvis::Table* t = report.sheet("unified_perf_summary");
    REQUIRE(t != nullptr);
    double sum = -1;
    for (const auto& row : t->rows) {
      auto text = [&](const char* col) {
        const jarvis::Cell& cell = row[static_cast<size_t>(t->col(col))];
        return cell.missing() ? std::string() : cell.to_csv_text(cell.is_double());
      };
      if (text("name") == r.name && text("Input Dims") == r.input_dims &&
          text("Input type") == type && text("Input Strides") == r.input_strides &&
          text("Concrete Inputs") == r.concrete_inputs) {
        CHECK(sum < 0);  // one row
        sum = row[static_cast<size_t>(t->col("Kernel Time (µs)_sum"))].number();
      }
    }
    return sum;
  };
  const jarvis::HardwareGapRow* largest = changes.front();
  for (const jarvis::HardwareGapRow* r : changes) {
    CAPTURE(r->name);
    CAPTURE(r->input_dims);
    CHECK(r->input_type != r->input_type_target);
    CHECK(r->sum_us_reference == Approx(summary_sum(c.reference, *r, r->input_type)));
    CHECK(r->sum_us_target == Approx(summary_sum(c.target, *r, r->input_type_target)));
    if (r->sum_us_reference > largest->sum_us_reference) largest = r;
  }
  CAPTURE(largest->name);
  CHECK(largest->input_type.find("float") != std::string::npos);
  CHECK(largest->input_type_target.find("BFloat16") != std::string::npos);
  // A GEMM: fp32 against bf16 matrix peaks, so the bf16 side is expected
  // several times faster, and is measured so.
  CHECK(largest->compute_spec != largest->compute_spec_target);
  REQUIRE(largest->expected_ratio.has_value());
  CHECK(*largest->expected_ratio < 0.5);
  CHECK(largest->measured_ratio < 0.5);
  CHECK(largest->why.find("dtype") == 0);
  // The notes lead with it, naming the op.
  REQUIRE_FALSE(c.notes.empty());
  CHECK(c.notes.front().find("the runs differ in dtype") == 0);
  CHECK(c.notes.front().find(largest->name) != std::string::npos);
  const auto json = c.hardware_gaps->to_json();
  CHECK(json["dtype_changes"]["ops"] == changes.size());
  // Runs of one dtype pair nothing.
  const std::string hw = jarvis::golden::shared_dir() + "/hw_pairs/gpt2_train";
  auto same = jarvis::compare_traces(hw + "/h100.json.gz", hw + "/h200.json.gz",
                                     jarvis::CompareTracesOptions{});
  REQUIRE(same.hardware_gaps.has_value());
  CHECK(same.hardware_gaps->dtype_changes().empty());
  CHECK(same.hardware_gaps->to_json()["dtype_changes"].is_null());
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
