// Host events of one thread that overlap without nesting (a synchronising
// call that starts before the previous op ended, found by fuzz_critical_path
// in a crafted trace, as clock skew can make in a real one): the critical
// path never holds a segment, a contributor or a wait shorter than zero, on
// the recorded host and without the profiler, and the step is not shorter
// than its kernels. Likewise a kernel that starts before its launch call (the
// clock offset between host and device, which a launch edge keeps as
// negative slack): the path's pieces tile each iteration, none negative.
#include <doctest/doctest.h>

#include <memory>
#include <string>

#include "critical_path/critical_path.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

namespace {
namespace JARVIS_TEST_FILE {

namespace cp = jarvis::critical_path;

// One thread: a runtime sync at 100-190 and an op with its launch at 101
// inside it (a runtime call holds no op), so the thread's host items overlap
// without nesting.
constexpr const char* kOverlapping = R"({"traceEvents":[
 {"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":0,"dur":300},
 {"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":1,"dur":10},
 {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":2,"dur":2,"args":{"correlation":1}},
 {"ph":"X","cat":"kernel","name":"ampere_sgemm_128x64_nn","pid":0,"tid":7,"ts":5,"dur":30,"args":{"correlation":1,"stream":7,"device":0}},
 {"ph":"X","cat":"cuda_runtime","name":"cudaDeviceSynchronize","pid":1,"tid":1,"ts":100,"dur":90,"args":{"correlation":4}},
 {"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":101,"dur":10},
 {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":102,"dur":2,"args":{"correlation":3}},
 {"ph":"X","cat":"kernel","name":"ampere_sgemm_128x64_nn","pid":0,"tid":7,"ts":105,"dur":30,"args":{"correlation":3,"stream":7,"device":0}},
 {"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":195,"dur":10}
]})";

void check_not_negative(const cp::Analysis& a) {
  for (const auto& it : a.iterations) {
    CHECK(it.length_us >= 0);
    for (const auto& s : it.path) {
      CAPTURE(s.dur_us);
      CHECK(s.dur_us >= 0);
    }
  }
  for (const auto& c : a.contributors) CHECK(c.time_us >= 0);
  for (const auto& w : a.waits) CHECK(w.time_us >= 0);
}

TEST_CASE("host items of one thread that overlap give no negative path segment") {
  jarvis::Trace trace = jarvis::load_trace_from_json(kOverlapping);
  jarvis::CallTree tree(trace);
  cp::Graph graph = cp::build_graph({{&trace, &tree, -1}});
  const cp::Analysis recorded = cp::analyse(graph);
  check_not_negative(recorded);
  // The step holds both kernels (30 us each) at least.
  CHECK(recorded.step_time_us >= 60.0);
  const cp::Analysis unprofiled = cp::analyse_unprofiled(graph);
  check_not_negative(unprofiled);
}

// The second kernel starts 6 us before its launch call (ts 106 < 110).
constexpr const char* kKernelBeforeLaunch = R"({"traceEvents":[
 {"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":0,"dur":300},
 {"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":1,"dur":10},
 {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":2,"dur":2,"args":{"correlation":1}},
 {"ph":"X","cat":"kernel","name":"ampere_sgemm_128x64_nn","pid":0,"tid":7,"ts":5,"dur":30,"args":{"correlation":1,"stream":7,"device":0}},
 {"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":100,"dur":20},
 {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":110,"dur":5,"args":{"correlation":3}},
 {"ph":"X","cat":"kernel","name":"ampere_sgemm_128x64_nn","pid":0,"tid":7,"ts":104,"dur":40,"args":{"correlation":3,"stream":7,"device":0}},
 {"ph":"X","cat":"cuda_runtime","name":"cudaDeviceSynchronize","pid":1,"tid":1,"ts":125,"dur":30,"args":{"correlation":4}},
 {"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":160,"dur":10}
]})";

TEST_CASE("a kernel that starts before its launch call gives no negative path segment") {
  jarvis::Trace trace = jarvis::load_trace_from_json(kKernelBeforeLaunch);
  jarvis::CallTree tree(trace);
  cp::Graph graph = cp::build_graph({{&trace, &tree, -1}});
  for (const cp::Analysis& a : {cp::analyse(graph), cp::analyse_unprofiled(graph)}) {
    check_not_negative(a);
    for (const auto& it : a.iterations)
      CHECK(it.path_length_us == doctest::Approx(it.length_us).epsilon(1e-9));
  }
  CHECK(cp::analyse(graph).step_time_us >= 70.0);  // both kernels
  cp::Scenario graphed;
  graphed.remove_launch_gaps = true;
  check_not_negative(cp::what_if(graph, graphed).predicted);
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
