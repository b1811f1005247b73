// The profiler's own host cost and the un-profiled step (docs/critical-path.md,
// "Profiler overhead"), checked against steps timed without the profiler:
// ../shared/ab_pairs/truth.json (`step_ms_clean`, and the overhead series'
// `unprofiled`). The settings and event counts are counted from the loaded
// trace's events, never from the model's own code.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "critical_path/critical_path.h"
#include "explore/input_format.h"
#include "golden.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace cp = jarvis::critical_path;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string ab_dir() {
  return jarvis::golden::shared_dir() + "/ab_pairs";
}

// Every profiled trace of ab_pairs with its un-profiled step (ms): the A/B
// arms' step_ms_clean, the generate() arm's, and the overhead series'
// `unprofiled` (the same step timed before any profiling in its process).
std::map<std::string, double> clean_steps_ms() {
  std::ifstream in(ab_dir() + "/truth.json");
  const json truth = json::parse(in);
  std::map<std::string, double> out;
  for (const auto& [experiment, arms] : truth.items()) {
    if (!arms.is_object()) continue;
    const double series =
        arms.contains("unprofiled") ? arms["unprofiled"].value("step_ms_median", 0.0) : 0.0;
    for (const auto& [arm, a] : arms.items()) {
      if (!a.is_object() || !a.contains("trace")) continue;
      const std::string trace = a["trace"].get<std::string>();
      if (!trace.ends_with(".json.gz")) continue;  // JAX arms have no clean runs
      if (a.contains("step_ms_clean"))
        out[trace] = a["step_ms_clean"].get<double>();
      else if (series > 0)
        out[trace] = series;
    }
  }
  return out;
}

struct Loaded {
  jarvis::Trace trace;
  std::unique_ptr<jarvis::CallTree> tree;
  cp::Graph graph;
};

Loaded load(const std::string& file) {
  Loaded l{jarvis::load_trace(ab_dir() + "/" + file), nullptr, {}};
  l.tree = std::make_unique<jarvis::CallTree>(l.trace);
  l.graph = cp::build_graph({{&l.trace, l.tree.get(), -1}});
  return l;
}

}  // namespace

TEST_CASE("profiler overhead: the un-profiled step of every ab_pairs arm against its re-run") {
  if (!fs::exists(ab_dir() + "/truth.json")) {
    MESSAGE("skipped: " << ab_dir() << "/truth.json is missing");
    return;
  }
  const auto clean = clean_steps_ms();
  REQUIRE(clean.size() >= 20);  // 16 A/B arms, generate(), 8 overhead traces
  size_t within = 0;
  std::string table;
  for (const auto& entry : clean) {  // no structured binding: doctest's CAPTURE (clang)
    const std::string& file = entry.first;
    const double clean_ms = entry.second;
    CAPTURE(file);
    Loaded l = load(file);
    const cp::Analysis recorded = cp::analyse(l.graph);
    const cp::Analysis unprofiled = cp::analyse_unprofiled(l.graph);
    REQUIRE(unprofiled.estimated_unprofiled_step_us);
    // Invariants: the estimate never exceeds the recorded step, and the
    // recorded step is the recorded analysis's.
    CHECK(*unprofiled.estimated_unprofiled_step_us <= recorded.step_time_us * (1 + 1e-9));
    CHECK(unprofiled.recorded_step_time_us == doctest::Approx(recorded.step_time_us));
    CHECK(unprofiled.model == cp::kModelUnprofiled);
    // A generate() call per ProfilerStep (s_generate): the iterations are its
    // decode steps, and truth.json times the whole call: per call vs per call.
    const bool per_call = !unprofiled.profiler_steps.empty();
    CHECK(per_call == (l.graph.iterations_source == cp::kFromDecodeStepsInProfilerStep));
    const double recorded_ms = (per_call ? recorded.profiler_step_us : recorded.step_time_us) / 1e3;
    const double est_ms =
        (per_call ? unprofiled.profiler_step_us : *unprofiled.estimated_unprofiled_step_us) / 1e3;
    if (per_call) {
      CHECK(est_ms <= recorded_ms * (1 + 1e-9));
      CHECK(unprofiled.recorded_profiler_step_us == doctest::Approx(recorded.profiler_step_us));
    }
    const double error = est_ms / clean_ms - 1;
    within += std::abs(error) <= 0.2;
    table += fmt::format("  {:40s} recorded {:7.2f} estimated {:7.2f} clean {:7.2f} ({:+.0f}%){}\n",
                         file, recorded_ms, est_ms, clean_ms, 100 * error,
                         per_call ? " per generate() call (ProfilerStep)" : "");
  }
  MESSAGE("un-profiled step vs re-run:\n" << table);
  // At least 80 % of the arms within 20 % of the step timed without the profiler.
  CHECK(static_cast<double>(within) >= 0.8 * static_cast<double>(clean.size()));
}

// Per ProfilerStep and host thread, the recorded gaps between consecutive
// runtime calls, from the raw events (no graph).
struct ThreadSteps {
  std::vector<std::vector<double>> gaps;  // per step
};
std::map<uint32_t, ThreadSteps> runtime_gaps_per_step(const jarvis::Trace& t) {
  std::vector<std::pair<double, double>> steps;  // ProfilerStep windows (host side)
  for (jarvis::Uid u = 0; u < t.events.size(); ++u)
    if (t.name(u).starts_with("ProfilerStep#") && t.events[u].cat == jarvis::Cat::UserAnnotation)
      steps.push_back({t.events[u].ts(), t.events[u].ts() + t.events[u].dur()});
  std::sort(steps.begin(), steps.end());
  std::map<uint32_t, std::vector<jarvis::Uid>> calls;
  for (jarvis::Uid u = 0; u < t.events.size(); ++u)
    if (t.events[u].cat == jarvis::Cat::CudaRuntime) calls[t.events[u].thread].push_back(u);
  std::map<uint32_t, ThreadSteps> out;
  for (auto& entry : calls) {
    auto& list = entry.second;
    std::sort(list.begin(), list.end(),
              [&](jarvis::Uid a, jarvis::Uid b) { return t.events[a].ts() < t.events[b].ts(); });
    ThreadSteps ts;
    ts.gaps.resize(steps.size());
    for (size_t k = 1; k < list.size(); ++k) {
      const auto& prev = t.events[list[k - 1]];
      const double at = prev.ts();
      for (size_t s = 0; s < steps.size(); ++s)
        if (at >= steps[s].first && at < steps[s].second)
          ts.gaps[s].push_back(t.events[list[k]].ts() - (prev.ts() + prev.dur()));
    }
    out[entry.first] = std::move(ts);
  }
  return out;
}

double median_of(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

TEST_CASE(
    "profiler overhead: a host slowed in some iterations is scaled back to the undisturbed one") {
  if (!fs::exists(ab_dir() + "/truth.json")) {
    MESSAGE("skipped: " << ab_dir() << "/truth.json is missing");
    return;
  }
  const auto clean = clean_steps_ms();
  size_t disturbed_arms = 0;
  for (const auto& entry : clean) {
    const std::string& file = entry.first;
    CAPTURE(file);
    Loaded l = load(file);
    // From the raw events: per thread whose steps run the same calls (at
    // least 20, counts within 2 %), each step's median gap over its fastest
    // step's.
    std::vector<std::vector<double>> ratios;
    for (const auto& thread : runtime_gaps_per_step(l.trace)) {
      const auto& gaps = thread.second.gaps;
      if (gaps.size() < 2) continue;
      size_t fewest = SIZE_MAX, most = 0;
      for (const auto& g : gaps)
        fewest = std::min(fewest, g.size()), most = std::max(most, g.size());
      if (fewest < 20 || most > fewest + fewest / 50) continue;  // the same calls, within 2 %
      std::vector<double> medians;
      for (const auto& g : gaps) medians.push_back(median_of(g));
      const double fastest = *std::min_element(medians.begin(), medians.end());
      for (double& m : medians) m /= fastest;
      ratios.push_back(medians);
    }
    // Disturbed: one thread far slower in a step another thread ran at its
    // pace. Steady: every thread within 1.1x in every step, or one thread only.
    bool disturbed = false, steady = ratios.size() < 2;
    bool all_within = true;
    for (size_t a = 0; a < ratios.size(); ++a)
      for (size_t i = 0; i < ratios[a].size(); ++i) {
        all_within = all_within && ratios[a][i] <= 1.1;
        for (size_t b = 0; b < ratios.size(); ++b)
          disturbed = disturbed || (b != a && ratios[a][i] > 1.5 && ratios[b][i] <= 1.05);
      }
    steady = steady || all_within;
    const cp::Analysis u = cp::analyse_unprofiled(l.graph);
    const bool noted = u.summary.find("interference") != std::string::npos;
    if (disturbed) CHECK(noted);
    if (steady) CHECK_FALSE(noted);
    if (!disturbed) continue;
    ++disturbed_arms;
    // The estimate is the undisturbed iteration's: within 20 % of the re-run.
    const double est_ms = *u.estimated_unprofiled_step_us / 1e3;
    CHECK(std::abs(est_ms / entry.second - 1) <= 0.2);
  }
  // s_layout_B's autograd thread ran steps 2 and 3 at half the speed of step 1.
  CHECK(disturbed_arms >= 1);
}

TEST_CASE("profiler overhead: JAX arms against their in-process timings (XPlane)") {
  if (!fs::exists(ab_dir() + "/truth.json")) {
    MESSAGE("skipped: " << ab_dir() << "/truth.json is missing");
    return;
  }
  std::ifstream in(ab_dir() + "/truth.json");
  const json truth = json::parse(in);
  for (const char* arm : {"A_op_by_op", "B_jit"}) {
    CAPTURE(arm);
    const json& a = truth["s_jax"][arm];
    const jarvis::Trace trace =
        jarvis::load_any_trace(ab_dir() + "/" + a["trace"].get<std::string>());
    const jarvis::CallTree tree(trace);
    const cp::Graph g = cp::build_graph({{&trace, &tree, -1}});
    const cp::Analysis u = cp::analyse_unprofiled(g);
    const double est_ms = *u.estimated_unprofiled_step_us / 1e3;
    const double timed_ms = a["step_ms_median"].get<double>();
    MESSAGE(arm << ": estimated " << est_ms << " ms, timed " << timed_ms << " ms, recorded "
                << u.recorded_step_time_us / 1e3 << " ms");
    CHECK(std::abs(est_ms / timed_ms - 1) <= 0.2);
    // The frames the estimate stands on are XProf's Python tracer's.
    size_t frames = 0;
    for (const auto& e : trace.events) frames += e.cat == jarvis::Cat::PythonFunction;
    CHECK(g.profiler_cost.at(g.ranks.front()).python_frames == frames);
  }
}

TEST_CASE("profiler overhead: the settings and counts come from the trace's own events") {
  if (!fs::exists(ab_dir())) {
    MESSAGE("skipped: " << ab_dir() << " is missing");
    return;
  }
  for (const std::string setting : {"plain", "shapes", "shapes_stack", "shapes_memory"}) {
    const std::string file = "s_overhead_gpt2_" + setting + ".json.gz";
    CAPTURE(file);
    Loaded l = load(file);
    size_t ops = 0, calls = 0, frames = 0, memory = 0, with_dims = 0;
    for (jarvis::Uid u = 0; u < l.trace.events.size(); ++u) {
      const auto& e = l.trace.events[u];
      if (e.cat == jarvis::Cat::CpuOp) {
        ++ops;
        with_dims += l.trace.arg(u, "Input Dims") != nullptr;
      }
      calls += e.is_runtime();
      frames += e.cat == jarvis::Cat::PythonFunction;
      memory += e.cat == jarvis::Cat::CpuInstantEvent && l.trace.name(u) == "[memory]";
    }
    const cp::ProfilerCost& cost = l.graph.profiler_cost.at(l.graph.ranks.front());
    CHECK(cost.ops == ops);
    CHECK(cost.runtime_calls == calls);
    CHECK(cost.python_frames == frames);
    CHECK(cost.memory_events == memory);
    CHECK(cost.record_shapes == (setting != "plain"));
    CHECK(cost.record_shapes == (with_dims > 0));
    CHECK(cost.with_stack == (setting == "shapes_stack"));
    CHECK(cost.profile_memory == (setting == "shapes_memory"));
    CHECK(cost.gaps_measured > 100);
    // Stack and memory settings cost more per step than shapes alone.
    CHECK(cost.total_us > 0);
  }
}

TEST_CASE("profiler overhead: GPU-bound steps are not called host-bound (s_vocab A, s_layout A)") {
  if (!fs::exists(ab_dir())) {
    MESSAGE("skipped: " << ab_dir() << " is missing");
    return;
  }
  // The clean re-runs take about as long as the GPU is busy per step (s_vocab
  // A: 31.0 ms clean; s_layout A: 29.2 ms): without the profiler these steps
  // are bound by the GPU, whatever the recorded host says.
  for (const std::string file : {"s_vocab_A_vocab32001.json.gz", "s_layout_A_nchw.json.gz",
                                 "s_tf32_A_fp32.json.gz", "s_ckpt_A_no_checkpointing.json.gz"}) {
    CAPTURE(file);
    Loaded l = load(file);
    const cp::Analysis a = cp::analyse_unprofiled(l.graph);
    size_t gpu = 0;
    for (const auto& it : a.iterations) gpu += it.bound_by == cp::kBoundByGpu;
    CHECK(2 * gpu > a.iterations.size());
  }
}

TEST_CASE("what-if: the un-profiled prediction with the profiled one beside it") {
  if (!fs::exists(ab_dir())) {
    MESSAGE("skipped: " << ab_dir() << " is missing");
    return;
  }
  Loaded l = load("s_overhead_gpt2_shapes.json.gz");
  cp::Scenario graph;
  graph.remove_launch_gaps = true;
  const auto r = cp::what_if(l.graph, graph);
  CHECK(r.model == cp::kModelUnprofiled);
  CHECK(r.recorded_step_time_us == doctest::Approx(cp::analyse(l.graph).step_time_us));
  CHECK(r.measured_step_time_us ==
        doctest::Approx(*cp::analyse_unprofiled(l.graph).estimated_unprofiled_step_us));
  CHECK(r.predicted_step_time_us <= r.measured_step_time_us + 1e-6);
  CHECK(r.predicted_profiled_step_time_us <= r.recorded_step_time_us + 1e-6);
  // A CUDA graph keeps the kernels' own time: the prediction stays at or
  // above the GPU's busy time per iteration (the kernels of one stream, from
  // the loaded events, inside the recorded iterations).
  double first = 1e300, last = -1e300;
  for (const auto& it : l.graph.iterations) {
    first = std::min(first, it.start);
    last = std::max(last, it.end);
  }
  double busy = 0;
  for (const auto& e : l.trace.events)
    if (e.is_gpu() && e.has_dur() && e.ts() >= first && e.end() <= last) busy += e.dur();
  const double per_iteration = busy / static_cast<double>(l.graph.iterations.size());
  CHECK(r.predicted_step_time_us >= 0.99 * per_iteration);
  cp::Scenario recorded = graph;
  recorded.recorded_host = true;
  const auto p = cp::what_if(l.graph, recorded);
  CHECK(p.model == cp::kModelRecorded);
  CHECK(p.measured_step_time_us == doctest::Approx(r.recorded_step_time_us));
  CHECK(p.predicted_step_time_us == doctest::Approx(r.predicted_profiled_step_time_us));
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
