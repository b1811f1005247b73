// The first answer's plan (the blind run of ../shared/evals/blind-run: an
// agent added up findings that share time, and a GPU fix sized on a step the
// top change turns host-bound): the top changes made one after the other,
// each sized once. On the arms of ../shared/ab_pairs: the plan's steps never
// grow, its first change saves what that finding's own what-if saves, and
// where the re-run made the plan's first change, the step after it is within
// 20 % of arm B's step timed without the profiler (truth.json); a sync's
// removal comes before a CUDA graph of the step, which cannot capture it. And the
// joint what-if it stands on (Scenario::also_scale): a selection scales the
// durations as before any other, an op two selections take keeps the
// shorter result.
#include <doctest/doctest.h>

#include <algorithm>
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
#include "insights/insights.h"
#include "perf/gpu_arch.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace cp = jarvis::critical_path;
namespace in = jarvis::insights;
namespace fs = std::filesystem;
using nlohmann::json;

std::string ab_dir() {
  return jarvis::golden::shared_dir() + "/ab_pairs";
}

// The finding the change of arm B stands for (read from truth.json's
// `changed` by a person, not by the tool).
const std::map<std::string, std::string>& cause_of_pair() {
  static const std::map<std::string, std::string> causes = {
      {"s_loader", "dataloader_main_process"}, {"s_attn", "unfused_attention"},
      {"s_layout", "conv_layout_transposes"},  {"s_tf32", "fp32_gemm_simt"},
      {"s_vocab", "gemm_unaligned_dims"},      {"s_mask_sync", "host_sync"}};
  return causes;
}

TEST_CASE("change plan: each change once, its steps never grow, the re-run's step after it") {
  const fs::path truth_path = fs::path(ab_dir()) / "truth.json";
  if (!fs::exists(truth_path)) {
    MESSAGE("skipped: ../shared/ab_pairs is missing");
    return;
  }
  const json truth = json::parse(std::ifstream(truth_path));
  static const auto arch = jarvis::perf::load_gpu_arch("H200");
  size_t checked_against_rerun = 0;
  for (const auto& [pair, arms] : truth.items()) {
    if (!arms.is_object()) continue;
    for (const auto& [arm, rec] : arms.items()) {
      if (!rec.is_object() || !rec.contains("trace") || arm.rfind("A_", 0) != 0) continue;
      const std::string path = ab_dir() + "/" + rec["trace"].get<std::string>();
      if (!path.ends_with(".json.gz") || !fs::exists(path)) continue;
      CAPTURE(path);
      const jarvis::Trace t = jarvis::load_trace(path);
      const jarvis::CallTree tree(t);
      const auto context = in::make_context(t, tree, &arch);
      REQUIRE(context.step);
      const auto found = in::run_insights(context);
      const in::ChangePlan plan = in::plan_changes(context, found);
      REQUIRE_FALSE(plan.steps.empty());
      CHECK(plan.step_before_us == doctest::Approx(context.step->measured.step_time_us));
      double before = plan.step_before_us, saved = 0;
      for (const in::PlanStep& s : plan.steps) {
        CHECK(s.step_after_us <= before);
        CHECK(s.saving_us == doctest::Approx(before - s.step_after_us));
        saved += s.saving_us;
        before = s.step_after_us;
      }
      CHECK(saved == doctest::Approx(plan.step_before_us - plan.steps.back().step_after_us));
      // A CUDA graph cannot capture a step that syncs: a sync finding in the
      // plan comes before the graph's.
      size_t graph_at = plan.steps.size(), syncs_at = plan.steps.size();
      for (size_t k = 0; k < plan.steps.size(); ++k) {
        const auto& i = found[plan.steps[k].finding];
        if (i.what_if.value("remove_launch_gaps", false)) graph_at = std::min(graph_at, k);
        if (i.rule == "host_sync") syncs_at = std::min(syncs_at, k);
      }
      if (graph_at < plan.steps.size() && syncs_at < plan.steps.size()) CHECK(syncs_at < graph_at);
      // A change that adds nothing is listed only when it saved 10 us or more
      // a step alone (it does not pay after those above).
      size_t pays = 0, adds_nothing = 0;
      for (const in::PlanStep& s : plan.steps) {
        if (s.saving_us < 10) CHECK(s.alone_saving_us >= 10);
        (s.saving_us < 10 ? adds_nothing : pays) += 1;
      }
      // The text numbers the changes that pay; those that add nothing share
      // one line after them.
      const std::string text = in::plan_text(plan, found);
      if (pays > 0) CHECK(text.find(fmt::format("  {}. ", pays)) != std::string::npos);
      CHECK(text.find(fmt::format("  {}. ", pays + 1)) == std::string::npos);
      const size_t nothing_line = text.find("adds nothing once those above are made: ");
      CHECK((nothing_line != std::string::npos) == (adds_nothing > 0));
      if (nothing_line != std::string::npos)
        CHECK(text.find("adds nothing", nothing_line + 1) == std::string::npos);
      // The first change alone is the finding's own what-if.
      const in::PlanStep& first = plan.steps.front();
      CHECK(first.saving_us == doctest::Approx(first.alone_saving_us).epsilon(1e-3));
      // Against the re-run: the step once the change B made is made.
      const auto cause = cause_of_pair().find(pair);
      if (cause == cause_of_pair().end()) continue;
      REQUIRE(found[first.finding].rule == cause->second);
      double b_clean = 0;
      for (const auto& [other, orec] : arms.items())
        if (other.rfind("B_", 0) == 0) b_clean = orec["step_ms_clean"].get<double>() * 1e3;
      REQUIRE(b_clean > 0);
      CAPTURE(b_clean);
      CHECK(first.step_after_us == doctest::Approx(b_clean).epsilon(0.20));
      ++checked_against_rerun;
    }
  }
  CHECK(checked_against_rerun == cause_of_pair().size());
}

TEST_CASE("joint what-if: each selection scales the durations before any, the stronger one wins") {
  const std::string path = ab_dir() + "/s_tf32_A_fp32.json.gz";
  if (!fs::exists(path)) {
    MESSAGE("skipped: ../shared/ab_pairs is missing");
    return;
  }
  const jarvis::Trace t = jarvis::load_trace(path);
  const jarvis::CallTree tree(t);
  const cp::Graph g = cp::build_graph({{&t, &tree, -1}});
  const cp::WhatIfBase base = cp::what_if_base(g);
  // Two disjoint sets of GPU events from the trace: the kernels of the first
  // and of the second half, by start.
  std::vector<std::pair<double, jarvis::Uid>> kernels;
  for (jarvis::Uid u = 0; u < t.events.size(); ++u)
    if (t.events[u].is_gpu() && t.events[u].has_dur() && t.events[u].dur() > 0)
      kernels.emplace_back(t.events[u].ts(), u);
  std::sort(kernels.begin(), kernels.end());
  REQUIRE(kernels.size() > 10);
  std::vector<jarvis::Uid> first, second, all;
  for (size_t k = 0; k < kernels.size(); ++k)
    (k < kernels.size() / 2 ? first : second).push_back(kernels[k].second);
  for (const auto& k : kernels) all.push_back(k.second);
  std::sort(first.begin(), first.end());
  std::sort(second.begin(), second.end());
  std::sort(all.begin(), all.end());
  auto selecting = [](const std::vector<jarvis::Uid>& uids) {
    cp::Selector s;
    s.gpu_uids = uids;
    return s;
  };
  auto predicted = [&](const cp::Scenario& sc) {
    return cp::what_if_step(g, sc, base).predicted_step_time_us;
  };
  cp::Scenario alone;
  alone.select = selecting(first);
  alone.factor = 0.2;
  cp::Scenario as_also;
  as_also.also_scale = {{selecting(first), 0.2}};
  CHECK(predicted(as_also) == doctest::Approx(predicted(alone)));
  // The same events at 0.5 and 0.2: the shorter, not both (0.1).
  cp::Scenario twice;
  twice.also_scale = {{selecting(first), 0.5}, {selecting(first), 0.2}};
  CHECK(predicted(twice) == doctest::Approx(predicted(alone)));
  cp::Scenario with_select = alone;
  with_select.also_scale = {{selecting(first), 0.5}};
  CHECK(predicted(with_select) == doctest::Approx(predicted(alone)));
  // Disjoint events at one factor: one selection of both.
  cp::Scenario both;
  both.select = selecting(all);
  both.factor = 0.5;
  cp::Scenario halves;
  halves.also_scale = {{selecting(first), 0.5}, {selecting(second), 0.5}};
  CHECK(predicted(halves) == doctest::Approx(predicted(both)));
  CHECK(predicted(halves) < base.step_time_us);
}

TEST_CASE(
    "change plan: a fused optimizer saves its kernels' traffic, not the idle it also closes") {
  // s_adam A: the foreach AdamW's kernels (multi_tensor_apply) and the GPU
  // idle its launches open. Its what-if scales the kernels only; the idle was
  // once folded into their factor, which took them to 1e-6 of their time.
  const std::string path = ab_dir() + "/s_adam_A_foreach.json.gz";
  if (!fs::exists(path)) {
    MESSAGE("skipped: ../shared/ab_pairs is missing");
    return;
  }
  const jarvis::Trace t = jarvis::load_trace(path);
  size_t steps = 0;
  double kernels_us = 0;
  for (jarvis::Uid u = 0; u < t.events.size(); ++u) {
    const auto& e = t.events[u];
    if (e.cat == jarvis::Cat::UserAnnotation && t.name(u).starts_with("ProfilerStep#")) ++steps;
    if (e.is_gpu() && e.has_dur() && t.name(u).find("multi_tensor_apply") != std::string::npos)
      kernels_us += e.dur();
  }
  REQUIRE(steps == 3);
  REQUIRE(kernels_us > 0);
  const jarvis::CallTree tree(t);
  static const auto arch = jarvis::perf::load_gpu_arch("H200");
  const auto context = in::make_context(t, tree, &arch);
  const auto found = in::run_insights(context);
  const auto plan = in::plan_changes(context, found);
  bool planned = false;
  for (const auto& i : found) {
    if (i.rule != "foreach_optimizer") continue;
    REQUIRE(i.what_if.is_object());
    const double ratio = i.evidence["fused_traffic_ratio"].get<double>();
    CHECK(i.what_if["factor"].get<double>() >= ratio - 1e-9);
  }
  for (const auto& s : plan.steps)
    if (found[s.finding].rule == "foreach_optimizer") {
      planned = true;
      // At most the traffic a fused step saves of the kernels, per step.
      const double ratio = found[s.finding].evidence["fused_traffic_ratio"].get<double>();
      CHECK(s.saving_us <= (1 - ratio) * kernels_us / static_cast<double>(steps) + 1.0);
    }
  CHECK(planned);
}

TEST_CASE("change plan: a top finding no what-if replays is named beside the plan (s_jax A)") {
  // The JAX step run op by op is sized as a jit of the whole step, which no
  // what-if replays: the plan cannot join it, and must not leave the
  // largest saving of the trace out of the answer.
  const std::string path = ab_dir() + "/s_jax_A_op_by_op.xplane.pb";
  if (!fs::exists(path)) {
    MESSAGE("skipped: ../shared/ab_pairs is missing");
    return;
  }
  const jarvis::Trace t = jarvis::load_any_trace(path);
  const jarvis::CallTree tree(t);
  static const auto arch = jarvis::perf::load_gpu_arch("H200");
  const auto context = in::make_context(t, tree, &arch);
  REQUIRE(context.step);
  const auto found = in::run_insights(context);
  const auto plan = in::plan_changes(context, found);
  REQUIRE(plan.not_replayed.size() == 1);
  const auto& op_by_op = found[plan.not_replayed[0].finding];
  CHECK(op_by_op.what_if.is_null());
  REQUIRE(op_by_op.step_saving_us);
  const double steps = static_cast<double>(context.step->measured.iterations.size());
  CHECK(plan.not_replayed[0].alone_saving_us == doctest::Approx(*op_by_op.step_saving_us / steps));
  for (const auto& s : plan.steps) CHECK(s.finding != plan.not_replayed[0].finding);
  const std::string text = in::plan_text(plan, found);
  CHECK(text.find("not joined") != std::string::npos);
  CHECK(text.find(op_by_op.rule) != std::string::npos);
}

TEST_CASE("changes in order: decode steps say so, with the generate() call that holds them") {
  const std::string path = ab_dir() + "/s_generate_A_gpt2.json.gz";
  if (!fs::exists(path)) {
    MESSAGE("skipped: ../shared/ab_pairs is missing");
    return;
  }
  const jarvis::Trace t = jarvis::load_trace(path);
  const jarvis::CallTree tree(t);
  static const auto arch = jarvis::perf::load_gpu_arch("H200");
  const auto context = in::make_context(t, tree, &arch);
  REQUIRE(context.step);
  const auto& measured = context.step->measured;
  REQUIRE(measured.iterations_source == jarvis::critical_path::kFromDecodeStepsInProfilerStep);
  REQUIRE_FALSE(measured.profiler_steps.empty());
  // Each ProfilerStep's decode steps, counted from the analysis's own lists.
  size_t inside = 0;
  for (const auto& call : measured.profiler_steps) inside += call.iterations;
  CHECK(inside == measured.iterations.size());
  const auto found = in::run_insights(context);
  const std::string text = in::plan_text(in::plan_changes(context, found), found);
  const std::string first = text.substr(0, text.find('\n'));
  CHECK(first.find(fmt::format("un-profiled decode step {:.2f} ms", measured.step_time_us / 1e3)) !=
        std::string::npos);
  CHECK(first.find(fmt::format("holds {} of them", inside / measured.profiler_steps.size())) !=
        std::string::npos);
  CHECK(first.find(fmt::format("{:.2f} ms un-profiled", measured.profiler_step_us / 1e3)) !=
        std::string::npos);
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
