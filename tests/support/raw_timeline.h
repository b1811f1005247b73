// Expectations computed from raw events, shared by the tests that check the
// engine's timelines against them: the length of a union of intervals, and a
// Kineto kernel with the launch call and flow that link it.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace jarvis::testing {

using Intervals = std::vector<std::pair<double, double>>;

// Total length covered by the intervals (overlaps counted once).
inline double union_length(Intervals v) {
  std::sort(v.begin(), v.end());
  double total = 0, lo = 0, hi = -1e300;
  for (auto [a, b] : v) {
    if (a > hi) {
      if (hi > lo) total += hi - lo;
      lo = a;
      hi = b;
    } else {
      hi = std::max(hi, b);
    }
  }
  if (hi > lo) total += hi - lo;
  return total;
}

// A kernel on stream 7 launched by a cudaLaunchKernel at `issue` (the JSON
// events, comma-separated, for a traceEvents array).
inline std::string launched_kernel(int corr, double issue, double start, double dur) {
  return fmt::format(
      R"({{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{0},)"
      R"("dur":1,"args":{{"correlation":{1}}}}},)"
      R"({{"ph":"s","cat":"ac2g","name":"ac2g","id":{1},"pid":1,"tid":1,"ts":{0}}},)"
      R"({{"ph":"X","cat":"kernel","name":"k{1}","pid":0,"tid":7,"ts":{2},"dur":{3},)"
      R"("args":{{"correlation":{1},"stream":7,"device":0}}}},)"
      R"({{"ph":"f","bp":"e","cat":"ac2g","name":"ac2g","id":{1},"pid":0,"tid":7,"ts":{2}}})",
      issue, corr, start, dur);
}

}  // namespace jarvis::testing
