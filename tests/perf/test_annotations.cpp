// The user-annotation index (perf/annotations.h) against the scan it replaced:
// for every event, the earliest-starting annotation that starts at or before
// it and ends strictly after it, ties in file order.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <optional>
#include <random>
#include <string>
#include <string_view>

#include "golden.h"
#include "perf/annotations.h"
#include "trace/loader.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using namespace jarvis;

namespace {

std::optional<std::string_view> scan(const Trace& trace, Uid uid) {
  const Event& e = trace.events[uid];
  double end = e.ts() + e.dur();
  const Event* best = nullptr;
  for (const Event& a : trace.events) {
    if (a.cat != Cat::UserAnnotation && a.cat != Cat::GpuUserAnnotation &&
        trace.str(a.cat_name).find("user_annotation") == std::string_view::npos)
      continue;
    if (!(a.ts() <= e.ts() && end < a.ts() + a.dur())) continue;
    if (!best || a.ts() < best->ts()) best = &a;
  }
  if (!best) return std::nullopt;
  return trace.str(best->name);
}

void check_every_event(const Trace& trace) {
  perf::TraceAnnotations index(trace);
  for (Uid u = 0; u < trace.events.size(); ++u) {
    auto expected = scan(trace, u);
    auto got = index.enclosing(u);
    CAPTURE(u);
    REQUIRE(got.has_value() == expected.has_value());
    if (got) CHECK(*got == *expected);
  }
}

}  // namespace

TEST_CASE("annotation index: random nested, overlapping and tied annotations") {
  // Annotations with shared starts and ends (ties decided by file order),
  // nesting, partial overlaps and ops ending exactly where an annotation does.
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> start(0, 60), len(0, 40);
  std::string events;
  for (int k = 0; k < 400; ++k) {
    bool annotation = k % 3 == 0;
    const char* cat = annotation ? (k % 2 ? "user_annotation" : "gpu_user_annotation") : "cpu_op";
    events +=
        fmt::format(R"({}{{"ph":"X","cat":"{}","name":"{}{}","pid":1,"tid":1,"ts":{},"dur":{}}})",
                    k ? "," : "", cat, annotation ? "a" : "op", k, start(rng), len(rng));
  }
  Trace trace = load_trace_from_json("{\"traceEvents\":[" + events + "]}", "annotations");
  check_every_event(trace);
}

TEST_CASE("annotation index: the SGLang and vLLM conformance traces") {
  for (const char* name : {"sglang_qwen3_decode_bs32", "vllm_decode_graph_capture"}) {
    CAPTURE(name);
    Trace trace =
        load_trace(golden::shared_dir() + "/conformance/" + name + "/trace.json.gz", LoadOptions{});
    perf::TraceAnnotations index(trace);
    // The scan is quadratic: check the ops the attention models ask about and
    // a sample of every other event.
    size_t annotated = 0;
    for (Uid u = 0; u < trace.events.size(); ++u) {
      bool asked = trace.name(u).starts_with("vllm::unified_attention_with_output") ||
                   trace.name(u).find("attention") != std::string_view::npos;
      if (!asked && u % 997 != 0) continue;
      auto expected = scan(trace, u);
      auto got = index.enclosing(u);
      CAPTURE(u);
      REQUIRE(got.has_value() == expected.has_value());
      if (got) {
        CHECK(*got == *expected);
        ++annotated;
      }
    }
    CHECK(annotated > 0);
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
