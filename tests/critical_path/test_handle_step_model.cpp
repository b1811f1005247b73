// critical_path and what_if on a load_trace handle answer from the trace's
// step model (issue 75 point 3): load_trace builds it for the health block
// (the graph with its what-if base, the recorded and un-profiled analyses),
// and the two tools reuse its graph and analyses instead of building a second
// graph of the trace. Their results are exactly those of the same job given
// by path (a graph built for that call alone), and no second graph is cached
// on the trace. Expectations on the iterations come from the raw events of
// ../shared/ab_pairs/s_tf32_A_fp32, read here with nlohmann::json.
#include <doctest/doctest.h>

#include <filesystem>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "critical_path/critical_path.h"
#include "explore/trace_store.h"
#include "golden.h"
#include "insights/insights.h"
#include "mcp_harness.h"
#include "test_loader_support.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using nlohmann::json;

// The reply without what names the call's input (the handle or the path).
json without_input(json reply) {
  for (const char* key : {"trace", "traces", "caveats", "files"}) reply.erase(key);
  return reply;
}

TEST_SUITE("critical_path") {
  TEST_CASE("critical_path and what_if on a handle reuse the step model of load_trace (s_tf32 A)") {
    const std::string path = jarvis::golden::shared_dir() + "/ab_pairs/s_tf32_A_fp32.json.gz";
    if (!std::filesystem::exists(path)) return;
    jarvis::mcp::testing::Harness h;
    h.initialize();
    const std::string handle =
        h.tool_result(1, "load_trace", {{"path", path}})["trace"].get<std::string>();

    // The raw trace's ProfilerStep annotations: the iterations.
    size_t steps = 0;
    const json raw = json::parse(jarvis::loader_test::gunzip_file(path));
    for (const auto& e : raw["traceEvents"])
      if (e.value("cat", "") == "user_annotation" &&
          e.value("name", "").starts_with("ProfilerStep#"))
        ++steps;
    REQUIRE(steps > 0);

    int id = 2;
    for (const bool recorded : {false, true}) {
      CAPTURE(recorded);
      const json by_handle = h.tool_result(
          id++, "critical_path",
          {{"trace", handle}, {"recorded_host", recorded}, {"top_n", 1000}, {"detail", "full"}});
      const json by_path = h.tool_result(id++, "critical_path",
                                         {{"traces", json::array({path})},
                                          {"recorded_host", recorded},
                                          {"top_n", 1000},
                                          {"detail", "full"}});
      CHECK(by_handle["iterations"].size() == steps);
      CHECK(without_input(by_handle) == without_input(by_path));
    }
    for (const json& change :
         {json{{"category", "gemm"}, {"factor", 0.5}}, json{{"remove_launch_gaps", true}}}) {
      CAPTURE(change.dump());
      json on_handle = change, on_path = change;
      on_handle["detail"] = on_path["detail"] = "full";
      on_handle["trace"] = handle;
      on_path["traces"] = json::array({path});
      const json by_handle = h.tool_result(id++, "what_if", on_handle);
      const json by_path = h.tool_result(id++, "what_if", on_path);
      CHECK(by_handle["predicted"]["iterations"].size() == steps);
      CHECK(by_handle["predicted_step_time_us"].get<double>() <=
            by_handle["measured_step_time_us"].get<double>());
      CHECK(without_input(by_handle) == without_input(by_path));
    }

    // The trace's cached artefacts: the step model load_trace built is there
    // (its builder here does not run), and no graph of the trace besides it
    // (the builder of the one trace_graph caches runs now).
    jarvis::TraceStore store{h.server.trace_cache()};
    const auto entry = store.load(path).entry;
    bool model_built = false, graph_built = false;
    const auto model = entry->cached<jarvis::insights::StepModelRef>("insights:step_model", [&] {
      model_built = true;
      return jarvis::insights::StepModelRef{};
    });
    CHECK_FALSE(model_built);
    REQUIRE(model->model);
    CHECK(model->model->graph.iterations.size() == steps);
    entry->cached<jarvis::critical_path::Graph>("critical_path:graph", [&] {
      graph_built = true;
      return jarvis::critical_path::Graph{};
    });
    CHECK(graph_built);
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
