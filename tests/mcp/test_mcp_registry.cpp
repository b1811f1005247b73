// Tool registry completeness, schema files and the JSON Schema validator.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "golden.h"
#include "mcp/embedded.h"
#include "mcp/json_schema.h"
#include "mcp/tool.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using jarvis::mcp::json;
namespace fs = std::filesystem;

TEST_SUITE("mcp_registry") {
  TEST_CASE("every schema has a handler and every handler a schema") {
    std::vector<std::string> problems;
    auto tools = jarvis::mcp::builtin_tools(problems);
    for (const auto& p : problems) INFO(p);
    CHECK_MESSAGE(problems.empty(), (problems.empty() ? "" : problems.front()));
    CHECK(tools.size() == jarvis::mcp::registered_tool_handlers().size());
    // The embedded copy matches the files in the source tree (cmake re-ran).
    std::set<std::string> on_disk;
    for (const auto& entry : fs::directory_iterator(fs::path(JARVIS_SOURCE_DIR) / "tools_schema"))
      if (entry.path().extension() == ".json") on_disk.insert(entry.path().filename().string());
    std::set<std::string> embedded;
    for (const auto& file : jarvis::mcp::embedded_tool_schemas())
      embedded.insert(std::string(file.path));
    CHECK(on_disk == embedded);
  }

  TEST_CASE("the first tools are registered") {
    std::vector<std::string> problems;
    auto tools = jarvis::mcp::builtin_tools(problems);
    std::set<std::string> names;
    for (const auto& t : tools) names.insert(t.name);
    for (const char* name : {"load_trace", "list_traces", "unload_trace", "ops_summary"})
      CHECK_MESSAGE(names.count(name), name);
  }

  TEST_CASE("schema files are well formed") {
    for (const auto& file : jarvis::mcp::embedded_tool_schemas()) {
      INFO(std::string(file.path));
      json definition = json::parse(file.content);
      CHECK(jarvis::mcp::check_tool_definition(definition) == "");
      // Defaults must satisfy their own schema.
      json args = json::object();
      jarvis::mcp::apply_defaults(definition["inputSchema"], args);
      for (const auto& [key, value] : args.items())
        CHECK(jarvis::mcp::validate_json(definition["inputSchema"]["properties"][key], value) ==
              "");
    }
    CHECK(jarvis::mcp::check_tool_definition({{"name", "bad name"},
                                              {"description", "x"},
                                              {"inputSchema", {{"type", "object"}}}}) != "");
    CHECK(jarvis::mcp::check_tool_definition(
              {{"name", "ok"}, {"inputSchema", {{"type", "object"}}}}) != "");
    CHECK(jarvis::mcp::check_tool_definition(
              {{"name", "ok"}, {"description", "x"}, {"inputSchema", {{"type", "array"}}}}) != "");
  }

  TEST_CASE("validator: types, ranges, enums, objects") {
    json schema = json::parse(R"({
      "type": "object",
      "properties": {
        "n": {"type": "integer", "minimum": 1, "maximum": 10, "default": 3},
        "x": {"type": "number", "exclusiveMinimum": 0},
        "mode": {"type": "string", "enum": ["a", "b"]},
        "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "uniqueItems": true},
        "name": {"type": "string", "minLength": 2, "pattern": "^[a-z]+$"},
        "either": {"oneOf": [{"type": "integer"}, {"type": "string"}]},
        "any": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/pos"}]}
      },
      "required": ["mode"],
      "additionalProperties": false,
      "$defs": {"pos": {"type": "number", "minimum": 0}}
    })");
    using jarvis::mcp::validate_json;
    CHECK(validate_json(schema, {{"mode", "a"}}) == "");
    CHECK(validate_json(schema, json::object()).find("missing required property \"mode\"") !=
          std::string::npos);
    CHECK(validate_json(schema, {{"mode", "c"}}).find("must be one of") != std::string::npos);
    CHECK(validate_json(schema, {{"mode", "a"}, {"n", 0}}).find("at /n: must be >= 1") !=
          std::string::npos);
    CHECK(validate_json(schema, {{"mode", "a"}, {"n", 2.5}}).find("must be integer") !=
          std::string::npos);
    CHECK(validate_json(schema, {{"mode", "a"}, {"n", 4.0}}) == "");  // 4.0 is an integer
    CHECK(validate_json(schema, {{"mode", "a"}, {"x", 0}}).find("must be > 0") !=
          std::string::npos);
    CHECK(validate_json(schema, {{"mode", "a"}, {"tags", json::array()}}).find("at least 1") !=
          std::string::npos);
    CHECK(validate_json(schema, {{"mode", "a"}, {"tags", {"a", "a"}}}).find("unique") !=
          std::string::npos);
    CHECK(validate_json(schema, {{"mode", "a"}, {"tags", {"a", 1}}}).find("at /tags/1") !=
          std::string::npos);
    CHECK(validate_json(schema, {{"mode", "a"}, {"name", "A1"}}).find("pattern") !=
          std::string::npos);
    CHECK(validate_json(schema, {{"mode", "a"}, {"either", 1.5}}).find("none of the allowed") !=
          std::string::npos);
    CHECK(validate_json(schema, {{"mode", "a"}, {"any", -1}}).find("none of the allowed") !=
          std::string::npos);
    CHECK(validate_json(schema, {{"mode", "a"}, {"any", nullptr}}) == "");
    CHECK(validate_json(schema, {{"mode", "a"}, {"zzz", 1}}).find("unknown property \"zzz\"") !=
          std::string::npos);
    CHECK(validate_json(schema, 5).find("must be object") != std::string::npos);

    json args = {{"mode", "a"}};
    jarvis::mcp::apply_defaults(schema, args);
    CHECK(args["n"] == 3);
  }

  TEST_CASE("path policy confines to the roots") {
    jarvis::mcp::PathPolicy policy({jarvis::golden::shared_dir()});
    auto inside = policy.resolve("conformance", true, false);
    CHECK(fs::is_directory(inside));
    CHECK_THROWS_AS(policy.resolve("/etc/passwd", true, false), jarvis::mcp::ToolError);
    CHECK_THROWS_AS(policy.resolve("..", false, false), jarvis::mcp::ToolError);
    CHECK_THROWS_AS(policy.resolve("", false, false), jarvis::mcp::ToolError);
    CHECK_THROWS_AS(policy.resolve("no/such/dir/file.txt", false, true), jarvis::mcp::ToolError);
    // A symlink inside a root that points outside is judged by its target.
    fs::path tmp = fs::temp_directory_path() / ("jarvis_paths_" + std::to_string(::getpid()));
    fs::create_directories(tmp);
    fs::create_symlink("/etc", tmp / "escape");
    jarvis::mcp::PathPolicy temp_policy({tmp.string()});
    CHECK_THROWS_AS(temp_policy.resolve("escape/hostname", false, false), jarvis::mcp::ToolError);
    CHECK(temp_policy.resolve("new_file.txt", false, true).filename() == "new_file.txt");
    fs::remove_all(tmp);
    CHECK_THROWS(jarvis::mcp::PathPolicy({"/no/such/root/dir"}));
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
