// parent_chain against known chains of the conformance traces: the first
// cpu_op above each kernel must be kernel_summary's "Parent cpu_op", and the
// event at each unified_perf_summary ex_UID must carry that row's name.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "explore/parent_chain.h"
#include "test_analysis_support.h"
#include "test_loader_support.h"
#include "trace/loader.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using namespace jarvis;
using namespace jarvis::testing;
using analysis::ojson;

TEST_CASE("parent_chain: kernels sit under kernel_summary's Parent cpu_op") {
  for (const char* name : {"mi300_qwen1.5-0.5b", "h100_bert-small"}) {
    std::string dir = golden::shared_dir() + "/conformance/" + name;
    CAPTURE(dir);
    Trace trace = load_trace(dir + "/trace.json.gz");
    CallTree tree(trace);
    Table ks = read_csv_typed(dir + "/perf_report_csvs/kernel_summary.csv");
    size_t checked = 0;
    for (size_t r = 0; r < ks.rows.size() && checked < 40; ++r) {
      std::string kernel = analysis::cell_text(analysis::cell_at(ks, r, "Kernel name"));
      std::string parent = analysis::cell_text(analysis::cell_at(ks, r, "Parent cpu_op"));
      if (kernel.empty() || parent.empty()) continue;
      analysis::ParentChainQuery q;
      q.kernel_name = kernel;
      auto res = analysis::parent_chain(trace, tree, q);
      CAPTURE(kernel);
      // Every match is a kernel of that name; one of them has this parent.
      bool found = false;
      for (size_t i = 0; i < res.json["match_count"].get<size_t>() && !found; ++i) {
        q.index = i;
        auto m = analysis::parent_chain(trace, tree, q);
        CHECK(m.json["event"]["name"] == kernel);
        for (const auto& level : m.json["parent_chain"])
          if (level["category"] == "cpu_op") {
            found = level["name"] == parent;
            break;
          }
      }
      CHECK(found);
      ++checked;
    }
    CHECK(checked > 5);
  }
}

TEST_CASE("parent_chain: ex_UID of unified_perf_summary, subtree and text") {
  std::string dir = golden::shared_dir() + "/conformance/mi300_qwen1.5-0.5b";
  Trace trace = load_trace(dir + "/trace.json.gz");
  CallTree tree(trace);
  Table up = read_csv_typed(dir + "/perf_report_csvs/unified_perf_summary.csv");
  for (size_t r = 0; r < up.rows.size(); ++r) {
    double uid = analysis::cell_number(analysis::cell_at(up, r, "ex_UID"));
    if (uid >= static_cast<double>(trace.events.size())) continue;  // synthetic rows
    analysis::ParentChainQuery q;
    q.uid = static_cast<Uid>(uid);
    q.subtree_depth = 1;
    auto res = analysis::parent_chain(trace, tree, q);
    CHECK(res.json["event"]["name"] == analysis::cell_text(analysis::cell_at(up, r, "name")));
    if (res.json["event"]["category"] == "cpu_op") {
      CHECK(res.json["event"]["Input Dims"].is_array());
      // A launcher's subtree (depth 1) lists its runtime calls.
      CHECK(res.json["subtree"].contains("children"));
    }
    CHECK(res.text.starts_with("Node:\n  UID: " + std::to_string(q.uid.value()) + ", Category: "));
  }
  analysis::ParentChainQuery q;
  q.op_name = "aten::mm";
  q.index = 1;
  auto mm = analysis::parent_chain(trace, tree, q);
  CHECK(mm.json["event"]["name"] == "aten::mm");
  CHECK(mm.json["match_count"].get<size_t>() >= 2);
  CHECK(mm.text.find("    Input Dims: [[") != std::string::npos);
  CHECK(mm.text.find("\nSubtree:\n\xE2\x94\x94\xE2\x94\x80\xE2\x94\x80 UID: ") !=
        std::string::npos);
  // The chain ends at a root: the last level has no parent.
  CHECK(tree.parent(mm.json["parent_chain"].back()["uid"].get<Uid>()) == kNoUid);

  analysis::ParentChainQuery bad;
  CHECK_THROWS_AS(analysis::parent_chain(trace, tree, bad), std::invalid_argument);
  bad.op_name = "aten::does_not_exist";
  CHECK_THROWS_WITH_AS(analysis::parent_chain(trace, tree, bad),
                       doctest::Contains("no event matches"), std::invalid_argument);
  bad.op_name = "aten::mm";
  bad.index = 1000000;
  CHECK_THROWS_WITH_AS(analysis::parent_chain(trace, tree, bad), doctest::Contains("out of range"),
                       std::invalid_argument);
  analysis::ParentChainQuery big;
  big.uid = static_cast<Uid>(trace.events.size());
  CHECK_THROWS_AS(analysis::parent_chain(trace, tree, big), std::invalid_argument);
}

namespace {

// The raw trace events, parsed independently of jarvis's loader.
nlohmann::json raw_events(const std::string& path) {
  return nlohmann::json::parse(jarvis::loader_test::gunzip_file(path))["traceEvents"];
}

bool raw_encloses(const nlohmann::json& outer, const nlohmann::json& inner) {
  double ots = outer["ts"].get<double>(), its = inner["ts"].get<double>();
  return outer["pid"] == inner["pid"] && outer["tid"] == inner["tid"] && ots <= its &&
         ots + outer["dur"].get<double>() >= its + inner["dur"].get<double>();
}

}  // namespace

TEST_CASE("parent_chain: nn.Module context of ops, from the raw python_function events") {
  std::string path = golden::shared_dir() + "/conformance/h100_bert-small/trace.json.gz";
  Trace trace = load_trace(path);
  CallTree tree(trace);
  nlohmann::json events = raw_events(path);
  // The first three aten::addmm ops in file order, and the nn.Module frames
  // enclosing each, outermost first (start time, then longer first).
  size_t checked = 0;
  for (size_t i = 0; i < events.size() && checked < 3; ++i) {
    const auto& op = events[i];
    if (op.value("cat", "") != "cpu_op" || op.value("name", "") != "aten::addmm") continue;
    std::vector<std::pair<std::pair<double, double>, std::string>> modules;
    for (const auto& e : events)
      if (e.value("cat", "") == "python_function" && e.value("ph", "") == "X" &&
          e.value("name", "").starts_with("nn.Module: ") && raw_encloses(e, op))
        modules.push_back(
            {{e["ts"].get<double>(), -e["dur"].get<double>()}, e["name"].get<std::string>()});
    std::sort(modules.begin(), modules.end());
    REQUIRE(modules.size() >= 2);  // the model, a layer, ... a Linear
    analysis::ParentChainQuery q;
    q.op_name = "aten::addmm";
    q.index = checked;
    auto res = analysis::parent_chain(trace, tree, q);
    CHECK(res.json["event"]["ts"].get<double>() == op["ts"].get<double>());
    const auto& got = res.json["context"]["modules"];
    REQUIRE(got.size() == modules.size());
    for (size_t k = 0; k < modules.size(); ++k) CHECK(got[k] == modules[k].second);
    // The text's context line ends with the module path.
    std::string path;
    for (const auto& m : modules) path += (path.empty() ? "" : " > ") + m.second;
    CHECK(res.text.find(path + "\n") != std::string::npos);
    CHECK(res.text.find("Context:\n  ") != std::string::npos);
    // A kernel launched by the op carries the same module path (through its launch).
    auto gpu = tree.gpu_events(res.uid);
    if (!gpu.empty()) {
      analysis::ParentChainQuery k;
      k.uid = gpu.front();
      CHECK(analysis::parent_chain(trace, tree, k).json["context"]["modules"] == got);
    }
    ++checked;
  }
  CHECK(checked == 3);
}

TEST_CASE("parent_chain: an optimizer step's subtree holds the kernels it launched") {
  std::string path = golden::shared_dir() + "/hw_pairs/gpt2_train/h100.json.gz";
  Trace trace = load_trace(path);
  CallTree tree(trace);
  nlohmann::json events = raw_events(path);
  // Independently: kernels whose launch (a cuda_runtime call with the same
  // correlation) lies inside the first Optimizer.step annotation on its thread.
  const nlohmann::json* step = nullptr;
  for (const auto& e : events)
    if (e.value("cat", "") == "user_annotation" &&
        e.value("name", "") == "Optimizer.step#AdamW.step") {
      step = &e;
      break;
    }
  REQUIRE(step != nullptr);
  std::set<int64_t> launches;
  for (const auto& e : events)
    if (e.value("cat", "") == "cuda_runtime" && e.contains("dur") && raw_encloses(*step, e) &&
        e.contains("args") && e["args"].contains("correlation"))
      launches.insert(e["args"]["correlation"].get<int64_t>());
  size_t kernels = 0;
  for (const auto& e : events)
    if ((e.value("cat", "") == "kernel" || e.value("cat", "") == "gpu_memcpy" ||
         e.value("cat", "") == "gpu_memset") &&
        e.contains("args") && e["args"].contains("correlation") &&
        launches.count(e["args"]["correlation"].get<int64_t>()))
      ++kernels;
  REQUIRE(kernels > 10);  // AdamW's multi_tensor_apply kernels at least

  analysis::ParentChainQuery q;
  q.op_name = "Optimizer.step#AdamW.step";
  q.subtree_depth = 1;
  auto res = analysis::parent_chain(trace, tree, q);
  CHECK(res.json["event"]["category"] == "user_annotation");
  CHECK(res.json["subtree"]["gpu_event_count"].get<size_t>() == kernels);
  REQUIRE(res.json["subtree"].contains("children"));
  CHECK(res.json["subtree"]["children"].size() > 0);
  CHECK(res.text.find("Optimizer.step#AdamW.step") != std::string::npos);
}

TEST_CASE("parent_chain: kernel_name matches rank longest first (issue 48)") {
  // A substring such as "flash_fwd" matches every attention call; the agent
  // asks about the expensive one, not the first in the trace.
  Trace trace = load_trace(golden::shared_dir() + "/conformance/h100_qwen1.5-0.5b/trace.json.gz");
  CallTree tree(trace);
  double longest = 0, first = -1;
  size_t count = 0;
  for (const Event& e : trace.events)
    if (e.cat == Cat::Kernel && trace.str(e.name).find("flash_fwd") != std::string_view::npos) {
      longest = std::max(longest, e.dur());
      if (first < 0) first = e.dur();
      ++count;
    }
  REQUIRE(count > 5);
  REQUIRE(first < longest);  // the first in the trace is not the longest
  analysis::ParentChainQuery q;
  q.kernel_name = "flash_fwd";
  q.subtree_depth = 0;
  auto res = analysis::parent_chain(trace, tree, q);
  CHECK(res.json["match_count"] == count);
  CHECK(res.json["event"]["duration_us"].get<double>() == doctest::Approx(longest));
  const auto& top = res.json["top_matches"];
  REQUIRE(top.size() == 5);
  CHECK(top[0]["index"] == 0);
  for (size_t k = 1; k < top.size(); ++k)
    CHECK(top[k - 1]["duration_us"].get<double>() >= top[k]["duration_us"].get<double>());
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
