// jarvis_bench --deep-stack [DEPTH...]   (default 1000 8000 50000)
//
// The fusion-candidate pass on crafted traces whose two ops sit under DEPTH
// nested Python frames (issue 24: 8,000 frames took 21.7 s and 2.1 GB when the
// pass was quadratic). For each depth, in this process, best of 3: the load
// alone (floor) and load + fusion candidates, their ratio, the time per frame
// (flat when the pass is linear) and the peak RSS so far.

#include <fmt/format.h>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "base/process_stats.h"
#include "categories/fusion_candidates.h"
#include "trace/loader.h"

namespace {

std::string deep_trace(int depth) {
  std::string ev;
  for (int i = 0; i < depth; ++i)
    ev += fmt::format(
        R"({{"ph":"X","cat":"python_function","name":"frame_{0}.py(1): f{0}","pid":1,"tid":1,)"
        R"("ts":{1},"dur":{2}}},)",
        i, i * 0.001, 1e6 - i * 0.002);
  double t = depth * 0.001 + 1;
  for (int k = 0; k < 2; ++k) {
    int corr = k + 1;
    double ts = t + 10 * k;
    ev += fmt::format(
        R"({{"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":{0},"dur":5}},)"
        R"({{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{1},)"
        R"("dur":1,"args":{{"correlation":{2}}}}},)"
        R"({{"ph":"s","cat":"ac2g","name":"ac2g","id":{2},"pid":1,"tid":1,"ts":{1}}},)"
        R"({{"ph":"X","cat":"kernel","name":"elementwise_kernel_{2}","pid":0,"tid":7,"ts":{3},)"
        R"("dur":3,"args":{{"correlation":{2},"stream":7,"device":0}}}},)"
        R"({{"ph":"f","bp":"e","cat":"ac2g","name":"ac2g","id":{2},"pid":0,"tid":7,"ts":{3}}})",
        ts, ts + 1, corr, ts + 2);
    if (k == 0) ev += ",";
  }
  return R"({"traceEvents":[)" + ev + "]}";
}

double seconds_of(const auto& fn) {
  double best = 1e30;
  for (int r = 0; r < 3; ++r) {
    auto start = std::chrono::steady_clock::now();
    fn();
    best = std::min(
        best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

}  // namespace

int deep_stack_bench(int argc, char** argv) {
  std::vector<int> depths;
  for (int k = 1; k < argc; ++k) depths.push_back(std::atoi(argv[k]));
  if (depths.empty()) depths = {1000, 8000, 50000};
  fmt::print("{:>8} {:>10} {:>12} {:>7} {:>12} {:>9}\n", "frames", "load s", "+fusion s", "ratio",
             "us/frame", "peak MB");
  for (int depth : depths) {
    std::string json = deep_trace(depth);
    double load = seconds_of([&] { (void)jarvis::load_trace_from_json(json); });
    size_t candidates = 0;
    double full = seconds_of([&] {
      jarvis::Trace trace = jarvis::load_trace_from_json(json);
      candidates = jarvis::analysis::fusion_candidates(trace, nullptr).size();
    });
    fmt::print("{:>8} {:>10.4f} {:>12.4f} {:>7.2f} {:>12.3f} {:>9}   ({} candidates)\n", depth,
               load, full, full / load, full / depth * 1e6,
               static_cast<long>(jarvis::peak_rss_mb()), candidates);
  }
  return 0;
}
