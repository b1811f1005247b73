// load_trace keeps what an agent's next call reads (issue 75): beside the
// step model, the perf rows of the trace's own arch and the facts of the
// trace alone are made in the server and kept on the loaded trace, so that
// the worker of the insights call that follows inherits them instead of
// spending its first half-second building them. Checked on a real trace of
// ../shared (11k events; a trace under 5,000 keeps none): kept once the load
// returns, equal to what a fresh build gives,
// and the insights answer equal to the engine's own analysis.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "engine/engine.h"
#include "insight_rules.h"
#include "mcp_harness.h"

namespace {
namespace JARVIS_TEST_FILE {

using jarvis::mcp::json;
using jarvis::mcp::testing::Harness;

TEST_CASE("load_trace keeps the perf rows and the trace's facts for the next insights") {
  const std::string file = "ab_pairs/s_tf32_B_tf32.json.gz";
  if (!std::filesystem::exists(jarvis::golden::shared_dir() + "/" + file)) {
    MESSAGE("skipped: ../shared/ab_pairs is missing");
    return;
  }
  Harness h;
  h.initialize();
  const json loaded = h.tool_result(1, "load_trace", {{"path", file}});
  const std::string handle = loaded["trace"].get<std::string>();
  auto entry = h.session->traces().get(handle);
  REQUIRE(entry);
  const std::string arch = jarvis::engine::detect_arch_name(entry->trace());
  REQUIRE_FALSE(arch.empty());  // an H200 trace

  // Kept by the load, before any other call.
  auto rows = entry->entry().find<std::vector<jarvis::report::PerfOpRow>>("perf_rows:" + arch);
  REQUIRE(rows);
  CHECK(entry->entry().find<jarvis::engine::SharedTraceFacts>("insights:trace_facts"));
  // The rows the later calls read are those (not built again), and they are
  // what a fresh build gives.
  CHECK(jarvis::engine::trace_perf_rows(*entry) == rows);
  CHECK(jarvis::engine::trace_perf_rows(*entry, arch) == rows);
  const auto tree = jarvis::engine::trace_call_tree(*entry);
  const jarvis::GpuArch gpu = jarvis::engine::load_gpu_arch(arch);
  const auto fresh = jarvis::report::unified_perf_rows(entry->trace(), *tree, &gpu);
  REQUIRE(rows->size() == fresh.size());
  for (size_t k = 0; k < fresh.size(); ++k) {
    CAPTURE(k);
    CHECK((*rows)[k].uid == fresh[k].uid);
    CHECK((*rows)[k].kernel_time_us == fresh[k].kernel_time_us);
    CHECK((*rows)[k].kernels == fresh[k].kernels);
    CHECK((*rows)[k].metrics.has_value() == fresh[k].metrics.has_value());
  }
  // Another arch's rows are built on demand, not taken for these.
  CHECK(jarvis::engine::trace_perf_rows(*entry, "MI300X") != rows);

  // The insights answer from them is the engine's analysis of the trace.
  const json answer = h.tool_result(2, "insights", {{"trace", handle}, {"detail", "full"}});
  const auto engine_found = jarvis::engine::analyse_trace(entry->trace(), *tree, &gpu).found;
  REQUIRE_FALSE(engine_found.empty());
  REQUIRE(answer["insights"].size() == engine_found.size());
  for (size_t k = 0; k < engine_found.size(); ++k) {
    CAPTURE(k);
    CHECK(answer["insights"][k]["rule"] == engine_found[k].rule);
    CHECK(answer["insights"][k]["title"] == engine_found[k].title);
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
