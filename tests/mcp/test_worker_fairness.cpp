// Issue 74 point 4: one client shut out the others. With --workers 8, one
// client opening 4 sessions with 2 long queries each held every HTTP thread:
// another client could not even initialize; a 2025-03-26 batch of long calls
// kept starting workers after its client left. Point 8: --max-memory covered
// the server only, each worker allocating beside it unchecked.
//
// These tests run the jarvis binary (points 4) or an in-process server whose
// query_sql handler, installed by this test only, allocates (point 8).
#include <doctest/doctest.h>

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

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

// Waits until `pid` has `count` children (or `limit` passes); returns how many it had.
size_t wait_for_children(pid_t pid, size_t count, std::chrono::milliseconds limit) {
  const auto start = Clock::now();
  while (children_of(pid).size() < count && Clock::now() - start < limit)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return children_of(pid).size();
}

// `jarvis serve --http` on a free port, killed (its workers with it) at the end.
struct HttpServerProcess {
  int port = free_port();
  Child process;
  explicit HttpServerProcess(const std::vector<std::string>& extra)
      : process([&] {
          std::vector<std::string> argv = {JARVIS_BINARY, "serve",
                                           "--http",      fmt::format("127.0.0.1:{}", port),
                                           "--root",      kExamples};
          argv.insert(argv.end(), extra.begin(), extra.end());
          return argv;
        }()) {
    httplib::Client c("127.0.0.1", port);
    for (const auto start = Clock::now();;
         std::this_thread::sleep_for(std::chrono::milliseconds(50))) {
      if (auto res = c.Post("/mcp", headers(), ping_body(1), "application/json")) break;
      REQUIRE(Clock::now() - start < std::chrono::seconds(20));
    }
  }
  ~HttpServerProcess() { ::kill(process.pid(), SIGKILL); }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(30);
    return c;
  }
  // A session with the example trace loaded: {session id, handle}.
  std::pair<std::string, std::string> session_with_trace() {
    auto c = client();
    const std::string session = open_session(c);
    auto loaded =
        c.Post("/mcp", headers(session), tool_request(2, "load_trace", {{"path", kTrace}}).dump(),
               "application/json");
    REQUIRE(loaded);
    return {session, reply_of(loaded->body)["result"]["structuredContent"]["trace"]};
  }
  // Sends `body` as a POST on a raw connection of its own (not waiting for the answer).
  int post_raw(const std::string& session, const std::string& body) const {
    const int fd = connect_raw(port);
    send_all(fd, fmt::format("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                             "application/json\r\nAccept: application/json\r\n"
                             "Mcp-Session-Id: {}\r\nContent-Length: {}\r\n\r\n{}",
                             session, body.size(), body));
    return fd;
  }
};

// What arrives on `fd` within `limit` (until the peer closes or `until` shows up).
std::string read_for(int fd, std::chrono::milliseconds limit, const std::string& until) {
  std::string out;
  for (const auto start = Clock::now(); Clock::now() - start < limit;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.find(until) != std::string::npos) break;
  }
  return out;
}

// A process's private memory (its own pages) and resident set, in bytes.
uint64_t kb_field(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  uint64_t sum = 0;
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0) sum += std::strtoull(line.c_str() + key.size(), nullptr, 10);
  return sum << 10;
}
uint64_t tree_bytes_now() {
  uint64_t total = kb_field("/proc/self/status", "VmRSS:");
  for (pid_t child : children_of(::getpid())) {
    const std::string rollup = fmt::format("/proc/{}/smaps_rollup", child);
    total += kb_field(rollup, "Private_Clean:") + kb_field(rollup, "Private_Dirty:");
  }
  return total;
}

// While alive, query_sql with the SQL "hog" allocates 120 MiB in 8 MiB steps
// (every page written, 20 ms apart), holds it 2 s, and answers one row.
struct MemoryHog {
  ToolHandler original = registered_tool_handlers().at("query_sql");
  MemoryHog() {
    registered_tool_handlers()["query_sql"] = [this](const json& args, ToolContext& ctx) {
      if (args.value("sql", std::string()) != "hog") return original(args, ctx);
      std::vector<std::vector<char>> held;
      for (int step = 0; step < 15; ++step) {
        held.emplace_back(size_t{8} << 20);
        std::memset(held.back().data(), 1 + step, held.back().size());
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      std::this_thread::sleep_for(std::chrono::seconds(2));
      json select = args;
      select["sql"] = "SELECT 1";
      return original(select, ctx);
    };
  }
  ~MemoryHog() { registered_tool_handlers()["query_sql"] = original; }
};

TEST_SUITE("mcp_security") {
  TEST_CASE("issue 74 point 4: sessions of one client cannot take every thread from initialize") {
    // 4 threads (the least), a session may run 1 call: 4 sessions of one
    // client used to hold all 4 with 60 s queries. Now 2 run (one loopback
    // address may hold 3 connections), the others are refused at once.
    HttpServerProcess server({"--workers", "2"});
    std::vector<std::pair<std::string, std::string>> sessions;
    for (int k = 0; k < 4; ++k) sessions.push_back(server.session_with_trace());
    std::vector<int> calls;
    for (const auto& [session, handle] : sessions)
      calls.push_back(server.post_raw(
          session, tool_request(3, "query_sql",
                                {{"trace", handle}, {"sql", kEndlessSql}, {"timeout_ms", 60000}})
                       .dump()));
    // Two run in workers; the others are answered at once: busy.
    CHECK(wait_for_children(server.process.pid(), 2, std::chrono::seconds(10)) == 2);
    int refused = 0;
    for (int fd : calls)
      if (read_for(fd, std::chrono::milliseconds(1500), "retry in a moment")
              .find("the most it runs at once") != std::string::npos)
        ++refused;
    CHECK(refused == 2);
    CHECK(children_of(server.process.pid()).size() == 2);

    // Another client: initialize, tools/list, list_traces and ping answer within seconds.
    const auto start = Clock::now();
    auto c = server.client();
    c.set_read_timeout(10);
    const std::string session = open_session(c);
    auto tools = c.Post("/mcp", headers(session),
                        rpc_request(2, "tools/list", json::object()).dump(), "application/json");
    REQUIRE(tools);
    CHECK(reply_of(tools->body)["result"]["tools"].size() > 10);
    auto listed = c.Post("/mcp", headers(session),
                         tool_request(3, "list_traces", json::object()).dump(), "application/json");
    REQUIRE(listed);
    CHECK(reply_of(listed->body)["result"].contains("content"));
    CHECK_FALSE(reply_of(listed->body)["result"].value("isError", false));
    auto pong = c.Post("/mcp", headers(session), ping_body(4), "application/json");
    REQUIRE(pong);
    CHECK(Clock::now() - start < std::chrono::seconds(5));

    // The long calls' clients leave: their workers end, nothing hangs.
    for (int fd : calls) ::close(fd);
    const auto leave = Clock::now();
    while (!children_of(server.process.pid()).empty() &&
           Clock::now() - leave < std::chrono::seconds(8))
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    CHECK(children_of(server.process.pid()).empty());
  }

  TEST_CASE("issue 74 point 4: a batch whose client left starts no more calls") {
    HttpServerProcess server({"--workers", "8"});
    auto c = server.client();
    const std::string session = open_session(c, "2025-03-26");
    json batch = json::array();
    for (int k = 0; k < 4; ++k)
      batch.push_back(tool_request(
          10 + k, "query_sql", {{"trace", kTrace}, {"sql", kEndlessSql}, {"timeout_ms", 8000}}));
    const int fd = server.post_raw(session, batch.dump());
    REQUIRE(wait_for_children(server.process.pid(), 1, std::chrono::seconds(10)) == 1);
    ::close(fd);  // the client leaves with its first call running
    // Its worker ends, and no later call of the batch starts one (each would run 8 s).
    const auto left = Clock::now();
    while (!children_of(server.process.pid()).empty() &&
           Clock::now() - left < std::chrono::seconds(5))
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK(children_of(server.process.pid()).empty());
    bool started = false;
    for (const auto watch = Clock::now(); Clock::now() - watch < std::chrono::seconds(3);) {
      started = started || !children_of(server.process.pid()).empty();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    CHECK_FALSE(started);
    // The session goes on.
    auto pong = c.Post("/mcp", headers(session), ping_body(20), "application/json");
    REQUIRE(pong);
    CHECK(pong->status == 200);
  }

  TEST_CASE("issue 74 point 8: --max-memory covers the server and its workers together") {
    MemoryHog hog;  // before the server joins handlers and schemas
    const uint64_t budget = tree_bytes_now() + (uint64_t{256} << 20);
    jarvis::mcp::ServerOptions options = jarvis::mcp::testing::isolated_options(kExamples);
    options.max_memory_bytes = budget;
    Live live({}, options);
    auto c = live.client();
    const std::string session = open_session(c);
    auto loaded =
        c.Post("/mcp", headers(session), tool_request(2, "load_trace", {{"path", kTrace}}).dump(),
               "application/json");
    REQUIRE(loaded);
    const std::string handle = reply_of(loaded->body)["result"]["structuredContent"]["trace"];

    // Six calls of 120 MiB each: 720 MiB in workers against 256 MiB left.
    std::atomic<bool> done{false};
    std::atomic<uint64_t> peak{0};
    std::thread sampler([&] {
      while (!done) {
        peak = std::max<uint64_t>(peak, tree_bytes_now());
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    });
    std::mutex mutex;
    std::vector<json> replies;
    std::vector<std::thread> callers;
    const auto start = Clock::now();
    for (int k = 0; k < 6; ++k)
      callers.emplace_back([&, k] {
        auto client = live.client();
        auto res = client.Post(
            "/mcp", headers(session),
            tool_request(10 + k, "query_sql", {{"trace", handle}, {"sql", "hog"}}).dump(),
            "application/json");
        std::lock_guard<std::mutex> lock(mutex);
        replies.push_back(res ? reply_of(res->body) : json());
      });
    for (auto& t : callers) t.join();
    done = true;
    sampler.join();
    CHECK(Clock::now() - start < std::chrono::seconds(30));

    // The tree stayed within the budget, give or take what workers allocate
    // between two of the server's checks (every 50 ms), and each may take what
    // the tree left when it started, so two started together may each take
    // it: about one worker's 120 MiB on a loaded host (107 MiB measured; 174
    // MiB once, a sanitizer build running beside the suite), at most two;
    // without the budget the six reach 720 MiB past the start, 464 MiB over
    // it (docs/security.md states the limit).
    CAPTURE(budget >> 20);
    CAPTURE(peak.load() >> 20);
    CHECK(peak.load() <= budget + (uint64_t{240} << 20));
    int answered = 0, over_budget = 0;
    for (const json& r : replies) {
      REQUIRE(r.contains("result"));
      const json& result = r["result"];
      if (!result.value("isError", false)) {
        ++answered;
        continue;
      }
      const std::string text = result["content"][0]["text"];
      CAPTURE(text);
      CHECK(text.find("--max-memory budget") != std::string::npos);
      ++over_budget;
    }
    CHECK(answered >= 1);
    CHECK(over_budget >= 1);
    CHECK(answered + over_budget == 6);
    // Once the calls end, the next one runs.
    auto again =
        c.Post("/mcp", headers(session),
               tool_request(30, "query_sql", {{"trace", handle}, {"sql", "SELECT 2"}}).dump(),
               "application/json");
    REQUIRE(again);
    CHECK(reply_of(again->body)["result"]["structuredContent"]["rows"][0][0] == 2);
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
