// One step model per trace (issue 75 points 1 and 2): the health block and
// the insights read the step model a caller keeps (the MCP server builds it
// once per loaded trace, before forking the workers of later calls), and
// give exactly what they give when each builds its own. Run on real traces
// of ../shared: a host-bound one with syncs, a GPU-bound one, a data-loader one.
#include <doctest/doctest.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "golden.h"
#include "insight_rules.h"
#include "insights/insights.h"
#include "insights/trace_health.h"
#include "perf/gpu_arch.h"
#include "report/perf_tables.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace ins = jarvis::insights;
using jarvis::testing::insights_json;

// Calls visit(trace, tree, H200) on three real traces of ../shared (a
// host-bound one with syncs, a GPU-bound one, a data-loader one); says so
// when none is there.
void for_each_real_trace(const std::function<void(const jarvis::Trace&, const jarvis::CallTree&,
                                                  const jarvis::GpuArch&)>& visit) {
  size_t checked = 0;
  for (const char* file :
       {"ab_pairs/s_mask_sync_A_boolean_index.json.gz", "ab_pairs/s_tf32_B_tf32.json.gz",
        "ab_pairs/s_loader_A_workers0.json.gz"}) {
    CAPTURE(file);
    const std::string path = jarvis::golden::shared_dir() + "/" + file;
    if (!std::filesystem::exists(path)) continue;
    ++checked;
    const jarvis::Trace trace = jarvis::load_trace(path);
    const jarvis::CallTree tree(trace);
    visit(trace, tree, jarvis::perf::load_gpu_arch("H200"));
  }
  if (checked == 0) MESSAGE("skipped: ../shared/ab_pairs is missing");
}

TEST_CASE("a kept step model gives the same health and insights as a fresh one") {
  for_each_real_trace(
      [](const jarvis::Trace& trace, const jarvis::CallTree& tree, const jarvis::GpuArch& arch) {
        const ins::StepModelRef kept{ins::build_step_model(trace, tree)};
        REQUIRE(kept.model);
        // The kept model is the trace's graph: its iterations are the analyses'.
        CHECK(kept.model->measured.iterations.size() == kept.model->graph.iterations.size());
        REQUIRE(kept.model->graph.attached_base);
        CHECK(kept.model->graph.attached_base->step_time_us == kept.model->measured.step_time_us);

        const auto fresh_health = ins::to_json(ins::trace_health(trace, tree));
        const auto kept_health = ins::to_json(ins::trace_health(trace, tree, nullptr, &kept));
        CHECK(kept_health.dump() == fresh_health.dump());
        CHECK(kept_health["estimated_unprofiled_step_us"] == kept.model->measured.step_time_us);

        const auto fresh = insights_json(ins::run_insights(ins::make_context(trace, tree, &arch)));
        const auto reused =
            insights_json(ins::run_insights(ins::make_context(trace, tree, &arch, nullptr, &kept)));
        CHECK(reused.dump() == fresh.dump());
        // And again from the same model: what-ifs never change the model they start from.
        const auto again =
            insights_json(ins::run_insights(ins::make_context(trace, tree, &arch, nullptr, &kept)));
        CHECK(again.dump() == fresh.dump());
      });
}

TEST_CASE("a loaded trace's head start (perf rows, facts of the trace) gives the same insights") {
  // What MCP load_trace keeps beside the step model for the session's later
  // insights (issue 75): the perf rows of the trace's arch and the facts of
  // the trace alone. The analysis reads them in place (the very rows, not a
  // copy) and finds what the CLI's analysis finds building its own, and
  // reading them leaves them as they were: a second analysis from them
  // finds the same again.
  for_each_real_trace(
      [](const jarvis::Trace& trace, const jarvis::CallTree& tree, const jarvis::GpuArch& arch) {
        const auto fresh = insights_json(ins::analyse_trace(trace, tree, &arch).found);

        const ins::StepModelRef kept{ins::build_step_model(trace, tree)};
        const ins::TraceHeadStart made{std::make_shared<const ins::ContextRows::Rows>(
                                           jarvis::report::unified_perf_rows(trace, tree, &arch)),
                                       ins::make_shared_trace_facts(trace, tree)};
        REQUIRE(made.facts.facts);
        auto first = ins::analyse_trace(trace, tree, &arch, nullptr, kept, made);
        CHECK(first.context.rows.shared() == made.rows);
        CHECK(insights_json(first.found).dump() == fresh.dump());
        auto second = ins::analyse_trace(trace, tree, &arch, nullptr, kept, made);
        CHECK(insights_json(second.found).dump() == fresh.dump());
        // The same through make_context and run_insights with the rows given.
        const auto through_context = insights_json(
            ins::run_insights(ins::make_context(trace, tree, &arch, nullptr, &kept, made.rows)));
        CHECK(through_context.dump() == fresh.dump());
      });
}

TEST_CASE("a kept step model of none: no step estimate, no step savings") {
  // A kept model of none (what build_step_model gives a trace without a
  // dependency graph) is taken as it is: nothing is rebuilt, and neither the
  // health nor the insights give step figures.
  const std::string path = jarvis::golden::shared_dir() + "/ab_pairs/s_tf32_A_fp32.json.gz";
  if (!std::filesystem::exists(path)) return;
  const jarvis::Trace trace = jarvis::load_trace(path);
  const jarvis::CallTree tree(trace);
  const ins::StepModelRef none{nullptr};
  const auto health = ins::trace_health(trace, tree, nullptr, &none);
  CHECK_FALSE(health.estimated_unprofiled_step_us);
  CHECK_FALSE(health.recorded_step_us);
  const auto context = ins::make_context(trace, tree, nullptr, nullptr, &none);
  CHECK_FALSE(context.step);
  for (const auto& i : ins::run_insights(context)) CHECK_FALSE(i.step_saving_us);
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
