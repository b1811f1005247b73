// Golden tests of the orchestrator preparation (category split, metadata,
// manifest) against TraceLens's reference category_data/ and metadata/.
#include <doctest/doctest.h>

#include <filesystem>
#include <set>

#include "categories/prepare.h"
#include "test_analysis_support.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace fs = std::filesystem;
using namespace jarvis;
using namespace jarvis::testing;
using analysis::ojson;

namespace {

std::set<std::string> files_in(const std::string& dir, const std::string& suffix) {
  std::set<std::string> out;
  if (!fs::is_directory(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::string name = e.path().filename().string();
    if (name.ends_with(suffix)) out.insert(name);
  }
  return out;
}

}  // namespace

TEST_CASE("prepare: golden category_data / metadata for every conformance trace") {
  auto dirs = agent_conformance_dirs();
  REQUIRE(dirs.size() >= 7);
  for (const auto& dir : dirs) {
    CAPTURE(dir);
    TempDir tmp;
    auto result = prepare_from_reference(dir, tmp.path);
    auto norm = path_normalizer(tmp.path);

    // Same per-category CSVs, same rows and cells.
    auto ref_csvs = files_in(dir + "/category_data", "_ops.csv");
    CHECK(files_in(tmp.path + "/category_data", "_ops.csv") == ref_csvs);
    for (const auto& name : ref_csvs) {
      CAPTURE(name);
      std::string ref = dir + "/category_data/" + name, got = tmp.path + "/category_data/" + name;
      if (name == "cpu_idle_ops.csv") {
        CHECK(read_text(got) == read_text(ref));
        continue;
      }
      auto cmp = golden::compare_csv_files(ref, got);
      CHECK_MESSAGE(cmp.ok(), cmp.summary());
    }

    // Same metadata files with the same content.
    auto ref_meta = files_in(dir + "/metadata", ".json");
    CHECK(files_in(tmp.path + "/metadata", ".json") == ref_meta);
    for (const auto& name : ref_meta) {
      CAPTURE(name);
      std::vector<std::string> problems;
      compare_json(analysis::read_json_file(dir + "/metadata/" + name),
                   analysis::read_json_file(tmp.path + "/metadata/" + name), name, problems, norm);
      CHECK_MESSAGE(problems.empty(), join_problems(problems));
    }

    std::vector<std::string> problems;
    compare_json(analysis::read_json_file(dir + "/category_data/category_manifest.json"),
                 analysis::read_json_file(tmp.path + "/category_data/category_manifest.json"),
                 "manifest", problems, norm);
    CHECK_MESSAGE(problems.empty(), join_problems(problems));
    CHECK(result.manifest["categories"].size() ==
          analysis::read_json_file(dir + "/category_data/category_manifest.json")["categories"]
              .size());
  }
}

TEST_CASE("prepare: manifest / metadata text is byte-identical when run with --out .") {
  // The reference ran with --output-dir . ; recorded paths then have no prefix.
  std::string dir = golden::shared_dir() + "/conformance/mi300_qwen1.5-0.5b";
  TempDir tmp;
  auto cwd = fs::current_path();
  fs::current_path(tmp.path);
  try {
    prepare_from_reference(dir, ".");
  } catch (...) {
    fs::current_path(cwd);
    throw;
  }
  fs::current_path(cwd);
  for (const char* rel : {"category_data/category_manifest.json", "metadata/gemm_metadata.json",
                          "metadata/cpu_idle_metadata.json", "metadata/multi_kernel_metadata.json",
                          "metadata/model_info.json", "category_data/multi_kernel_data.json"}) {
    CAPTURE(rel);
    CHECK(read_text(tmp.path + "/" + rel) == read_text(dir + "/" + rel));
  }
}

TEST_CASE("prepare: one category writes only its files plus the shared ones") {
  std::string dir = golden::shared_dir() + "/conformance/h100_bert-small";
  TempDir tmp;
  prepare_from_reference(dir, tmp.path, "gemm");
  CHECK(fs::exists(tmp.path + "/category_data/gemm_ops.csv"));
  CHECK(fs::exists(tmp.path + "/metadata/gemm_metadata.json"));
  CHECK_FALSE(fs::exists(tmp.path + "/category_data/elementwise_ops.csv"));
  CHECK_FALSE(fs::exists(tmp.path + "/metadata/elementwise_metadata.json"));
  CHECK(fs::exists(tmp.path + "/category_data/category_manifest.json"));
  CHECK(fs::exists(tmp.path + "/metadata/cpu_idle_metadata.json"));
  CHECK(fs::exists(tmp.path + "/metadata/model_info.json"));
  auto manifest = analysis::read_json_file(tmp.path + "/category_data/category_manifest.json");
  // The manifest still describes every category of the trace.
  CHECK(
      manifest["categories"].size() ==
      analysis::read_json_file(dir + "/category_data/category_manifest.json")["categories"].size());
}

TEST_CASE("prepare: bad input gives specific errors and writes nothing") {
  std::string dir = golden::shared_dir() + "/conformance/h100_bert-small";
  TempDir tmp;
  std::string out = tmp.path + "/out";
  CHECK_THROWS_WITH_AS(prepare_from_reference(dir, out, "no_such_cat"),
                       doctest::Contains("not in this trace"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(prepare_from_reference(dir, out, "../etc"),
                       doctest::Contains("bad category"), std::invalid_argument);
  CHECK_FALSE(fs::exists(out + "/category_data/category_manifest.json"));

  auto tables = analysis::read_perf_report_csvs(dir + "/perf_report_csvs");
  tables.erase("unified_perf_summary");
  analysis::PrepareOptions o;
  o.platform = "H100";
  o.arch = conformance_arch(dir).arch;
  o.output_dir = out;
  CHECK_THROWS_WITH_AS(analysis::prepare_category_data(tables, o),
                       doctest::Contains("unified_perf_summary"), std::invalid_argument);
  o.arch = ojson::object();
  CHECK_THROWS_WITH_AS(analysis::prepare_category_data(tables, o), doctest::Contains("mem_bw_gbps"),
                       std::invalid_argument);
  CHECK_THROWS_AS(analysis::read_perf_report_csvs(tmp.path + "/missing"), std::runtime_error);
  CHECK_THROWS_WITH_AS(analysis::load_arch_json("NoSuchGPU"), doctest::Contains("unknown platform"),
                       std::invalid_argument);
}

TEST_CASE("prepare: existing model_info values win over the defaults") {
  std::string dir = golden::shared_dir() + "/conformance/mi300_bert-small";
  TempDir tmp;
  fs::create_directories(tmp.path + "/metadata");
  analysis::write_json_atomic(tmp.path + "/metadata/model_info.json",
                              ojson{{"model", "BERT-small"}, {"extra", 1}});
  prepare_from_reference(dir, tmp.path);
  auto info = analysis::read_json_file(tmp.path + "/metadata/model_info.json");
  CHECK(info["model"] == "BERT-small");
  CHECK(info["architecture"] == "Cannot be inferred from trace");
  CHECK(info["extra"] == 1);
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
