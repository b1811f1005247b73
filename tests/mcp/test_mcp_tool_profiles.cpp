// jarvis serve --profile / --tools (issue 50): a smaller tools/list that
// lists exactly the selected tools and refuses calls to the others by name.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "mcp/tool_profiles.h"
#include "mcp_harness.h"

using jarvis::mcp::json;
using jarvis::mcp::testing::Harness;

namespace {

// Every tool of a tools/list at the protocol that carries output schemas.
std::vector<json> listed_tools(Harness& h) {
  h.initialize("2025-06-18");
  json reply = h.request(1, "tools/list");
  REQUIRE(reply.contains("result"));
  return reply["result"]["tools"].get<std::vector<json>>();
}

size_t listed_bytes(const std::vector<json>& tools) {
  return json(tools).dump().size();
}

// The tool names of tools_schema/, read from the source tree.
std::set<std::string> schema_files() {
  std::set<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(
           std::filesystem::path(JARVIS_SOURCE_DIR) / "tools_schema"))
    if (entry.path().extension() == ".json") names.insert(entry.path().stem().string());
  return names;
}

}  // namespace

TEST_SUITE("mcp_tool_profiles") {
  TEST_CASE("each profile lists exactly its tools, smaller than the whole list") {
    const auto files = schema_files();
    const auto builtin = jarvis::mcp::builtin_tool_names();
    CHECK(std::set<std::string>(builtin.begin(), builtin.end()) == files);
    Harness all;
    const auto every = listed_tools(all);
    CHECK(every.size() == files.size());
    const size_t all_bytes = listed_bytes(every);
    std::set<std::string> covered;
    for (const auto& profile : jarvis::mcp::tool_profiles()) {
      CAPTURE(profile.name);
      auto options = jarvis::mcp::testing::shared_root_options();
      options.tools =
          jarvis::mcp::select_tools({profile.name}, {}, jarvis::mcp::builtin_tool_names());
      Harness h(options);
      const auto tools = listed_tools(h);
      std::set<std::string> names;
      for (const auto& t : tools) names.insert(t["name"].get<std::string>());
      CHECK(names == std::set<std::string>(profile.tools.begin(), profile.tools.end()));
      CHECK(names.size() == profile.tools.size());  // no repeats in the profile
      // The definitions are the schema files' own, unchanged.
      for (const auto& t : tools) {
        auto it = std::find_if(every.begin(), every.end(),
                               [&](const json& e) { return e["name"] == t["name"]; });
        REQUIRE(it != every.end());
        CHECK(*it == t);
      }
      const size_t bytes = listed_bytes(tools);
      MESSAGE(profile.name << ": " << tools.size() << " tools, " << bytes << " of " << all_bytes
                           << " bytes");
      CHECK(bytes < all_bytes * 3 / 4);
      covered.insert(names.begin(), names.end());
    }
    // Every tool is in some profile.
    CHECK(covered == files);
  }

  TEST_CASE("a call to a tool left out is refused with the selection named") {
    auto options = jarvis::mcp::testing::shared_root_options();
    options.tools =
        jarvis::mcp::select_tools({"sweep"}, {"insights"}, jarvis::mcp::builtin_tool_names());
    Harness h(options);
    h.initialize();
    json reply = h.call_tool(2, "gemm_roofline", {{"trace", "t1"}});
    REQUIRE(reply.contains("error"));
    std::string message = reply["error"]["message"].get<std::string>();
    CHECK(message.find("Tool gemm_roofline is not served") != std::string::npos);
    CHECK(message.find("--profile") != std::string::npos);
    // A tool added with --tools is served besides the profile's.
    json listed = h.request(3, "tools/list");
    std::set<std::string> names;
    for (const auto& t : listed["result"]["tools"]) names.insert(t["name"].get<std::string>());
    CHECK(names.count("insights") == 1);
    CHECK(names.count("load_sweep") == 1);
    CHECK(names.count("gemm_roofline") == 0);
    // An unknown name stays "Unknown tool".
    reply = h.call_tool(4, "no_such_tool", json::object());
    CHECK(reply["error"]["message"].get<std::string>().find("Unknown tool: no_such_tool") == 0);
  }

  TEST_CASE("unknown profiles and tools are named") {
    auto names = jarvis::mcp::builtin_tool_names();
    CHECK_THROWS_WITH_AS(jarvis::mcp::select_tools({"sweeps"}, {}, names),
                         doctest::Contains("unknown tool profile 'sweeps'"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(jarvis::mcp::select_tools({}, {"insight"}, names),
                         doctest::Contains("unknown tool 'insight'"), std::invalid_argument);
    CHECK(jarvis::mcp::select_tools({}, {}, names).empty());
    CHECK(jarvis::mcp::select_tools({}, {"insights", "load_trace", "insights"}, names) ==
          std::vector<std::string>{"insights", "load_trace"});
  }
}
