// gemm_roofline: numbers against TraceLens's GEMM.csv, a hand-worked
// roofline, the skill's priority rules on constructed cases, the SVG plot.
#include <doctest/doctest.h>

#include "explore/gemm_roofline.h"
#include "test_analysis_support.h"
#include "trace/loader.h"

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
