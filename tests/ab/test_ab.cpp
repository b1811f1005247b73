// jarvis ab / calibrate (src/ab, src/critical_path/calibration): truth.json
// loaded and its savings recomputed from the raw file, a prediction checked
// against the H200 re-run, the calibration fit and the host-only step worked
// by hand, a stored calibration applied by host. The runs on CPU PyTorch are
// tests/ab/test_ab_cpu.py (ctest ab_cpu).
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <regex>

#include "ab/ab.h"
#include "ab/calibrate.h"
#include "ab/change_match.h"
#include "ab/host_step.h"
#include "critical_path/calibration.h"
#include "test_loader_support.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

namespace {
namespace JARVIS_TEST_FILE {

using namespace jarvis;
namespace fs = std::filesystem;
namespace cp = jarvis::critical_path;

const std::string kTruth = std::string(JARVIS_SHARED_DIR) + "/ab_pairs/truth.json";

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

// A temp folder removed at the end of the test.
struct TempDir {
  fs::path path;
  explicit TempDir(const char* tag) {
    path = fs::temp_directory_path() / fmt::format("jarvis_ab_{}_{}", tag, ::getpid());
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

// Sets an environment variable for one scope.
struct ScopedEnv {
  std::string name;
  std::optional<std::string> old;
  ScopedEnv(const char* n, const std::string& value) : name(n) {
    if (const char* v = std::getenv(n)) old = v;
    ::setenv(n, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old)
      ::setenv(name.c_str(), old->c_str(), 1);
    else
      ::unsetenv(name.c_str());
  }
};

TEST_CASE("ab: the recorded H200 truth.json loads as pairs measured from its clean timings") {
  if (!fs::exists(kTruth)) {
    MESSAGE("skipped: needs ../shared/ab_pairs/truth.json");
    return;
  }
  std::vector<std::string> skipped;
  const auto pairs = ab::load_truth(kTruth, &skipped);
  const auto raw = read_json(kTruth);
  size_t expected = 0;
  for (const auto& entry : raw.items()) {
    // Named, not a structured binding: lambdas and CAPTURE use it (clang 14).
    const std::string name = entry.key();
    const auto& exp = entry.value();
    if (name.starts_with("_")) continue;
    std::string a, b;
    for (const auto& [key, arm] : exp.items()) {
      if (key.starts_with("A_")) a = key;
      if (key.starts_with("B_")) b = key;
    }
    if (a.empty() || b.empty() || !exp[a].contains("step_ms_clean") ||
        !exp[b].contains("step_ms_clean"))
      continue;
    ++expected;
    const auto it =
        std::find_if(pairs.begin(), pairs.end(), [&](const ab::Pair& p) { return p.name == name; });
    REQUIRE(it != pairs.end());
    const double measured =
        exp[a]["step_ms_clean"].get<double>() - exp[b]["step_ms_clean"].get<double>();
    CAPTURE(name);
    CHECK(it->measured_saving_ms() == doctest::Approx(measured));
    // The band: every pair of clean processes.
    double low = 1e300, high = -1e300;
    for (double x : exp[a]["step_ms_clean_runs"])
      for (double y : exp[b]["step_ms_clean_runs"]) {
        low = std::min(low, x - y);
        high = std::max(high, x - y);
      }
    CHECK(it->band_low_ms() == doctest::Approx(low));
    CHECK(it->band_high_ms() == doctest::Approx(high));
    CHECK(it->a.trace_path ==
          (fs::path(kTruth).parent_path() / exp[a]["trace"].get<std::string>()).string());
  }
  CHECK(pairs.size() == expected);
  CHECK(expected >= 8);
  // s_jax has no clean runs, s_generate one arm, s_overhead_* no A_/B_.
  auto skipped_has = [&](const char* name) {
    return std::any_of(skipped.begin(), skipped.end(),
                       [&](const std::string& s) { return s.starts_with(name); });
  };
  CHECK(skipped_has("s_jax"));
  CHECK(skipped_has("s_generate"));
  // s_layout: 29.203 - 18.482 (README: 10.7, runs 12.4 and 9.0), above its noise.
  const auto layout = std::find_if(pairs.begin(), pairs.end(),
                                   [](const ab::Pair& p) { return p.name == "s_layout"; });
  REQUIRE(layout != pairs.end());
  CHECK(layout->measured_saving_ms() == doctest::Approx(10.721).epsilon(1e-3));
  CHECK(layout->above_noise());
  // The round trip: written in truth.json's format, read back the same.
  TempDir dir("truth");
  const std::string path = (dir.path / "truth.json").string();
  {
    std::ofstream out(path);
    out << ab::truth_json(pairs, "NVIDIA H200", "2.11.0+cu130").dump(1);
  }
  const auto again = ab::load_truth(path, nullptr);
  REQUIRE(again.size() == pairs.size());
  for (size_t k = 0; k < pairs.size(); ++k) {
    CHECK(again[k].measured_saving_ms() == doctest::Approx(pairs[k].measured_saving_ms()));
    CHECK(again[k].a.clean_runs_ms == pairs[k].a.clean_runs_ms);
  }
}

TEST_CASE("ab: the prediction from s_tf32's arm A trace against its H200 re-run") {
  if (!fs::exists(kTruth)) {
    MESSAGE("skipped: needs ../shared/ab_pairs/truth.json");
    return;
  }
  auto pairs = ab::load_truth(kTruth, nullptr);
  auto it = std::find_if(pairs.begin(), pairs.end(),
                         [](const ab::Pair& p) { return p.name == "s_tf32"; });
  REQUIRE(it != pairs.end());
  ab::predict(*it);
  const auto& pr = it->prediction;
  REQUIRE(pr.available);
  CAPTURE(pr.finding);
  CAPTURE(pr.saving_ms_per_step);
  // The re-run: 42.686 - 15.346 = 27.3 ms; the top finding's what-if
  // predicts within a factor of 1.5 either way.
  const auto raw = read_json(kTruth)["s_tf32"];
  const double measured =
      raw["A_fp32"]["step_ms_clean"].get<double>() - raw["B_tf32"]["step_ms_clean"].get<double>();
  CHECK(pr.saving_ms_per_step > measured / 1.5);
  CHECK(pr.saving_ms_per_step < measured * 1.5);
  CHECK(pr.calibration == "built-in");  // an H200 trace names no host
  REQUIRE(pr.estimated_unprofiled_step_ms);
  // The un-profiled estimate of arm A against its clean timing (42.7 ms).
  CHECK(*pr.estimated_unprofiled_step_ms ==
        doctest::Approx(raw["A_fp32"]["step_ms_clean"].get<double>()).epsilon(0.2));
  const auto rows = ab::table_json({*it});
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["ratio_measured_to_predicted"].get<double>() ==
        doctest::Approx(measured / pr.saving_ms_per_step));
  CHECK(ab::table_markdown({*it}).find("| s_tf32 |") != std::string::npos);
}

// Events of a raw trace file (gzipped Kineto JSON) that `match` selects.
size_t raw_count(const std::string& path, const std::function<bool(const nlohmann::json&)>& match) {
  const auto doc = nlohmann::json::parse(jarvis::loader_test::gunzip_file(path));
  size_t n = 0;
  for (const auto& e : doc["traceEvents"])
    if (e.is_object() && e.contains("name") && match(e)) ++n;
  return n;
}

bool raw_is(const nlohmann::json& e, const char* cat) {
  return e.value("cat", "") == cat;
}

TEST_CASE(
    "ab: the finding that stands for each recorded change is the one whose work is gone "
    "in arm B") {
  if (!fs::exists(kTruth)) {
    MESSAGE("skipped: needs ../shared/ab_pairs/truth.json");
    return;
  }
  const auto raw = read_json(kTruth);
  auto pairs = ab::load_truth(kTruth, nullptr);
  auto pair_named = [&](const std::string& name) -> ab::Pair& {
    auto it =
        std::find_if(pairs.begin(), pairs.end(), [&](const ab::Pair& p) { return p.name == name; });
    REQUIRE(it != pairs.end());
    return *it;
  };
  // What each change removes, read from the raw events of both arms: the
  // rule whose work that is.
  const std::regex transposes("nchwToNhwc|nhwcToNchw"), simt("simt|ffma");
  struct Expected {
    const char* experiment;
    const char* rule;
    std::function<bool(const nlohmann::json&)> removed;
  };
  const std::vector<Expected> expected = {
      {"s_adam", "foreach_optimizer",
       [](const nlohmann::json& e) {
         return raw_is(e, "cpu_op") && e["name"].get<std::string>().starts_with("aten::_foreach_");
       }},
      {"s_mask_sync", "host_sync",
       [](const nlohmann::json& e) { return raw_is(e, "cpu_op") && e["name"] == "aten::nonzero"; }},
      {"s_loader", "dataloader_main_process",
       [](const nlohmann::json& e) {
         return e["name"].get<std::string>().find("_SingleProcessDataLoaderIter.__next__") !=
                std::string::npos;
       }},
      {"s_layout", "conv_layout_transposes",
       [&](const nlohmann::json& e) {
         return raw_is(e, "kernel") && std::regex_search(e["name"].get<std::string>(), transposes);
       }},
      {"s_vocab", "gemm_unaligned_dims",
       [](const nlohmann::json& e) {
         return raw_is(e, "cpu_op") && e["name"] == "aten::mm" && e.contains("args") &&
                e["args"].contains("Input Dims") &&
                e["args"]["Input Dims"].dump().find("32001") != std::string::npos;
       }},
      {"s_tf32", "fp32_gemm_simt",
       [&](const nlohmann::json& e) {
         return raw_is(e, "kernel") && std::regex_search(e["name"].get<std::string>(), simt);
       }},
      {"s_attn", "unfused_attention",
       [](const nlohmann::json& e) { return raw_is(e, "cpu_op") && e["name"] == "aten::softmax"; }},
  };
  for (const auto& x : expected) {
    CAPTURE(x.experiment);
    ab::Pair& p = pair_named(x.experiment);
    const size_t in_a = raw_count(p.a.trace_path, x.removed);
    const size_t in_b = raw_count(p.b.trace_path, x.removed);
    CHECK(in_a > 0);
    CHECK(in_b * 2 < in_a);  // the change removed (most of) it
    ab::predict(p);
    const auto& pr = p.prediction;
    REQUIRE(pr.available);
    CHECK(pr.finding == x.rule);
    CHECK(pr.chosen_by == "arm B");
    CHECK(pr.chosen_why.find("gone in arm B") != std::string::npos);
    // Its entry among the findings gone in B: at least half gone.
    bool listed = false;
    for (const auto& g : pr.gone_in_b)
      if (g["rule"] == x.rule) {
        listed = true;
        CHECK(g["gone_share"].get<double>() >= ab::kGoneShare);
        CHECK(g["a_ms_per_step"].get<double>() > g["b_ms_per_step"].get<double>());
      }
    CHECK(listed);
  }
  // s_ckpt's checkpointing removes no work (it recomputes): the top finding,
  // said to be so.
  ab::Pair& ckpt = pair_named("s_ckpt");
  ab::predict(ckpt);
  CHECK(ckpt.prediction.chosen_by == "top");
  CHECK(ckpt.prediction.chosen_why.find("none stands for the change") != std::string::npos);
  // --finding names it; "top" the top one.
  ab::Pair& mask = pair_named("s_mask_sync");
  ab::Pair named = mask;
  ab::predict(named, "launch_bound");
  CHECK(named.prediction.finding == "launch_bound");
  CHECK(named.prediction.chosen_by == "--finding");
  ab::Pair top = mask;
  ab::predict(top, "top");
  CHECK(top.prediction.chosen_by == "top");

  // The verdict and the ratio from truth.json's clean runs: B slower (every
  // pair of processes) says so and gives no ratio; noise (the band holds 0)
  // marks the ratio; else the ratio is measured / predicted.
  const auto rows = ab::table_json(pairs);
  for (const auto& p : pairs) {
    CAPTURE(p.name);
    const auto& exp = raw[p.name];
    double a_clean = 0, b_clean = 0, low = 1e300, high = -1e300;
    for (const auto& [key, arm] : exp.items()) {
      if (key.starts_with("A_")) a_clean = arm["step_ms_clean"].get<double>();
      if (key.starts_with("B_")) b_clean = arm["step_ms_clean"].get<double>();
    }
    std::vector<double> ar, br;
    for (const auto& [key, arm] : exp.items()) {
      if (key.starts_with("A_")) ar = arm["step_ms_clean_runs"].get<std::vector<double>>();
      if (key.starts_with("B_")) br = arm["step_ms_clean_runs"].get<std::vector<double>>();
    }
    for (double x : ar)
      for (double y : br) {
        low = std::min(low, x - y);
        high = std::max(high, x - y);
      }
    const double measured = a_clean - b_clean;
    const auto row = std::find_if(rows.begin(), rows.end(), [&](const nlohmann::json& r) {
      return r["experiment"] == p.name;
    });
    REQUIRE(row != rows.end());
    const std::string md = ab::table_markdown({p});
    if (high < 0) {
      CHECK((*row)["verdict"] == "B slower");
      CHECK((*row)["ratio_measured_to_predicted"].is_null());
      CHECK(md.find("none: B slower") != std::string::npos);
    } else if (low <= 0) {
      CHECK((*row)["verdict"] == "noise");
      if (p.prediction.available)
        CHECK(md.find(fmt::format("{:.2f} (noise)", measured / p.prediction.saving_ms_per_step)) !=
              std::string::npos);
    } else {
      CHECK((*row)["verdict"] == "B faster");
      if (p.prediction.available)
        CHECK((*row)["ratio_measured_to_predicted"].get<double>() ==
              doctest::Approx(measured / p.prediction.saving_ms_per_step));
    }
  }
  // s_adam and s_ckpt are slower in B; s_mask_sync's band holds 0.
  CHECK(pair_named("s_adam").verdict() == "B slower");
  CHECK(pair_named("s_ckpt").verdict() == "B slower");
  CHECK(pair_named("s_mask_sync").verdict() == "noise");
}

ab::SettingFit setting(const char* name, double ops, double inputs, double frames, double memory,
                       double gap, double excess) {
  ab::SettingFit s;
  s.name = name;
  s.events.steps = 3;
  s.events.ops = ops;
  s.events.inputs = inputs;
  s.events.python_frames = frames;
  s.events.memory_events = memory;
  s.events.op_gap_us = gap;
  s.events.gaps_measured = 100;
  s.excess_us = excess;
  return s;
}

TEST_CASE("calibrate: the per-event costs fitted by hand") {
  ab::Calibration c;
  c.clean_step_us = 1000;
  // plain: 100 ops at a 2 us gap, 600 us over the clean step: 3 gaps an op.
  // shapes: the built-in 0.21 per op + 0.98 per input at a 4 us gap is
  // (21 + 294) * 4 = 1260 us; 2520 measured: both twice the built-in.
  // with_stack: the shapes part (0.42 * 100 + 1.96 * 300) * 4 = 2520 plus
  // 1.5 gaps for each of 50 frames (300 us). profile_memory: 2520 plus 2
  // gaps for each of 40 events (320 us).
  c.settings = {setting("plain", 100, 0, 0, 0, 2, 600), setting("shapes", 100, 300, 0, 0, 4, 2520),
                setting("shapes_stack", 100, 300, 50, 0, 4, 2820),
                setting("shapes_memory", 100, 300, 0, 40, 4, 2840)};
  ab::fit_model(c);
  CHECK(c.model.op_gaps == doctest::Approx(3.0));
  CHECK(c.model.shapes_op_gaps == doctest::Approx(0.42));
  CHECK(c.model.shapes_input_gaps == doctest::Approx(1.96));
  CHECK(c.model.python_frame_gaps == doctest::Approx(1.5));
  CHECK(c.model.memory_event_gaps == doctest::Approx(2.0));
  CHECK(c.model.runtime_call_gaps == doctest::Approx(1.0));  // none recorded: built in
  CHECK(c.model.fallback_op_gap_us == 0);

  // No measurable gap (whole microseconds): costs fitted in microseconds.
  // No frames and no memory events recorded: those stay built in, with a note.
  ab::Calibration legacy;
  legacy.settings = {setting("plain", 100, 0, 0, 0, 0, 250),
                     setting("shapes", 100, 300, 0, 0, 0, 630)};
  legacy.settings.push_back(setting("shapes_stack", 100, 300, 0, 0, 0, 900));
  legacy.settings[0].events.gaps_measured = 5;
  ab::fit_model(legacy);
  CHECK(legacy.model.fallback_op_gap_us == 1.0);
  CHECK(legacy.model.op_gaps == doctest::Approx(2.5));  // 250 us / 100 ops
  // shapes: built-in (0.21 * 100 + 0.98 * 300) * 1 = 315 us; 630: twice.
  CHECK(legacy.model.shapes_op_gaps == doctest::Approx(0.42));
  CHECK(legacy.model.python_frame_gaps == doctest::Approx(1.0));
  CHECK(legacy.notes.size() >= 2);
}

// A CPU trace of one step with a jarvis_host member: ProfilerStep#1 [0, 100)
// us on tid 1; a [10, 30) holding b [12, 20); c [50, 70) with two inputs.
std::string host_trace(const std::string& hostname) {
  return fmt::format(
      R"({{"jarvis_host": {{"hostname": "{}", "cpu_model": "Test CPU", "torch": "9.9"}},
 "traceEvents": [
  {{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 7, "tid": 1, "ts": 0, "dur": 100}},
  {{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 7, "tid": 1, "ts": 10, "dur": 20, "args": {{"Input Dims": []}}}},
  {{"ph": "X", "cat": "cpu_op", "name": "b", "pid": 7, "tid": 1, "ts": 12, "dur": 8, "args": {{"Input Dims": []}}}},
  {{"ph": "X", "cat": "cpu_op", "name": "c", "pid": 7, "tid": 1, "ts": 50, "dur": 20, "args": {{"Input Dims": [[2], [2]]}}}}
 ]}})",
      hostname);
}

TEST_CASE("ab: the host-only step of a CPU trace worked by hand") {
  Trace trace = load_trace_from_json(host_trace("elsewhere"));
  CallTree tree(trace);
  cp::ProfilerCostModel built_in;
  const auto step = ab::host_only_step(trace, tree, built_in);
  REQUIRE(step);
  // Fewer than 20 op gaps and shapes recorded: the default gap, 2.2 us. Per
  // op 0.21 gaps, per input 0.98 (docs/critical-path.md).
  const double gap = 2.2, per_op = 0.21 * gap, per_input = 0.98 * gap;
  const double in_step = 3 * per_op + 2 * per_input;
  CHECK(step->steps == 1);
  CHECK(step->recorded_step_us == doctest::Approx(100));
  CHECK(step->profiler_us_per_step == doctest::Approx(in_step));
  CHECK(step->estimated_unprofiled_step_us == doctest::Approx(100 - in_step));
  // Python between the top-level ops a and c: 100 - 40 us, less their records.
  CHECK(step->untraced_us_per_step == doctest::Approx(60 - (per_op + per_op + 2 * per_input)));
  // A fitted model with a fallback gap (no measurable gap): costs in microseconds.
  cp::ProfilerCostModel fitted;
  fitted.shapes_op_gaps = 1.0;
  fitted.shapes_input_gaps = 2.0;
  fitted.fallback_op_gap_us = 1.0;
  const auto again = ab::host_only_step(trace, tree, fitted);
  REQUIRE(again);
  CHECK(again->profiler_us_per_step == doctest::Approx(3 * 1.0 + 2 * 2.0));
  CHECK_FALSE(ab::has_gpu_work(trace));
  const auto events = ab::step_events(trace, tree);
  REQUIRE(events);
  CHECK(events->ops == 3);
  CHECK(events->inputs == 2);
}

TEST_CASE("calibration: a stored calibration applies to its host's traces only") {
  TempDir dir("config");
  const ScopedEnv config("JARVIS_CONFIG_DIR", dir.path.string());
  fs::create_directories(cp::calibration_dir());
  CHECK(cp::calibration_dir() == (dir.path / "calibration").string());
  ab::Calibration c;
  c.host = {"testhost", "Test CPU", "9.9"};
  c.date = "2026-11-29T00:00:00Z";
  c.model.op_gaps = 7.0;
  c.model.shapes_op_gaps = 0.5;
  const std::string file = ab::default_calibration_path(c.host);
  {
    std::ofstream out(file);
    out << ab::calibration_json(c).dump(1);
  }
  CHECK(fs::path(file).parent_path() == fs::path(cp::calibration_dir()));
  const auto stored = cp::read_calibration(file);
  CHECK(stored.host == c.host);
  CHECK(stored.model.op_gaps == 7.0);

  Trace mine = load_trace_from_json(host_trace("testhost"));
  const auto host = cp::trace_host(mine);
  REQUIRE(host);
  CHECK(host->cpu_model == "Test CPU");
  const auto model = cp::profiler_cost_model_for(mine);
  CHECK(model.shapes_op_gaps == 0.5);
  CHECK(model.source.find("this host's") != std::string::npos);
  CallTree tree(mine);
  const auto cost = cp::measure_profiler_cost(mine, tree);
  CHECK(cost.calibration == model.source);
  CHECK(cost.per_op_us == doctest::Approx(0.5 * cost.op_gap_us));

  Trace other = load_trace_from_json(host_trace("another"));
  CHECK(cp::profiler_cost_model_for(other).source == "built-in");
  CHECK(cp::profiler_cost_model_for(other).shapes_op_gaps == doctest::Approx(0.21));

  // JARVIS_CALIBRATION forces one file for every trace.
  {
    const ScopedEnv forced("JARVIS_CALIBRATION", file);
    CHECK(cp::profiler_cost_model_for(other).shapes_op_gaps == 0.5);
    CHECK(cp::profiler_cost_model_for(other).source.find("forced") != std::string::npos);
  }
  // Not a calibration: named in the error.
  const std::string bad = (dir.path / "bad.json").string();
  {
    std::ofstream out(bad);
    out << R"({"model": 3})";
  }
  CHECK_THROWS_WITH_AS(cp::read_calibration(bad), doctest::Contains("bad.json"),
                       cp::CalibrationError);
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
