// Issue 74 point 6: degenerate traces (a zero-duration kernel, no kernels,
// one event) load with a low-confidence health block, never a NaN or an
// infinity in any figure, and the tools after load_trace answer them; a
// load_trace that fails for any reason leaves no handle behind.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <string>

#include "mcp_harness.h"
#include "test_loader_support.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using namespace jarvis;
using namespace jarvis::loader_test;
using json = nlohmann::json;

// One cpu_op launching one kernel of `kernel_dur` us, linked by flow and correlation.
std::string one_kernel_trace(double kernel_dur) {
  return fmt::format(
      R"({{"traceEvents":[)"
      R"({{"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":0,"dur":5}},)"
      R"({{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":1,)"
      R"("dur":1,"args":{{"correlation":1}}}},)"
      R"({{"ph":"s","cat":"ac2g","name":"ac2g","id":1,"pid":1,"tid":1,"ts":1}},)"
      R"({{"ph":"X","cat":"kernel","name":"add_kernel","pid":0,"tid":7,"ts":3,"dur":{},)"
      R"("args":{{"correlation":1,"stream":7,"device":0}}}},)"
      R"({{"ph":"f","bp":"e","cat":"ac2g","name":"ac2g","id":1,"pid":0,"tid":7,"ts":3}}]}})",
      kernel_dur);
}

// A cpu_op and a runtime call that launched nothing.
const std::string kNoKernels =
    R"({"traceEvents":[)"
    R"({"ph":"X","cat":"cpu_op","name":"aten::empty","pid":1,"tid":1,"ts":0,"dur":5},)"
    R"({"ph":"X","cat":"cuda_runtime","name":"cudaStreamIsCapturing","pid":1,"tid":1,"ts":1,)"
    R"("dur":1,"args":{"correlation":1}}]})";

const std::string kOneEvent =
    R"({"traceEvents":[{"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":0,"dur":1}]})";

// A kernel with no launch at all, of zero duration.
const std::string kLoneZeroKernel =
    R"({"traceEvents":[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":3,"dur":0,)"
    R"("args":{"stream":7,"device":0}}]})";

// Every number in `v` is finite; the paths of those that are not.
void non_finite(const json& v, const std::string& at, std::vector<std::string>& out) {
  if (v.is_number_float() && !std::isfinite(v.get<double>())) out.push_back(at);
  if (v.is_object())
    for (const auto& [key, item] : v.items()) non_finite(item, at + "/" + key, out);
  if (v.is_array())
    for (size_t k = 0; k < v.size(); ++k) non_finite(v[k], fmt::format("{}/{}", at, k), out);
}

void check_finite(const json& v) {
  std::vector<std::string> bad;
  non_finite(v, "", bad);
  INFO(v.dump().substr(0, 3000));
  CHECK(bad == std::vector<std::string>{});
  // A non-finite number serialises as null: read the reply back as a client would.
  CHECK(json::parse(v.dump()) == v);
}

bool is_tool_error(const json& reply) {
  return reply.contains("result") && reply["result"].value("isError", false);
}

std::string error_kind(const json& reply) {
  return reply["result"].value("_meta", json::object()).value("jarvis/errorKind", std::string());
}

struct DegenerateCase {
  const char* name;
  std::string text;
};

std::vector<DegenerateCase> degenerate_cases() {
  return {{"zero_dur_kernel", one_kernel_trace(0)},
          {"no_kernels", kNoKernels},
          {"one_event", kOneEvent},
          {"lone_zero_kernel", kLoneZeroKernel}};
}

mcp::ServerOptions rooted(const TempDir& dir) {
  mcp::ServerOptions options;
  options.roots = {dir.path.string()};
  return options;
}

// A tool that answers a degenerate trace either answers with finite figures
// or refuses it as input it cannot use, never as an internal failure.
void check_answer_or_refusal(const json& reply) {
  REQUIRE(reply.contains("result"));
  if (is_tool_error(reply)) {
    INFO(reply.dump());
    CHECK(error_kind(reply) != "internal");
    return;
  }
  check_finite(reply["result"]["structuredContent"]);
}

TEST_CASE("issue 74 point 6: degenerate traces load with a low-confidence health block") {
  for (const DegenerateCase& c : degenerate_cases()) {
    CAPTURE(c.name);
    TempDir dir;
    const fs::path file = dir.path / (std::string(c.name) + ".json");
    write_file(file, c.text);
    mcp::testing::Harness h(rooted(dir));
    h.initialize();
    json reply = h.call_tool(1, "load_trace", {{"path", file.string()}});
    INFO(reply.dump().substr(0, 3000));
    REQUIRE(reply.contains("result"));
    REQUIRE_FALSE(is_tool_error(reply));
    const json& loaded = reply["result"]["structuredContent"];
    check_finite(loaded);
    CHECK(loaded["health"]["confidence"] == "low");
    const std::string text = reply["result"]["content"][0]["text"];
    CHECK(text.find("nan") == std::string::npos);
    CHECK(text.find("inf") == std::string::npos);

    json listed = h.tool_result(2, "list_traces", json::object());
    REQUIRE(listed["traces"].size() == 1);
    CHECK(listed["traces"][0]["trace"] == loaded["trace"]);

    check_answer_or_refusal(h.call_tool(3, "insights", {{"trace", loaded["trace"]}}));
    check_answer_or_refusal(h.call_tool(4, "critical_path", {{"traces", {file.string()}}}));
    check_answer_or_refusal(h.call_tool(5, "what_if", {{"traces", {file.string()}}}));
  }
}

TEST_CASE("issue 74 point 6: a zero-duration kernel's health figures are worked by hand") {
  TempDir dir;
  write_file(dir.path / "t.json", one_kernel_trace(0));
  mcp::testing::Harness h(rooted(dir));
  h.initialize();
  json health =
      h.tool_result(1, "load_trace", {{"path", (dir.path / "t.json").string()}})["health"];
  // One GPU event, linked to its launch, over a span of no length: busy 0 of 0.
  CHECK(health["gpu_events"] == 1);
  CHECK(health["linked_gpu_events"] == 1);
  CHECK(health["gpu_span_us"] == 0.0);
  CHECK(health["gpu_busy_share"] == 0.0);
  CHECK(health["confidence"] == "low");
  // The step estimates are numbers or absent (null), never NaN.
  for (const char* key : {"recorded_step_us", "estimated_unprofiled_step_us"})
    CHECK((health[key].is_null() || std::isfinite(health[key].get<double>())));
  CHECK(std::isfinite(health["profiler_host_us_per_step"].get<double>()));
}

TEST_CASE("issue 74 point 6: a load_trace that fails after parsing leaves no handle") {
  TempDir dir;
  write_file(dir.path / "t.json", one_kernel_trace(2));
  mcp::testing::Harness h(rooted(dir));
  h.initialize();
  // The client cancels the call once the parse is done (at the GPU timeline's
  // progress step): the call fails after the trace was registered.
  h.emit = [&h](const json& m) {
    if (m.value("method", std::string()) == "notifications/progress" &&
        m["params"]["progress"].get<double>() >= 0.95)
      h.session->handle({{"jsonrpc", "2.0"},
                         {"method", "notifications/cancelled"},
                         {"params", {{"requestId", 1}}}},
                        [](const json&) {});
  };
  json reply = h.call_tool(1, "load_trace", {{"path", (dir.path / "t.json").string()}},
                           {{"progressToken", "p"}});
  CHECK(reply.is_null());  // a cancelled request gets no reply
  CHECK(h.tool_result(2, "list_traces", json::object())["traces"].empty());
  // The same file loads afterwards, as handle t2 (t1 was given back).
  h.emit = [](const json&) {};
  json again = h.tool_result(3, "load_trace", {{"path", (dir.path / "t.json").string()}});
  json listed = h.tool_result(4, "list_traces", json::object());
  REQUIRE(listed["traces"].size() == 1);
  CHECK(listed["traces"][0]["trace"] == again["trace"]);
}

TEST_CASE("issue 74 point 6: a trace that fails to parse leaves no handle") {
  TempDir dir;
  write_file(dir.path / "bad.json", R"({"traceEvents":[{"ph":"X",)");
  mcp::testing::Harness h(rooted(dir));
  h.initialize();
  CHECK(is_tool_error(h.call_tool(1, "load_trace", {{"path", (dir.path / "bad.json").string()}})));
  CHECK(h.tool_result(2, "list_traces", json::object())["traces"].empty());
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
