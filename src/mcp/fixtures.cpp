#include "mcp/fixtures.h"

#include <chrono>
#include <regex>
#include <thread>

namespace jarvis::mcp {

namespace {

// A 1x1 PNG and a tiny WAV, base64: the payloads the suite checks for.
constexpr const char* kPng =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg"
    "==";
constexpr const char* kWav = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

json no_args() {
  return {{"type", "object"}, {"properties", json::object()}};
}

json text(const std::string& t) {
  return {{"type", "text"}, {"text", t}};
}

ToolSpec fixture(const std::string& name, const std::string& description, json input,
                 ToolHandler handler) {
  return {name,
          {{"name", name}, {"description", description}, {"inputSchema", std::move(input)}},
          std::move(handler)};
}

ToolResult content_only(json blocks) {
  ToolResult r;
  r.content = std::move(blocks);
  return r;
}

void pause_ms(int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

json string_arg(const std::string& name, const std::string& description) {
  return {{"type", "object"},
          {"properties", {{name, {{"type", "string"}, {"description", description}}}}},
          {"required", {name}}};
}

std::string elicit_summary(const json& r) {
  return "action=" + r.value("action", std::string("?")) +
         ", content=" + r.value("content", json::object()).dump();
}

ToolResult elicit(ToolContext& ctx, const std::string& message, json schema,
                  const std::string& prefix) {
  json r = ctx.ask_client(
      "elicitation/create",
      {{"mode", "form"}, {"message", message}, {"requestedSchema", std::move(schema)}});
  return content_only({text(prefix + elicit_summary(r))});
}

json sep1034_schema() {
  return {{"type", "object"},
          {"properties",
           {{"name", {{"type", "string"}, {"description", "User name"}, {"default", "John Doe"}}},
            {"age", {{"type", "integer"}, {"description", "User age"}, {"default", 30}}},
            {"score", {{"type", "number"}, {"description", "User score"}, {"default", 95.5}}},
            {"status",
             {{"type", "string"},
              {"description", "User status"},
              {"enum", {"active", "inactive", "pending"}},
              {"default", "active"}}},
            {"verified",
             {{"type", "boolean"}, {"description", "Verification status"}, {"default", true}}}}},
          {"required", json::array()}};
}

json titled(const std::vector<std::pair<std::string, std::string>>& options) {
  json out = json::array();
  for (const auto& [value, title] : options) out.push_back({{"const", value}, {"title", title}});
  return out;
}

json sep1330_schema() {
  json opts = {"option1", "option2", "option3"};
  return {{"type", "object"},
          {"properties",
           {{"untitledSingle",
             {{"type", "string"}, {"description", "Select one option"}, {"enum", opts}}},
            {"titledSingle",
             {{"type", "string"},
              {"description", "Select one option with titles"},
              {"oneOf", titled({{"value1", "First Option"},
                                {"value2", "Second Option"},
                                {"value3", "Third Option"}})}}},
            {"legacyEnum",
             {{"type", "string"},
              {"description", "Select one option (legacy)"},
              {"enum", {"opt1", "opt2", "opt3"}},
              {"enumNames", {"Option One", "Option Two", "Option Three"}}}},
            {"untitledMulti",
             {{"type", "array"},
              {"description", "Select multiple options"},
              {"minItems", 1},
              {"maxItems", 3},
              {"items", {{"type", "string"}, {"enum", opts}}}}},
            {"titledMulti",
             {{"type", "array"},
              {"description", "Select multiple options with titles"},
              {"minItems", 1},
              {"maxItems", 3},
              {"items",
               {{"anyOf", titled({{"value1", "First Choice"},
                                  {"value2", "Second Choice"},
                                  {"value3", "Third Choice"}})}}}}}}},
          {"required", json::array()}};
}

}  // namespace

std::vector<ToolSpec> fixture_tools() {
  std::vector<ToolSpec> tools;
  tools.push_back(fixture("test_simple_text", "Tests simple text content response", no_args(),
                          [](const json&, ToolContext&) {
                            return content_only(
                                {text("This is a simple text response for testing.")});
                          }));
  tools.push_back(fixture(
      "test_image_content", "Tests image content response", no_args(),
      [](const json&, ToolContext&) {
        return content_only({{{"type", "image"}, {"data", kPng}, {"mimeType", "image/png"}}});
      }));
  tools.push_back(fixture(
      "test_audio_content", "Tests audio content response", no_args(),
      [](const json&, ToolContext&) {
        return content_only({{{"type", "audio"}, {"data", kWav}, {"mimeType", "audio/wav"}}});
      }));
  tools.push_back(fixture("test_embedded_resource", "Tests embedded resource content response",
                          no_args(), [](const json&, ToolContext&) {
                            return content_only(
                                {{{"type", "resource"},
                                  {"resource",
                                   {{"uri", "test://embedded-resource"},
                                    {"mimeType", "text/plain"},
                                    {"text", "This is an embedded resource content."}}}}});
                          }));
  tools.push_back(fixture("test_multiple_content_types",
                          "Tests response with multiple content types (text, image, resource)",
                          no_args(), [](const json&, ToolContext&) {
                            return content_only(
                                {text("Multiple content types test:"),
                                 {{"type", "image"}, {"data", kPng}, {"mimeType", "image/png"}},
                                 {{"type", "resource"},
                                  {"resource",
                                   {{"uri", "test://mixed-content-resource"},
                                    {"mimeType", "application/json"},
                                    {"text", json{{"test", "data"}, {"value", 123}}.dump()}}}}});
                          }));
  tools.push_back(fixture("test_tool_with_logging",
                          "Tests tool that emits log messages during execution", no_args(),
                          [](const json&, ToolContext& ctx) {
                            ctx.log(LogLevel::Info, "Tool execution started");
                            pause_ms(50);
                            ctx.log(LogLevel::Info, "Tool processing data");
                            pause_ms(50);
                            ctx.log(LogLevel::Info, "Tool execution completed");
                            return content_only({text("Tool with logging executed successfully")});
                          }));
  tools.push_back(fixture(
      "test_tool_with_progress", "Tests tool that reports progress notifications", no_args(),
      [](const json&, ToolContext& ctx) {
        for (int step : {0, 50, 100}) {
          ctx.report_progress(step, 100, "Completed step " + std::to_string(step) + " of 100");
          if (step < 100) pause_ms(50);
        }
        return content_only({text("progress reported")});
      }));
  tools.push_back(fixture("test_error_handling", "Tests error response handling", no_args(),
                          [](const json&, ToolContext&) -> ToolResult {
                            throw ToolError("This tool intentionally returns an error for testing");
                          }));
  tools.push_back(
      fixture("test_sampling", "Tests server-initiated sampling (LLM completion request)",
              string_arg("prompt", "The prompt to send to the LLM"),
              [](const json& args, ToolContext& ctx) {
                json r = ctx.ask_client(
                    "sampling/createMessage",
                    {{"messages",
                      json::array({json{{"role", "user"},
                                        {"content", text(args.at("prompt").get<std::string>())}}})},
                     {"maxTokens", 100}});
                std::string reply = "No response";
                if (r.contains("content") && r["content"].contains("text"))
                  reply = r["content"]["text"];
                return content_only({text("LLM response: " + reply)});
              }));
  tools.push_back(fixture(
      "test_elicitation", "Tests server-initiated elicitation (user input request)",
      string_arg("message", "The message to show the user"),
      [](const json& args, ToolContext& ctx) {
        json schema = {{"type", "object"},
                       {"properties",
                        {{"response", {{"type", "string"}, {"description", "User's response"}}}}},
                       {"required", {"response"}}};
        return elicit(ctx, args.at("message").get<std::string>(), schema, "User response: ");
      }));
  tools.push_back(fixture(
      "test_elicitation_sep1034_defaults", "Tests elicitation with default values per SEP-1034",
      no_args(), [](const json&, ToolContext& ctx) {
        return elicit(ctx, "Please review and update the form fields with defaults",
                      sep1034_schema(), "Elicitation completed: ");
      }));
  tools.push_back(fixture("test_elicitation_sep1330_enums",
                          "Tests elicitation with enum schema improvements per SEP-1330", no_args(),
                          [](const json&, ToolContext& ctx) {
                            return elicit(ctx, "Please select options from the enum fields",
                                          sep1330_schema(), "Elicitation completed: ");
                          }));
  json schema_2020 = {
      {"$schema", "https://json-schema.org/draft/2020-12/schema"},
      {"type", "object"},
      {"$defs",
       {{"address",
         {{"type", "object"},
          {"properties", {{"street", {{"type", "string"}}}, {"city", {{"type", "string"}}}}}}}}},
      {"properties", {{"name", {{"type", "string"}}}, {"address", {{"$ref", "#/$defs/address"}}}}},
      {"additionalProperties", false}};
  tools.push_back(
      fixture("json_schema_2020_12_tool",
              "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)",
              schema_2020, [](const json& args, ToolContext&) {
                return content_only({text("JSON Schema 2020-12 tool called with: " + args.dump())});
              }));
  return tools;
}

std::vector<Prompt> fixture_prompts() {
  std::vector<Prompt> prompts;
  auto user = [](json content) { return json{{"role", "user"}, {"content", std::move(content)}}; };
  prompts.push_back(
      {{{"name", "test_simple_prompt"},
        {"title", "Simple Test Prompt"},
        {"description", "A simple prompt without arguments"}},
       [user](const json&) {
         return json{{"messages", {user(text("This is a simple prompt for testing."))}}};
       },
       {}});
  prompts.push_back(
      {{{"name", "test_prompt_with_arguments"},
        {"title", "Prompt With Arguments"},
        {"description", "A prompt with required arguments"},
        {"arguments",
         {{{"name", "arg1"}, {"description", "First test argument"}, {"required", true}},
          {{"name", "arg2"}, {"description", "Second test argument"}, {"required", true}}}}},
       [user](const json& a) {
         std::string t = "Prompt with arguments: arg1='" + a.value("arg1", std::string()) +
                         "', arg2='" + a.value("arg2", std::string()) + "'";
         return json{{"messages", {user(text(t))}}};
       },
       {}});
  prompts.push_back(
      {{{"name", "test_prompt_with_embedded_resource"},
        {"title", "Prompt With Embedded Resource"},
        {"description", "A prompt that includes an embedded resource"},
        {"arguments",
         {{{"name", "resourceUri"},
           {"description", "URI of the resource to embed"},
           {"required", true}}}}},
       [user](const json& a) {
         json resource = {{"type", "resource"},
                          {"resource",
                           {{"uri", a.value("resourceUri", std::string())},
                            {"mimeType", "text/plain"},
                            {"text", "Embedded resource content for testing."}}}};
         return json{{"messages",
                      {user(resource), user(text("Please process the embedded resource above."))}}};
       },
       {}});
  prompts.push_back(
      {{{"name", "test_prompt_with_image"},
        {"title", "Prompt With Image"},
        {"description", "A prompt that includes image content"}},
       [user](const json&) {
         json image = {{"type", "image"}, {"data", kPng}, {"mimeType", "image/png"}};
         return json{{"messages", {user(image), user(text("Please analyze the image above."))}}};
       },
       {}});
  return prompts;
}

json fixture_resources() {
  return {{{"uri", "test://static-text"},
           {"name", "static-text"},
           {"title", "Static Text Resource"},
           {"description", "A static text resource for testing"},
           {"mimeType", "text/plain"}},
          {{"uri", "test://static-binary"},
           {"name", "static-binary"},
           {"title", "Static Binary Resource"},
           {"description", "A static binary resource (image) for testing"},
           {"mimeType", "image/png"}},
          {{"uri", "test://watched-resource"},
           {"name", "watched-resource"},
           {"title", "Watched Resource"},
           {"description", "A resource that can be subscribed to"},
           {"mimeType", "text/plain"}}};
}

json fixture_resource_templates() {
  return {{{"uriTemplate", "test://template/{id}/data"},
           {"name", "template"},
           {"title", "Resource Template"},
           {"description", "A resource template with parameter substitution"},
           {"mimeType", "application/json"}}};
}

std::optional<json> read_fixture_resource(const std::string& uri) {
  auto one = [&](const char* mime, const char* key, const std::string& value) {
    return json{{{"uri", uri}, {"mimeType", mime}, {key, value}}};
  };
  if (uri == "test://static-text")
    return one("text/plain", "text", "This is the content of the static text resource.");
  if (uri == "test://static-binary") return one("image/png", "blob", kPng);
  if (uri == "test://watched-resource")
    return one("text/plain", "text", "Watched resource content");
  static const std::regex templ("^test://template/([^/]+)/data$");
  std::smatch m;
  if (std::regex_match(uri, m, templ)) {
    std::string id = m[1];
    json body = {{"id", id}, {"templateTest", true}, {"data", "Data for ID: " + id}};
    return one("application/json", "text", body.dump());
  }
  return std::nullopt;
}

}  // namespace jarvis::mcp
