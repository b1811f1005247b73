// The HTML report's verdict (report_verdict) builds one step model: the
// findings' context holds it and the health block reads the same one (the
// health built a second of its own before: x256 `report --html` peaked at
// 1.01 GB, 2.3x the report's; 0.84 GB now). Given a step model (an MCP
// session's trace, render_report), it builds none. On the Kineto traces of
// ../shared, the verdict equals what trace_health and make_context +
// run_insights give on their own, built apart in the test. `prepare`'s
// insights.json (findings and health) likewise, given the model or not.
#include <doctest/doctest.h>

#include <string>

#include "categories/prepare_trace.h"
#include "charts/report_page.h"
#include "golden.h"
#include "insight_rules.h"
#include "insights/insights.h"
#include "insights/trace_health.h"
#include "perf/gpu_arch.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

namespace {
namespace JARVIS_TEST_FILE {

namespace in = jarvis::insights;
using jarvis::testing::insights_json;

TEST_CASE("report_verdict: the findings and the health from one step model") {
  const auto traces = jarvis::golden::shared_kineto_traces();
  if (traces.empty()) {
    MESSAGE("skipped: ../shared is missing");
    return;
  }
  static const auto arch = jarvis::perf::load_gpu_arch("H100");
  size_t with_model = 0, compared = 0;
  for (size_t k = 0; k < traces.size(); k += 3) {  // every third trace: a spread of kinds
    const std::string& path = traces[k];
    CAPTURE(path);
    const jarvis::Trace t = jarvis::load_trace(path);
    const jarvis::CallTree tree(t);
    const jarvis::charts::ReportVerdict v = jarvis::charts::report_verdict(t, tree, &arch);
    // Apart: the health with its own step model, the findings with theirs.
    const in::TraceHealth health = in::trace_health(t, tree);
    CHECK(in::to_json(v.health).dump() == in::to_json(health).dump());
    const in::InsightContext context = in::make_context(t, tree, &arch);
    CHECK(insights_json(v.findings).dump() == insights_json(in::run_insights(context)).dump());
    CHECK(v.total_kernel_time_us == context.total_kernel_time_us);
    REQUIRE(bool(v.step) == bool(context.step));
    ++compared;
    if (!v.step) continue;
    ++with_model;
    // Given the model: that one, not another, and the same verdict.
    const in::StepModelRef given{v.step};
    const jarvis::charts::ReportVerdict again =
        jarvis::charts::report_verdict(t, tree, &arch, &given);
    CHECK(again.step.get() == v.step.get());
    CHECK(in::to_json(again.health).dump() == in::to_json(v.health).dump());
    CHECK(insights_json(again.findings).dump() == insights_json(v.findings).dump());
  }
  CHECK(compared * 3 >= traces.size());
  CHECK(with_model >= 5);
}

TEST_CASE("prepare's insights.json: one step model, the same document given the session's") {
  const auto traces = jarvis::golden::shared_kineto_traces();
  if (traces.empty()) {
    MESSAGE("skipped: ../shared is missing");
    return;
  }
  jarvis::analysis::TracePrepareOptions o;
  o.platform = "H100";
  o.tree_data = false;
  size_t with_model = 0;
  for (size_t k = 1; k < traces.size() && with_model < 3; k += 4) {
    const std::string& path = traces[k];
    CAPTURE(path);
    const jarvis::Trace t = jarvis::load_trace(path);
    const jarvis::CallTree tree(t);
    const auto model = in::build_step_model(t, tree);
    if (!model) continue;
    ++with_model;
    const in::StepModelRef given{model};
    const auto built = jarvis::analysis::prepared_trace_data(t, tree, nullptr, {}, o);
    const auto from_given =
        jarvis::analysis::prepared_trace_data(t, tree, nullptr, {}, o, nullptr, &given);
    CHECK(built.insights_json == from_given.insights_json);
    const auto doc = nlohmann::json::parse(built.insights_json);
    CHECK(doc["trace_health"].dump() == in::to_json(in::trace_health(t, tree)).dump());
  }
  CHECK(with_model == 3);
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
