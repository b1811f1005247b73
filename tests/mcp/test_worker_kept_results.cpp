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
using jarvis::mcp::ToolContext;
using jarvis::mcp::ToolHandler;
using jarvis::mcp::testing::initialized_session;
using jarvis::mcp::testing::WrappedToolHandler;

// Counts a tool's runs by the lines they append to a file (a worker's
// counter would die with it).
struct CountedTool {
  fs::path runs;
  WrappedToolHandler wrapped;
  CountedTool(std::string tool, fs::path file)
      : runs(std::move(file)),
        wrapped(std::move(tool),
                [this](const json& args, ToolContext& ctx, const ToolHandler& original) {
                  std::ofstream(runs, std::ios::app) << ::getpid() << "\n";
                  return original(args, ctx);
                }) {}
  size_t count() const {
    std::ifstream in(runs);
    size_t n = 0;
    for (std::string line; std::getline(in, line);) ++n;
    return n;
  }
};

json kept_call(const std::shared_ptr<jarvis::mcp::Session>& session, int id,
               const std::string& tool, json args) {
  json reply = jarvis::mcp::testing::session_tool_call(session, id, tool, std::move(args));
  REQUIRE_FALSE(reply.is_null());
  return reply;
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
  auto a = initialized_session(server), b = initialized_session(server);
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
