// Streamable HTTP transport, in process: an HttpServer on a free loopback
// port driven with cpp-httplib's client.
#include <doctest/doctest.h>
#include <httplib.h>

#include <thread>

#include "mcp/transport.h"
#include "mcp_harness.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using jarvis::mcp::json;
namespace mcp = jarvis::mcp;

namespace {

struct LiveServer {
  mcp::Server server;
  mcp::HttpServer http;
  std::thread thread;

  explicit LiveServer(mcp::HttpOptions options = {},
                      mcp::ServerOptions server_options = mcp::testing::shared_root_options())
      : server(std::move(server_options)), http(server, std::move(options)) {
    http.bind();
    thread = std::thread([this] { http.run(); });
  }
  ~LiveServer() {
    http.stop();
    thread.join();
  }
  httplib::Client client() {
    httplib::Client c("127.0.0.1", http.port());
    c.set_read_timeout(20);
    return c;
  }
};

httplib::Headers base_headers(const std::string& session = "") {
  httplib::Headers h = {{"Accept", "application/json, text/event-stream"}};
  if (!session.empty()) h.emplace("Mcp-Session-Id", session);
  return h;
}

std::string init_body() {
  return json{{"jsonrpc", "2.0"},
              {"id", 1},
              {"method", "initialize"},
              {"params",
               {{"protocolVersion", "2025-11-25"},
                {"capabilities", json::object()},
                {"clientInfo", {{"name", "t"}, {"version", "0"}}}}}}
      .dump();
}

std::string open_session(httplib::Client& c) {
  auto res = c.Post("/mcp", base_headers(), init_body(), "application/json");
  REQUIRE(res);
  REQUIRE(res->status == 200);
  std::string id = res->get_header_value("Mcp-Session-Id");
  REQUIRE(!id.empty());
  for (char ch : id) CHECK((ch >= 0x21 && ch <= 0x7e));
  auto note = c.Post("/mcp", base_headers(id),
                     json{{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}.dump(),
                     "application/json");
  REQUIRE(note);
  CHECK(note->status == 202);
  CHECK(note->body.empty());
  return id;
}

// The JSON-RPC messages of an SSE body.
std::vector<json> sse_messages(const std::string& body) {
  std::vector<json> out;
  size_t pos = 0;
  while ((pos = body.find("data: ", pos)) != std::string::npos) {
    size_t end = body.find('\n', pos);
    std::string data = body.substr(pos + 6, end - pos - 6);
    if (!data.empty()) out.push_back(json::parse(data));
    pos = end;
  }
  return out;
}

}  // namespace

TEST_SUITE("mcp_http") {
  TEST_CASE("session lifecycle: initialize, call, DELETE, then 404") {
    LiveServer live;
    auto c = live.client();
    std::string id = open_session(c);
    auto list = c.Post("/mcp", base_headers(id),
                       R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})", "application/json");
    REQUIRE(list);
    CHECK(list->status == 200);
    CHECK(list->get_header_value("Content-Type").find("application/json") != std::string::npos);
    CHECK(json::parse(list->body)["result"]["tools"].size() == live.server.tools().size());

    auto del = c.Delete("/mcp", base_headers(id));
    REQUIRE(del);
    CHECK(del->status == 200);
    auto after = c.Post("/mcp", base_headers(id), R"({"jsonrpc":"2.0","id":3,"method":"ping"})",
                        "application/json");
    REQUIRE(after);
    CHECK(after->status == 404);
    CHECK(live.http.session_count() == 0);
  }

  TEST_CASE("missing and unknown session ids") {
    LiveServer live;
    auto c = live.client();
    auto none = c.Post("/mcp", base_headers(), R"({"jsonrpc":"2.0","id":1,"method":"ping"})",
                       "application/json");
    REQUIRE(none);
    CHECK(none->status == 400);
    auto unknown = c.Post("/mcp", base_headers("nope"),
                          R"({"jsonrpc":"2.0","id":1,"method":"ping"})", "application/json");
    REQUIRE(unknown);
    CHECK(unknown->status == 404);
    auto del = c.Delete("/mcp", base_headers("nope"));
    REQUIRE(del);
    CHECK(del->status == 404);
  }

  TEST_CASE("Origin and Host checks (DNS rebinding)") {
    LiveServer live;
    auto c = live.client();
    auto headers = base_headers();
    headers.emplace("Origin", "http://evil.example.com");
    auto evil = c.Post("/mcp", headers, init_body(), "application/json");
    REQUIRE(evil);
    CHECK(evil->status == 403);
    CHECK(json::parse(evil->body).contains("id"));
    CHECK(json::parse(evil->body)["id"].is_null());

    auto host = base_headers();
    host.emplace("Host", "evil.example.com");
    auto rebound = c.Post("/mcp", host, init_body(), "application/json");
    REQUIRE(rebound);
    CHECK(rebound->status == 403);

    auto good = base_headers();
    good.emplace("Origin", "http://localhost:1234");
    auto ok = c.Post("/mcp", good, init_body(), "application/json");
    REQUIRE(ok);
    CHECK(ok->status == 200);
  }

  TEST_CASE("bad bodies and headers") {
    mcp::ServerOptions options = mcp::testing::shared_root_options();
    options.max_message_bytes = 4096;
    LiveServer live({}, options);
    auto c = live.client();
    std::string id = open_session(c);
    auto garbage = c.Post("/mcp", base_headers(id), "{not json", "application/json");
    REQUIRE(garbage);
    CHECK(garbage->status == 400);
    CHECK(json::parse(garbage->body)["error"]["code"] == mcp::rpc::kParseError);

    auto batch = c.Post("/mcp", base_headers(id), R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])",
                        "application/json");
    REQUIRE(batch);
    CHECK(batch->status == 400);
    CHECK(json::parse(batch->body)["error"]["code"] == mcp::rpc::kInvalidRequest);

    auto text = c.Post("/mcp", base_headers(id), R"({"jsonrpc":"2.0","id":1,"method":"ping"})",
                       "text/plain");
    REQUIRE(text);
    CHECK(text->status == 415);

    httplib::Headers html = {{"Accept", "text/html"}, {"Mcp-Session-Id", id}};
    auto not_acceptable =
        c.Post("/mcp", html, R"({"jsonrpc":"2.0","id":1,"method":"ping"})", "application/json");
    REQUIRE(not_acceptable);
    CHECK(not_acceptable->status == 406);

    auto big = c.Post("/mcp", base_headers(id), std::string(10000, ' ') + "{}", "application/json");
    REQUIRE(big);
    CHECK(big->status == 413);

    auto version = base_headers(id);
    version.emplace("MCP-Protocol-Version", "1999-01-01");
    auto bad_version =
        c.Post("/mcp", version, R"({"jsonrpc":"2.0","id":1,"method":"ping"})", "application/json");
    REQUIRE(bad_version);
    CHECK(bad_version->status == 400);
  }

  TEST_CASE("tools/call streams progress over SSE") {
    LiveServer live;
    auto c = live.client();
    std::string id = open_session(c);
    json call = {{"jsonrpc", "2.0"},
                 {"id", 9},
                 {"method", "tools/call"},
                 {"params",
                  {{"name", "load_trace"},
                   {"arguments", {{"path", mcp::testing::conformance_trace("h100_bert-small")}}},
                   {"_meta", {{"progressToken", "p1"}}}}}};
    auto res = c.Post("/mcp", base_headers(id), call.dump(), "application/json");
    REQUIRE(res);
    CHECK(res->status == 200);
    CHECK(res->get_header_value("Content-Type").find("text/event-stream") != std::string::npos);
    auto messages = sse_messages(res->body);
    REQUIRE(messages.size() >= 2);
    CHECK(messages.front()["method"] == "notifications/progress");
    CHECK(messages.front()["params"]["progressToken"] == "p1");
    CHECK(messages.back()["id"] == 9);
    CHECK(messages.back()["result"]["structuredContent"]["trace"] == "t1");
  }

  TEST_CASE("sessions are independent and a slow call does not block another session") {
    LiveServer live;
    auto c1 = live.client();
    auto c2 = live.client();
    std::string a = open_session(c1);
    std::string b = open_session(c2);
    CHECK(a != b);
    json load = {
        {"jsonrpc", "2.0"},
        {"id", 2},
        {"method", "tools/call"},
        {"params",
         {{"name", "load_trace"},
          {"arguments", {{"path", mcp::testing::conformance_trace("h100_qwen1.5-0.5b")}}}}}};
    std::thread slow([&] {
      auto c = live.client();
      auto res =
          c.Post("/mcp", httplib::Headers{{"Accept", "application/json"}, {"Mcp-Session-Id", a}},
                 load.dump(), "application/json");
      REQUIRE(res);
      CHECK(json::parse(res->body)["result"]["structuredContent"]["trace"] == "t1");
    });
    auto ping = c2.Post("/mcp", base_headers(b), R"({"jsonrpc":"2.0","id":5,"method":"ping"})",
                        "application/json");
    REQUIRE(ping);
    CHECK(json::parse(ping->body)["result"] == json::object());
    slow.join();
    // Session b has its own, empty, trace store.
    auto list =
        c2.Post("/mcp", httplib::Headers{{"Accept", "application/json"}, {"Mcp-Session-Id", b}},
                R"({"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"list_traces"}})",
                "application/json");
    REQUIRE(list);
    CHECK(json::parse(list->body)["result"]["structuredContent"]["traces"].empty());
  }

  TEST_CASE("bearer token") {
    mcp::HttpOptions options;
    options.token = "s3cret";
    LiveServer live(options);
    auto c = live.client();
    auto denied = c.Post("/mcp", base_headers(), init_body(), "application/json");
    REQUIRE(denied);
    CHECK(denied->status == 401);
    CHECK(denied->get_header_value("WWW-Authenticate") == "Bearer");
    auto headers = base_headers();
    headers.emplace("Authorization", "Bearer s3cret");
    auto ok = c.Post("/mcp", headers, init_body(), "application/json");
    REQUIRE(ok);
    CHECK(ok->status == 200);

    mcp::Server server(mcp::testing::shared_root_options());
    mcp::HttpOptions open;
    open.host = "0.0.0.0";
    CHECK_THROWS(mcp::HttpServer(server, open));  // no token off loopback
  }

  TEST_CASE("stateless 2026-07-28 requests over HTTP") {
    LiveServer live;
    auto c = live.client();
    json meta = {{mcp::kMetaProtocolVersion, "2026-07-28"},
                 {mcp::kMetaClientCapabilities, json::object()}};
    auto headers = base_headers();
    headers.emplace("MCP-Protocol-Version", "2026-07-28");
    headers.emplace("Mcp-Method", "server/discover");
    auto discover = c.Post("/mcp", headers,
                           json{{"jsonrpc", "2.0"},
                                {"id", 1},
                                {"method", "server/discover"},
                                {"params", {{"_meta", meta}}}}
                               .dump(),
                           "application/json");
    REQUIRE(discover);
    CHECK(discover->status == 200);
    CHECK(json::parse(discover->body)["result"]["resultType"] == "complete");
    CHECK(live.http.session_count() == 0);

    auto mismatch = base_headers();
    mismatch.emplace("Mcp-Method", "tools/list");
    auto bad = c.Post("/mcp", mismatch,
                      json{{"jsonrpc", "2.0"},
                           {"id", 2},
                           {"method", "server/discover"},
                           {"params", {{"_meta", meta}}}}
                          .dump(),
                      "application/json");
    REQUIRE(bad);
    CHECK(bad->status == 400);
    CHECK(json::parse(bad->body)["error"]["code"] == mcp::rpc::kHeaderMismatch);

    auto missing =
        c.Post("/mcp", base_headers(), R"({"jsonrpc":"2.0","id":3,"method":"server/discover"})",
               "application/json");
    REQUIRE(missing);
    CHECK(missing->status == 400);

    auto unknown = c.Post(
        "/mcp", base_headers(),
        json{{"jsonrpc", "2.0"}, {"id", 4}, {"method", "nope"}, {"params", {{"_meta", meta}}}}
            .dump(),
        "application/json");
    REQUIRE(unknown);
    CHECK(unknown->status == 404);

    auto get = c.Get("/mcp", httplib::Headers{{"Accept", "text/event-stream"},
                                              {"MCP-Protocol-Version", "2026-07-28"}});
    REQUIRE(get);
    CHECK(get->status == 405);
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
