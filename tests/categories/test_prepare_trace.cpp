// End-to-end: trace.json.gz -> report -> prepare, compared with TraceLens's
// reference category_data/ and metadata/ (fusion candidates and the
// manifest's kernel_fusion entry included).
#include <doctest/doctest.h>

#include <filesystem>

#include "categories/category_analysis.h"
#include "categories/prepare_trace.h"
#include "test_analysis_support.h"
#include "trace/loader.h"

namespace fs = std::filesystem;
using namespace jarvis;
using namespace jarvis::testing;
using analysis::ojson;

TEST_CASE("prepare_trace: golden from trace.json.gz for every conformance trace") {
  for (const auto& dir : agent_conformance_dirs()) {
    CAPTURE(dir);
    TempDir tmp;
    Trace trace = load_trace(dir + "/trace.json.gz");
    analysis::TracePrepareOptions o;
    o.platform = conformance_arch(dir).platform;
    o.output_dir = tmp.path;
    o.trace_path = "trace.json.gz";
    auto result = analysis::prepare_from_trace(trace, o);
    auto norm = path_normalizer(tmp.path);

    std::vector<std::string> problems;
    compare_json(analysis::read_json_file(dir + "/category_data/multi_kernel_data.json"),
                 analysis::read_json_file(tmp.path + "/category_data/multi_kernel_data.json"),
                 "multi_kernel_data", problems, norm);
    compare_json(analysis::read_json_file(dir + "/category_data/fusion_candidates.json"),
                 analysis::read_json_file(tmp.path + "/category_data/fusion_candidates.json"),
                 "fusion_candidates", problems, norm);
    compare_json(analysis::read_json_file(dir + "/category_data/category_manifest.json"),
                 result.manifest, "manifest", problems, norm);
    for (const auto& e : fs::directory_iterator(dir + "/metadata")) {
      std::string name = e.path().filename().string();
      compare_json(analysis::read_json_file(e.path().string()),
                   analysis::read_json_file(tmp.path + "/metadata/" + name), name, problems, norm);
    }
    CHECK_MESSAGE(problems.empty(), join_problems(problems));

    for (const auto& e : fs::directory_iterator(dir + "/category_data")) {
      std::string name = e.path().filename().string();
      if (!name.ends_with("_ops.csv") || name == "cpu_idle_ops.csv") continue;
      CAPTURE(name);
      auto cmp = golden::compare_csv_files(e.path().string(), tmp.path + "/category_data/" + name);
      CHECK_MESSAGE(cmp.ok(), cmp.summary());
    }

    // Tree data: one file per compute category, entries carry a parent chain.
    for (const auto& cat : result.categories) {
      CAPTURE(cat);
      std::string path = tmp.path + "/category_data/" + cat + "_tree_data.json";
      REQUIRE(fs::exists(path));
      ojson td = analysis::read_json_file(path);
      CHECK_FALSE(td.empty());
      for (const auto& [uid, entry] : td.items()) {
        CHECK(entry.contains("parent_chain"));
        if (!entry["uid"].is_null()) CHECK(entry["subtree"]["uid"] == entry["uid"]);
      }
    }

    // The analyses run on the trace-prepared directory too.
    auto gemm = analysis::analyze_category(tmp.path, "gemm");
    if (fs::exists(dir + "/category_data/gemm_ops.csv")) {
      problems.clear();
      compare_json(analysis::read_json_file(dir + "/category_data/gemm_metrics.json"), gemm.metrics,
                   "gemm_metrics", problems, norm);
      CHECK_MESSAGE(problems.empty(), join_problems(problems));
    }
  }
}

TEST_CASE("prepare_trace: platform errors are specific") {
  std::string dir = golden::shared_dir() + "/conformance/h100_bert-small";
  Trace trace = load_trace(dir + "/trace.json.gz");
  TempDir tmp;
  analysis::TracePrepareOptions o;
  o.output_dir = tmp.path;
  CHECK_THROWS_WITH_AS(analysis::prepare_from_trace(trace, o), doctest::Contains("--platform"),
                       std::invalid_argument);
  o.platform = "NoSuchGPU";
  CHECK_THROWS_AS(analysis::prepare_from_trace(trace, o), std::invalid_argument);
  CHECK_FALSE(fs::exists(tmp.path + "/category_data"));
}
