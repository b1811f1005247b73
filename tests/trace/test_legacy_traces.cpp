// Older Kineto schemas (issue: traces that TraceLens answers with "No GPU
// events found"): launches linked by `async_cpu_to_gpu` flows with
// capitalised categories, and launches with no flows at all (correlation
// only). Expectations are computed here from the raw events.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include "golden.h"
#include "report/gpu_timeline.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using doctest::Approx;
using jarvis::Cat;
using jarvis::kNoInt;

TEST_CASE("legacy: a trace without launch flows links kernels by correlation (HTA rank 1)") {
  auto trace =
      jarvis::load_trace(jarvis::golden::shared_dir() + "/legacy/hta_noflow_rank1/trace.json.gz");
  jarvis::CallTree tree(trace);
  CHECK(tree.links_without_flows());
  CHECK(tree.linking_key() == "correlation");
  // Independently: GPU events whose correlation some runtime call carries.
  std::set<int64_t> runtime_corr;
  for (const auto& e : trace.events)
    if (e.is_runtime() && trace.correlation(e) != kNoInt) runtime_corr.insert(trace.correlation(e));
  size_t expected_linked = 0, linked = 0;
  std::vector<std::pair<double, double>> spans;
  for (size_t u = 0; u < trace.events.size(); ++u) {
    const auto& e = trace.events[u];
    if (!e.is_gpu()) continue;
    bool has_launch = trace.correlation(e) != kNoInt && runtime_corr.count(trace.correlation(e));
    expected_linked += has_launch;
    linked += tree.is_linked(static_cast<jarvis::Uid>(u));
    if (has_launch) spans.emplace_back(e.ts(), e.ts() + e.dur());
  }
  CHECK(expected_linked == 1154);  // 1104 kernels + 40 memcpy + 10 memset, all launched
  CHECK(linked == expected_linked);
  // Busy time = union of the linked GPU intervals; total = first start to last end.
  std::sort(spans.begin(), spans.end());
  double busy = 0, cur_s = spans[0].first, cur_e = spans[0].second;
  for (const auto& [s, e] : spans) {
    if (s > cur_e) {
      busy += cur_e - cur_s;
      cur_s = s;
      cur_e = e;
    } else {
      cur_e = std::max(cur_e, e);
    }
  }
  busy += cur_e - cur_s;
  double first = spans.front().first, last = 0;
  for (const auto& sp : spans) last = std::max(last, sp.second);
  auto timeline = jarvis::compute_gpu_timeline(trace, tree);
  CHECK(timeline.busy_time == Approx(busy));
  CHECK(timeline.total_time == Approx(last - first));
  CHECK(timeline.idle_time == Approx(last - first - busy));
}

TEST_CASE("legacy: capitalised categories and async_cpu_to_gpu flows") {
  // PyTorch <= 1.9 style: Operator / Runtime / Kernel and flows named
  // async_cpu_to_gpu whose id is the correlation.
  auto trace = jarvis::load_trace_from_json(R"({"traceEvents":[
    {"ph":"X","cat":"Operator","name":"aten::mm","pid":1,"tid":1,"ts":0,"dur":50,
     "args":{"Input Dims":[[8,8],[8,8]],"Input type":["float","float"]}},
    {"ph":"X","cat":"Runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":5,"dur":4,
     "args":{"correlation":11,"external id":3}},
    {"ph":"s","cat":"async_cpu_to_gpu","name":"async_cpu_to_gpu","id":11,"pid":1,"tid":1,"ts":5},
    {"ph":"X","cat":"Kernel","name":"gemm_kernel","pid":0,"tid":7,"ts":20,"dur":6,
     "args":{"correlation":11,"stream":7,"device":0}},
    {"ph":"f","cat":"async_cpu_to_gpu","name":"async_cpu_to_gpu","id":11,"pid":0,"tid":7,"ts":20,"bp":"e"}
  ]})");
  CHECK(trace.events[0].cat == Cat::CpuOp);
  CHECK(trace.events[1].cat == Cat::CudaRuntime);
  CHECK(trace.events[3].cat == Cat::Kernel);
  jarvis::CallTree tree(trace);
  CHECK_FALSE(tree.links_without_flows());
  CHECK(tree.is_linked(3));
  CHECK(tree.parent(3) == 1);
  auto tl = jarvis::compute_gpu_timeline(trace, tree);
  CHECK(tl.busy_time == Approx(6.0));
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
