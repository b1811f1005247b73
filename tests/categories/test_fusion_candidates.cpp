// Fusion candidates (TraceLens orchestrator_prepare Step 4b) generated from
// each conformance trace, compared with the reference fusion_candidates.json.
#include <doctest/doctest.h>

#include <filesystem>

#include "categories/fusion_candidates.h"
#include "categories/prepare_trace.h"
#include "test_analysis_support.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace fs = std::filesystem;
using namespace jarvis;
using namespace jarvis::testing;
using analysis::ojson;

namespace {

std::vector<std::string> keys_of(const ojson& o) {
  std::vector<std::string> keys;
  for (const auto& [k, v] : o.items()) keys.push_back(k);
  return keys;
}

}  // namespace

TEST_CASE("fusion_candidates: kernel type classifier follows the priority-ordered rules") {
  using analysis::classify_kernel_type;
  CHECK(classify_kernel_type("Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x192x64") ==
        "GEMM");
  CHECK(classify_kernel_type("triton_red_fused_add_mean_mul_pow_rsqrt_0") ==
        "RMSNorm (fused triton)");
  // memcpy (30) outranks elementwise rules; the low-priority norm rule is below the cut.
  CHECK(classify_kernel_type("Memcpy DtoD (Device -> Device)") == "MemCpy");
  CHECK(classify_kernel_type("my_norm kernel") == "Unknown");
  CHECK(classify_kernel_type("triton_poi_fused_add_0") == "Unknown");
  CHECK(classify_kernel_type("void at::native::vectorized_elementwise_kernel<4, "
                             "at::native::CUDAFunctor_add<float> >") == "Elementwise");
}

TEST_CASE("fusion_candidates: golden from trace.json.gz for every conformance trace") {
  int checked = 0;
  for (const auto& dir : agent_conformance_dirs()) {
    std::string ref_path = dir + "/category_data/fusion_candidates.json";
    if (!fs::exists(ref_path)) continue;
    CAPTURE(dir);
    Trace trace = load_trace(dir + "/trace.json.gz");
    CallTree tree(trace);
    auto tables = analysis::perf_report_tables(trace, tree, conformance_arch(dir).platform);
    auto unified = tables.find("unified_perf_summary");
    REQUIRE(unified != tables.end());
    ojson got = analysis::fusion_candidates(trace, &unified->second);
    ojson want = analysis::read_json_file(ref_path);

    std::vector<std::string> problems;
    compare_json(want, got, "fusion_candidates", problems, [](const std::string& s) { return s; });
    CHECK_MESSAGE(problems.empty(), join_problems(problems));
    // Same key order as TraceLens writes them.
    if (want.size() == got.size())
      for (size_t i = 0; i < want.size(); ++i) {
        CAPTURE(i);
        CHECK(keys_of(want[i]) == keys_of(got[i]));
        for (size_t k = 0; k < want[i]["kernels"].size() && k < got[i]["kernels"].size(); ++k)
          CHECK(keys_of(want[i]["kernels"][k]) == keys_of(got[i]["kernels"][k]));
      }
    ++checked;
  }
  CHECK(checked >= 7);
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
