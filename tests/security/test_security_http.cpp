// Security regression tests of the HTTP transport (issue 24 points 3, 4, 5,
// 6, 12; issue 18's GET streams and token comparison): each attack, the
// refusal or bound, and a normal request answered afterwards.
#include <doctest/doctest.h>
#include <zlib.h>

#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "http_live.h"
#include "security_support.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using jarvis::mcp::json;
namespace mcp = jarvis::mcp;
using Clock = std::chrono::steady_clock;

using namespace jarvis::mcp::testing;  // Live, headers, open_session, connect_raw, ...

namespace {

std::string gzip(const std::string& data) {
  z_stream z{};
  REQUIRE(deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY) == Z_OK);
  std::string out(deflateBound(&z, data.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// Processes this one has started and not yet reaped (every thread's).
size_t child_processes() {
  size_t n = 0;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    std::ifstream in(task.path() / "children");
    std::string pid;
    while (in >> pid) ++n;
  }
  return n;
}

// POSTs a JSON-RPC request in `session` and returns its reply (the data of
// the SSE event, or the JSON body).
json post_call(httplib::Client& c, const std::string& session, const json& request) {
  auto res = c.Post("/mcp", headers(session), request.dump(), "application/json");
  REQUIRE(res);
  std::string body = res->body;
  const size_t data = body.find("data: ");
  if (data != std::string::npos) body = body.substr(data + 6, body.find('\n', data) - data - 6);
  return json::parse(body);
}

json tool_call(int id, const std::string& name, const json& args) {
  return {{"jsonrpc", "2.0"},
          {"id", id},
          {"method", "tools/call"},
          {"params", {{"name", name}, {"arguments", args}}}};
}

// The example trace loaded in `session`; its handle.
std::string load_example(httplib::Client& c, const std::string& session) {
  json r = post_call(
      c, session,
      tool_call(2, "load_trace",
                {{"path", std::string(JARVIS_SOURCE_DIR) + "/examples/example_trace.json.gz"}}));
  return r["result"]["structuredContent"]["trace"].get<std::string>();
}

// A raw connection whose request is a query that runs until its 60 s limit,
// answered as an SSE stream; the caller closes it to leave.
int start_endless_query(int port, const std::string& session, const std::string& trace, int id,
                        const std::string& accept = "application/json, text/event-stream") {
  const std::string call =
      tool_call(id, "query_sql",
                {{"trace", trace},
                 {"sql",
                  "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT "
                  "count(*) FROM n"},
                 {"timeout_ms", 60000}})
          .dump();
  int fd = connect_raw(port);
  send_all(fd, fmt::format("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                           "application/json\r\nAccept: {}\r\nMcp-Session-Id: {}\r\n"
                           "Content-Length: {}\r\n\r\n{}",
                           accept, session, call.size(), call));
  return fd;
}

bool wait_for_children(size_t at_least, bool fewer, std::chrono::seconds limit) {
  const auto start = Clock::now();
  while (Clock::now() - start < limit) {
    const size_t n = child_processes();
    if (fewer ? n == 0 : n >= at_least) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

}  // namespace

TEST_SUITE("mcp_security") {
  TEST_CASE("point 3: a deeply nested POST body is refused with -32600, server stays up") {
    Live live;
    auto c = live.client();
    std::string deep = R"({"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"x":)" +
                       std::string(200000, '[') + std::string(200000, ']') + "}}";
    auto res = c.Post("/mcp", headers(), deep, "application/json");
    REQUIRE(res);
    CHECK(res->status == 400);
    CHECK(json::parse(res->body)["error"]["code"] == mcp::rpc::kInvalidRequest);
    answers_next_request(live);
  }

  TEST_CASE("point 4: the body cap applies to decoded gzip and chunked bodies") {
    mcp::ServerOptions options = mcp::testing::shared_root_options();
    options.max_message_bytes = 1u << 20;
    Live live({}, options);
    uint64_t rss_before = jarvis::testing::resident_bytes();
    auto start = Clock::now();
    // 64 MiB of one JSON string, sent as ~64 KiB of gzip.
    std::string huge = R"({"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":")" +
                       std::string(64u << 20, 'a') + "\"}}";
    std::string packed = gzip(huge);
    huge = std::string();
    CHECK(packed.size() < (1u << 20));
    {
      auto c = live.client();
      httplib::Headers h = headers();
      h.emplace("Content-Encoding", "gzip");
      auto res = c.Post("/mcp", h, packed, "application/json");
      REQUIRE(res);
      CHECK(res->status == 413);
    }
    // Chunked: no Content-Length for the raw cap to see.
    {
      int fd = connect_raw(live.http.port());
      send_all(fd,
               "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
               "Accept: application/json\r\nTransfer-Encoding: chunked\r\n\r\n");
      std::string chunk(256u << 10, ' ');
      std::string framed = fmt::format("{:x}\r\n", chunk.size()) + chunk + "\r\n";
      for (int k = 0; k < 16; ++k) send_all(fd, framed);
      send_all(fd, "0\r\n\r\n");
      std::string reply = receive_some(fd);
      CHECK(reply.find(" 413 ") != std::string::npos);
      ::close(fd);
    }
    CHECK(jarvis::testing::resident_bytes() < rss_before + (256ull << 20));
    CHECK(Clock::now() - start < std::chrono::seconds(10));
    answers_next_request(live);
  }

  TEST_CASE("point 4: negative or absurd --max-message-mb stops the start") {
    for (const char* value : {"-1", "0", "99999999999", "12abc"}) {
      std::string cmd = std::string(JARVIS_BINARY) + " serve --stdio --max-message-mb " + value +
                        " </dev/null >/dev/null 2>&1";
      int status = std::system(cmd.c_str());
      INFO(value);
      CHECK(WEXITSTATUS(status) != 0);
    }
    std::string cmd = std::string(JARVIS_BINARY) + " serve --stdio --max-memory -5 </dev/null" +
                      " >/dev/null 2>&1";
    CHECK(WEXITSTATUS(std::system(cmd.c_str())) != 0);
  }

  TEST_CASE("point 5: slow clients cannot hold every worker") {
    mcp::HttpOptions options;
    options.threads = 4;
    options.request_timeout_s = 1;
    Live live(options);
    // Twelve connections trickling a request that never ends.
    std::vector<int> slow;
    for (int k = 0; k < 12; ++k) {
      int fd = connect_raw(live.http.port());
      send_all(fd, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n");
      slow.push_back(fd);
    }
    auto start = Clock::now();
    answers_next_request(live);
    CHECK(Clock::now() - start < std::chrono::seconds(8));
    for (int fd : slow) ::close(fd);
    // Below the per-address cap, the request deadline cuts a trickling client.
    int trickle = connect_raw(live.http.port());
    send_all(trickle, "POST /mcp HTTP/1.1\r\n");
    start = Clock::now();
    char byte;
    ssize_t got = 1;
    while (got > 0 && Clock::now() - start < std::chrono::seconds(6)) {
      send_all(trickle, "X");
      got = ::recv(trickle, &byte, 1, MSG_DONTWAIT);
      if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) got = 1;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    CHECK(got <= 0);  // closed by the server
    CHECK(Clock::now() - start < std::chrono::seconds(4));
    ::close(trickle);
    answers_next_request(live);
  }

  TEST_CASE("point 6: idle sessions expire and the cap evicts the least recently used") {
    mcp::HttpOptions options;
    options.max_sessions = 3;
    Live live(options);
    auto c = live.client();
    std::string first = open_session(c);
    std::string second = open_session(c);
    std::string third = open_session(c);
    CHECK(c.Post("/mcp", headers(first), ping_body(2), "application/json")->status == 200);
    // Full: a new client still gets a session; the least recently used (second) goes.
    std::string fourth = open_session(c);
    CHECK(live.http.session_count() == 3);
    CHECK(c.Post("/mcp", headers(second), ping_body(3), "application/json")->status == 404);
    CHECK(c.Post("/mcp", headers(first), ping_body(4), "application/json")->status == 200);
    for (int k = 0; k < 20; ++k) open_session(c);  // never a 503 for idle sessions
    CHECK(live.http.session_count() == 3);

    mcp::ServerOptions short_ttl = mcp::testing::shared_root_options();
    short_ttl.session_idle_ttl = std::chrono::seconds(1);
    Live expiring({}, short_ttl);
    auto e = expiring.client();
    std::string id = open_session(e);
    std::this_thread::sleep_for(std::chrono::milliseconds(1600));
    CHECK(expiring.http.session_count() == 0);
    CHECK(e.Post("/mcp", headers(id), ping_body(5), "application/json")->status == 404);
    answers_next_request(expiring);
  }

  TEST_CASE("issue 18: GET streams wake at once and stay below the worker count") {
    mcp::HttpOptions options;
    options.threads = 4;  // at most 2 GET streams
    options.keepalive_ms = 60000;
    Live live(options);
    std::vector<std::string> ids;
    std::vector<std::thread> streams;
    std::atomic<int> refused{0};
    for (int k = 0; k < 3; ++k) {
      auto c = live.client();
      ids.push_back(open_session(c));
    }
    for (int k = 0; k < 3; ++k)
      streams.emplace_back([&, k] {
        auto c = live.client();
        auto res = c.Get(
            "/mcp", httplib::Headers{{"Accept", "text/event-stream"}, {"Mcp-Session-Id", ids[k]}});
        if (res && res->status == 503) ++refused;
      });
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    CHECK(refused == 1);
    answers_next_request(live);  // POSTs still have workers
    // DELETE wakes the stream's worker at once (no polling interval to wait for).
    auto start = Clock::now();
    auto c = live.client();
    for (const auto& id : ids) c.Delete("/mcp", headers(id));
    for (auto& t : streams) t.join();
    CHECK(Clock::now() - start < std::chrono::seconds(5));
  }

  TEST_CASE("point 12: Host, Content-Type and the bearer scheme as the RFCs say") {
    CHECK(mcp::is_local_host_header("localhost"));
    CHECK(mcp::is_local_host_header("127.0.0.1:8765"));
    CHECK(mcp::is_local_host_header("[::1]:8765"));
    CHECK(mcp::is_local_host_header("[::1]"));
    CHECK_FALSE(mcp::is_local_host_header("[::1]evil.com"));
    CHECK_FALSE(mcp::is_local_host_header("[::1]:80evil"));
    CHECK_FALSE(mcp::is_local_host_header("localhost.evil.com"));
    CHECK_FALSE(mcp::is_local_host_header("localhost:"));
    CHECK(mcp::is_json_media_type("application/json"));
    CHECK(mcp::is_json_media_type("Application/JSON; charset=utf-8"));
    CHECK_FALSE(mcp::is_json_media_type("text/plain; x=application/json"));
    CHECK_FALSE(mcp::is_json_media_type("application/jsonp"));
    CHECK(mcp::bearer_token_matches("Bearer s3cret", "s3cret"));
    CHECK(mcp::bearer_token_matches("bearer s3cret", "s3cret"));
    CHECK(mcp::bearer_token_matches("BEARER   s3cret ", "s3cret"));
    CHECK_FALSE(mcp::bearer_token_matches("Bearer s3cre", "s3cret"));
    CHECK_FALSE(mcp::bearer_token_matches("Bearer s3cretx", "s3cret"));
    CHECK_FALSE(mcp::bearer_token_matches("Basic s3cret", "s3cret"));
    CHECK_FALSE(mcp::bearer_token_matches("Bearer", ""));

    mcp::HttpOptions options;
    options.token = "s3cret";
    Live live(options);
    auto c = live.client();
    httplib::Headers lower = headers();
    lower.emplace("Authorization", "bearer s3cret");
    CHECK(c.Post("/mcp", lower, init_body(), "application/json")->status == 200);
    httplib::Headers evil = {{"Host", "[::1]evil.com"}, {"Authorization", "Bearer s3cret"}};
    CHECK(c.Post("/mcp", evil, init_body(), "application/json")->status == 403);
    CHECK(c.Post("/mcp", lower, init_body(), "text/plain; x=application/json")->status == 415);
    CHECK(c.Post("/mcp", lower, init_body(), "application/json")->status == 200);
  }

  TEST_CASE("issue 63 point 3: a call whose client left is cancelled and frees its worker") {
    // Three clients start an endless query (up to its 60 s limit) over SSE
    // and leave: they fill the long-call cap of a 6-thread server. The
    // stream's keep-alive comment fails once the socket is gone, the call is
    // cancelled (its worker process killed), and a new client is answered
    // within seconds instead of after the queries' minute.
    mcp::HttpOptions options;
    // Four connections per address, three long calls (issue 74 point 4:
    // one fewer than an address's connections).
    options.threads = 6;
    options.keepalive_ms = 200;
    mcp::ServerOptions server_options;
    server_options.roots = {std::string(JARVIS_SOURCE_DIR) + "/examples"};
    server_options.isolate_calls = true;  // `jarvis serve --http`'s default
    Live live(options, server_options);
    auto c = live.client();
    const std::string session = open_session(c);
    auto loaded = c.Post(
        "/mcp", headers(session),
        json{{"jsonrpc", "2.0"},
             {"id", 2},
             {"method", "tools/call"},
             {"params",
              {{"name", "load_trace"},
               {"arguments",
                {{"path", std::string(JARVIS_SOURCE_DIR) + "/examples/example_trace.json.gz"}}}}}}
            .dump(),
        "application/json");
    REQUIRE(loaded);
    const std::string body = loaded->body;
    const size_t at = body.find("\"trace\":\"");
    REQUIRE(at != std::string::npos);
    const std::string handle = body.substr(at + 9, body.find('"', at + 9) - at - 9);

    std::vector<int> left;
    for (int k = 0; k < 3; ++k) {
      const std::string call = json{
          {"jsonrpc", "2.0"},
          {"id", 10 + k},
          {"method", "tools/call"},
          {"params",
           {{"name", "query_sql"},
            {"arguments",
             {{"trace", handle},
              {"sql",
               "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT "
               "count(*) FROM n"},
              {"timeout_ms",
               60000}}}}}}.dump();
      int fd = connect_raw(live.http.port());
      send_all(fd, fmt::format("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                               "application/json\r\nAccept: application/json, "
                               "text/event-stream\r\nMcp-Session-Id: {}\r\nContent-Length: "
                               "{}\r\n\r\n{}",
                               session, call.size(), call));
      left.push_back(fd);
    }
    // Each call runs in a worker process of its own: three while they run.
    auto running = Clock::now();
    while (child_processes() < 3 && Clock::now() - running < std::chrono::seconds(10))
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    REQUIRE(child_processes() >= 3);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    CHECK(child_processes() >= 3);    // still running: the queries have a minute
    for (int fd : left) ::close(fd);  // their clients leave

    const auto start = Clock::now();
    while (child_processes() > 0 && Clock::now() - start < std::chrono::seconds(20))
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    CHECK(child_processes() == 0);
    CHECK(Clock::now() - start < std::chrono::seconds(5));
    answers_next_request(live);
  }

  TEST_CASE("issue 63 point 3: a JSON-only client that left is cancelled too") {
    // Without SSE the reply is one JSON document, sent chunked: a space goes
    // out every keepalive_ms while the call runs (whitespace JSON allows
    // before the value), and the first that cannot be written cancels it.
    mcp::HttpOptions options;
    options.threads = 6;  // three long calls at once (issue 74 point 4)
    options.keepalive_ms = 200;
    mcp::ServerOptions server_options;
    server_options.roots = {std::string(JARVIS_SOURCE_DIR) + "/examples"};
    server_options.isolate_calls = true;
    Live live(options, server_options);
    auto c = live.client();
    const std::string session = open_session(c);
    const std::string trace = load_example(c, session);
    std::vector<int> left;
    for (int k = 0; k < 3; ++k)
      left.push_back(
          start_endless_query(live.http.port(), session, trace, 20 + k, "application/json"));
    REQUIRE(wait_for_children(3, false, std::chrono::seconds(10)));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    CHECK(child_processes() >= 3);  // still running: the queries have a minute
    for (int fd : left) ::close(fd);
    const auto start = Clock::now();
    CHECK(wait_for_children(0, true, std::chrono::seconds(20)));
    CHECK(Clock::now() - start < std::chrono::seconds(5));
    // A JSON-only client that stays reads one JSON document, the spaces
    // before it included, as any JSON parser does.
    httplib::Headers json_only = {{"Mcp-Session-Id", session}, {"Accept", "application/json"}};
    auto slow = c.Post("/mcp", json_only,
                       tool_call(31, "query_sql",
                                 {{"trace", trace},
                                  {"sql",
                                   "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n "
                                   "WHERE i < 2000000) SELECT count(*) AS n FROM n"}})
                           .dump(),
                       "application/json");
    REQUIRE(slow);
    CHECK(slow->status == 200);
    CHECK(slow->get_header_value("Content-Type").find("application/json") == 0);
    const json reply = json::parse(slow->body);
    CHECK(reply["id"] == 31);
    CHECK(reply["result"]["structuredContent"]["rows"][0][0] == 2000000);
    answers_next_request(live);
  }

  TEST_CASE("issue 63 point 3: one session's calls beyond its share are refused at once") {
    mcp::HttpOptions options;
    options.threads = 8;
    options.keepalive_ms = 200;
    mcp::ServerOptions server_options;
    server_options.roots = {std::string(JARVIS_SOURCE_DIR) + "/examples"};
    server_options.isolate_calls = true;
    server_options.max_calls_per_session = 2;  // `jarvis serve --http --workers 8`'s share
    Live live(options, server_options);
    auto c = live.client();
    const std::string greedy = open_session(c);
    const std::string trace = load_example(c, greedy);
    std::vector<int> held = {start_endless_query(live.http.port(), greedy, trace, 10),
                             start_endless_query(live.http.port(), greedy, trace, 11)};
    REQUIRE(wait_for_children(2, false, std::chrono::seconds(10)));
    // Its third call is answered at once with a tool error naming the limit.
    const auto start = Clock::now();
    json third =
        post_call(c, greedy, tool_call(12, "query_sql", {{"trace", trace}, {"sql", "SELECT 1"}}));
    CHECK(Clock::now() - start < std::chrono::seconds(5));
    CHECK(third["result"].value("isError", false));
    CHECK(third.dump().find("already has 2 tool calls running") != std::string::npos);
    // Another client's calls run meanwhile.
    auto other_client = live.client();
    const std::string other = open_session(other_client);
    const std::string other_trace = load_example(other_client, other);
    json answered =
        post_call(other_client, other,
                  tool_call(3, "query_sql", {{"trace", other_trace}, {"sql", "SELECT 1 AS one"}}));
    CHECK_FALSE(answered["result"].value("isError", false));
    // Once its calls end (its clients left: cancelled), the session calls again.
    for (int fd : held) ::close(fd);
    CHECK(wait_for_children(0, true, std::chrono::seconds(10)));
    json again =
        post_call(c, greedy, tool_call(13, "query_sql", {{"trace", trace}, {"sql", "SELECT 1"}}));
    CHECK_FALSE(again["result"].value("isError", false));
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
