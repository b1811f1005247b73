// The category workflow agrees with insights (issue 73 point 10): the final
// report ranks a host-bound step by the step saving insights ranks it by
// (the cpu_idle draft turns the trace-level findings into system P-items
// carrying it), so a batch-1 decode step leads with it and GPT-2 training
// keeps its LM head GEMM in the top 3; and the decode steps of a prefill +
// decode trace without ProfilerStep annotations are its iterations.
// Expectations come from the raw trace events (nlohmann::json).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "critical_path/critical_path.h"
#include "golden.h"
#include "raw_timeline.h"
#include "test_analysis_support.h"
#include "test_loader_support.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace fs = std::filesystem;
using nlohmann::json;

std::string shared(const std::string& rel) {
  return jarvis::golden::shared_dir() + "/" + rel;
}

json raw_events(const std::string& path) {
  return json::parse(jarvis::loader_test::gunzip_file(path))["traceEvents"];
}

// prepare, analyze --drafts, final-report through the CLI, as an agent's
// workflow runs them; the final report's JSON.
json final_report_of(const std::string& trace, const std::string& dir) {
  const std::string bin = JARVIS_BINARY;
  for (const std::string& cmd :
       {bin + " prepare '" + trace + "' --out '" + dir + "' > /dev/null 2>&1",
        bin + " analyze '" + dir + "' --drafts -q > /dev/null 2>&1",
        bin + " final-report '" + dir + "' > /dev/null 2>&1"}) {
    CAPTURE(cmd);
    REQUIRE(std::system(cmd.c_str()) == 0);
  }
  std::ifstream in(dir + "/final_report.json");
  return json::parse(in);
}

TEST_CASE(
    "final report: a batch-1 decode step leads with its host-bound step (s_overhead_decode)") {
  const std::string trace = shared("ab_pairs/s_overhead_decode_shapes.json.gz");
  if (!fs::exists(trace)) {
    MESSAGE("skipped: " << trace << " is missing");
    return;
  }
  // From the raw events: the kernels' time, and how little of the GPU's span
  // they keep it busy.
  double kernel_us = 0, first = 1e300, last = -1e300;
  std::vector<std::pair<double, double>> spans;
  for (const auto& e : raw_events(trace)) {
    const std::string cat = e.value("cat", "");
    if (e.value("ph", "") != "X" || (cat != "kernel" && cat != "gpu_memcpy" && cat != "gpu_memset"))
      continue;
    const double ts = e["ts"].get<double>(), end = ts + e.value("dur", 0.0);
    if (cat == "kernel") kernel_us += end - ts;
    spans.emplace_back(ts, end);
    first = std::min(first, ts);
    last = std::max(last, end);
  }
  const double busy = jarvis::testing::union_length(spans);
  REQUIRE(last > first);
  CHECK(busy / (last - first) < 0.2);  // the GPU idles most of the step: launch-bound
  jarvis::testing::TempDir tmp;
  const json r = final_report_of(trace, tmp.path + "/out");
  REQUIRE(!r["ranked"].empty());
  const json& top = r["ranked"][0];
  CAPTURE(top.dump());
  CHECK(top["category"] == "cpu_idle");
  CHECK(top["tier"] == "system");
  CHECK(top["title"].get<std::string>().starts_with("launch_bound: Host-bound step"));
  // A CUDA graph of the step saves more than every kernel of the trace
  // takes: no kernel finding can outrank it.
  REQUIRE(top["step_saving_ms"].is_number());
  CHECK(top["step_saving_ms"].get<double>() > kernel_us / 1e3);
  CHECK(top["recoverable_ms"].get<double>() ==
        doctest::Approx(top["step_saving_ms"].get<double>()));
  for (size_t k = 1; k < r["ranked"].size(); ++k)
    CHECK(r["ranked"][k]["recoverable_pct"].get<double>() <= top["recoverable_pct"].get<double>());
}

TEST_CASE("final report: GPT-2 training keeps its LM head GEMM in the top 3 (hw_pairs H100)") {
  const std::string trace = shared("hw_pairs/gpt2_train/h100.json.gz");
  if (!fs::exists(trace)) {
    MESSAGE("skipped: " << trace << " is missing");
    return;
  }
  // The LM head: the GEMMs with the 50257 vocabulary as a dimension, and
  // their time, from the raw events (every aten::mm over it, by dims).
  size_t head_calls = 0;
  for (const auto& e : raw_events(trace))
    if (e.value("cat", "") == "cpu_op" && e.value("name", "") == "aten::mm" && e.contains("args") &&
        e["args"].contains("Input Dims") &&
        e["args"]["Input Dims"].dump().find("50257") != std::string::npos)
      ++head_calls;
  REQUIRE(head_calls > 0);
  jarvis::testing::TempDir tmp;
  const json r = final_report_of(trace, tmp.path + "/out");
  REQUIRE(r["ranked"].size() >= 3);
  size_t head_rank = 0;
  for (size_t k = 0; k < r["ranked"].size() && !head_rank; ++k)
    if (r["ranked"][k]["category"] == "gemm" &&
        r["ranked"][k]["title"].get<std::string>().find("50257") != std::string::npos)
      head_rank = k + 1;
  CAPTURE(r["ranked"].dump().substr(0, 3000));
  CHECK(head_rank >= 1);
  CHECK(head_rank <= 3);
  // Ranked by one value, largest first.
  for (size_t k = 1; k < r["ranked"].size(); ++k)
    CHECK(r["ranked"][k]["recoverable_pct"].get<double>() <=
          r["ranked"][k - 1]["recoverable_pct"].get<double>() + 1e-9);
}

TEST_CASE(
    "critical path: the decode steps of one generate() call without ProfilerStep are its "
    "iterations (s_generate A)") {
  const std::string path = shared("ab_pairs/s_generate_A_gpt2.json.gz");
  if (!fs::exists(path)) {
    MESSAGE("skipped: " << path << " is missing");
    return;
  }
  // One generate() call as a user profiles it without a schedule: the last
  // ProfilerStep's events, its annotation (and the GPU's copy) left out.
  json raw = json::parse(jarvis::loader_test::gunzip_file(path));
  double from = 0, to = -1;
  for (const auto& e : raw["traceEvents"])
    if (e.value("cat", "") == "user_annotation" &&
        e.value("name", "").starts_with("ProfilerStep#") && e["ts"].get<double>() > from) {
      from = e["ts"].get<double>();
      to = from + e["dur"].get<double>();
    }
  REQUIRE(to > from);
  json kept = json::array();
  size_t embeddings = 0;
  std::string main_tid;
  for (const auto& e : raw["traceEvents"]) {
    if (e.value("ph", "") == "M") {
      kept.push_back(e);
      continue;
    }
    if (!e.contains("ts") || e.value("name", "").starts_with("ProfilerStep#")) continue;
    const double ts = e["ts"].is_number() ? e["ts"].get<double>() : 0.0;
    if (ts < from || ts >= to) continue;
    kept.push_back(e);
    // GPT-2 looks up its token (wte) and position (wpe) embeddings once per
    // forward pass: the prefill's, then one per decode step.
    if (e.value("cat", "") == "cpu_op" && e.value("name", "") == "aten::embedding") ++embeddings;
  }
  REQUIRE(embeddings % 2 == 0);
  const size_t forward_passes = embeddings / 2;
  REQUIRE(forward_passes > 4);
  raw["traceEvents"] = kept;
  jarvis::testing::TempDir tmp;
  const std::string one_call = tmp.path + "/generate_one_call.json";
  {
    std::ofstream out(one_call);
    out << raw.dump();
  }
  const jarvis::Trace trace = jarvis::load_trace(one_call);
  const jarvis::CallTree tree(trace);
  const auto graph = jarvis::critical_path::build_graph({{&trace, &tree, -1}});
  CHECK(graph.iterations_source == jarvis::critical_path::kFromDetectedRepeats);
  MESSAGE("generate() without ProfilerStep: " << forward_passes << " forward passes, "
                                              << graph.iterations.size() << " iterations");
  // Every decode step is an iteration (the prefill is not); the last one the
  // launch sequence holds may end it without a copy of its own.
  CHECK(graph.iterations.size() <= forward_passes - 1);
  CHECK(graph.iterations.size() >= forward_passes - 2);
  bool said = false;
  for (const auto& n : graph.notes)
    said |= n.find("decode steps after a prefill") != std::string::npos;
  CHECK(said);
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
