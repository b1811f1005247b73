// The first step's backlog (issue 73, point 1): GPU work queued before
// profiling that still runs inside the first ProfilerStep is left out of
// every per-step figure. Expectations come from the raw JSON events (their
// correlation ids and times) and from ../shared/ab_pairs/truth.json.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "critical_path/critical_path.h"
#include "golden.h"
#include "insights/trace_health.h"
#include "test_loader_support.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace cp = jarvis::critical_path;
namespace fs = std::filesystem;
using nlohmann::json;

std::string ab_dir() {
  return jarvis::golden::shared_dir() + "/ab_pairs";
}

bool is_gpu_cat(const std::string& cat) {
  return cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset";
}

// From the raw events of a one-process trace: the host ProfilerStep windows,
// the GPU ops with their launch call's start (none: no launch recorded).
struct RawSteps {
  std::vector<std::pair<double, double>> steps;  // host ProfilerStep#N, by start
  struct Op {
    double ts = 0, dur = 0;
    std::optional<double> launch_ts;
    int64_t stream = -1;
  };
  std::vector<Op> ops;
};

RawSteps raw_steps(const std::string& path) {
  const json raw = json::parse(jarvis::loader_test::gunzip_file(path));
  RawSteps out;
  std::map<int64_t, double> launch_ts;  // correlation -> runtime call start
  for (const auto& e : raw["traceEvents"]) {
    const std::string cat = e.value("cat", "");
    if (cat == "user_annotation" && e.value("name", "").rfind("ProfilerStep#", 0) == 0)
      out.steps.emplace_back(e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>());
    if ((cat == "cuda_runtime" || cat == "cuda_driver") && e.contains("args") &&
        e["args"].contains("correlation"))
      launch_ts[e["args"]["correlation"].get<int64_t>()] = e["ts"].get<double>();
  }
  for (const auto& e : raw["traceEvents"]) {
    if (!is_gpu_cat(e.value("cat", "")) || !e.contains("dur")) continue;
    RawSteps::Op op{e["ts"].get<double>(), e["dur"].get<double>(), std::nullopt,
                    e["args"].value("stream", int64_t{-1})};
    if (auto it = launch_ts.find(e["args"].value("correlation", int64_t{-1}));
        it != launch_ts.end())
      op.launch_ts = it->second;
    out.ops.push_back(op);
  }
  std::sort(out.steps.begin(), out.steps.end());
  return out;
}

// GPU time after the first step began of the ops queued before it (no launch
// in the trace, or launched before it) ahead of the stream's first op
// launched inside a step.
double raw_backlog_us(const RawSteps& r) {
  if (r.steps.empty()) return 0;
  const double first = r.steps.front().first;
  std::map<int64_t, std::vector<RawSteps::Op>> streams;
  for (const auto& op : r.ops) streams[op.stream].push_back(op);
  double us = 0;
  for (auto& [stream, ops] : streams) {
    std::sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) { return a.ts < b.ts; });
    auto own = std::find_if(ops.begin(), ops.end(),
                            [&](const auto& op) { return op.launch_ts && *op.launch_ts >= first; });
    if (own == ops.end()) continue;
    for (auto it = ops.begin(); it != own; ++it)
      if (it->ts + it->dur > first) us += it->ts + it->dur - std::max(it->ts, first);
  }
  return us;
}

// The GPU period per step from each step's own launches: from the first op
// launched in the first step to the end of the last op launched in the last.
double raw_gpu_period_us(const RawSteps& r) {
  double from = 1e300, to = -1e300;
  for (const auto& op : r.ops) {
    if (!op.launch_ts || *op.launch_ts < r.steps.front().first ||
        *op.launch_ts >= r.steps.back().second)
      continue;
    from = std::min(from, op.ts);
    to = std::max(to, op.ts + op.dur);
  }
  return (to - from) / static_cast<double>(r.steps.size());
}

struct Loaded {
  jarvis::Trace trace;
  std::unique_ptr<jarvis::CallTree> tree;
  cp::Graph graph;
};

Loaded load(const std::string& path) {
  Loaded l{jarvis::load_trace(path), nullptr, {}};
  l.tree = std::make_unique<jarvis::CallTree>(l.trace);
  l.graph = cp::build_graph({{&l.trace, l.tree.get(), -1}});
  return l;
}

double clean_step_ms(const std::string& experiment, const std::string& arm) {
  std::ifstream in(ab_dir() + "/truth.json");
  return json::parse(in)[experiment][arm]["step_ms_clean"].get<double>();
}

TEST_CASE("GPU backlog: s_tf32 A's first step starts behind 20 ms of pre-profiling work") {
  if (!fs::exists(ab_dir() + "/truth.json")) {
    MESSAGE("skipped: " << ab_dir() << " is missing");
    return;
  }
  const std::string path = ab_dir() + "/s_tf32_A_fp32.json.gz";
  const RawSteps raw = raw_steps(path);
  REQUIRE(raw.steps.size() == 3);
  const double backlog = raw_backlog_us(raw);
  REQUIRE(backlog > 10'000);  // 233 kernels with no launch in the trace, ~20.6 ms
  Loaded l = load(path);
  REQUIRE(l.graph.backlog_us.size() == 1);
  CHECK(l.graph.backlog_us.begin()->second == doctest::Approx(backlog).epsilon(1e-6));

  // Left out of both schedules: the un-profiled step is the GPU period that
  // each step's own launches give, and within 20 % of the clean re-run.
  const double period = raw_gpu_period_us(raw);
  const cp::Analysis unprofiled = cp::analyse_unprofiled(l.graph);
  const cp::Analysis recorded = cp::analyse(l.graph);
  REQUIRE(unprofiled.estimated_unprofiled_step_us);
  CHECK(*unprofiled.estimated_unprofiled_step_us == doctest::Approx(period).epsilon(0.05));
  const double clean_us = 1e3 * clean_step_ms("s_tf32", "A_fp32");
  CHECK(std::abs(*unprofiled.estimated_unprofiled_step_us / clean_us - 1) < 0.2);
  // The recorded schedule keeps the trace's own times: its first step holds
  // the backlog, which the un-profiled one leaves out.
  REQUIRE(recorded.iterations.size() == 3);
  CHECK(recorded.iterations[0].length_us > unprofiled.iterations[0].length_us + 0.5 * backlog);
  CHECK(unprofiled.gpu_backlog_left_out_us == doctest::Approx(backlog));
  // The first step is no longer longer than the others by the backlog.
  REQUIRE(unprofiled.iterations.size() == 3);
  const double later =
      std::max(unprofiled.iterations[1].length_us, unprofiled.iterations[2].length_us);
  CHECK(unprofiled.iterations[0].length_us < later + 0.5 * backlog);

  // The health block says how much was left out, once for the trace.
  const auto health = jarvis::insights::trace_health(l.trace, *l.tree);
  CHECK(health.gpu_backlog_left_out_us == doctest::Approx(backlog));
  CHECK(health.profiler_note.find("queued before profiling") != std::string::npos);
  CHECK(jarvis::insights::to_json(health)["gpu_backlog_left_out_us_total"].get<double>() ==
        doctest::Approx(backlog));
}

TEST_CASE("GPU backlog: every ab_pairs, hw_pairs and legacy trace, from the raw events") {
  std::vector<std::string> paths;
  for (const std::string& dir : {ab_dir(), jarvis::golden::shared_dir() + "/hw_pairs/gpt2_train",
                                 jarvis::golden::shared_dir() + "/hw_pairs/resnet50_train",
                                 jarvis::golden::shared_dir() + "/legacy/hta_noflow_rank1"})
    if (fs::exists(dir))
      for (const auto& f : fs::directory_iterator(dir))
        if (f.path().string().ends_with(".json.gz")) paths.push_back(f.path().string());
  if (paths.empty()) {
    MESSAGE("skipped: ../shared/ab_pairs and hw_pairs are missing");
    return;
  }
  std::sort(paths.begin(), paths.end());
  for (const std::string& path : paths) {
    CAPTURE(path);
    const RawSteps raw = raw_steps(path);
    Loaded l = load(path);
    const double graph_backlog =
        l.graph.backlog_us.empty() ? 0.0 : l.graph.backlog_us.begin()->second;
    CHECK(graph_backlog == doctest::Approx(raw_backlog_us(raw)).epsilon(1e-6));
    // Invariants: no step of the un-profiled schedule is shorter than zero,
    // the estimate never exceeds the recorded step, the left-out time is the
    // graph's, and the first step does not hold the backlog anymore.
    const cp::Analysis unprofiled = cp::analyse_unprofiled(l.graph);
    const cp::Analysis recorded = cp::analyse(l.graph);
    for (const auto& it : unprofiled.iterations) CHECK(it.length_us >= 0);
    CHECK(unprofiled.step_time_us <= recorded.step_time_us * (1 + 1e-9));
    CHECK(unprofiled.gpu_backlog_left_out_us == doctest::Approx(graph_backlog));
    if (graph_backlog > 0 && unprofiled.iterations.size() >= 2)
      CHECK(unprofiled.iterations[0].length_us <
            recorded.iterations[0].length_us - 0.5 * graph_backlog);
  }
}

TEST_CASE("GPU backlog: a trace without launch links has none to tell") {
  // Two steps, a kernel in each, no runtime call: nothing ties a kernel to a
  // step, so no kernel is taken for the backlog of earlier steps.
  const json trace = {{"traceEvents",
                       {{{"ph", "X"},
                         {"cat", "user_annotation"},
                         {"name", "ProfilerStep#1"},
                         {"pid", 1},
                         {"tid", 1},
                         {"ts", 100.0},
                         {"dur", 100.0}},
                        {{"ph", "X"},
                         {"cat", "user_annotation"},
                         {"name", "ProfilerStep#2"},
                         {"pid", 1},
                         {"tid", 1},
                         {"ts", 200.0},
                         {"dur", 100.0}},
                        {{"ph", "X"},
                         {"cat", "kernel"},
                         {"name", "k0"},
                         {"pid", 0},
                         {"tid", 7},
                         {"ts", 90.0},
                         {"dur", 50.0},
                         {"args", {{"stream", 7}, {"device", 0}, {"correlation", 1}}}},
                        {{"ph", "X"},
                         {"cat", "kernel"},
                         {"name", "k1"},
                         {"pid", 0},
                         {"tid", 7},
                         {"ts", 150.0},
                         {"dur", 40.0},
                         {"args", {{"stream", 7}, {"device", 0}, {"correlation", 2}}}},
                        {{"ph", "X"},
                         {"cat", "kernel"},
                         {"name", "k2"},
                         {"pid", 0},
                         {"tid", 7},
                         {"ts", 250.0},
                         {"dur", 40.0},
                         {"args", {{"stream", 7}, {"device", 0}, {"correlation", 3}}}}}}};
  const fs::path file =
      fs::temp_directory_path() / ("jarvis_backlog_" + std::to_string(::getpid()) + ".json");
  {
    std::ofstream out(file);
    out << trace.dump();
  }
  Loaded l = load(file.string());
  fs::remove(file);
  CHECK(l.graph.backlog_nodes.empty());
  CHECK(l.graph.backlog_us.empty());
  CHECK(cp::analyse(l.graph).gpu_backlog_left_out_us == 0);
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
