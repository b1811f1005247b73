// A session pays each analysis once (issue 75 point 2): with isolate_calls,
// what a worker returned for a pure analysis of a loaded trace (insights,
// ops_summary, critical_path on a handle) answers the session's next
// identical call without another worker; other arguments, another session
// or an unloaded handle run the tool again. The tool is counted by the lines
// its runs append to a file (a worker's counter would die with it).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "mcp_harness.h"

namespace {
namespace JARVIS_TEST_FILE {

namespace fs = std::filesystem;
using jarvis::mcp::json;
using jarvis::mcp::registered_tool_handlers;
using jarvis::mcp::ToolContext;
using jarvis::mcp::ToolHandler;

struct CountedTool {
  std::string name;
  fs::path runs;
  ToolHandler original;
  CountedTool(std::string tool, fs::path file) : name(std::move(tool)), runs(std::move(file)) {
    original = registered_tool_handlers().at(name);
    registered_tool_handlers()[name] = [this](const json& args, ToolContext& ctx) {
      std::ofstream(runs, std::ios::app) << ::getpid() << "\n";
      return original(args, ctx);
    };
  }
  ~CountedTool() { registered_tool_handlers()[name] = original; }
  size_t count() const {
    std::ifstream in(runs);
    size_t n = 0;
    for (std::string line; std::getline(in, line);) ++n;
    return n;
  }
};

json kept_call(const std::shared_ptr<jarvis::mcp::Session>& session, int id,
               const std::string& tool, json args) {
  jarvis::mcp::Emit ignore = [](const json&) {};
  auto reply = session->handle({{"jsonrpc", "2.0"},
                                {"id", id},
                                {"method", "tools/call"},
                                {"params", {{"name", tool}, {"arguments", std::move(args)}}}},
                               ignore);
  REQUIRE(reply);
  return *reply;
}

std::shared_ptr<jarvis::mcp::Session> kept_session(jarvis::mcp::Server& server) {
  auto session = server.new_session();
  jarvis::mcp::Emit ignore = [](const json&) {};
  session->handle({{"jsonrpc", "2.0"},
                   {"id", 0},
                   {"method", "initialize"},
                   {"params",
                    {{"protocolVersion", "2025-11-25"},
                     {"capabilities", json::object()},
                     {"clientInfo", {{"name", "test"}, {"version", "0"}}}}}},
                  ignore);
  session->handle({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}, ignore);
  return session;
}

TEST_CASE("kept results: a worker's insights answer the session's next identical call") {
  const fs::path runs =
      fs::temp_directory_path() / ("jarvis-kept-results-" + std::to_string(::getpid()));
  fs::remove(runs);
  CountedTool counted("insights", runs);  // before the server joins handlers and schemas
  jarvis::mcp::ServerOptions options;
  options.roots = {(fs::path(JARVIS_SOURCE_DIR) / "examples").string()};
  options.isolate_calls = true;
  jarvis::mcp::Server server(options);
  auto a = kept_session(server), b = kept_session(server);
  json loaded = kept_call(a, 1, "load_trace", {{"path", "example_trace.json.gz"}});
  REQUIRE_FALSE(loaded["result"].value("isError", false));
  const std::string handle = loaded["result"]["structuredContent"]["trace"].get<std::string>();

  const json first = kept_call(a, 2, "insights", {{"trace", handle}});
  REQUIRE_FALSE(first["result"].value("isError", false));
  CHECK(counted.count() == 1);
  const json again = kept_call(a, 3, "insights", {{"trace", handle}});
  CHECK(counted.count() == 1);  // no worker ran it again
  CHECK(again["result"]["structuredContent"]["insights"] ==
        first["result"]["structuredContent"]["insights"]);
  // The text but its first line (the trace's notes: in full once a session,
  // then referred to, as for any call).
  const auto after_notes = [](const json& reply) {
    const std::string text = reply["result"]["content"][0]["text"].get<std::string>();
    return text.substr(text.find('\n'));
  };
  CHECK(after_notes(again) == after_notes(first));

  // Other arguments run the tool; so does another session.
  kept_call(a, 4, "insights", {{"trace", handle}, {"detail", "full"}});
  CHECK(counted.count() == 2);
  json loaded_b = kept_call(b, 1, "load_trace", {{"path", "example_trace.json.gz"}});
  kept_call(b, 2, "insights", {{"trace", loaded_b["result"]["structuredContent"]["trace"]}});
  CHECK(counted.count() == 3);

  // An unloaded handle is not answered from what it gave.
  kept_call(a, 5, "unload_trace", {{"trace", handle}});
  const json gone = kept_call(a, 6, "insights", {{"trace", handle}});
  CHECK(gone["result"].value("isError", false));
  fs::remove(runs);
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
