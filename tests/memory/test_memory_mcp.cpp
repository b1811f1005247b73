// memory_summary and memory_diff over MCP on the shared traces: bounded
// results, the same numbers as the engine, and the unsupported answer for a
// trace recorded without profile_memory=True.
#include <doctest/doctest.h>

#include "mcp_harness.h"
#include "memory/memory.h"
#include "trace/loader.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using jarvis::mcp::json;
using jarvis::mcp::testing::conformance_trace;
using jarvis::mcp::testing::Harness;

TEST_CASE("MCP memory_summary: bounded, the engine's peak, parent_chain suggested") {
  Harness h;
  h.initialize();
  std::string path = conformance_trace("h100_qwen1.5-0.5b");
  json s = h.tool_result(1, "memory_summary", {{"trace", path}});
  auto engine = jarvis::memory::analyse_memory(jarvis::load_trace(path));
  CHECK(s["device"] == "cuda:0");
  CHECK(s["peak"]["allocated_bytes"] == engine.primary().peak_allocated);
  CHECK(s["peak"]["untracked_bytes"] == engine.primary().untracked_at_peak);
  CHECK(s["devices"].size() == 2);
  CHECK(s["timeline"].size() <= 40);
  CHECK(s["top_allocations"].size() <= 10);
  CHECK(s["at_peak"].size() <= 10);
  CHECK(s.dump().size() <= 20 * 1024);
  REQUIRE(s["next"].size() >= 1);
  CHECK(s["next"][0]["tool"] == "parent_chain");

  json cpu = h.tool_result(2, "memory_summary", {{"trace", path}, {"device", "cpu"}, {"limit", 3}});
  CHECK(cpu["device"] == "cpu");
  CHECK(cpu["at_peak"].size() <= 3);

  json wrong = h.call_tool(3, "memory_summary", {{"trace", path}, {"device", "cuda:9"}});
  CHECK(wrong["result"]["isError"] == true);
}

TEST_CASE("MCP memory_summary: every shared trace with memory events fits in 20 KB") {
  Harness h;
  h.initialize();
  int id = 1;
  for (const char* name : {"h100_bert-small", "h100_falconsai-nsfw", "h100_qwen1.5-0.5b",
                           "mi300_bert-small", "mi300_falconsai-nsfw", "mi300_qwen1.5-0.5b",
                           "sglang_qwen3_decode_bs32", "vllm_decode_graph_capture"}) {
    CAPTURE(name);
    json s = h.tool_result(id++, "memory_summary", {{"trace", conformance_trace(name)}});
    CHECK(s["peak"]["allocated_bytes"].get<int64_t>() > 0);
    CHECK(s.dump().size() <= 20 * 1024);
  }
}

TEST_CASE("MCP memory_summary: a trace without memory events names profile_memory=True") {
  Harness h;
  h.initialize();
  json r =
      h.call_tool(1, "memory_summary",
                  {{"trace", jarvis::golden::shared_dir() + "/hw_pairs/gpt2_train/h100.json.gz"}});
  REQUIRE(r["result"]["isError"] == true);
  CHECK(r["result"]["_meta"]["jarvis/errorKind"] == "unsupported");
  CHECK(r.dump().find("profile_memory=True") != std::string::npos);
}

TEST_CASE("MCP memory_diff: H100 and MI300 runs of one model") {
  Harness h;
  h.initialize();
  std::string reference = conformance_trace("h100_bert-small");
  std::string target = conformance_trace("mi300_bert-small");
  json d = h.tool_result(1, "memory_diff", {{"reference", reference}, {"target", target}});
  auto ref = jarvis::memory::analyse_memory(jarvis::load_trace(reference));
  auto tgt = jarvis::memory::analyse_memory(jarvis::load_trace(target));
  REQUIRE(d["devices"].size() >= 1);
  CHECK(d["devices"][0]["reference"]["peak_allocated_bytes"] == ref.primary().peak_allocated);
  CHECK(d["devices"][0]["target"]["peak_allocated_bytes"] == tgt.primary().peak_allocated);
  CHECK(d["devices"][0]["peak_delta_bytes"] ==
        tgt.primary().peak_allocated - ref.primary().peak_allocated);
  CHECK(d["groups"].size() <= 10);
  CHECK(d.dump().size() <= 20 * 1024);
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
