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
#include "security_support.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

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

// tools/list of a server serving one profile (output schemas listed or not).
std::vector<json> profile_tools(const std::string& profile, bool output_schemas = false) {
  auto options = jarvis::mcp::testing::shared_root_options();
  options.tools = jarvis::mcp::select_tools({profile}, {}, jarvis::mcp::builtin_tool_names());
  options.list_output_schemas = output_schemas;
  Harness h(options);
  return listed_tools(h);
}

// A server listing every tool with its output schema (serve --output-schemas).
jarvis::mcp::ServerOptions with_output_schemas() {
  auto options = jarvis::mcp::testing::shared_root_options();
  options.list_output_schemas = true;
  return options;
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
      const auto tools = profile_tools(profile.name);
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

  TEST_CASE("tools/list is at most 48 KB by default, 3.5 KB a tool with output schemas") {
    // What every client puts in its model's context before it has done
    // anything (issue 64 point 4: 93 KB). By default the listing leaves the
    // output schemas out (tool_schema gives any one of them): at most 48 KB
    // for all tools and for every profile. With --output-schemas, 3.5 KB
    // (about 900 tokens) a tool on average: on 2026-11-27 all of them took
    // 92.0 KB, down from 124.2 KB before the descriptions were cut.
    constexpr size_t kDefaultListingBytes = 48 * 1024, kBytesPerTool = 3500;
    Harness all;
    const auto every = listed_tools(all);
    const size_t all_bytes = listed_bytes(every);
    MESSAGE("default listing: " << every.size() << " tools, " << all_bytes << " bytes");
    CHECK(all_bytes <= kDefaultListingBytes);
    for (const json& tool : every) CHECK_FALSE(tool.contains("outputSchema"));
    Harness full(with_output_schemas());
    const auto every_full = listed_tools(full);
    const size_t full_bytes = listed_bytes(every_full);
    MESSAGE("--output-schemas: " << full_bytes << " bytes");
    CHECK(full_bytes <= every_full.size() * kBytesPerTool);
    CHECK(full_bytes > all_bytes);
    for (const auto& profile : jarvis::mcp::tool_profiles()) {
      CAPTURE(profile.name);
      const auto tools = profile_tools(profile.name);
      MESSAGE(profile.name << ": " << listed_bytes(tools) << " bytes, with output schemas "
                           << listed_bytes(profile_tools(profile.name, true)));
      CHECK(listed_bytes(tools) <= kDefaultListingBytes);
      CHECK(listed_bytes(profile_tools(profile.name, true)) <= tools.size() * kBytesPerTool);
      // tool_schema, which brings the rest back, is in every profile.
      CHECK(std::any_of(tools.begin(), tools.end(),
                        [](const json& t) { return t["name"] == "tool_schema"; }));
    }
  }

  TEST_CASE("tool_schema gives a tool's output schema and lists its fields") {
    Harness h(with_output_schemas());
    const auto listed = listed_tools(h);
    for (const json& tool : listed) {
      const std::string name = tool["name"].get<std::string>();
      CAPTURE(name);
      json reply = h.call_tool(7, "tool_schema", {{"tool", name}});
      REQUIRE_FALSE(reply["result"].value("isError", false));
      const json& got = reply["result"]["structuredContent"];
      // The schema --output-schemas lists, and one text line per property.
      CHECK(got["outputSchema"] == tool.value("outputSchema", json::object()));
      CHECK(got["inputSchema"] == tool["inputSchema"]);
      size_t properties = 0;
      std::vector<const json*> todo{&got["outputSchema"]};
      while (!todo.empty()) {
        const json* node = todo.back();
        todo.pop_back();
        if (!node->is_object()) continue;
        if (node->contains("items")) todo.push_back(&(*node)["items"]);
        if (node->contains("properties"))
          for (auto it = (*node)["properties"].begin(); it != (*node)["properties"].end(); ++it) {
            ++properties;
            todo.push_back(&it.value());
          }
      }
      CHECK(got["fields"] == properties);
      const std::string text = reply["result"]["content"][0]["text"].get<std::string>();
      CHECK(static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) == properties + 2);
    }
    json unknown = h.call_tool(8, "tool_schema", {{"tool", "no_such_tool"}});
    CHECK(unknown["result"].value("isError", false));
    CHECK(unknown.dump().find("tools/list") != std::string::npos);
  }

  TEST_CASE("every description is short: a tool's at most 400 characters, a property's 160") {
    // The long prose lives in docs/mcp-tools.md; tools/list keeps what an agent
    // needs to pick the tool and fill its arguments (issue 50).
    Harness h(with_output_schemas());
    size_t properties = 0;
    for (const json& tool : listed_tools(h)) {
      const std::string name = tool["name"].get<std::string>();
      CAPTURE(name);
      const std::string description = tool["description"].get<std::string>();
      CHECK(!description.empty());
      CHECK(description.size() <= 400);
      // Every "description" below the tool's input and output schemas.
      std::vector<std::pair<std::string, const json*>> todo;
      for (const char* key : {"inputSchema", "outputSchema"})
        if (tool.contains(key)) todo.emplace_back(std::string("/") + key, &tool[key]);
      while (!todo.empty()) {
        auto [at, node] = todo.back();
        todo.pop_back();
        if (node->is_object()) {
          for (auto it = node->begin(); it != node->end(); ++it) {
            if (it.key() == "description" && it.value().is_string()) {
              const std::string where = at;
              const std::string text = it.value().get<std::string>();
              CAPTURE(where);
              CHECK(text.size() <= 160);
              ++properties;
            } else {
              todo.emplace_back(at + "/" + it.key(), &it.value());
            }
          }
        } else if (node->is_array()) {
          for (size_t i = 0; i < node->size(); ++i)
            todo.emplace_back(at + "/" + std::to_string(i), &(*node)[i]);
        }
      }
    }
    CHECK(properties > 300);  // the walk reached them (370 on 2026-11-27)
    // Each tool keeps its full text in the docs.
    const std::string doc = jarvis::testing::read_text(std::filesystem::path(JARVIS_SOURCE_DIR) /
                                                       "docs" / "mcp-tools.md");
    for (const std::string& name : schema_files())
      CHECK_MESSAGE(doc.find("## `" + name + "`") != std::string::npos, name);
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

}  // namespace JARVIS_TEST_FILE
}  // namespace
