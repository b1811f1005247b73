// GPU idle time split by cause (insights/idle_breakdown): a constructed
// timeline worked by hand, and a real decode trace recomputed in the test
// from the raw events (launches found by correlation id, not by the tree).
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

#include "golden.h"
#include "insights/idle_breakdown.h"
#include "insights/insights.h"
#include "raw_timeline.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using namespace jarvis;

using jarvis::testing::launched_kernel;

TEST_CASE("idle breakdown: a hand-worked timeline") {
  // k1 [0,10); k2 issued at 30, runs [32,40): gap 22 = host wait 20 + latency 2.
  // k3 issued at 20 (before k2 ended), runs [45,50): gap 5 = latency 5.
  // k4 issued at 41, runs [100,110): gap 50, issued before k3 ended: other 50.
  // k5 issued at 200, runs [205,206): gap 95 = host wait 90 + latency 5.
  std::string ev = launched_kernel(1, -5, 0, 10) + "," + launched_kernel(2, 30, 32, 8) + "," +
                   launched_kernel(3, 20, 45, 5) + "," + launched_kernel(4, 41, 100, 10) + "," +
                   launched_kernel(5, 200, 205, 1);
  Trace trace = load_trace_from_json(R"({"traceEvents":[)" + ev + "]}");
  CallTree tree(trace);
  auto idle = insights::idle_breakdown(trace, tree, 20.0);
  CHECK(idle.total.gaps == 4);
  CHECK(idle.total.host_wait_us == doctest::Approx(110));
  CHECK(idle.total.launch_latency_us == doctest::Approx(12));
  CHECK(idle.total.other_us == doctest::Approx(50));
  REQUIRE(idle.streams.size() == 1);
  CHECK(idle.streams[0].stream == 7);
  CHECK(idle.streams[0].ops == 5);
  CHECK(idle.streams[0].busy_us == doctest::Approx(34));
  CHECK(idle.streams[0].span_us == doctest::Approx(206));
  // Busy + idle covers the span on a single stream without overlap.
  CHECK(idle.streams[0].busy_us + idle.total.total_us() == doctest::Approx(206));
}

TEST_CASE("idle breakdown: a real trace (Qwen 0.5B on H100), recomputed from correlation ids") {
  Trace trace = load_trace(golden::shared_dir() + "/conformance/h100_qwen1.5-0.5b/trace.json.gz");
  CallTree tree(trace);
  auto idle = insights::idle_breakdown(trace, tree);

  // Independent: launches by (correlation) among runtime events, GPU ops by stream.
  std::unordered_map<int64_t, double> issue_by_corr;
  for (const Event& e : trace.events)
    if (e.is_runtime() && trace.correlation(e) != kNoInt)
      issue_by_corr[trace.correlation(e)] = e.ts();
  std::map<std::pair<int64_t, int64_t>, std::vector<const Event*>> streams;
  for (const Event& e : trace.events)
    if (e.is_gpu() && e.has_dur()) streams[{trace.device(e), trace.stream(e)}].push_back(&e);
  double host = 0, latency = 0, other = 0;
  size_t gaps = 0;
  for (auto& [key, ops] : streams) {
    std::stable_sort(ops.begin(), ops.end(), [](auto* a, auto* b) { return a->ts() < b->ts(); });
    double end = ops[0]->ts() + ops[0]->dur();
    for (size_t k = 1; k < ops.size(); ++k) {
      const Event& e = *ops[k];
      if (e.ts() > end) {
        double gap = e.ts() - end, h = 0;
        auto it = issue_by_corr.find(trace.correlation(e));
        if (it != issue_by_corr.end()) h = std::clamp(it->second - end, 0.0, gap);
        ++gaps;
        host += h;
        (gap - h <= insights::kDefaultLaunchLatencyUs ? latency : other) += gap - h;
      }
      end = std::max(end, e.ts() + e.dur());
    }
  }
  CHECK(gaps > 100);
  CHECK(idle.total.gaps == gaps);
  CHECK(idle.total.host_wait_us == doctest::Approx(host).epsilon(1e-9));
  CHECK(idle.total.launch_latency_us == doctest::Approx(latency).epsilon(1e-9));
  CHECK(idle.total.other_us == doctest::Approx(other).epsilon(1e-9));
  MESSAGE(fmt::format("qwen h100: {} gaps, host wait {:.1f} us, latency {:.1f} us, other {:.1f} us",
                      gaps, host, latency, other));
}

TEST_CASE("idle breakdown: the launch-bound insight carries it") {
  // 40 short kernels, each issued 30 us after the previous one ended.
  std::string ev;
  for (int k = 0; k < 40; ++k) {
    double start = k * 40.0;
    if (k) ev += ",";
    ev += launched_kernel(k + 1, start - 2, start, 5);
  }
  Trace trace = load_trace_from_json(R"({"traceEvents":[)" + ev + "]}");
  CallTree tree(trace);
  auto context = insights::make_context(trace, tree, nullptr);
  auto found = insights::run_insights(context);
  auto it = std::find_if(found.begin(), found.end(),
                         [](const insights::Insight& i) { return i.rule == "launch_bound"; });
  REQUIRE(it != found.end());
  const auto& idle = it->evidence["idle_breakdown"];
  // 39 gaps of 35 us: the next launch comes 33 us after the previous kernel ended.
  CHECK(idle["gaps"] == 39);
  CHECK(idle["host_wait_us"].get<double>() == doctest::Approx(39 * 33.0));
  CHECK(idle["launch_latency_us"].get<double>() == doctest::Approx(39 * 2.0));
  CHECK(idle["other_us"].get<double>() == doctest::Approx(0));
  CHECK(it->detail.find("94% is the GPU waiting for the host") != std::string::npos);
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
