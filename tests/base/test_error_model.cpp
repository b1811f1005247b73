// The one error model (base/error.h): every kind's CLI exit code and MCP
// isError result, and the kinds the engine's own exception types carry.
#include <doctest/doctest.h>

#include <cerrno>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/error.h"
#include "mcp/tool.h"
#include "mcp_harness.h"
#include "perf/perf_model.h"
#include "pycompat/literal.h"
#include "trace/trace.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using namespace jarvis;
using jarvis::mcp::json;

namespace {

const ErrorKind kKinds[] = {ErrorKind::InvalidInput, ErrorKind::NotFound, ErrorKind::Unsupported,
                            ErrorKind::Cancelled, ErrorKind::Internal};

std::string kind_of_reply(const json& reply) {
  REQUIRE(reply.contains("result"));
  const json& result = reply["result"];
  REQUIRE(result.value("isError", false));
  return result["_meta"][mcp::kMetaErrorKind].get<std::string>();
}

}  // namespace

TEST_SUITE("error_model") {
  TEST_CASE("kind names are stable") {
    CHECK(std::string(error_kind_name(ErrorKind::InvalidInput)) == "invalid_input");
    CHECK(std::string(error_kind_name(ErrorKind::NotFound)) == "not_found");
    CHECK(std::string(error_kind_name(ErrorKind::Unsupported)) == "unsupported");
    CHECK(std::string(error_kind_name(ErrorKind::Cancelled)) == "cancelled");
    CHECK(std::string(error_kind_name(ErrorKind::Internal)) == "internal");
  }

  TEST_CASE("CLI exit codes: every failed run exits 1, a usage error 2 (docs/cli.md)") {
    for (ErrorKind kind : kKinds) {
      std::string name = error_kind_name(kind);
      CAPTURE(name);
      CHECK(cli_exit_code(Error(kind, "x")) == kExitFailure);
    }
    CHECK(kExitFailure == 1);
    CHECK(kExitUsage == 2);
    CHECK(cli_exit_code(UsageError("--svg-dir needs --html")) == 2);
    CHECK(cli_exit_code(std::runtime_error("cannot read x")) == 1);
    CHECK(cli_exit_code(std::out_of_range("vector")) == 1);
  }

  TEST_CASE("the engine's exceptions carry their kind") {
    CHECK(error_kind_of(TraceError("bad JSON")) == ErrorKind::InvalidInput);
    CHECK(error_kind_of(cannot_open("/nonexistent/t.json", ENOENT)) == ErrorKind::NotFound);
    CHECK(error_kind_of(cannot_open("/root/t.json", EACCES)) == ErrorKind::InvalidInput);
    CHECK(error_kind_of(perf::PerfNotImplemented("aten::foo")) == ErrorKind::Unsupported);
    CHECK(error_kind_of(perf::PerfModelError("bad arg")) == ErrorKind::InvalidInput);
    CHECK(error_kind_of(mcp::ToolError("cancelled", ErrorKind::Cancelled)) == ErrorKind::Cancelled);
    CHECK(error_kind_of(UsageError("x")) == ErrorKind::InvalidInput);
    // Not a jarvis::Error: the engine's older input errors and broken invariants.
    CHECK(error_kind_of(std::runtime_error("cannot read x")) == ErrorKind::InvalidInput);
    CHECK(error_kind_of(std::invalid_argument("bad category name")) == ErrorKind::InvalidInput);
    CHECK(error_kind_of(std::out_of_range("vector")) == ErrorKind::Internal);
    CHECK_THROWS_AS(pycompat::parse_py_literal("[1,"), Error);
    // Still std::runtime_error: old catch sites keep working.
    CHECK_THROWS_AS(throw TraceError("x"), std::runtime_error);
  }

  TEST_CASE("MCP: a failed tool is an isError result naming the kind") {
    for (ErrorKind kind : kKinds) {
      json r = mcp::tool_error_result(Error(kind, "what went wrong"));
      std::string name = error_kind_name(kind);
      CAPTURE(name);
      CHECK(r["isError"] == true);
      CHECK(r["content"][0]["type"] == "text");
      CHECK(r["content"][0]["text"] == "what went wrong");
      CHECK(r["_meta"][mcp::kMetaErrorKind] == name);
      CHECK_FALSE(r.contains("structuredContent"));
    }
    CHECK(mcp::tool_error_result(std::out_of_range("vector"))["_meta"][mcp::kMetaErrorKind] ==
          "internal");
  }

  TEST_CASE("MCP: tool calls fail with the kind of what went wrong") {
    mcp::ServerOptions options;
    options.roots = {std::string(JARVIS_SOURCE_DIR) + "/tests"};
    mcp::testing::Harness h(options);
    h.initialize();
    // Schema-invalid arguments: invalid input.
    CHECK(kind_of_reply(h.call_tool(1, "ops_summary", {{"top_n", "three"}})) == "invalid_input");
    // An unknown handle and a missing file: not found.
    CHECK(kind_of_reply(h.call_tool(2, "ops_summary", {{"trace", "t_nope"}})) == "not_found");
    CHECK(kind_of_reply(h.call_tool(3, "load_trace",
                                    {{"path", std::string(JARVIS_SOURCE_DIR) +
                                                  "/tests/no_such_trace.json"}})) == "not_found");
    // A malformed trace: invalid input.
    CHECK(kind_of_reply(h.call_tool(4, "load_trace",
                                    {{"path", std::string(JARVIS_SOURCE_DIR) +
                                                  "/tests/malformed/missing_comma.json"}})) ==
          "invalid_input");
    // An op-level tool on a rocprofv3 kernel trace (no CPU op tree): unsupported.
    json loaded = h.tool_result(
        5, "load_trace", {{"path", std::string(JARVIS_SOURCE_DIR) + "/tests/rocprof/csv_908"}});
    std::string handle = loaded["trace"];
    CHECK(kind_of_reply(h.call_tool(6, "insights", {{"trace", handle}})) == "unsupported");
    // A protocol fault stays a JSON-RPC error, not a tool result.
    json unknown_tool = h.call_tool(7, "no_such_tool", json::object());
    CHECK(unknown_tool.contains("error"));
    CHECK_FALSE(unknown_tool.contains("result"));
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
