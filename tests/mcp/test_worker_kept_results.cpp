// A session pays each analysis once (issue 75 point 2): with isolate_calls,
// what a worker returned for a pure analysis of a loaded trace (insights,
// ops_summary, critical_path on a handle) answers the session's next
// identical call without another worker; an unloaded handle does not. The
// analysis itself (insights' findings and plan for an arch) is kept on the
// trace by the worker that derived it, so calls with other arguments, and
// other sessions on the same file, are formatted from it in the server,
// equal to what the tool answers when it derives them. The tool is counted
// by the lines its runs append to a file (a worker's counter would die with
// it).
#include <doctest/doctest.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "mcp/worker_call.h"
#include "mcp_harness.h"

namespace {
namespace JARVIS_TEST_FILE {

namespace fs = std::filesystem;
using jarvis::mcp::json;
using jarvis::mcp::ToolContext;
using jarvis::mcp::ToolHandler;
using jarvis::mcp::testing::analysis_of;
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
  jarvis::mcp::Server server(
      jarvis::mcp::testing::isolated_options((fs::path(JARVIS_SOURCE_DIR) / "examples").string()));
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

  // Another session on the same file is answered from the analysis kept on it.
  json loaded_b = kept_call(b, 1, "load_trace", {{"path", "example_trace.json.gz"}});
  const json from_b =
      kept_call(b, 2, "insights", {{"trace", loaded_b["result"]["structuredContent"]["trace"]}});
  CHECK(counted.count() == 1);
  CHECK(from_b["result"]["structuredContent"]["insights"] ==
        first["result"]["structuredContent"]["insights"]);

  // An unloaded handle is not answered from what it gave.
  kept_call(a, 5, "unload_trace", {{"trace", handle}});
  const json gone = kept_call(a, 6, "insights", {{"trace", handle}});
  CHECK(gone["result"].value("isError", false));
  fs::remove(runs);
}

// The text from its count line on (the trace's notes before it are said in
// full once a session).
std::string text_from_count(const json& reply) {
  const std::string text = reply["result"]["content"][0]["text"].get<std::string>();
  const size_t at = text.find(" insight");
  REQUIRE(at != std::string::npos);
  return text.substr(text.rfind('\n', at) == std::string::npos ? 0 : text.rfind('\n', at) + 1);
}

// `text` (a reply or its JSON) with the reference's handle t1 named `handle`.
std::string with_handle(std::string text, const std::string& handle) {
  const std::pair<std::string, std::string> swaps[] = {
      {"\"trace\":\"t1\"", "\"trace\":\"" + handle + "\""}, {" on t1", " on " + handle}};
  for (const auto& swap : swaps)
    for (size_t at = 0; (at = text.find(swap.first, at)) != std::string::npos;
         at += swap.second.size())
      text.replace(at, swap.first.size(), swap.second);
  return text;
}

TEST_CASE("kept analysis: insights derived once in a worker answer other arguments") {
  const fs::path dir =
      fs::temp_directory_path() / ("jarvis-kept-analysis-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path example = fs::path(JARVIS_SOURCE_DIR) / "examples" / "example_trace.json.gz";
  fs::copy_file(example, dir / "trace.json.gz");
  fs::copy_file(example, dir / "other.json.gz");  // another file: its own analysis
  const fs::path runs = dir / "runs";
  CountedTool counted("insights", runs);
  jarvis::mcp::ServerOptions options;
  options.roots = {dir.string()};
  // The reference: a new server without workers for each call derives the
  // findings in it (a server keeps what its calls derived too).
  const jarvis::mcp::ServerOptions reference_options = options;
  const auto reference_call = [&](json args) {
    jarvis::mcp::Server reference(reference_options);
    auto r = initialized_session(reference);
    const json loaded = kept_call(r, 1, "load_trace", {{"path", "trace.json.gz"}});
    REQUIRE_FALSE(loaded["result"].value("isError", false));
    args["trace"] = loaded["result"]["structuredContent"]["trace"];
    return kept_call(r, 2, "insights", args);
  };
  options.isolate_calls = true;
  jarvis::mcp::Server server(options);
  auto a = initialized_session(server), b = initialized_session(server);
  // b names the same file by another handle: t2.
  kept_call(b, 1, "load_trace", {{"path", "other.json.gz"}});
  const json loaded_a = kept_call(a, 1, "load_trace", {{"path", "trace.json.gz"}});
  const json loaded_b = kept_call(b, 2, "load_trace", {{"path", "trace.json.gz"}});
  const std::string ha = loaded_a["result"]["structuredContent"]["trace"].get<std::string>();
  const std::string hb = loaded_b["result"]["structuredContent"]["trace"].get<std::string>();
  REQUIRE(ha != hb);

  // The first call derives the analysis in its worker.
  const json first = kept_call(a, 2, "insights", {{"trace", ha}, {"detail", "summary"}});
  REQUIRE_FALSE(first["result"].value("isError", false));
  CHECK(counted.count() == 1);
  const json all = reference_call({{"detail", "full"}});
  REQUIRE(all["result"]["structuredContent"]["insights"].size() >= 2);
  const std::string rule =
      all["result"]["structuredContent"]["insights"][1]["rule"].get<std::string>();

  int id = 10;
  for (json args : {json{{"detail", "full"}}, json{{"rule", rule}}, json{{"limit", 2}},
                    json{{"detail", "summary"}}, json::object()}) {
    CAPTURE(args.dump());
    json asked = args;
    asked["trace"] = hb;
    const size_t before = counted.count();
    const json kept = kept_call(b, ++id, "insights", asked);
    const json expected = reference_call(args);
    // Only the reference derived it: session b's call was formatted in the server.
    CHECK(counted.count() == before + 1);
    REQUIRE_FALSE(kept["result"].value("isError", false));
    // The reference's handle is t1, b's t2: in the rows' what_if, the next
    // calls and the text. The trace's notes are said in full once a session.
    const json got = analysis_of(kept);
    json want = json::parse(with_handle(expected["result"]["structuredContent"].dump(), hb));
    CHECK(got["trace"] == hb);
    want.erase("trace_caveats");
    CHECK(got == want);
    CHECK(text_from_count(kept) == with_handle(text_from_count(expected), hb));
    if (args.contains("rule"))
      for (const json& row : got["insights"]) CHECK(row["rule"] == rule);
  }
  CHECK(counted.count() == 1 + 1 + 5 * 1);
  fs::remove_all(dir);
}

TEST_CASE("kept analysis: ops_summary derives it once for insights, and the reverse") {
  const fs::path dir =
      fs::temp_directory_path() / ("jarvis-kept-shared-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(fs::path(JARVIS_SOURCE_DIR) / "examples" / "example_trace.json.gz",
                dir / "trace.json.gz");
  CountedTool counted("insights", dir / "runs");
  jarvis::mcp::ServerOptions options;
  options.roots = {dir.string()};
  // The reference: a server without workers, insights first.
  jarvis::mcp::Server reference(options);
  auto r = initialized_session(reference);
  kept_call(r, 1, "load_trace", {{"path", "trace.json.gz"}});
  const json all = kept_call(r, 2, "insights", {{"trace", "t1"}, {"detail", "full"}});
  const json reference_ops = kept_call(r, 3, "ops_summary", {{"trace", "t1"}});
  const size_t by_reference = counted.count();
  CHECK(by_reference == 1);

  options.isolate_calls = true;
  jarvis::mcp::Server server(options);
  auto a = initialized_session(server);
  kept_call(a, 1, "load_trace", {{"path", "trace.json.gz"}});
  // ops_summary first: its worker derives the analysis and keeps it.
  const json ops = kept_call(a, 2, "ops_summary", {{"trace", "t1"}});
  REQUIRE_FALSE(ops["result"].value("isError", false));
  const json& top = ops["result"]["structuredContent"]["insights"];
  CHECK(top == reference_ops["result"]["structuredContent"]["insights"]);
  // Its top insights are the first five findings of insights, in short form.
  const json& rows = all["result"]["structuredContent"]["insights"];
  REQUIRE(top.size() == std::min<size_t>(5, rows.size()));
  for (size_t k = 0; k < top.size(); ++k) {
    CHECK(top[k]["rule"] == rows[k]["rule"]);
    CHECK(top[k]["title"] == rows[k]["title"]);
    CHECK(top[k]["step_saving_us_per_step"] == rows[k]["step_saving_us_per_step"]);
  }
  // insights is then answered from it: its handler runs in no worker.
  const json insights = kept_call(a, 3, "insights", {{"trace", "t1"}, {"detail", "full"}});
  CHECK(counted.count() == by_reference);
  CHECK(analysis_of(insights) == analysis_of(all));
  fs::remove_all(dir);
}

// query_sql's handler, with a large value kept on the trace by the first
// call (sent by its worker after its answer) and looked for by the next: each
// run appends "<its pid> <the kept value's size, or none>" to a file.
struct KeepingTool {
  static constexpr size_t kBytes = size_t{32} << 20;
  static constexpr const char* kKey = "test:kept_after_answer";
  fs::path runs;
  WrappedToolHandler wrapped;
  explicit KeepingTool(fs::path file)
      : runs(std::move(file)),
        wrapped(
            "query_sql", [this](const json& args, ToolContext& ctx, const ToolHandler& original) {
              auto trace = ctx.traces().get(args.at("trace").get<std::string>());
              if (!trace) return original(args, ctx);  // its own error
              const auto found = ctx.kept(*trace, kKey);
              std::ofstream(runs, std::ios::app)
                  << ::getpid() << " "
                  << (found ? std::to_string(found->get_ref<const std::string&>().size()) : "none")
                  << "\n";
              if (!found)
                ctx.keep(*trace, kKey, std::make_shared<const json>(std::string(kBytes, 'k')));
              return original(args, ctx);
            }) {}
  std::vector<std::pair<long, std::string>> lines() const {
    std::vector<std::pair<long, std::string>> out;
    std::ifstream in(runs);
    long pid = 0;
    for (std::string kept; in >> pid >> kept;) out.emplace_back(pid, kept);
    return out;
  }
};

// A server on examples/ with the example trace loaded and query_sql called
// once (its worker sends KeepingTool's value after its answer).
struct AnsweredOnce {
  jarvis::mcp::Server server{
      jarvis::mcp::testing::isolated_options((fs::path(JARVIS_SOURCE_DIR) / "examples").string())};
  std::shared_ptr<jarvis::mcp::Session> session = initialized_session(server);
  json first;
  AnsweredOnce() {
    kept_call(session, 1, "load_trace", {{"path", "example_trace.json.gz"}});
    first = kept_call(session, 2, "query_sql", {{"trace", "t1"}, {"sql", "SELECT 1 AS x"}});
  }
};

TEST_CASE(
    "kept values: a call is answered before its worker's kept value has come, and the next "
    "call waits for it") {
  const fs::path runs =
      fs::temp_directory_path() / ("jarvis-kept-after-" + std::to_string(::getpid()));
  // The worker encodes and sends 32 MB after its answer: at the answer the
  // value is still on its way (else the call waited for it). Three tries,
  // each with a new server, so that one long pause of this thread (a loaded
  // machine) cannot fail the test; a call that waits fails all three.
  bool pending_at_answer = false;
  for (int attempt = 0; attempt < 3 && !pending_at_answer; ++attempt) {
    fs::remove(runs);
    KeepingTool keeping(runs);
    AnsweredOnce answered;
    pending_at_answer = !jarvis::mcp::wait_for_kept_values(answered.server.trace_cache(),
                                                           std::chrono::milliseconds(0));
    const json& first = answered.first;
    CHECK_FALSE(first["result"].value("isError", false));
    CHECK(first["result"]["structuredContent"]["rows"] == json::array({json::array({1})}));
    // The next call's worker forks once the value is in place, and reads it.
    const json second =
        kept_call(answered.session, 3, "query_sql", {{"trace", "t1"}, {"sql", "SELECT 2 AS x"}});
    CHECK_FALSE(second["result"].value("isError", false));
    const auto lines = keeping.lines();
    REQUIRE(lines.size() == 2);
    CHECK(lines[0].second == "none");
    CHECK(lines[1].second == std::to_string(KeepingTool::kBytes));
    CHECK(lines[0].first != lines[1].first);  // two workers
    CHECK(
        jarvis::mcp::wait_for_kept_values(answered.server.trace_cache(), std::chrono::seconds(10)));
  }
  CHECK(pending_at_answer);
  fs::remove(runs);
}

TEST_CASE("kept values: a server ended while a worker still sends one ends that worker first") {
  const fs::path runs =
      fs::temp_directory_path() / ("jarvis-kept-abandoned-" + std::to_string(::getpid()));
  fs::remove(runs);
  KeepingTool keeping(runs);
  {
    AnsweredOnce answered;
    CHECK_FALSE(answered.first["result"].value("isError", false));
    answered.session.reset();
  }  // the server and its cache end here, the reader of the kept value before them
  const auto lines = keeping.lines();
  REQUIRE(lines.size() == 1);
  // The worker has been reaped: its pid names no process of ours.
  errno = 0;
  CHECK(::kill(static_cast<pid_t>(lines[0].first), 0) == -1);
  CHECK(errno == ESRCH);
  fs::remove(runs);
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
