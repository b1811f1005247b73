// Issue 60 point 3: one bad call must not end the server for everyone. With
// isolate_calls, an analysis runs in a worker process forked for the call;
// a fault there (raised here by a handler only this test binary installs)
// becomes that call's tool error while the other sessions keep their
// handles and answers.
#include <doctest/doctest.h>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "mcp_harness.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace fs = std::filesystem;
using jarvis::mcp::json;
using jarvis::mcp::ServerOptions;
using jarvis::mcp::ToolContext;
using jarvis::mcp::ToolHandler;
using jarvis::mcp::testing::analysis_of;
using jarvis::mcp::testing::isolated_options;

namespace {

std::atomic<bool> crash_next_call{false};

// Wraps a registered tool's handler for the life of the object: while
// crash_next_call is set, the handler dies of SIGSEGV (raised, so the
// sanitizer build sees the same signal as the release build).
struct CrashingTool {
  jarvis::mcp::testing::WrappedToolHandler wrapped;
  explicit CrashingTool(std::string tool)
      : wrapped(std::move(tool),
                [](const json& args, ToolContext& ctx, const ToolHandler& original) {
                  if (crash_next_call.load()) {
                    // The fault as a release build meets it: no test framework's handler.
                    ::signal(SIGSEGV, SIG_DFL);
                    ::raise(SIGSEGV);
                  }
                  return original(args, ctx);
                }) {}
};

fs::path example_dir() {
  return fs::path(JARVIS_SOURCE_DIR) / "examples";
}

json call(const std::shared_ptr<jarvis::mcp::Session>& session, int id, const std::string& tool,
          json args) {
  json reply = jarvis::mcp::testing::session_tool_call(session, id, tool, std::move(args));
  REQUIRE_FALSE(reply.is_null());
  return reply;
}

void initialized(jarvis::mcp::Server& server, std::shared_ptr<jarvis::mcp::Session>& session) {
  session = jarvis::mcp::testing::initialized_session(server);
}

std::string loaded_handle(const std::shared_ptr<jarvis::mcp::Session>& session, int id) {
  json reply = call(session, id, "load_trace", {{"path", "example_trace.json.gz"}});
  REQUIRE_FALSE(reply["result"].value("isError", false));
  return reply["result"]["structuredContent"]["trace"].get<std::string>();
}

}  // namespace

TEST_CASE("worker isolation: a crash in one session's call is that call's error only") {
  CrashingTool crashing("ops_summary");  // before the server joins handlers and schemas
  jarvis::mcp::Server server(isolated_options(example_dir().string()));
  std::shared_ptr<jarvis::mcp::Session> a, b;
  initialized(server, a);
  initialized(server, b);
  const std::string handle_a = loaded_handle(a, 1), handle_b = loaded_handle(b, 1);

  const json before = call(a, 2, "ops_summary", {{"trace", handle_a}});
  REQUIRE_FALSE(before["result"].value("isError", false));

  crash_next_call = true;
  const json crashed = call(b, 3, "ops_summary", {{"trace", handle_b}});
  crash_next_call = false;
  REQUIRE(crashed.contains("result"));  // a tool error, not a protocol fault
  CHECK(crashed["result"].value("isError", false));
  const std::string message = crashed["result"]["content"][0]["text"].get<std::string>();
  CHECK(message.find("ops_summary crashed") != std::string::npos);
  CHECK(message.find("SIGSEGV") != std::string::npos);
  CHECK(crashed["result"]["_meta"]["jarvis/errorKind"] == "internal");

  // The other session answers as before, the crashed session keeps its
  // handle, and the server still lists its tools.
  const json after_a = call(a, 4, "ops_summary", {{"trace", handle_a}});
  REQUIRE_FALSE(after_a["result"].value("isError", false));
  CHECK(analysis_of(after_a) == analysis_of(before));
  const json after_b = call(b, 5, "ops_summary", {{"trace", handle_b}});
  REQUIRE_FALSE(after_b["result"].value("isError", false));
  CHECK(analysis_of(after_b) == analysis_of(before));
  jarvis::mcp::Emit ignore = [](const json&) {};
  auto listed = a->handle({{"jsonrpc", "2.0"}, {"id", 6}, {"method", "tools/list"}}, ignore);
  REQUIRE(listed);
  CHECK((*listed)["result"]["tools"].size() == server.tools().size());
  const json traces = call(b, 7, "list_traces", json::object());
  CHECK(traces["result"]["structuredContent"].dump().find(handle_b) != std::string::npos);
}

TEST_CASE("worker isolation: results, tool errors and written files come back from the worker") {
  const fs::path dir =
      fs::temp_directory_path() / fs::path("jarvis-worker-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(example_dir() / "example_trace.json.gz", dir / "example_trace.json.gz");

  ServerOptions plain = isolated_options(dir.string());
  plain.isolate_calls = false;
  jarvis::mcp::Server reference(plain), isolated(isolated_options(dir.string()));
  std::shared_ptr<jarvis::mcp::Session> in_server, in_worker;  // go before their servers
  initialized(reference, in_server);
  initialized(isolated, in_worker);
  const std::string h1 = loaded_handle(in_server, 1), h2 = loaded_handle(in_worker, 1);

  // The same answer whether the call ran in the server or in a worker.
  for (const char* tool : {"ops_summary", "insights", "critical_path"}) {
    CAPTURE(tool);
    // critical_path reads trace files (one per rank), not handles.
    const bool files = std::string(tool) == "critical_path";
    const json here =
        call(in_server, 2, tool,
             files ? json{{"traces", {"example_trace.json.gz"}}} : json{{"trace", h1}});
    const json there =
        call(in_worker, 2, tool,
             files ? json{{"traces", {"example_trace.json.gz"}}} : json{{"trace", h2}});
    REQUIRE_MESSAGE(!there["result"].value("isError", false), there.dump().substr(0, 600));
    CHECK(there["result"]["structuredContent"] == here["result"]["structuredContent"]);
    CHECK(there["result"]["content"] == here["result"]["content"]);
  }

  // A tool error raised in the worker keeps its message and kind.
  const json missing = call(in_worker, 3, "ops_summary", {{"trace", "t99"}});
  CHECK(missing["result"].value("isError", false));
  CHECK(missing["result"]["content"][0]["text"] ==
        call(in_server, 3, "ops_summary", {{"trace", "t99"}})["result"]["content"][0]["text"]);
  CHECK(missing["result"]["_meta"] ==
        call(in_server, 3, "ops_summary", {{"trace", "t99"}})["result"]["_meta"]);

  // A file a worker wrote counts as this server's: the next call may replace
  // it without overwrite, as after a call run in the server.
  const json args = {{"trace", h2}, {"output", (dir / "report.html").string()}};
  const json first = call(in_worker, 4, "render_report", args);
  REQUIRE_FALSE(first["result"].value("isError", false));
  CHECK(fs::exists(dir / "report.html"));
  const json second = call(in_worker, 5, "render_report", args);
  CHECK_FALSE(second["result"].value("isError", false));
  fs::remove_all(dir);
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
