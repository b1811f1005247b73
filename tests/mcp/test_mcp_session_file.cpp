// examples/session.jsonl piped into `jarvis serve --stdio` (the real binary):
// every request is answered once, with a result, and the ops_summary rows are
// TraceLens's. Requests are sent one at a time (each after the previous
// answer), as a client would, since the server runs requests concurrently.
#include <doctest/doctest.h>

#include <fstream>
#include <set>

#include "child_process.h"
#include "golden.h"
#include "mcp/server.h"
#include "report/table.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using jarvis::mcp::json;

using jarvis::testing::Child;

TEST_SUITE("mcp_stdio") {
  TEST_CASE("examples/session.jsonl through jarvis serve --stdio") {
    std::ifstream file(std::string(JARVIS_SOURCE_DIR) + "/examples/session.jsonl");
    REQUIRE(file);
    Child child({JARVIS_BINARY, "serve", "--stdio", "--root", jarvis::golden::shared_dir()});
    auto reference =
        jarvis::read_csv_file(jarvis::golden::shared_dir() +
                              "/conformance/h100_bert-small/perf_report_csvs/ops_summary.csv");
    std::string line;
    int requests = 0, progress = 0;
    while (std::getline(file, line)) {
      if (line.empty()) continue;
      json message = json::parse(line);
      child.send(line);
      if (!message.contains("id")) continue;
      ++requests;
      INFO(line);
      json reply;
      while (true) {  // notifications may come first
        std::string out = child.read_line();
        REQUIRE(!out.empty());
        reply = json::parse(out);
        if (reply.contains("id")) break;
        CHECK(reply["method"] == "notifications/progress");
        ++progress;
      }
      CHECK(reply["jsonrpc"] == "2.0");
      CHECK(reply["id"] == message["id"]);
      REQUIRE(reply.contains("result"));
      const json& result = reply["result"];
      if (message["method"] != "tools/call") continue;
      CHECK(result.value("isError", false) == false);
      std::string tool = message["params"]["name"];
      const json& out = result["structuredContent"];
      if (tool == "load_trace") CHECK(out["trace"] == "t1");
      if (tool == "ops_summary" && !message["params"]["arguments"].contains("category")) {
        REQUIRE(out["rows"].size() == 5);
        for (size_t r = 0; r < 5; ++r)
          CHECK(out["rows"][r]["name"].get<std::string>() == reference.at(r, "name").text());
      }
      if (tool == "ops_summary" && message["params"]["arguments"].contains("category"))
        for (const auto& row : out["rows"])
          CHECK(row["categories"].dump().find("GEMM") != std::string::npos);
    }
    CHECK(requests == 8);
    CHECK(progress >= 1);
    child.close_stdin();
    CHECK(child.read_line(5000) == "");  // nothing after the last answer
    CHECK(child.wait_exit() == 0);       // exits on EOF
  }

  TEST_CASE("examples/session.jsonl piped at once runs in order") {
    std::ifstream file(std::string(JARVIS_SOURCE_DIR) + "/examples/session.jsonl");
    REQUIRE(file);
    Child child({JARVIS_BINARY, "serve", "--stdio", "--root", jarvis::golden::shared_dir()});
    std::string line;
    std::set<json> ids;
    while (std::getline(file, line)) {
      if (line.empty()) continue;
      child.send(line);
      json message = json::parse(line);
      if (message.contains("id")) ids.insert(message["id"]);
    }
    child.close_stdin();  // EOF right away: the server must still answer everything
    std::set<json> answered;
    for (std::string out; !(out = child.read_line()).empty();) {
      json reply = json::parse(out);
      if (!reply.contains("id")) continue;
      INFO(out.substr(0, 300));
      CHECK(reply.contains("result"));
      CHECK(reply["result"].value("isError", false) == false);
      CHECK(answered.insert(reply["id"]).second);
    }
    CHECK(answered == ids);
    CHECK(child.wait_exit() == 0);
  }

  TEST_CASE("stdio answers garbage, batches and oversize lines without dying") {
    Child child({JARVIS_BINARY, "serve", "--stdio", "--root", jarvis::golden::shared_dir(),
                 "--max-message-mb", "1"});
    child.send("this is not json");
    json parse = json::parse(child.read_line());
    CHECK(parse["error"]["code"] == jarvis::mcp::rpc::kParseError);
    REQUIRE(parse.contains("id"));
    CHECK(parse["id"].is_null());  // JSON-RPC 2.0 §5: id null when it cannot be read
    child.send(R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])");
    CHECK(json::parse(child.read_line())["error"]["code"] == jarvis::mcp::rpc::kInvalidRequest);
    child.send(std::string(2u << 20, 'x'));
    CHECK(json::parse(child.read_line())["error"]["code"] == jarvis::mcp::rpc::kInvalidRequest);
    child.send("{\"jsonrpc\":\"2.0\",\"id\":\"p\",\"method\":\"ping\"}\r");
    json pong = json::parse(child.read_line());
    CHECK(pong["id"] == "p");
    CHECK(pong["result"] == json::object());
    child.close_stdin();
    CHECK(child.wait_exit() == 0);
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
