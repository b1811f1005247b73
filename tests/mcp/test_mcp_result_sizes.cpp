// Issue 48 point 8: every single-trace tool's default result is at most 20 KB
// on every trace in ../shared (conformance, hw_pairs, nccl, legacy). Each
// trace is loaded once; each tool is called with only its required
// arguments (an op or a category taken from an earlier result where one is
// required).
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "golden.h"
#include "mcp/result_shape.h"
#include "mcp_harness.h"
#include "test_analysis_support.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using jarvis::mcp::json;
using jarvis::mcp::testing::Harness;
namespace fs = std::filesystem;

namespace {

constexpr size_t kMaxDefaultResultBytes = 20 * 1024;

// Every Kineto trace of ../shared that one tool call analyses alone.
std::vector<std::string> shared_traces() {
  std::vector<std::string> out;
  const std::string root = jarvis::golden::shared_dir();
  for (const char* dir : {"conformance", "hw_pairs", "nccl", "legacy"})
    for (const auto& e : fs::recursive_directory_iterator(root + "/" + dir))
      if (e.is_regular_file() && e.path().string().ends_with(".json.gz"))
        out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

struct Sizes {
  Harness& h;
  int id = 1;
  std::vector<std::string> over;  // "tool on trace: bytes"
  size_t calls = 0;
  // The reply's structuredContent (null for an error result); records its size.
  json call(const std::string& trace, const std::string& tool, json args) {
    json reply = h.call_tool(id++, tool, std::move(args));
    const size_t bytes = reply.dump().size();
    ++calls;
    if (bytes > kMaxDefaultResultBytes)
      over.push_back(tool + " on " + fs::path(trace).parent_path().filename().string() + "/" +
                     fs::path(trace).filename().string() + ": " + std::to_string(bytes) + " bytes");
    if (!reply.contains("result") || reply["result"].value("isError", false)) return nullptr;
    return reply["result"]["structuredContent"];
  }
};

void call_every_tool(Sizes& s, const std::string& trace, const std::string& scratch) {
  json loaded = s.call(trace, "load_trace", {{"path", trace}});
  REQUIRE(loaded.is_object());
  const std::string handle = loaded["trace"].get<std::string>();
  json ops = s.call(trace, "ops_summary", {{"trace", handle}});
  s.call(trace, "insights", {{"trace", handle}});
  s.call(trace, "gemm_roofline", {{"trace", handle}});
  s.call(trace, "kernel_counters", {{"trace", handle}});
  s.call(trace, "critical_path", {{"traces", json::array({handle})}});
  s.call(trace, "what_if", {{"traces", json::array({handle})}});
  if (ops.is_object() && !ops["rows"].empty()) {
    json op = ops["rows"][0]["name"];
    s.call(trace, "parent_chain", {{"trace", handle}, {"op_name", op}});
    s.call(trace, "make_replay",
           {{"trace", handle}, {"output_dir", scratch + "/replay"}, {"op", op}});
  }
  const std::string out = scratch + "/prepared";
  json prepared = s.call(trace, "category_filter", {{"trace", handle}, {"output_dir", out}});
  if (prepared.is_object()) {
    for (const auto& c : prepared["categories"])
      s.call(trace, "analyze_category", {{"output_dir", out}, {"category", c["name"]}});
    s.call(trace, "final_report", {{"output_dir", out}});
  }
  s.call(trace, "unload_trace", {{"trace", handle}});
}

}  // namespace

TEST_CASE("every single-trace tool's default result is at most 20 KB on every shared trace") {
  auto traces = shared_traces();
  REQUIRE(traces.size() >= 14);
  jarvis::testing::TempDir scratch;
  jarvis::mcp::ServerOptions options;
  options.roots = {jarvis::golden::shared_dir(), scratch.path};
  Harness h(options);
  h.initialize();
  Sizes sizes{h, 1, {}, 0};
  for (size_t k = 0; k < traces.size(); ++k) {
    CAPTURE(traces[k]);
    call_every_tool(sizes, traces[k], scratch.path + "/" + std::to_string(k));
  }
  std::string report;
  for (const auto& o : sizes.over) report += o + "\n";
  INFO(report);
  CHECK(sizes.calls > traces.size() * 10);
  CHECK(sizes.over.empty());
}

TEST_CASE("a trace of high confidence gets a note, not a caution (issue 48)") {
  auto text_of = [](const std::string& confidence) {
    jarvis::mcp::ToolResult out{json{{"rows", json::array()}}, "summary"};
    out.caveats = json::array(
        {{{"trace", "t1"}, {"confidence", confidence}, {"warnings", {"first", "second"}}}});
    json r = jarvis::mcp::assemble_tool_result("ops_summary", json::object(), out, true);
    return r["content"][0]["text"].get<std::string>();
  };
  CHECK(text_of("high").starts_with("Note — trace t1: first; second.\n"));
  CHECK(text_of("high").find("Caution") == std::string::npos);
  CHECK(text_of("low").starts_with("Caution — trace t1 (confidence low): first; second.\n"));
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
