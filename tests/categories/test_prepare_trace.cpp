// End-to-end: trace.json.gz -> report -> prepare, compared with TraceLens's
// reference category_data/ and metadata/ (fusion candidates and the
// manifest's kernel_fusion entry included).
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <set>
#include <string_view>

#include "categories/category_analysis.h"
#include "categories/prepare_trace.h"
#include "test_analysis_support.h"
#include "trace/loader.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

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

// Issue 48 point 4: the digest says which total is which. GPT-2's GEMM
// total in TraceLens's metrics sums each op's subtree (autocast wrappers
// count their casts and inner bf16 GEMM again); the line under it counts each
// GPU op once, under the op whose launch call it came from. Expected from the
// raw events: GPU ops whose launch call's innermost enclosing cpu_op (same
// thread) is a GEMM op.
TEST_CASE("analyze: the GEMM digest names TraceLens's subtree total and each kernel once (GPT-2)") {
  TempDir tmp;
  Trace trace = load_trace(golden::shared_dir() + "/hw_pairs/gpt2_train/h100.json.gz");
  analysis::TracePrepareOptions o;
  o.platform = "H100";
  o.output_dir = tmp.path;
  o.category = "gemm";
  analysis::prepare_from_trace(trace, o);
  auto res = analysis::analyze_category(tmp.path, "gemm");
  std::map<int64_t, const Event*> launch_of;
  std::map<uint32_t, std::vector<const Event*>> ops_of_thread;
  for (const auto& e : trace.events) {
    if (e.is_runtime()) launch_of[trace.correlation(e)] = &e;
    if (e.cat == Cat::CpuOp && e.has_dur()) ops_of_thread[e.thread].push_back(&e);
  }
  const std::set<std::string_view> gemm_ops = {"aten::mm",      "aten::addmm",  "aten::bmm",
                                               "aten::baddbmm", "aten::matmul", "aten::linear"};
  double direct_us = 0;
  for (const auto& g : trace.events) {
    if (!g.is_gpu()) continue;
    auto it = launch_of.find(trace.correlation(g));
    if (it == launch_of.end()) continue;
    const Event* innermost = nullptr;
    for (const Event* op : ops_of_thread[it->second->thread])
      if (op->ts() <= it->second->ts() && it->second->ts() < op->end() &&
          (!innermost || op->dur() < innermost->dur()))
        innermost = op;
    if (innermost && gemm_ops.count(trace.str(innermost->name))) direct_us += g.dur();
  }
  const std::string once = fmt::format("- Each kernel counted once: {:.3f} ms", direct_us / 1000);
  CAPTURE(once);
  CHECK(res.markdown.find(once) != std::string::npos);
  const std::string total =
      fmt::format("- Total kernel time: {:.3f} ms", res.metrics["total_time_ms"].get<double>());
  CHECK(res.markdown.find(total + " ") < res.markdown.find(once));
  CHECK(res.metrics["total_time_ms"].get<double>() > direct_us / 1000 * 1.02);
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
