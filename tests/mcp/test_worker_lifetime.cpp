// Issue 74: forked workers end with their server and at their time limit.
// Point 3: before, a worker running a 60 s query was alive 20 s after its
// server was SIGKILLed, and a SIGTERM'd HTTP server waited for its calls
// (15 s and more); these tests run the jarvis binary, start a query that
// runs until its 60 s limit in a worker, stop the server, and look for the
// worker in /proc. Points 1 and 2: a query stuck inside one step (here a
// handler only this test binary installs, which sleeps) ends at its
// timeout_ms with a tool error, and a cancel frees a stdio server's only
// request thread, with calls isolated or not.
#include <doctest/doctest.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "base/forked_call.h"
#include "child_process.h"
#include "http_live.h"
#include "mcp/transport.h"
#include "worker_process.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using Clock = std::chrono::steady_clock;
using jarvis::mcp::json;
using jarvis::mcp::registered_tool_handlers;
using jarvis::mcp::ToolContext;
using jarvis::mcp::ToolHandler;
using jarvis::testing::Child;
using namespace jarvis::mcp::testing;

const std::string kExamples = std::string(JARVIS_SOURCE_DIR) + "/examples";
const std::string kTrace = kExamples + "/example_trace.json.gz";

json initialize_request() {
  return rpc_request(1, "initialize",
                     {{"protocolVersion", "2025-11-25"},
                      {"capabilities", json::object()},
                      {"clientInfo", {{"name", "t"}, {"version", "0"}}}});
}

// The first child process of `pid` to appear within `limit`, or 0.
pid_t wait_for_child(pid_t pid, std::chrono::milliseconds limit) {
  for (const auto start = Clock::now(); Clock::now() - start < limit;) {
    if (auto kids = children_of(pid); !kids.empty()) return kids.front();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return 0;
}

// Gone: no such process, or a zombie waiting for whoever adopted it.
bool process_gone(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return true;
  const size_t close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'Z';
}

bool gone_within(pid_t pid, std::chrono::milliseconds limit) {
  for (const auto start = Clock::now(); Clock::now() - start < limit;) {
    if (process_gone(pid)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return process_gone(pid);
}

// Kills what a failed check left running (a worker whose query runs 60 s).
struct KillAtEnd {
  pid_t pid = 0;
  ~KillAtEnd() {
    if (pid > 0 && !process_gone(pid)) ::kill(pid, SIGKILL);
  }
};

// A stdio server with a loaded trace, its query_sql running in a worker.
struct StdioServerWithQuery {
  Child server{{JARVIS_BINARY, "serve", "--stdio", "--isolate-calls", "on", "--root", kExamples}};
  pid_t worker = 0;
  StdioServerWithQuery() {
    server.send(initialize_request().dump());
    REQUIRE(server.read_line() != "");
    server.send(tool_request(2, "load_trace", {{"path", kTrace}}).dump());
    const json loaded = json::parse(server.read_line());
    const std::string handle = loaded["result"]["structuredContent"]["trace"];
    server.send(tool_request(3, "query_sql",
                             {{"trace", handle}, {"sql", kEndlessSql}, {"timeout_ms", 60000}})
                    .dump());
    worker = wait_for_child(server.pid(), std::chrono::seconds(10));
    REQUIRE(worker > 0);
  }
};

// While alive, query_sql with the SQL "stuck" declares its time limit and
// then sleeps 20 s where no check of the limit or of a cancel reaches it, as
// trim() over a long value did inside SQLite.
struct StuckQuery {
  ToolHandler original = registered_tool_handlers().at("query_sql");
  StuckQuery() {
    registered_tool_handlers()["query_sql"] = [this](const json& args, ToolContext& ctx) {
      if (args.value("sql", std::string()) != "stuck") return original(args, ctx);
      ctx.start_time_limit(args.at("timeout_ms").get<int64_t>());
      std::this_thread::sleep_for(std::chrono::seconds(20));
      return original(json{{"trace", args.at("trace")}, {"sql", "SELECT 1"}, {"timeout_ms", 1000}},
                      ctx);
    };
  }
  ~StuckQuery() { registered_tool_handlers()["query_sql"] = original; }
};

jarvis::mcp::ServerOptions example_options(bool isolate_calls) {
  jarvis::mcp::ServerOptions options;
  options.roots = {kExamples};
  options.isolate_calls = isolate_calls;
  return options;
}

// A stdio server in this process on two pipes, one request thread (the
// default of `jarvis serve --stdio`).
struct InProcessStdio {
  jarvis::mcp::Server server;
  int to_server[2], from_server[2];
  std::thread thread;
  std::string buffer;
  explicit InProcessStdio(jarvis::mcp::ServerOptions options) : server(std::move(options)) {
    REQUIRE(::pipe(to_server) == 0);
    REQUIRE(::pipe(from_server) == 0);
    thread = std::thread([this] {
      jarvis::mcp::serve_stdio(server, to_server[0], from_server[1], 1);
      ::close(from_server[1]);
    });
  }
  ~InProcessStdio() {
    ::close(to_server[1]);  // EOF: the server finishes its calls and returns
    thread.join();
    ::close(to_server[0]);
    ::close(from_server[0]);
  }
  void send(const json& message) {
    const std::string line = message.dump() + "\n";
    REQUIRE(::write(to_server[1], line.data(), line.size()) == static_cast<ssize_t>(line.size()));
  }
  // The next line within `limit`, parsed; null when none came.
  json next(std::chrono::milliseconds limit) {
    const auto deadline = Clock::now() + limit;
    for (;;) {
      if (size_t nl = buffer.find('\n'); nl != std::string::npos) {
        json line = json::parse(buffer.substr(0, nl));
        buffer.erase(0, nl + 1);
        return line;
      }
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      pollfd p{from_server[0], POLLIN, 0};
      if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) <= 0) return nullptr;
      char chunk[65536];
      const ssize_t n = ::read(from_server[0], chunk, sizeof chunk);
      if (n <= 0) return nullptr;
      buffer.append(chunk, static_cast<size_t>(n));
    }
  }
};

TEST_SUITE("mcp_security") {
  TEST_CASE("issue 74 point 1: call_forked returns, rethrows, and kills at the time limit") {
    CHECK(jarvis::call_forked([] { return std::string("four"); }, 1000, "t") == "four");
    try {
      jarvis::call_forked(
          []() -> std::string { throw jarvis::Error(jarvis::ErrorKind::NotFound, "no such op"); },
          1000, "t");
      FAIL("no exception");
    } catch (const jarvis::Error& e) {
      CHECK(std::string(e.what()) == "no such op");
      CHECK(e.kind() == jarvis::ErrorKind::NotFound);
    }
    const auto start = Clock::now();
    CHECK_THROWS_AS(jarvis::call_forked(
                        [] {
                          std::this_thread::sleep_for(std::chrono::seconds(20));
                          return std::string();
                        },
                        200, "the query"),
                    jarvis::TimeLimitKilled);
    CHECK(Clock::now() - start < std::chrono::milliseconds(200) + jarvis::kTimeLimitGrace +
                                     std::chrono::milliseconds(1000));
  }

  TEST_CASE("issue 74 point 2: a query stuck in one step ends at its timeout_ms as a tool error") {
    StuckQuery stuck;  // before the servers join handlers and schemas
    for (bool isolate : {false, true}) {
      CAPTURE(isolate);
      Harness h(example_options(isolate));
      h.initialize();
      const std::string handle = h.tool_result(1, "load_trace", {{"path", kTrace}})["trace"];
      const auto start = Clock::now();
      const json reply =
          h.call_tool(2, "query_sql", {{"trace", handle}, {"sql", "stuck"}, {"timeout_ms", 300}});
      CHECK(Clock::now() - start < std::chrono::seconds(3));
      REQUIRE(reply.contains("result"));
      CHECK(reply["result"].value("isError", false));
      CHECK(reply["result"]["_meta"]["jarvis/errorKind"] == "cancelled");
      const std::string text = reply["result"]["content"][0]["text"];
      CHECK(text.find("query_sql ran past its time limit (300 ms)") != std::string::npos);
      // The session goes on: its handle still answers.
      CHECK(h.tool_result(3, "query_sql", {{"trace", handle}, {"sql", "SELECT 7"}})["rows"][0][0] ==
            7);
    }
  }

  TEST_CASE("issue 74 point 2: over stdio a cancel frees the request thread for the next call") {
    StuckQuery stuck;
    InProcessStdio s(example_options(false));  // `jarvis serve --stdio`'s defaults
    s.send(initialize_request());
    REQUIRE(!s.next(std::chrono::seconds(10)).is_null());
    s.send(tool_request(2, "load_trace", {{"path", kTrace}}));
    const json loaded = s.next(std::chrono::seconds(20));
    const std::string handle = loaded["result"]["structuredContent"]["trace"];
    s.send(
        tool_request(3, "query_sql", {{"trace", handle}, {"sql", "stuck"}, {"timeout_ms", 60000}}));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    s.send({{"jsonrpc", "2.0"},
            {"method", "notifications/cancelled"},
            {"params", {{"requestId", 3}, {"reason", "test"}}}});
    s.send(tool_request(4, "list_traces", json::object()));
    const json next = s.next(std::chrono::seconds(3));  // the cancelled call gets no reply
    REQUIRE_FALSE(next.is_null());
    CHECK(next["id"] == 4);
    CHECK(next["result"]["structuredContent"].dump().find(handle) != std::string::npos);
  }

  TEST_CASE("issue 74 over stdio: timeout_ms holds, and quick requests pass a long call") {
    // The long-call cap of the HTTP server keeps threads free for initialize,
    // ping, tools/list, prompts/* and the quick tools; over stdio (one
    // request thread by default) they run on a lane of their own instead of
    // queueing behind the call.
    StuckQuery stuck;
    InProcessStdio s(example_options(false));  // `jarvis serve --stdio`'s defaults
    s.send(initialize_request());
    REQUIRE(!s.next(std::chrono::seconds(10)).is_null());
    s.send(tool_request(2, "load_trace", {{"path", kTrace}}));
    const json loaded = s.next(std::chrono::seconds(20));
    const std::string handle = loaded["result"]["structuredContent"]["trace"];
    // A call stuck in one step ends at its timeout_ms, as over HTTP.
    auto start = Clock::now();
    s.send(
        tool_request(3, "query_sql", {{"trace", handle}, {"sql", "stuck"}, {"timeout_ms", 300}}));
    const json timed_out = s.next(std::chrono::seconds(5));
    REQUIRE_FALSE(timed_out.is_null());
    CHECK(timed_out["id"] == 3);
    CHECK(timed_out["result"]["_meta"]["jarvis/errorKind"] == "cancelled");
    CHECK(Clock::now() - start < std::chrono::seconds(3));
    // While a long call holds the only request thread (20 s), the requests
    // that read no session state are answered at once, in the order sent.
    s.send(
        tool_request(4, "query_sql", {{"trace", handle}, {"sql", "stuck"}, {"timeout_ms", 60000}}));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    start = Clock::now();
    s.send(rpc_request(5, "tools/list", json::object()));
    s.send(rpc_request(6, "prompts/list", json::object()));
    s.send(tool_request(7, "tool_schema", {{"tool", "query_sql"}}));
    for (int id : {5, 6, 7}) {
      const json reply = s.next(std::chrono::seconds(3));
      CAPTURE(id);
      REQUIRE_FALSE(reply.is_null());
      CHECK(reply["id"] == id);
      CHECK(reply.contains("result"));
    }
    CHECK(Clock::now() - start < std::chrono::seconds(3));
    s.send({{"jsonrpc", "2.0"},
            {"method", "notifications/cancelled"},
            {"params", {{"requestId", 4}, {"reason", "test"}}}});
    // list_traces keeps arrival order (it reads the session's handles): it
    // runs once the cancelled call has freed the thread.
    s.send(tool_request(9, "list_traces", json::object()));
    const json after = s.next(std::chrono::seconds(3));  // the cancelled call gets no reply
    REQUIRE_FALSE(after.is_null());
    CHECK(after["id"] == 9);
  }

  TEST_CASE("issue 74 point 3: a worker dies within seconds of its server's SIGKILL") {
    StdioServerWithQuery s;
    KillAtEnd cleanup{s.worker};
    CHECK_FALSE(process_gone(s.worker));
    REQUIRE(::kill(s.server.pid(), SIGKILL) == 0);
    CHECK(gone_within(s.worker, std::chrono::seconds(2)));
    s.server.wait_exit();
  }

  TEST_CASE("issue 74 point 3: a SIGTERM'd stdio server exits, its worker with it") {
    StdioServerWithQuery s;
    KillAtEnd cleanup{s.worker};
    REQUIRE(::kill(s.server.pid(), SIGTERM) == 0);
    const auto start = Clock::now();
    s.server.wait_exit();
    CHECK(Clock::now() - start < std::chrono::seconds(3));
    CHECK(gone_within(s.worker, std::chrono::seconds(2)));
  }

  TEST_CASE("issue 74 point 3: a SIGTERM'd HTTP server ends its workers and exits promptly") {
    const int port = free_port();
    Child server({JARVIS_BINARY, "serve", "--http", fmt::format("127.0.0.1:{}", port), "--root",
                  kExamples, "--workers", "4"});
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(20);
    std::string session;
    for (const auto start = Clock::now(); session.empty();) {
      if (auto res = c.Post("/mcp", headers(), init_body(), "application/json"))
        session = res->get_header_value("Mcp-Session-Id");
      else
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      REQUIRE(Clock::now() - start < std::chrono::seconds(20));
    }
    auto loaded =
        c.Post("/mcp", headers(session), tool_request(2, "load_trace", {{"path", kTrace}}).dump(),
               "application/json");
    REQUIRE(loaded);
    const std::string handle = reply_of(loaded->body)["result"]["structuredContent"]["trace"];
    const std::string call =
        tool_request(3, "query_sql",
                     {{"trace", handle}, {"sql", kEndlessSql}, {"timeout_ms", 60000}})
            .dump();
    const int fd = connect_raw(port);
    send_all(fd, fmt::format("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                             "application/json\r\nAccept: application/json, text/event-stream\r\n"
                             "Mcp-Session-Id: {}\r\nContent-Length: {}\r\n\r\n{}",
                             session, call.size(), call));
    const pid_t worker = wait_for_child(server.pid(), std::chrono::seconds(10));
    REQUIRE(worker > 0);
    KillAtEnd cleanup{worker};

    REQUIRE(::kill(server.pid(), SIGTERM) == 0);
    const auto start = Clock::now();
    bool exited = false;
    while (!exited && Clock::now() - start < std::chrono::seconds(6)) {
      exited = ::waitpid(server.pid(), nullptr, WNOHANG) == server.pid();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    CHECK(exited);
    CHECK(Clock::now() - start < std::chrono::seconds(4));
    CHECK(gone_within(worker, std::chrono::seconds(1)));
    if (!exited) ::kill(server.pid(), SIGKILL);
    ::close(fd);
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
