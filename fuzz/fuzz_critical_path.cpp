// libFuzzer target for the critical path's un-profiled model on small,
// degenerate Kineto traces (issue 74 point 6: a single zero-length kernel
// ended load_trace in an internal error): each input is a Kineto JSON
// document; if it loads, the graph is built and analysed on the recorded and
// the un-profiled host, and two what-if scenarios (GEMMs twice as fast, the
// launch gaps of a CUDA graph) run on it. Checked: the engine refuses with
// its own errors only (an nlohmann or std::logic_error escaping is a
// finding), and every step, iteration and path figure is finite and not
// negative, also in the JSON a tool would send. Seeds:
// fuzz/corpus_critical_path (degenerate traces), fuzz/corpus_trace.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "critical_path/critical_path.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

namespace {

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "fuzz_critical_path: %s\n", what.c_str());
  std::abort();
}

void check_time(double v, const char* what) {
  if (!std::isfinite(v) || v < 0) finding(std::string(what) + " is " + std::to_string(v));
}

void check_finite_json(const nlohmann::json& v) {
  if (v.is_number_float() && !std::isfinite(v.get<double>()))
    finding("a JSON figure is not finite");
  if (v.is_structured())
    for (const auto& item : v) check_finite_json(item);
}

void check_analysis(const jarvis::critical_path::Analysis& a) {
  check_time(a.step_time_us, "step_time_us");
  check_time(a.recorded_step_time_us, "recorded_step_time_us");
  if (a.estimated_unprofiled_step_us)
    check_time(*a.estimated_unprofiled_step_us, "unprofiled step");
  check_time(a.profiler_host_us_per_step, "profiler_host_us_per_step");
  check_time(a.gpu_backlog_left_out_us, "gpu_backlog_left_out_us");
  for (const auto& it : a.iterations) {
    check_time(it.length_us, "an iteration's length");
    check_time(it.path_length_us, "an iteration's path length");
    for (const auto& s : it.path) check_time(s.dur_us, "a path segment's duration");
  }
  for (const auto& c : a.contributors) check_time(c.time_us, "a contributor's time");
  for (const auto& w : a.waits) check_time(w.time_us, "a wait's time");
  check_finite_json(jarvis::critical_path::analysis_json(a, 10));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace cp = jarvis::critical_path;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  try {
    const jarvis::Trace trace = jarvis::load_trace_from_json(input, "fuzz");
    const jarvis::CallTree tree(trace);
    const cp::Graph graph = cp::build_graph({{&trace, &tree, -1}});
    check_analysis(cp::analyse(graph));
    check_analysis(cp::analyse_unprofiled(graph));
    cp::Scenario faster;
    faster.select.category = "gemm";
    faster.factor = 0.5;
    cp::Scenario graphed;
    graphed.remove_launch_gaps = true;
    for (const cp::Scenario* s : {&faster, &graphed}) {
      const cp::WhatIfResult r = cp::what_if(graph, *s);
      check_time(r.measured_step_time_us, "what-if measured step");
      check_time(r.predicted_step_time_us, "what-if predicted step");
      check_time(r.recorded_step_time_us, "what-if recorded step");
      check_time(r.removed_us, "what-if removed time");
      check_analysis(r.predicted);
      check_finite_json(cp::what_if_json(r, *s, 10));
    }
  } catch (const jarvis::Error&) {
    // A refusal with the engine's own error (TraceError, CriticalPathError,
    // CollectiveError): the expected answer to most inputs.
  }
  return 0;
}
