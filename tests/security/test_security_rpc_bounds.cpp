// Security regression tests of the JSON-RPC layer (issue 49 points 3 and 7):
// batch amplification, the memory a parse may take, id:null on errors whose
// id is unknown, the per-address connection cap against loopback aliases,
// and a Host header smuggling a NUL. Each reproduces the attack over the
// transports it concerns, asserts the refusal (and the memory bound), and
// that the server answers the next request.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <set>
#include <thread>
#include <vector>

#include "child_process.h"
#include "http_live.h"
#include "sanitizer.h"
#include "security_support.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using jarvis::mcp::json;
namespace mcp = jarvis::mcp;
using namespace jarvis::mcp::testing;  // Harness, Live, headers, open_session, connect_raw, ...
using jarvis::testing::Child;
using jarvis::testing::proc_status_bytes;
using jarvis::testing::ScratchDir;
using Clock = std::chrono::steady_clock;

namespace {

constexpr uint64_t kMiB = 1u << 20;

json request(int id, const std::string& method, json params = json::object()) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}};
}

json batch_of(size_t count, const std::string& method) {
  json batch = json::array();
  for (size_t k = 0; k < count; ++k) batch.push_back(request(static_cast<int>(k + 1), method));
  return batch;
}

// A ping whose params hold `count` empty objects: 3 bytes of text each, but
// ~86 bytes each once parsed (20 M of them, 60 MiB, took ~2 GB).
std::string tiny_values_message(size_t count) {
  std::string text = R"({"jsonrpc":"2.0","id":5,"method":"ping","params":{"x":[)";
  text.reserve(text.size() + 3 * count + 8);
  for (size_t k = 0; k < count; ++k) text += k ? ",{}" : "{}";
  return text + "]}}";
}

// `jarvis serve --stdio` on the shared data, initialized at `version`.
struct StdioServer {
  Child child;
  explicit StdioServer(const std::string& version, const std::string& root = "")
      : child({JARVIS_BINARY, "serve", "--stdio", "--root",
               root.empty() ? jarvis::golden::shared_dir() : root}) {
    child.send(json::parse(init_body(version)).dump());
    json reply = json::parse(child.read_line());
    REQUIRE(reply["result"]["protocolVersion"] == version);
    child.send(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
  }
  json ask(const std::string& line) {
    child.send(line);
    std::string out = child.read_line();
    REQUIRE_FALSE(out.empty());
    return json::parse(out);
  }
  void answers_ping(int id) {
    json pong = ask(request(id, "ping").dump());
    CHECK(pong["id"] == id);
    CHECK(pong.contains("result"));
  }
  uint64_t peak_rss() const { return proc_status_bytes(child.pid(), "VmHWM"); }
};

bool is_null_id_error(const json& reply, int code) {
  return reply.is_object() && reply.contains("id") && reply["id"].is_null() &&
         reply["error"]["code"] == code;
}

// True when the peer closed the connection (recv sees EOF or a reset).
bool closed_by_server(int fd) {
  char byte;
  ssize_t got = ::recv(fd, &byte, 1, MSG_DONTWAIT);
  return got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

}  // namespace

TEST_SUITE("mcp_security") {
  TEST_CASE(
      "issue 49 point 3: a batch of 4,000 tools/list is one small -32600 on every transport") {
    json batch = batch_of(4000, "tools/list");
    const std::string expected = fmt::format("batch too large: 4000 messages, at most {}",
                                             mcp::ServerOptions{}.max_batch_messages);

    Harness h;
    h.initialize("2025-03-26");
    uint64_t rss_before = jarvis::testing::resident_bytes();
    json reply = h.send(batch);
    REQUIRE(reply.is_object());
    CHECK(is_null_id_error(reply, mcp::rpc::kInvalidRequest));
    CHECK(reply["error"]["message"].get<std::string>().find(expected) != std::string::npos);
    CHECK(reply.dump().size() < 512);
    CHECK(jarvis::testing::resident_bytes() < rss_before + 32 * kMiB);  // was 218 MB of reply
    CHECK(h.request(9, "ping")["result"] == json::object());

    // stdio: the 0.22 MB line took the server to 5.1 GB in 53 s.
    StdioServer stdio("2025-03-26");
    auto start = Clock::now();
    json over_stdio = stdio.ask(batch.dump());
    CHECK(Clock::now() - start < std::chrono::seconds(5 * kSanitizerSlowdown));
    CHECK(is_null_id_error(over_stdio, mcp::rpc::kInvalidRequest));
    CHECK(over_stdio["error"]["message"].get<std::string>().find(expected) != std::string::npos);
    CHECK(stdio.peak_rss() < 128 * kMiB);
    stdio.answers_ping(10);

    // HTTP: one 400 with the same error.
    Live live;
    auto c = live.client();
    std::string session = open_session(c, "2025-03-26");
    auto res = c.Post("/mcp", headers(session), batch.dump(), "application/json");
    REQUIRE(res);
    CHECK(res->status == 400);
    CHECK(res->body.size() < 512);
    CHECK(json::parse(res->body)["error"]["message"].get<std::string>().find(expected) !=
          std::string::npos);
    answers_next_request(live);
  }

  TEST_CASE("issue 49 point 3: a batch's replies stop at the reply budget; the rest do not run") {
    Harness full;
    full.initialize("2025-03-26");
    size_t one_reply = full.request(1, "tools/list").dump().size();
    // At the message cap and under the default budget, every request is answered.
    json all = full.send(batch_of(mcp::ServerOptions{}.max_batch_messages, "tools/list"));
    REQUIRE(all.is_array());
    CHECK(all.size() == mcp::ServerOptions{}.max_batch_messages);
    for (const json& r : all) CHECK(r.contains("result"));

    mcp::ServerOptions options = shared_root_options();
    options.max_batch_reply_bytes = 3 * one_reply + one_reply / 2;
    Harness h(options);
    h.initialize("2025-03-26");
    json batch = batch_of(40, "tools/list");
    // A load after the budget is spent must not run: no trace appears.
    batch.push_back(
        request(41, "tools/call",
                {{"name", "load_trace"},
                 {"arguments", {{"path", "conformance/h100_bert-small/trace.json.gz"}}}}));
    json replies = h.send(batch);
    REQUIRE(replies.is_array());
    REQUIRE(replies.size() == 41);
    size_t answered = 0;
    for (size_t k = 0; k < replies.size(); ++k) {
      CHECK(replies[k]["id"] == static_cast<int>(k + 1));
      if (replies[k].contains("result")) {
        ++answered;
        continue;
      }
      CHECK(replies[k]["error"]["code"] == mcp::rpc::kInvalidRequest);
      CHECK(replies[k]["error"]["message"].get<std::string>().find("was not run") !=
            std::string::npos);
    }
    CHECK(answered == 4);  // the fourth reply crosses the budget; none after it runs
    CHECK(replies.dump().size() <= options.max_batch_reply_bytes + one_reply + 41 * 256);
    json listed = h.tool_result(42, "list_traces", json::object());
    CHECK(listed.dump().find("bert") == std::string::npos);
    CHECK(h.request(43, "ping")["result"] == json::object());
  }

  TEST_CASE(
      "issue 49 point 3: millions of tiny values are refused before parsing, memory bounded") {
    // 20 M empty objects, 60 MiB: under the 64 MiB message cap.
    const size_t count = 20u << 20;
    std::string attack = tiny_values_message(count);
    REQUIRE(attack.size() < mcp::ServerOptions{}.max_message_bytes);
    const size_t limit = mcp::max_json_values(mcp::ServerOptions{}.max_message_bytes);
    CHECK(limit == 524288);

    // stdio, the real binary: refused in well under a second of parse work,
    // peak RSS the line it read plus its buffer's growth (it took ~2 GB).
    StdioServer stdio("2025-11-25");
    uint64_t idle_peak = stdio.peak_rss();
    auto start = Clock::now();
    json refused = stdio.ask(attack);
    CHECK(Clock::now() - start < std::chrono::seconds(5 * kSanitizerSlowdown));
    CHECK(is_null_id_error(refused, mcp::rpc::kInvalidRequest));
    CHECK(refused["error"]["message"].get<std::string>().find(
              fmt::format("more than the limit of {}", limit)) != std::string::npos);
    INFO("stdio peak RSS grew by ", (stdio.peak_rss() - idle_peak) / kMiB, " MiB");
    CHECK(stdio.peak_rss() < idle_peak + 3 * attack.size());
    stdio.answers_ping(6);

    // Just under the limit the same shape still parses and is answered.
    json near = stdio.ask(tiny_values_message(limit / 2 - 16));
    CHECK(near["id"] == 5);
    CHECK(near.contains("result"));

    // HTTP: the same 400 before any parse.
    Live live;
    auto c = live.client();
    auto res = c.Post("/mcp", headers(), attack, "application/json");
    REQUIRE(res);
    CHECK(res->status == 400);
    CHECK(is_null_id_error(json::parse(res->body), mcp::rpc::kInvalidRequest));
    answers_next_request(live);
  }

  TEST_CASE("issue 49 point 3: a 1 MB write_findings message is still served") {
    ScratchDir root;
    std::filesystem::create_directories(root / "out");
    StdioServer stdio("2025-11-25", root.str());
    std::string markdown = "# Findings\n";
    while (markdown.size() < 1000000)
      markdown += "- a line of findings text, with numbers 1, 2, 3\n";
    json call = request(
        7, "tools/call",
        {{"name", "write_findings"},
         {"arguments",
          {{"output_dir", "out"}, {"category", "gemm"}, {"markdown", markdown}, {"force", true}}}});
    json reply = stdio.ask(call.dump());
    INFO(reply.dump().substr(0, 400));
    REQUIRE(reply.contains("result"));
    CHECK_FALSE(reply["result"].value("isError", false));
    CHECK(reply["result"]["structuredContent"]["bytes"] == markdown.size());
  }

  TEST_CASE("the pre-parse scan reads the root's id and method as the parser does") {
    // The stdio reader refuses a request it has no room for from this scan
    // alone, so the scan must find the same id and kind the parser would.
    const std::vector<std::string> messages = {
        R"({"jsonrpc":"2.0","id":7,"method":"tools/list"})",
        R"({ "method" : "tools/call" , "params":{"id":99,"method":"ping"}, "id" : "a\"b" })",
        R"({"id":1,"method":"ping"})",
        R"({"method":"initialize","id":null})",
        R"({"method":"notifications/cancelled","params":{"id":3}})",
        R"({"id":2,"result":{"method":"x","id":5}})",
        R"({"id":1,"id":2,"method":"tools/list","method":"tools/call"})",
        R"({"s":"\"id\":4,","id":-3.5e2,"method":"m"})",
        R"([{"id":1,"method":"ping"}])",
        R"({"id":{"x":1},"method":"m"})",
    };
    for (const std::string& text : messages) {
      INFO(text);
      json parsed = json::parse(text);
      mcp::JsonTextScan scan = mcp::scan_json_text(text, mcp::kMaxJsonDepth);
      bool expect_pool =
          parsed.is_array() || (parsed.contains("id") && parsed.contains("method") &&
                                parsed["method"] != "initialize" && parsed["method"] != "ping");
      CHECK(mcp::scanned_runs_on_pool(scan) == expect_pool);
      json expect_id = parsed.is_object() && parsed.contains("id") && !parsed["id"].is_structured()
                           ? parsed["id"]
                           : json();
      CHECK(mcp::scanned_request_id(scan) == expect_id);
    }
  }

  TEST_CASE("issue 49 point 3: large messages queued behind a busy stdio worker are bounded") {
    // The one worker waits on a sampling request we have not answered yet;
    // meanwhile twelve 60 MiB requests arrive. Before, the reader parsed and
    // queued them all (one parse each, however many); now what waits or
    // runs holds at most twice the message cap, the rest is refused at once
    // with its id, and the reader keeps reading (our answer still gets in).
    // The worker must still wait for our sampling answer when the flood is
    // through (slow under ASan on a loaded machine): a long client timeout.
    Child child({JARVIS_BINARY, "serve", "--stdio", "--conformance-fixtures", "--root",
                 jarvis::golden::shared_dir(), "--client-timeout-s", "1800"});
    json init = json::parse(init_body());
    init["params"]["capabilities"] = {{"sampling", json::object()}};
    child.send(init.dump());
    REQUIRE(json::parse(child.read_line())["id"] == 1);
    child.send(
        request(2, "tools/call", {{"name", "test_sampling"}, {"arguments", {{"prompt", "hi"}}}})
            .dump());
    json sampling = json::parse(child.read_line());
    REQUIRE(sampling["method"] == "sampling/createMessage");
    uint64_t peak_before = proc_status_bytes(child.pid(), "VmHWM");

    // The flood is of tool calls, which wait for the busy worker (tools/list
    // and the other quick requests run on a lane of their own, issue 74: a
    // small one is answered while the worker still waits, below).
    const std::string pad(60u << 20, 'a');
    size_t line_size = 0;
    for (int id = 10; id < 22; ++id) {
      std::string line =
          request(id, "tools/call", {{"name", "ops_summary"}, {"arguments", {{"pad", pad}}}})
              .dump();
      line_size = line.size();
      child.send(line);
    }
    std::vector<int> busy;
    for (size_t k = 0; k < 10; ++k) {
      json reply = json::parse(child.read_line());
      CHECK(reply["error"]["code"] == mcp::rpc::kServerBusy);
      busy.push_back(reply["id"].get<int>());
    }
    CHECK(busy == std::vector<int>{12, 13, 14, 15, 16, 17, 18, 19, 20, 21});
    // Two held, the reader's line buffer, and one parse in its hands (the
    // parser's token buffer and the string it builds): ~6 lines, not twelve.
    uint64_t growth = proc_status_bytes(child.pid(), "VmHWM") - peak_before;
    INFO("stdio peak RSS grew by ", growth / kMiB, " MiB for twelve 60 MiB messages");
    // ASan keeps freed chunks resident in its quarantine (256 MiB by
    // default) and pads each allocation: widen the bound by that much there.
    const uint64_t asan_slack = JARVIS_ASAN ? 320 * kMiB : 0;
    CHECK(growth < 7 * line_size + asan_slack);
    child.send(request(30, "tools/list").dump());
    CHECK(json::parse(child.read_line())["id"] == 30);

    child.send(
        json{{"jsonrpc", "2.0"},
             {"id", sampling["id"]},
             {"result", {{"role", "assistant"}, {"content", {{"type", "text"}, {"text", "ok"}}}}}}
            .dump());
    std::set<int> answered;
    for (int k = 0; k < 3; ++k) answered.insert(json::parse(child.read_line())["id"].get<int>());
    CHECK(answered == std::set<int>{2, 10, 11});
    child.send(request(14, "ping").dump());
    CHECK(json::parse(child.read_line())["id"] == 14);
  }

  TEST_CASE("issue 49 point 7: errors whose id cannot be read carry \"id\": null") {
    Harness h;
    CHECK(is_null_id_error(h.send_text("{\"jsonrpc\":\"2.0\",\"id\":1,"), mcp::rpc::kParseError));
    CHECK(is_null_id_error(h.send(json::array()), mcp::rpc::kInvalidRequest));
    CHECK(is_null_id_error(h.send(json(42)), mcp::rpc::kInvalidRequest));

    StdioServer stdio("2025-11-25");
    json parse = stdio.ask("{not json");
    CHECK(is_null_id_error(parse, mcp::rpc::kParseError));
    CHECK(
        stdio.ask(R"({"jsonrpc":"2.0","id":[1],"method":"ping"})").dump() ==
        R"({"error":{"code":-32600,"message":"Invalid Request: id must be a string or an integer"},"id":null,"jsonrpc":"2.0"})");
    stdio.answers_ping(3);

    Live live;
    auto c = live.client();
    auto res = c.Post("/mcp", headers(), "{not json", "application/json");
    REQUIRE(res);
    CHECK(res->status == 400);
    CHECK(is_null_id_error(json::parse(res->body), mcp::rpc::kParseError));
    answers_next_request(live);
  }

  TEST_CASE("issue 49 point 7: loopback aliases (127.0.x.y) share one per-address cap") {
    CHECK(mcp::connection_cap_address("127.0.0.1") == "loopback");
    CHECK(mcp::connection_cap_address("127.0.3.4") == "loopback");
    CHECK(mcp::connection_cap_address("127.255.255.254") == "loopback");
    CHECK(mcp::connection_cap_address("::1") == "loopback");
    CHECK(mcp::connection_cap_address("::ffff:127.0.0.2") == "loopback");
    CHECK(mcp::connection_cap_address("::ffff:10.1.2.3") == "10.1.2.3");
    CHECK(mcp::connection_cap_address("10.1.2.3") == "10.1.2.3");
    CHECK(mcp::connection_cap_address("128.0.0.1") == "128.0.0.1");
    CHECK(mcp::connection_cap_address("fe80::1") == "fe80::1");

    mcp::HttpOptions options;
    options.threads = 8;
    options.max_connections_per_ip = 2;
    Live live(options);
    // Six idle connections, each from its own loopback address: before, each
    // address had a cap of its own and all six held a worker until the 15 s
    // request deadline.
    std::vector<int> idle;
    for (int k = 2; k < 8; ++k) {
      std::string source = fmt::format("127.0.{}.{}", k, k);
      idle.push_back(connect_raw(live.http.port(), source.c_str()));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // distinct ages
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(800));  // a few watchdog sweeps
    size_t closed = 0;
    for (int fd : idle) closed += closed_by_server(fd) ? 1 : 0;
    CHECK(closed == idle.size() - options.max_connections_per_ip);
    CHECK_FALSE(closed_by_server(idle.back()));  // the oldest went first
    for (int fd : idle) ::close(fd);
    answers_next_request(live);
  }

  TEST_CASE(
      "issue 49 point 7: a Host header with %00, a control byte or a second Host is refused") {
    CHECK_FALSE(mcp::is_local_host_header(std::string("localhost\0.evil.com", 19)));
    CHECK_FALSE(mcp::is_local_host_header("localhost%00.evil.com"));
    CHECK_FALSE(mcp::is_local_host_header("local\x01host"));
    CHECK_FALSE(mcp::is_local_host_header("localhost:80\x7f"));
    CHECK(mcp::is_local_host_header(" LocalHost:8080 "));

    Live live;
    std::string body = init_body();
    auto raw_status = [&](const std::string& host_lines) {
      int fd = connect_raw(live.http.port());
      send_all(fd, "POST /mcp HTTP/1.1\r\n" + host_lines +
                       "Content-Type: application/json\r\nAccept: application/json\r\n"
                       "Connection: close\r\nContent-Length: " +
                       std::to_string(body.size()) + "\r\n\r\n" + body);
      std::string reply = receive_some(fd);
      ::close(fd);
      return reply.substr(0, reply.find("\r\n"));
    };
    // cpp-httplib percent-decodes header values and hands them out through
    // c_str(): this one read as "localhost" and passed.
    CHECK(raw_status("Host: localhost%00.evil.com\r\n") == "HTTP/1.1 403 Forbidden");
    CHECK(raw_status("Host: 127.0.0.1%0d.evil.com\r\n") == "HTTP/1.1 403 Forbidden");
    CHECK(raw_status("Host: localhost\r\nHost: evil.com\r\n") == "HTTP/1.1 403 Forbidden");
    CHECK(raw_status("Host: localhost\r\nOrigin: http://localhost%00.evil.com\r\n") ==
          "HTTP/1.1 403 Forbidden");
    CHECK(raw_status("Host: localhost\r\n") == "HTTP/1.1 200 OK");
    answers_next_request(live);
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
