// The insights of one trace on two threads (issue 75 point 1): analyse_trace
// runs the rules that do not read the step model while it is built, then the
// rest, and run_insights spreads the rules over two threads. On every Kineto
// trace of ../shared: (1) each rule analyse_trace runs before the model
// exists reports, one thread, the same findings in a context without the
// model as in one with it (the rule table's reads_step flags are right);
// (2) analyse_trace's context and findings equal make_context +
// run_insights' (the same step, the same findings, byte for byte as JSON).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "golden.h"
#include "insights/insights.h"
#include "perf/gpu_arch.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace in = jarvis::insights;

std::string dump_all(const std::vector<in::Insight>& found) {
  nlohmann::json all = nlohmann::json::array();
  for (const auto& i : found) all.push_back(in::to_json(i));
  return all.dump(1);
}

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
    CHECK(dump_all(with) == dump_all(without));
    findings += with.size();
  }
  CHECK(with_model >= 20);
  CHECK(findings > 50);
}

TEST_CASE("analyse_trace gives make_context + run_insights' context and findings") {
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
    const in::TraceInsights got = in::analyse_trace(t, tree, &arch);
    CHECK(dump_all(got.found) == dump_all(expected));
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
    ++compared;
  }
  CHECK(compared == traces.size());
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
