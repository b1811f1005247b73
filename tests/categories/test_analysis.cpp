// Golden tests of the category analyses (<cat>_metrics.json) against the
// TraceLens reference files, plus unit tests of the rendering helpers.
#include <doctest/doctest.h>

#include <filesystem>
#include <set>

#include "categories/category_analysis.h"
#include "test_analysis_support.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace fs = std::filesystem;
using namespace jarvis;
using namespace jarvis::testing;
using analysis::ojson;

namespace {

// Reference metrics files: compute categories first, system ones last (the
// order the reference was produced in, see analysis_order()).
std::vector<std::string> reference_metric_categories(const std::string& dir) {
  std::vector<std::string> compute, system;
  for (const auto& e : fs::directory_iterator(dir + "/category_data")) {
    std::string name = e.path().filename().string();
    if (!name.ends_with("_metrics.json")) continue;
    std::string cat = name.substr(0, name.size() - 13);
    std::string kind = analysis::analysis_kind(cat);
    (kind == "cpu_idle" || kind == "multi_kernel" || kind == "kernel_fusion" ? system : compute)
        .push_back(cat);
  }
  std::sort(compute.begin(), compute.end());
  std::sort(system.begin(), system.end());
  compute.insert(compute.end(), system.begin(), system.end());
  return compute;
}

}  // namespace

TEST_CASE("analyze: golden <cat>_metrics.json for every conformance trace") {
  auto dirs = agent_conformance_dirs();
  REQUIRE(dirs.size() >= 7);
  size_t compared = 0;
  for (const auto& dir : dirs) {
    TempDir tmp;
    prepare_from_reference(dir, tmp.path);
    auto norm = path_normalizer(tmp.path);
    for (const auto& cat : reference_metric_categories(dir)) {
      CAPTURE(dir);
      CAPTURE(cat);
      auto res = analysis::analyze_category(tmp.path, cat);
      auto ref = analysis::read_json_file(dir + "/category_data/" + cat + "_metrics.json");
      std::vector<std::string> problems;
      compare_json(ref, analysis::read_json_file(res.metrics_path), cat, problems, norm);
      CHECK_MESSAGE(problems.empty(), join_problems(problems));
      CHECK(res.status == ref.value("status", ""));
      CHECK_FALSE(res.markdown.empty());
      ++compared;
    }
  }
  CHECK(compared >= 80);
}

TEST_CASE("analyze all: writes every metrics file TraceLens's scripts write without an ERROR") {
  // The reference directories hold the output of every TraceLens analysis
  // script: besides the manifest's categories, moe_fused (NO_DATA without MoE
  // ops) and multi_kernel even where the manifest has no multi_kernel entry
  // (mi300_compile_triton: no memcpy, no collective). `analyze all` must write
  // every one of those files that is not an input-missing ERROR, with equal
  // content.
  auto dirs = agent_conformance_dirs();
  REQUIRE(dirs.size() >= 7);
  size_t unlisted_multi_kernel = 0;
  for (const auto& dir : dirs) {
    CAPTURE(dir);
    TempDir tmp;
    prepare_from_reference(dir, tmp.path);
    auto norm = path_normalizer(tmp.path);
    std::set<std::string> expected, written;
    for (const auto& cat : reference_metric_categories(dir)) {
      auto ref = analysis::read_json_file(dir + "/category_data/" + cat + "_metrics.json");
      if (ref.value("status", "") != "ERROR") expected.insert(cat);
    }
    std::vector<std::string> order = analysis::analysis_order(tmp.path);
    if (std::find(order.begin(), order.end(), "multi_kernel") != order.end() &&
        analysis::read_json_file(tmp.path + "/category_data/category_manifest.json")
                .dump()
                .find("\"multi_kernel\"") == std::string::npos)
      ++unlisted_multi_kernel;
    for (const auto& cat : order) {
      CAPTURE(cat);
      auto res = analysis::analyze_category(tmp.path, cat);
      CHECK(res.status != "ERROR");
      written.insert(cat);
      // The reference ran each script for its default category only (norm,
      // not norm_fwd): manifest categories without a reference file are
      // jarvis's extra analyses.
      auto ref_path = dir + "/category_data/" + cat + "_metrics.json";
      if (!fs::exists(ref_path)) continue;
      std::vector<std::string> problems;
      compare_json(analysis::read_json_file(ref_path), analysis::read_json_file(res.metrics_path),
                   cat, problems, norm);
      CHECK_MESSAGE(problems.empty(), join_problems(problems));
    }
    for (const auto& cat : expected) {
      CAPTURE(cat);
      CHECK(written.count(cat) == 1);
    }
    CHECK(written.count("moe_fused") == 1);
  }
  CHECK(unlisted_multi_kernel >= 1);
}

TEST_CASE("analyze: markdown digest carries the table, the P-items and the key metrics") {
  std::string dir = golden::shared_dir() + "/conformance/mi300_qwen1.5-0.5b";
  TempDir tmp;
  prepare_from_reference(dir, tmp.path);
  auto res = analysis::analyze_category(tmp.path, "gemm");
  CHECK(res.kind == "gemm");
  CHECK(res.markdown.find("## Operations breakdown") != std::string::npos);
  CHECK(res.markdown.find("| 1 | aten::mm | (8944,1024) bf16<br>(1024,2816) bf16 | 48 | 5.308 |") !=
        std::string::npos);
  CHECK(res.markdown.find("65.94% of 708 TFLOPS") != std::string::npos);
  CHECK(res.markdown.find("### P1: compute-bound, Tensile, efficiency bucket 60-100") !=
        std::string::npos);
  CHECK(res.markdown.find("- peak_maf_tflops: 708") != std::string::npos);
}

TEST_CASE("analyze: errors") {
  TempDir tmp;
  CHECK_THROWS_AS(analysis::analyze_category(tmp.path, "../x"), std::invalid_argument);
  CHECK_THROWS_AS(analysis::analyze_category(tmp.path + "/nope", "gemm"), std::invalid_argument);
  fs::create_directories(tmp.path + "/category_data");
  auto res = analysis::analyze_category(tmp.path, "gemm");
  CHECK(res.status == "ERROR");
  CHECK(res.metrics["error"].get<std::string>().find("Category CSV not found") !=
        std::string::npos);
  auto moe = analysis::analyze_category(tmp.path, "moe_unfused");
  CHECK(moe.status == "NO_DATA");
}

TEST_CASE("analyze: format_args renders shapes like TraceLens") {
  auto args = [](const char* dims, const char* types) {
    Cell d{std::string(dims)}, t{std::string(types)};
    return analysis::format_args(&d, &t);
  };
  CHECK(args("((8944, 1024), (1024, 2816))", "('c10::BFloat16', 'c10::BFloat16')") ==
        "(8944,1024) bf16<br>(1024,2816) bf16");
  CHECK(args("((1024,), (8944, 1024), (1024, 1024), (), ())",
             "('c10::BFloat16', 'c10::BFloat16', 'c10::BFloat16', 'Scalar', 'Scalar')") ==
        "(1024,) bf16<br>(8944,1024) bf16<br>(1024,1024) bf16");
  CHECK(args("((16, 559, 1024), ())", "('float', 'ScalarList')") ==
        "(16,559,1024) fp32<br>() ScalarList");
  CHECK(args("((4,), ())", "('long int', '')") == "(4,) long int");
  CHECK(args("not a literal", "()") == "");
}

TEST_CASE("analyze: library classification rules") {
  CHECK(analysis::classify_kernel_library("aiter::gemm", "") == "AITER");
  CHECK(analysis::classify_kernel_library("aten::mm", "[{'name': 'Cijk_Alik_Bljk'}]") == "Tensile");
  CHECK(analysis::classify_kernel_library("aten::mm", "void at::native::x") == "PyTorch Native");
  CHECK(analysis::classify_kernel_library("aten::mm", "sm90_xmma_gemm") == "");
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
