// JSON-RPC / MCP protocol behaviour of the session core, in process.
#include <doctest/doctest.h>

#include <cstdio>
#include <string>

#include <filesystem>
#include <fstream>
#include <set>

#include "categories/prepare.h"
#include "mcp_harness.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using jarvis::mcp::json;
using jarvis::mcp::testing::conformance_trace;
using jarvis::mcp::testing::Harness;
namespace rpc = jarvis::mcp::rpc;
namespace fs = std::filesystem;

namespace {

int error_code(const json& reply) {
  REQUIRE(reply.contains("error"));
  return reply["error"]["code"].get<int>();
}

}  // namespace

TEST_SUITE("mcp_protocol") {
  TEST_CASE("initialize negotiates the version and declares capabilities") {
    Harness h;
    json reply = h.initialize("2025-06-18");
    CHECK(reply["id"] == 0);
    CHECK(reply["result"]["protocolVersion"] == "2025-06-18");
    CHECK(reply["result"]["serverInfo"]["name"] == "jarvis");
    {
      // One version everywhere: serverInfo says what `jarvis --version` says.
      FILE* p = popen((std::string(JARVIS_BINARY) + " --version").c_str(), "r");
      REQUIRE(p);
      char buf[256] = {0};
      size_t n = std::fread(buf, 1, sizeof buf - 1, p);
      pclose(p);
      std::string line(buf, n);
      CHECK(line.rfind(
                "jarvis " + reply["result"]["serverInfo"]["version"].get<std::string>() + " ", 0) ==
            0);
    }
    CHECK(reply["result"]["capabilities"].contains("tools"));
    CHECK(reply["result"]["capabilities"].contains("logging"));
    CHECK_FALSE(reply["result"]["capabilities"].contains("resources"));  // fixtures only

    Harness unknown;
    CHECK(unknown.initialize("2099-01-01")["result"]["protocolVersion"] == "2025-11-25");
    Harness old;
    CHECK(old.initialize("2024-11-05")["result"]["protocolVersion"] == "2024-11-05");
  }

  TEST_CASE("second initialize is rejected") {
    Harness h;
    h.initialize();
    CHECK(error_code(h.initialize()) == rpc::kInvalidRequest);
  }

  TEST_CASE("requests before initialize: ping works, others get an error") {
    Harness h;
    json ping = h.request(5, "ping");
    CHECK(ping["result"] == json::object());
    CHECK(error_code(h.request(6, "tools/list")) == rpc::kInvalidRequest);
  }

  TEST_CASE("malformed JSON is a parse error with id null") {
    Harness h;
    json reply = h.send_text("{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": ");
    CHECK(error_code(reply) == rpc::kParseError);
    REQUIRE(reply.contains("id"));
    CHECK(reply["id"].is_null());
  }

  TEST_CASE("batches are rejected except under 2025-03-26") {
    Harness h;
    h.initialize();
    json batch = json::array({{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "ping"}}});
    json reply = h.send(batch);
    CHECK(error_code(reply) == rpc::kInvalidRequest);
    CHECK(reply.contains("id"));
    CHECK(reply["id"].is_null());

    Harness legacy;
    legacy.initialize("2025-03-26");
    json both = json::array({{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "ping"}},
                             {{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}},
                             {{"jsonrpc", "2.0"}, {"id", "b"}, {"method", "nope"}}});
    json replies = legacy.send(both);
    REQUIRE(replies.is_array());
    REQUIRE(replies.size() == 2);
    CHECK(replies[0]["id"] == 1);
    CHECK(replies[1]["id"] == "b");
    CHECK(error_code(replies[1]) == rpc::kMethodNotFound);
  }

  TEST_CASE("invalid requests whose id cannot be used answer id:null (JSON-RPC 2.0 §5)") {
    Harness h;
    h.initialize();
    for (const json& bad :
         {json(42), json("text"), json{{"jsonrpc", "2.0"}, {"id", nullptr}, {"method", "ping"}},
          json{{"jsonrpc", "2.0"}, {"id", 1.5}, {"method", "ping"}},
          json{{"jsonrpc", "2.0"}, {"id", true}, {"method", "ping"}}}) {
      json reply = h.send(bad);
      CHECK(error_code(reply) == rpc::kInvalidRequest);
      REQUIRE(reply.contains("id"));
      CHECK(reply["id"].is_null());
    }
    json wrong_version = h.send({{"jsonrpc", "1.0"}, {"id", 9}, {"method", "ping"}});
    CHECK(error_code(wrong_version) == rpc::kInvalidRequest);
    CHECK(wrong_version["id"] == 9);
  }

  TEST_CASE("ids are echoed with their type") {
    Harness h;
    h.initialize();
    json s = h.send({{"jsonrpc", "2.0"}, {"id", "7"}, {"method", "ping"}});
    json n = h.send({{"jsonrpc", "2.0"}, {"id", 7}, {"method", "ping"}});
    CHECK(s["id"].is_string());
    CHECK(n["id"].is_number_integer());
  }

  TEST_CASE("unknown method and unknown notification") {
    Harness h;
    h.initialize();
    CHECK(error_code(h.request(1, "no/such/method")) == rpc::kMethodNotFound);
    CHECK(h.send({{"jsonrpc", "2.0"}, {"method", "notifications/whatever"}}).is_null());
    // Undeclared features: resources exist only with the conformance fixtures.
    CHECK(error_code(h.request(2, "resources/list")) == rpc::kMethodNotFound);
  }

  TEST_CASE("bad params") {
    Harness h;
    h.initialize();
    CHECK(error_code(h.send(
              {{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/call"}, {"params", {1, 2}}})) ==
          rpc::kInvalidParams);
    CHECK(error_code(h.request(2, "tools/call", {{"arguments", json::object()}})) ==
          rpc::kInvalidParams);
    CHECK(error_code(h.request(3, "tools/call", {{"name", "list_traces"}, {"arguments", {1}}})) ==
          rpc::kInvalidParams);
    CHECK(error_code(h.request(4, "logging/setLevel", {{"level", "loud"}})) == rpc::kInvalidParams);
    CHECK(h.request(5, "logging/setLevel", {{"level", "debug"}})["result"] == json::object());
    CHECK(error_code(h.request(6, "tools/list", {{"cursor", "bogus"}})) == rpc::kInvalidParams);
    CHECK(error_code(h.request(7, "prompts/get", {{"name", "no_such_prompt"}})) ==
          rpc::kInvalidParams);
  }

  TEST_CASE("unknown tool is a JSON-RPC error") {
    Harness h;
    h.initialize();
    json reply = h.call_tool(1, "no_such_tool", json::object());
    CHECK(error_code(reply) == rpc::kInvalidParams);
    CHECK(reply["error"]["message"].get<std::string>().find("no_such_tool") != std::string::npos);
  }

  TEST_CASE("schema-invalid arguments give an isError result naming the problem") {
    Harness h;
    h.initialize();
    json missing = h.call_tool(1, "load_trace", json::object());
    CHECK(missing["result"]["isError"] == true);
    CHECK(missing["result"]["content"][0]["text"].get<std::string>().find("\"path\"") !=
          std::string::npos);
    json wrong_type = h.call_tool(2, "load_trace", {{"path", 5}});
    CHECK(wrong_type["result"]["isError"] == true);
    json extra = h.call_tool(3, "list_traces", {{"bogus", 1}});
    CHECK(extra["result"]["isError"] == true);
    CHECK(extra["result"]["content"][0]["text"].get<std::string>().find("bogus") !=
          std::string::npos);
    json range = h.call_tool(4, "ops_summary", {{"trace", "t1"}, {"top_n", 0}});
    CHECK(range["result"]["isError"] == true);
    CHECK(range["result"]["content"][0]["text"].get<std::string>().find(">= 1") !=
          std::string::npos);
  }

  TEST_CASE("oversize message is rejected") {
    jarvis::mcp::ServerOptions options = jarvis::mcp::testing::shared_root_options();
    options.max_message_bytes = 100;
    Harness h(options);
    std::string big = json{{"jsonrpc", "2.0"},
                           {"id", 1},
                           {"method", "ping"},
                           {"params", {{"pad", std::string(200, 'x')}}}}
                          .dump();
    json reply = h.send_text(big);
    CHECK(error_code(reply) == rpc::kInvalidRequest);
    CHECK(reply.contains("id"));
    CHECK(reply["id"].is_null());
  }

  TEST_CASE("path outside the roots is refused") {
    Harness h;
    h.initialize();
    for (std::string path :
         {"/etc/passwd", "../../etc/passwd", "conformance/../../../etc/hostname"}) {
      json reply = h.call_tool(1, "load_trace", {{"path", path}});
      REQUIRE(reply.contains("result"));
      CHECK(reply["result"]["isError"] == true);
      CHECK(reply["result"]["content"][0]["text"].get<std::string>().find("outside the allowed") !=
            std::string::npos);
    }
    json missing = h.call_tool(2, "load_trace", {{"path", "conformance/nope.json"}});
    CHECK(missing["result"]["isError"] == true);
    CHECK(missing["result"]["content"][0]["text"].get<std::string>().find("does not exist") !=
          std::string::npos);
  }

  TEST_CASE("cancelled load sends no reply and keeps no handle") {
    Harness h;
    h.initialize();
    bool cancelled = false;
    jarvis::mcp::Emit cancel_on_progress = [&](const json& note) {
      if (note.value("method", "") == "notifications/progress" && !cancelled) {
        cancelled = true;
        h.session->handle({{"jsonrpc", "2.0"},
                           {"method", "notifications/cancelled"},
                           {"params", {{"requestId", 77}, {"reason", "test"}}}},
                          h.emit);
      }
    };
    json request = {{"jsonrpc", "2.0"},
                    {"id", 77},
                    {"method", "tools/call"},
                    {"params",
                     {{"name", "load_trace"},
                      {"arguments", {{"path", conformance_trace("h100_bert-small")}}},
                      {"_meta", {{"progressToken", "tok"}}}}}};
    auto reply = h.session->handle(request, cancel_on_progress);
    CHECK(cancelled);
    CHECK_FALSE(reply.has_value());
    CHECK(h.session->traces().size() == 0);
    CHECK(h.session->in_flight() == 0);
    // The same id is usable again afterwards and the load then succeeds.
    json again = h.send(request);
    CHECK(again["result"]["structuredContent"]["trace"] == "t1");
  }

  TEST_CASE("progress notifications carry the token and increase") {
    Harness h;
    h.initialize();
    json reply = h.call_tool(3, "load_trace", {{"path", conformance_trace("h100_bert-small")}},
                             {{"progressToken", 42}});
    CHECK(reply["result"]["structuredContent"]["trace"] == "t1");
    double last = -1;
    int seen = 0;
    for (const auto& note : h.notes) {
      if (note["method"] != "notifications/progress") continue;
      CHECK(note["params"]["progressToken"] == 42);
      CHECK(note["params"]["progress"].get<double>() > last);
      last = note["params"]["progress"].get<double>();
      ++seen;
    }
    CHECK(seen >= 1);
  }

  TEST_CASE("tools/list pagination and version gating") {
    jarvis::mcp::ServerOptions options = jarvis::mcp::testing::shared_root_options();
    options.tools_page_size = 2;
    options.list_output_schemas = true;  // serve --output-schemas
    Harness h(options);
    h.initialize();
    std::vector<std::string> names;
    json cursor;
    for (int page = 0; page < 100; ++page) {
      json params = json::object();
      if (!cursor.is_null()) params["cursor"] = cursor;
      json reply = h.request(page + 1, "tools/list", params);
      for (const auto& tool : reply["result"]["tools"]) {
        names.push_back(tool["name"]);
        CHECK(tool.contains("outputSchema"));
      }
      if (!reply["result"].contains("nextCursor")) break;
      cursor = reply["result"]["nextCursor"];
    }
    CHECK(names.size() == h.server.tools().size());
    CHECK(std::is_sorted(names.begin(), names.end()));
    CHECK(std::find(names.begin(), names.end(), "load_trace") != names.end());

    Harness old;
    old.initialize("2025-03-26");
    json list = old.request(1, "tools/list");
    CHECK_FALSE(list["result"]["tools"][0].contains("outputSchema"));
    json call = old.call_tool(2, "list_traces", json::object());
    INFO(call.dump());
    REQUIRE(call.contains("result"));
    CHECK_FALSE(call["result"].contains("structuredContent"));
    CHECK(json::parse(call["result"]["content"][0]["text"].get<std::string>()).contains("traces"));
  }

  TEST_CASE("2026-07-28 requests are served statelessly") {
    Harness h;  // no initialize
    json meta = {{jarvis::mcp::kMetaProtocolVersion, "2026-07-28"},
                 {jarvis::mcp::kMetaClientCapabilities, json::object()}};
    json discover = h.request(1, "server/discover", {{"_meta", meta}});
    CHECK(discover["result"]["resultType"] == "complete");
    CHECK(discover["result"]["supportedVersions"] == json::array({"2026-07-28"}));
    CHECK(discover["result"].contains("ttlMs"));
    CHECK(discover["result"]["_meta"][jarvis::mcp::kMetaServerInfo]["name"] == "jarvis");

    json list = h.request(2, "tools/list", {{"_meta", meta}});
    CHECK(list["result"]["resultType"] == "complete");
    CHECK(list["result"]["cacheScope"] == "public");

    json call = h.request(
        3, "tools/call", {{"name", "list_traces"}, {"arguments", json::object()}, {"_meta", meta}});
    CHECK(call["result"]["resultType"] == "complete");
    CHECK(call["result"]["structuredContent"]["traces"].is_array());

    CHECK(error_code(h.request(4, "server/discover")) == rpc::kInvalidParams);  // no _meta
    json old_version = meta;
    old_version[jarvis::mcp::kMetaProtocolVersion] = "2030-01-01";
    json unsupported = h.request(5, "tools/list", {{"_meta", old_version}});
    CHECK(error_code(unsupported) == rpc::kUnsupportedProtocolVersion);
    CHECK(unsupported["error"]["data"]["requested"] == "2030-01-01");
    CHECK(error_code(h.request(6, "ping", {{"_meta", meta}})) == rpc::kMethodNotFound);
  }

  TEST_CASE("prompts come from the skills directory") {
    Harness h;
    json init = h.initialize();
    if (h.server.prompts().empty()) {
      CHECK_FALSE(init["result"]["capabilities"].contains("prompts"));
      return;
    }
    json list = h.request(1, "prompts/list");
    REQUIRE(list["result"]["prompts"].size() == h.server.prompts().size());
    std::string name = list["result"]["prompts"][0]["name"];
    json prompt = h.request(2, "prompts/get", {{"name", name}});
    CHECK(prompt["result"]["messages"][0]["role"] == "user");
    CHECK(!prompt["result"]["messages"][0]["content"]["text"].get<std::string>().empty());
  }

  TEST_CASE("every skill TraceLens's manifests name is a served prompt, under both names") {
    Harness h;
    h.initialize();
    std::set<std::string> served;
    json listing = h.request(1, "prompts/list");
    for (const auto& p : listing["result"]["prompts"]) served.insert(p["name"].get<std::string>());
    // The skills of every category in every reference manifest in ../shared.
    std::set<std::string> manifest_skills;
    for (const auto& dir : fs::directory_iterator(jarvis::golden::shared_dir() + "/conformance")) {
      fs::path manifest = dir.path() / "category_data" / "category_manifest.json";
      if (!fs::exists(manifest)) continue;
      std::ifstream in(manifest);
      json doc = json::parse(in);
      for (const auto& c : doc["categories"]) manifest_skills.insert(c["skill"].get<std::string>());
    }
    REQUIRE(manifest_skills.size() >= 5);
    int id = 10;
    for (const std::string& skill : manifest_skills) {
      CAPTURE(skill);
      std::string prompt = jarvis::analysis::prompt_for_skill(skill);
      CHECK(served.count(prompt) == 1);
      json by_alias = h.request(++id, "prompts/get", {{"name", skill}});
      json by_name = h.request(++id, "prompts/get", {{"name", prompt}});
      REQUIRE(by_alias.contains("result"));
      CHECK(by_alias["result"] == by_name["result"]);
    }
    // Every pair of the table names a served prompt, and the listing carries the alias.
    for (const auto& [tracelens, prompt] : jarvis::analysis::skill_prompt_names()) {
      std::string prompt_name(prompt);
      CAPTURE(prompt_name);
      CHECK(served.count(prompt_name) == 1);
    }
    for (const auto& p : listing["result"]["prompts"])
      if (p["name"] == "gemm-analysis")
        CHECK(p["_meta"]["jarvis/tracelens_skill_names"] == json::array({"gemm-analyzer"}));
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
