// gemm_roofline: numbers against TraceLens's GEMM.csv, a hand-worked
// roofline, the skill's priority rules on constructed cases, the SVG plot.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <map>
#include <set>

#include "categories/prepare.h"
#include "explore/gemm_roofline.h"
#include "test_analysis_support.h"
#include "trace/loader.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using namespace jarvis;
using namespace jarvis::testing;
using analysis::ojson;

TEST_CASE("gemm_roofline: priority rules of the GEMM skill") {
  using analysis::gemm_priority;
  CHECK(gemm_priority(16, 25.0, false) == "Critical");
  CHECK(gemm_priority(16, 35.0, false) == "High");  // >10 % of compute
  CHECK(gemm_priority(15, 25.0, false) == "High");  // exactly 15 % is not > 15 %
  CHECK(gemm_priority(2, 35.0, false) == "High");   // < 40 % efficiency
  CHECK(gemm_priority(11, std::nullopt, false) == "High");
  CHECK(gemm_priority(6, 80.0, false) == "Medium");
  CHECK(gemm_priority(1, 80.0, true) == "Medium");  // batching pattern
  CHECK(gemm_priority(1, 80.0, false) == "Low");
  CHECK(gemm_priority(1, std::nullopt, false) == "Low");
  CHECK(analysis::gemm_batching_pattern(8, 16, 64, 1, 1000));
  CHECK_FALSE(analysis::gemm_batching_pattern(8, 16, 64, 1, 999));
  CHECK(analysis::gemm_batching_pattern(32, 8, 64, 37632, 1));  // huge batch of tiny GEMMs
  CHECK_FALSE(analysis::gemm_batching_pattern(8944, 2816, 1024, 1, 5000));
}

TEST_CASE("gemm_roofline: GEMM.csv numbers and a hand-worked roofline (MI300X qwen)") {
  std::string dir = golden::shared_dir() + "/conformance/mi300_qwen1.5-0.5b";
  Table gemm = read_csv_file(dir + "/perf_report_csvs/GEMM.csv");
  Table unified = read_csv_file(dir + "/perf_report_csvs/unified_perf_summary.csv");
  analysis::GemmRooflineInputs in;
  in.gemm_sheet = &gemm;
  in.unified = &unified;
  in.arch = conformance_arch(dir).arch;
  in.computation_time_us = 29743.16796875;  // gpu_timeline computation_time
  in.total_time_us = 33131.33349609375;
  auto rf = analysis::gemm_roofline(in);
  REQUIRE(rf["shapes"].size() == 5);
  CHECK(rf["missing_perf_model"].empty());
  const ojson& top = rf["shapes"][0];
  CHECK(top["op"] == "aten::mm");
  CHECK(top["M"] == 8944);
  CHECK(top["N"] == 2816);
  CHECK(top["K"] == 1024);
  // Hand-worked: 2*M*N*K FLOPs, (MK + KN + MN) * 2 bytes (bf16).
  double M = 8944, N = 2816, K = 1024;
  CHECK(top["flops"].get<double>() == doctest::Approx(2 * M * N * K).epsilon(1e-9));
  CHECK(top["bytes"].get<double>() == doctest::Approx((M * K + K * N + M * N) * 2).epsilon(1e-9));
  CHECK(top["flops_per_byte"].get<double>() == doctest::Approx(692.7688414567059));
  CHECK(top["ridge_point"].get<double>() == doctest::Approx(708 / 5.3));
  CHECK(top["bound"] == "compute");
  CHECK(top["achieved_tflops"].get<double>() == doctest::Approx(466.8243456800369));
  CHECK(top["efficiency_percent"].get<double>() == doctest::Approx(466.8243456800369 / 708 * 100));
  CHECK(top["pct_roofline_mean"].get<double>() == doctest::Approx(65.93564204520295));
  CHECK(top["count"] == 48);
  CHECK(top["percent_of_compute"].get<double>() ==
        doctest::Approx(5308.2734375 / 29743.16796875 * 100));
  CHECK(top["priority"] == "High");  // 17.8 % of compute, 65.9 % efficiency
  CHECK(top["flags"]["quantized"] == false);
  // The fp32 bmm (1x32x1 @ 1x1x559) is memory bound against the fp32 roof.
  const ojson& bmm = rf["shapes"][4];
  CHECK(bmm["op"] == "aten::bmm");
  CHECK(bmm["compute_spec"] == "matrix_fp32");
  CHECK(bmm["ridge_point"].get<double>() == doctest::Approx(163 / 5.3));
  CHECK(bmm["bound"] == "memory");
  CHECK(bmm["flags"]["tiny"] == true);
  // Inference trace: no backward GEMMs, so no linear-layer triples.
  CHECK(rf["linear_layers"].empty());

  analysis::GemmRooflineFilters f;
  f.op_contains = "addmm";
  auto only = analysis::gemm_roofline(in, f);
  REQUIRE(only["shapes"].size() == 1);
  CHECK(only["shapes"][0]["op"] == "aten::addmm");

  std::string svg = analysis::gemm_roofline_svg(rf);
  CHECK(svg.starts_with("<svg"));
  CHECK(svg.find("ridge 133.6") != std::string::npos);
  CHECK(svg.find("<circle") != std::string::npos);
}

TEST_CASE("gemm_roofline: from a trace (H100 bert) and errors") {
  std::string dir = golden::shared_dir() + "/conformance/h100_bert-small";
  Trace trace = load_trace(dir + "/trace.json.gz");
  CallTree tree(trace);
  auto rf = analysis::gemm_roofline_for_trace(trace, tree, "H100");
  Table ref = read_csv_typed(dir + "/perf_report_csvs/GEMM.csv");
  CHECK(rf["shape_count"] == ref.rows.size());
  for (const auto& s : rf["shapes"]) {
    size_t r = s["index"].get<size_t>();
    CHECK(s["flops_per_byte"].get<double>() ==
          doctest::Approx(analysis::cell_number(analysis::cell_at(ref, r, "FLOPS/Byte_first"))));
    CHECK(s["achieved_tflops"].get<double>() ==
          doctest::Approx(analysis::cell_number(analysis::cell_at(ref, r, "TFLOPS/s_mean"))));
  }
  analysis::GemmRooflineInputs none;
  CHECK_THROWS_AS(analysis::gemm_roofline(none), std::invalid_argument);
  CHECK_THROWS_AS(analysis::gemm_roofline_for_trace(trace, tree, "NoSuchGPU"),
                  std::invalid_argument);
}

// Issue 48 point 4: under autocast GPT-2's fp32 addmm rows run bf16 kernels
// (a bf16 addmm of the same dims inside each; cuBLAS's nvjet kernel names
// carry no dtype). Expectations from the raw events: the bf16 addmm nested
// in the first fp32 call (time, thread, Input type), the peaks from
// arch/H100.json.
TEST_CASE("gemm_roofline: autocast rows are judged at their kernels' dtype (GPT-2 H100)") {
  Trace trace = load_trace(golden::shared_dir() + "/hw_pairs/gpt2_train/h100.json.gz");
  CallTree tree(trace);
  auto rf = analysis::gemm_roofline_for_trace(trace, tree, "H100");
  ojson arch = analysis::load_arch_json("H100");
  const double bf16_peak = arch["max_achievable_tflops"]["matrix_bf16"].get<double>();
  const double fp32_peak = arch["max_achievable_tflops"]["matrix_fp32"].get<double>();
  const double bw_tbs = arch["mem_bw_gbps"].get<double>() / 1000;
  std::map<size_t, const ojson*> by_index;
  for (const auto& s : rf["shapes"]) by_index[s["index"].get<size_t>()] = &s;
  size_t wrappers = 0;
  for (const auto& s : rf["shapes"]) {
    if (s["op"] != "aten::addmm" || s["precision"] != "fp32") continue;
    ++wrappers;
    const std::string dims = fmt::format("{}x{}x{}", s["M"].dump(), s["N"].dump(), s["K"].dump());
    CAPTURE(dims);
    const Event& call = trace.events[s["uid"].get<Uid>()];
    const pycompat::PyValue* call_dims_value = trace.arg(s["uid"].get<Uid>(), "Input Dims");
    REQUIRE(call_dims_value);
    const std::string call_dims = call_dims_value->repr();
    // Raw: a bf16 addmm of the same dims runs inside the call (same thread,
    // within its time): the GEMM its kernels run.
    bool nested_bf16 = false;
    for (Uid u = 0; u < trace.events.size(); ++u) {
      const Event& e = trace.events[u];
      if (e.cat != Cat::CpuOp || trace.name(u) != "aten::addmm" || e.thread != call.thread ||
          !(e.ts() > call.ts() && e.end() <= call.end()))
        continue;
      const pycompat::PyValue* types = trace.arg(u, "Input type");
      const pycompat::PyValue* dims = trace.arg(u, "Input Dims");
      if (types && types->list.size() > 1 && types->list[1].str() == "c10::BFloat16" && dims &&
          dims->repr() == call_dims)
        nested_bf16 = true;
    }
    REQUIRE(nested_bf16);
    CHECK(s["kernel_precision"] == "bf16");
    CHECK(s["compute_spec_of_kernels"] == "matrix_bf16");
    CHECK(s["peak_tflops"].get<double>() == doctest::Approx(bf16_peak));
    // Judged at the bf16 peak; TraceLens's rating against fp32 kept beside.
    const double tflops = s["achieved_tflops"].get<double>();
    REQUIRE(s["bound"] == "compute");
    CHECK(s["efficiency_percent"].get<double>() == doctest::Approx(tflops / bf16_peak * 100));
    const bool fp32_compute = s["flops_per_byte"].get<double>() >= fp32_peak / bw_tbs;
    CHECK(s["efficiency_percent_recorded_dtype"].get<double>() ==
          doctest::Approx(fp32_compute ? tflops / fp32_peak * 100
                                       : s["achieved_tbs"].get<double>() / bw_tbs * 100));
    // Its row is the one the wrapper's subtree time counts again.
    REQUIRE(s["wraps_shape"].is_number());
    const ojson& inner = *by_index.at(s["wraps_shape"].get<size_t>());
    CHECK(inner["precision"] == "bf16");
    CHECK(inner["M"] == s["M"]);
    CHECK(inner["N"] == s["N"]);
    CHECK(inner["K"] == s["K"]);
    CHECK(s["kernel_time_us"].get<double>() >= inner["kernel_time_us"].get<double>());
  }
  // Raw: the distinct shapes of addmm calls whose first matrix was recorded fp32.
  std::set<std::string> fp32_shapes;
  for (Uid u = 0; u < trace.events.size(); ++u) {
    if (trace.events[u].cat != Cat::CpuOp || trace.name(u) != "aten::addmm") continue;
    const pycompat::PyValue* types = trace.arg(u, "Input type");
    const pycompat::PyValue* dims = trace.arg(u, "Input Dims");
    if (types && dims && types->list.size() > 1 && types->list[1].str() == "float")
      fp32_shapes.insert(dims->repr());
  }
  CHECK(wrappers == fp32_shapes.size());
  CHECK(wrappers >= 3);
  // Rows recorded in the dtype their kernels run are left as TraceLens rates them.
  for (const auto& s : rf["shapes"])
    if (s["precision"] == "bf16") CHECK(s["efficiency_percent_recorded_dtype"].is_null());
  CHECK(rf["gemm_time_us"].get<double>() < rf["gemm_sheet_kernel_time_us"].get<double>());
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
