// A collective kernel without a timestamp or a duration (found by fuzz_trace:
// one byte changed in the real 2-rank allreduce slice) has no node on the
// graph. The step model leaves it out of the collectives' waits and joins
// instead of looking for its node (it threw std::out_of_range, which escaped
// `insights` and `prepare`), and every other collective keeps its nodes.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

#include "collectives/collectives.h"
#include "critical_path/critical_path.h"
#include "insights/insights.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

namespace {
namespace JARVIS_TEST_FILE {

namespace cp = jarvis::critical_path;
using json = nlohmann::json;

json corpus_trace() {
  std::ifstream in(std::string(JARVIS_SOURCE_DIR) + "/fuzz/corpus_trace/nccl_allreduce.json");
  REQUIRE(in);
  return json::parse(in);
}

bool is_collective_kernel(const json& e) {
  return e.value("cat", "") == "kernel" &&
         e.value("name", "").find("ncclKernel") != std::string::npos;
}

size_t count_kind(const cp::Graph& g, cp::NodeKind kind) {
  size_t n = 0;
  for (const auto& node : g.nodes) n += node.kind == kind;
  return n;
}

TEST_CASE("a collective kernel without a time: the step model and insights leave it out") {
  const json original = corpus_trace();
  size_t collectives = 0;
  for (const auto& e : original["traceEvents"]) collectives += is_collective_kernel(e);
  REQUIRE(collectives >= 2);  // one to break, at least one that keeps its nodes

  for (const char* field : {"dur", "ts"}) {
    CAPTURE(field);
    json broken = original;
    for (auto& e : broken["traceEvents"])
      if (is_collective_kernel(e)) {
        e.erase(field);
        break;
      }
    jarvis::Trace trace = jarvis::load_trace_from_json(broken.dump(), "untimed");
    jarvis::CallTree tree(trace);
    // The collectives still see the kernel: the graph is what must not need it.
    const auto instances = jarvis::collectives::collective_instances(trace);
    size_t untimed = 0;
    for (const auto& c : instances)
      untimed += !trace.events[c.kernel.uid].has_ts() || !trace.events[c.kernel.uid].has_dur();
    REQUIRE(untimed == 1);

    cp::Graph graph;
    REQUIRE_NOTHROW(graph = cp::build_graph({{&trace, &tree, -1}}));
    // One arrival and one end per timed collective kernel, none for the broken one.
    CHECK(count_kind(graph, cp::NodeKind::CollArrive) == instances.size() - 1);
    CHECK(count_kind(graph, cp::NodeKind::CollDone) == instances.size() - 1);
    REQUIRE_NOTHROW((void)cp::analyse(graph));
    REQUIRE_NOTHROW((void)cp::analyse_unprofiled(graph));
    REQUIRE_NOTHROW((void)jarvis::insights::analyse_trace(trace, tree, nullptr));
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
