// The insights of one trace on two threads (issue 75 point 1): analyse_trace
// runs the rules that do not read the step model while it is built, then the
// rest, and run_insights spreads the rules over two threads. On every Kineto
// trace of ../shared: (1) each rule analyse_trace runs before the model
// exists reports, one thread, the same findings in a context without the
// model as in one with it (the rule table's reads_step flags are right);
// (2) analyse_trace's context and findings equal make_context +
// run_insights' (the same step, the same findings, byte for byte as JSON),
// and so do make_context given the step model (the facts the rules read
// made beside the perf rows) and analyse_trace given it (an MCP worker's
// call: the rules start once the rows are made, beside those facts);
// (3) the plan, whose replays go two at a time, lists each change at the
// step the what-if of it on the changes listed above it gives, replayed
// here one at a time.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "golden.h"
#include "insight_rules.h"
#include "insights/insights.h"
#include "insights/rules_internal.h"
#include "perf/gpu_arch.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace in = jarvis::insights;
using jarvis::testing::insights_json;

TEST_CASE("rules run before the step model exists find the same without it") {
  const auto traces = jarvis::golden::shared_kineto_traces();
  if (traces.empty()) {
    MESSAGE("skipped: ../shared is missing");
    return;
  }
  static const auto arch = jarvis::perf::load_gpu_arch("H200");
  size_t with_model = 0, findings = 0;
  for (const std::string& path : traces) {
    CAPTURE(path);
    const jarvis::Trace t = jarvis::load_trace(path);
    const jarvis::CallTree tree(t);
    const in::InsightContext full = in::make_context(t, tree, &arch);
    const in::StepModelRef none;
    const in::InsightContext bare = in::make_context(t, tree, &arch, nullptr, &none);
    REQUIRE_FALSE(bare.step);
    if (!full.step) continue;
    ++with_model;
    const auto with = in::run_rules_for_test(full, /*without_step_only=*/true);
    const auto without = in::run_rules_for_test(bare, /*without_step_only=*/true);
    CHECK(insights_json(with).dump(1) == insights_json(without).dump(1));
    findings += with.size();
  }
  CHECK(with_model >= 20);
  CHECK(findings > 50);
}

TEST_CASE(
    "analyse_trace, and make_context given the step model, give make_context + run_insights' "
    "context and findings") {
  const auto traces = jarvis::golden::shared_kineto_traces();
  if (traces.empty()) {
    MESSAGE("skipped: ../shared is missing");
    return;
  }
  static const auto arch = jarvis::perf::load_gpu_arch("H200");
  size_t compared = 0;
  for (const std::string& path : traces) {
    CAPTURE(path);
    const jarvis::Trace t = jarvis::load_trace(path);
    const jarvis::CallTree tree(t);
    const in::InsightContext context = in::make_context(t, tree, &arch);
    const std::vector<in::Insight> expected = in::run_insights(context);
    for (const in::Insight& i : expected) {
      // What is left of a row after the claims is never below 0, nor is a
      // claim (s_attn_A's autocast_dtype once read -1.4e-14 us).
      CAPTURE(i.rule);
      if (i.recoverable_us) CHECK(*i.recoverable_us >= 0);
      // and a finding left nothing recovers 0, not float residue
      if (i.recoverable_us && *i.recoverable_us > 0) CHECK(*i.recoverable_us > 1e-9);
      if (i.recoverable_low_us) CHECK(*i.recoverable_low_us >= 0);
    }
    // Two findings whose what-ifs shorten a kernel in common (kernel_uids at
    // a factor below 1) name each other's rules: their savings do not add.
    const auto shortened = [](const in::Insight& i) {
      std::set<jarvis::Uid> out;
      if (i.what_if.is_object() && i.what_if.contains("kernel_uids") &&
          i.what_if.value("factor", 1.0) < 1.0)
        for (const auto& u : i.what_if["kernel_uids"]) out.insert(u.get<jarvis::Uid>());
      return out;
    };
    std::vector<std::set<jarvis::Uid>> kernels;
    for (const in::Insight& i : expected) kernels.push_back(shortened(i));
    for (size_t a = 0; a < expected.size(); ++a)
      for (size_t b = 0; b < expected.size(); ++b) {
        if (expected[a].rule == expected[b].rule) continue;
        const auto &ka = kernels[a], &kb = kernels[b];
        const bool meet = std::any_of(ka.begin(), ka.end(), [&](auto u) { return kb.count(u); });
        if (!meet) continue;
        CAPTURE(expected[a].rule);
        CAPTURE(expected[b].rule);
        const auto& named = expected[a].shares_time_with;
        CHECK(std::find(named.begin(), named.end(), expected[b].rule) != named.end());
      }
    const in::TraceInsights got = in::analyse_trace(t, tree, &arch);
    CHECK(insights_json(got.found).dump(1) == insights_json(expected).dump(1));
    CHECK(got.context.rows.size() == context.rows.size());
    CHECK(got.context.total_kernel_time_us == context.total_kernel_time_us);
    REQUIRE(bool(got.context.step) == bool(context.step));
    if (context.step) {
      CHECK(got.context.step->measured.step_time_us == context.step->measured.step_time_us);
      CHECK(got.context.step->graph.nodes.size() == context.step->graph.nodes.size());
    }
    // The plan reads the context as well: the same text from either.
    CHECK(in::plan_text(in::plan_changes(got.context, got.found), got.found) ==
          in::plan_text(in::plan_changes(context, expected), expected));
    if (context.step) {
      const in::StepModelRef given{context.step};
      const in::InsightContext from_model = in::make_context(t, tree, &arch, nullptr, &given);
      CHECK(from_model.facts);  // made beside the rows, before any rule asked
      const std::vector<in::Insight> found = in::run_insights(from_model);
      CHECK(insights_json(found).dump(1) == insights_json(expected).dump(1));
      CHECK(in::plan_text(in::plan_changes(from_model, found), found) ==
            in::plan_text(in::plan_changes(context, expected), expected));
      // analyse_trace given the model (the MCP worker's call: the rules
      // start once the rows are made, beside the facts): the same again.
      const in::TraceInsights given_model = in::analyse_trace(t, tree, &arch, nullptr, given);
      CHECK(given_model.context.step == context.step);
      CHECK(given_model.context.rows.size() == context.rows.size());
      CHECK(given_model.context.total_kernel_time_us == context.total_kernel_time_us);
      CHECK(bool(given_model.context.timeline) == bool(context.timeline));
      CHECK(insights_json(given_model.found).dump(1) == insights_json(expected).dump(1));
      CHECK(in::plan_text(in::plan_changes(given_model.context, given_model.found),
                          given_model.found) ==
            in::plan_text(in::plan_changes(context, expected), expected));
    }
    // Without a model to give (`model` null): make_context + run_insights.
    const in::StepModelRef none;
    const in::TraceInsights no_model = in::analyse_trace(t, tree, &arch, nullptr, none);
    CHECK_FALSE(no_model.context.step);
    const in::InsightContext bare = in::make_context(t, tree, &arch, nullptr, &none);
    CHECK(insights_json(no_model.found).dump(1) == insights_json(in::run_insights(bare)).dump(1));
    ++compared;
  }
  CHECK(compared == traces.size());
}

TEST_CASE("the plan's changes, each replayed on the ones listed above it") {
  const auto traces = jarvis::golden::shared_kineto_traces();
  if (traces.empty()) {
    MESSAGE("skipped: ../shared is missing");
    return;
  }
  static const auto arch = jarvis::perf::load_gpu_arch("H200");
  size_t listed = 0, plans = 0;
  for (const std::string& path : traces) {
    CAPTURE(path);
    const jarvis::Trace t = jarvis::load_trace(path);
    const jarvis::CallTree tree(t);
    const in::TraceInsights got = in::analyse_trace(t, tree, &arch);
    const in::ChangePlan plan = in::plan_changes(got.context, got.found);
    if (plan.steps.empty()) continue;
    ++plans;
    jarvis::critical_path::Scenario joint;
    double before = plan.step_before_us;
    for (const in::PlanStep& step : plan.steps) {
      CAPTURE(got.found[step.finding].rule);
      in::detail::add_what_if_args(got.context, got.found[step.finding].what_if, joint);
      const auto r = in::detail::step_time_what_if(got.context, joint);
      CHECK(r.measured_step_time_us == plan.step_before_us);
      CHECK(step.step_after_us == std::min(before, r.predicted_step_time_us));
      CHECK(step.saving_us == before - step.step_after_us);
      before = step.step_after_us;
      ++listed;
    }
  }
  CHECK(plans >= 10);
  CHECK(listed > plans);  // some plans list more than one change
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
