// Issue 74 point 9: the HTTP surface under the worker model (tool calls in
// forked workers, `--isolate-calls on`, with few HTTP threads as
// `--workers 2` gives): Host, Origin and the token are checked before any
// worker starts, prompts answer, and a session's DELETE while its call runs
// in a worker ends that worker and the session, as without workers.
#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <thread>

#include "http_live.h"
#include "worker_process.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using Clock = std::chrono::steady_clock;
using namespace jarvis::mcp::testing;
using jarvis::mcp::json;

const std::string kExamples = std::string(JARVIS_SOURCE_DIR) + "/examples";

// The forked workers of this process now (the test runs the server in it).
size_t live_workers() {
  return children_of(::getpid()).size();
}

TEST_CASE("issue 74 point 9: Host, Origin, prompts and DELETE under forked workers") {
  jarvis::mcp::HttpOptions http;
  http.threads = 2;  // --workers 2
  http.token = "s3cret";
  jarvis::mcp::ServerOptions server;
  server.roots = {kExamples};
  server.isolate_calls = true;
  Live live(http, server);
  auto c = live.client();
  const auto with = [](httplib::Headers h, const char* key, const char* value) {
    h.emplace(key, value);
    return h;
  };
  const httplib::Headers auth = with(headers(), "Authorization", "Bearer s3cret");
  // Refused before any session or worker: a foreign Host, a foreign or
  // repeated Origin, no token.
  const size_t before = live_workers();
  CHECK(c.Post("/mcp", with(auth, "Host", "evil.com"), init_body(), "application/json")->status ==
        403);
  CHECK(c.Post("/mcp", with(auth, "Origin", "http://evil.com"), init_body(), "application/json")
            ->status == 403);
  CHECK(c.Post("/mcp", with(with(auth, "Origin", "http://localhost"), "Origin", "http://evil.com"),
               init_body(), "application/json")
            ->status == 403);
  CHECK(c.Post("/mcp", headers(), init_body(), "application/json")->status == 401);
  CHECK(
      c.Post("/mcp", with(auth, "Origin", "http://localhost:3000"), init_body(), "application/json")
          ->status == 200);
  CHECK(live_workers() == before);

  auto res = c.Post("/mcp", auth, init_body(), "application/json");
  REQUIRE(res->status == 200);
  const std::string session = res->get_header_value("Mcp-Session-Id");
  REQUIRE_FALSE(session.empty());
  const httplib::Headers in_session = with(headers(session), "Authorization", "Bearer s3cret");
  const auto post = [&](const json& body) {
    auto r = c.Post("/mcp", in_session, body.dump(), "application/json");
    REQUIRE(r);
    REQUIRE(r->status == 200);
    return reply_of(r->body);
  };
  c.Post("/mcp", in_session,
         json{{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}.dump(),
         "application/json");
  // Prompts answer (they run in the server, never in a worker).
  const json prompts = post(rpc_request(2, "prompts/list", json::object()));
  REQUIRE(prompts["result"]["prompts"].size() > 0);
  const std::string name = prompts["result"]["prompts"][0]["name"];
  json args = json::object();
  for (const auto& a : prompts["result"]["prompts"][0].value("arguments", json::array()))
    if (a.value("required", false)) args[a["name"].get<std::string>()] = "x";
  const json prompt = post(rpc_request(3, "prompts/get", {{"name", name}, {"arguments", args}}));
  CHECK(prompt["result"]["messages"].size() > 0);
  // A call the worker model runs in a child process.
  const json loaded =
      post(tool_request(4, "load_trace", {{"path", kExamples + "/example_trace.json.gz"}}));
  const std::string handle = loaded["result"]["structuredContent"]["trace"];
  std::thread call([&] {
    auto other = live.client();
    auto r =
        other.Post("/mcp", in_session,
                   tool_request(5, "query_sql",
                                {{"trace", handle}, {"sql", kEndlessSql}, {"timeout_ms", 60000}})
                       .dump(),
                   "application/json");
    (void)r;  // cancelled by the DELETE: no reply, or a closed stream
  });
  const auto start = Clock::now();
  while (live_workers() == before && Clock::now() - start < std::chrono::seconds(10))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  REQUIRE(live_workers() > before);
  // DELETE ends the session and kills its call's worker.
  auto deleted = c.Delete("/mcp", in_session);
  REQUIRE(deleted);
  CHECK(deleted->status == 200);
  const auto deleted_at = Clock::now();
  while (live_workers() > before && Clock::now() - deleted_at < std::chrono::seconds(5))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK(live_workers() == before);
  call.join();
  CHECK(Clock::now() - deleted_at < std::chrono::seconds(5));
  // The session is gone; a new one is served.
  CHECK(c.Post("/mcp", in_session, ping_body(6), "application/json")->status == 404);
  auto fresh = c.Post("/mcp", auth, init_body(), "application/json");
  CHECK(fresh->status == 200);
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
