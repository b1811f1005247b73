// Trace health (load_trace's confidence block) on real traces whose
// weaknesses are known, with counts taken from the raw events.
#include <doctest/doctest.h>

#include <string>

#include "golden.h"
#include "insights/trace_health.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

namespace {

struct Loaded {
  jarvis::Trace trace;
  jarvis::CallTree tree;
  explicit Loaded(const std::string& rel)
      : trace(jarvis::load_trace(jarvis::golden::shared_dir() + "/" + rel)), tree(trace) {}
};

size_t raw_count(const jarvis::Trace& t, bool (*pred)(const jarvis::Trace&, size_t)) {
  size_t n = 0;
  for (size_t u = 0; u < t.events.size(); ++u) n += pred(t, u);
  return n;
}

bool contains_warning(const jarvis::insights::TraceHealth& h, const std::string& needle) {
  for (const auto& w : h.warnings)
    if (w.find(needle) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("health: a vLLM graph-capture trace is flagged low confidence") {
  Loaded l("conformance/vllm_decode_graph_capture/trace.json.gz");
  auto h = jarvis::insights::trace_health(l.trace, l.tree);
  size_t gpu =
      raw_count(l.trace, [](const jarvis::Trace& t, size_t u) { return t.events[u].is_gpu(); });
  CHECK(h.gpu_events == gpu);
  CHECK(h.gpu_events < 50);
  CHECK(h.gpu_busy_share < 0.01);
  CHECK(h.confidence == "low");
  CHECK(contains_warning(h, "too few to rank"));
  CHECK(contains_warning(h, "GPU is busy"));
}

TEST_CASE("health: an older trace without flows, and ProfilerStep counts") {
  Loaded l("legacy/hta_noflow_rank1/trace.json.gz");
  auto h = jarvis::insights::trace_health(l.trace, l.tree);
  size_t steps = raw_count(l.trace, [](const jarvis::Trace& t, size_t u) {
    return t.name(static_cast<jarvis::Uid>(u)).starts_with("ProfilerStep#");
  });
  CHECK(h.profiler_steps == steps);
  CHECK(h.links_without_flows);
  CHECK(contains_warning(h, "correlation only"));
  CHECK(h.linked_gpu_events == h.gpu_events);
  CHECK(h.confidence == "high");  // the linking note is information, not a strike
  auto j = jarvis::insights::to_json(h);
  CHECK(j["profiler_steps"] == steps);
}

TEST_CASE("health: a trace without GPU events") {
  auto t = jarvis::load_trace_from_json(
      R"({"traceEvents":[{"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":0,"dur":1}]})");
  jarvis::CallTree tree(t);
  auto h = jarvis::insights::trace_health(t, tree);
  CHECK(h.gpu_events == 0);
  CHECK(h.confidence == "low");
  CHECK(contains_warning(h, "no GPU events"));
}
