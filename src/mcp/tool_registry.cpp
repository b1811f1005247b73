// Tool registry: handlers registered by JARVIS_MCP_TOOL joined with the schema
// files compiled in from tools_schema/. Also the ToolContext helpers (PathPolicy:
// path_policy.cpp).
#include <algorithm>
#include <mutex>
#include <regex>
#include <system_error>

#include <fmt/format.h>

#include "base/utf8.h"
#include "engine/engine.h"
#include "mcp/embedded.h"
#include "mcp/tool.h"
#include "mcp/worker_frames.h"

namespace jarvis::mcp {

namespace fs = std::filesystem;

const char* log_level_name(LogLevel level) {
  static const char* const names[] = {"debug", "info",     "notice", "warning",
                                      "error", "critical", "alert",  "emergency"};
  return names[static_cast<int>(level)];
}

bool parse_log_level(std::string_view name, LogLevel& level) {
  for (int k = 0; k <= static_cast<int>(LogLevel::Emergency); ++k) {
    if (name == log_level_name(static_cast<LogLevel>(k))) {
      level = static_cast<LogLevel>(k);
      return true;
    }
  }
  return false;
}

json tool_error_result(const std::string& message, ErrorKind kind) {
  // json::array: a one-element braced list is an array for GCC but a copy
  // of the element for clang.
  // valid_utf8: an error may quote the input (a query's text, a name).
  return json{{"content", json::array({json{{"type", "text"}, {"text", valid_utf8(message)}}})},
              {"isError", true},
              {"_meta", {{kMetaErrorKind, error_kind_name(kind)}}}};
}

json tool_error_result(const std::exception& e) {
  return tool_error_result(e.what(), error_kind_of(e));
}

// ---------------------------------------------------------------- context

void ToolContext::report_progress(double done, double total, const std::string& message) {
  if (!on_progress || done <= last_progress_) return;
  last_progress_ = done;
  on_progress(done, total, message);
}

void ToolContext::throw_if_cancelled() const {
  if (cancelled()) throw ToolError("cancelled", ErrorKind::Cancelled);
}

void ToolContext::log(LogLevel level, const std::string& message) {
  if (on_log) on_log(level, message);
}

json ToolContext::ask_client(const std::string& method, const json& params) {
  if (!on_client_request) throw ToolError("this transport cannot send requests to the client");
  return on_client_request(method, params);
}

namespace {
// The type a kept value is cached under on a trace's entry (TraceEntry::find):
// the value a call of this process derived, shared with it (no copy of a
// large analysis), or a worker's, as the CBOR it sent, decoded by the first
// call that reads it (the worker's call is answered before that).
class KeptToolValue {
 public:
  explicit KeptToolValue(std::shared_ptr<const json> value) : value_(std::move(value)) {}
  explicit KeptToolValue(std::vector<uint8_t> cbor) : cbor_(std::move(cbor)) {}
  // Null when a worker's bytes do not decode: then nothing is kept.
  std::shared_ptr<const json> value() const {
    if (value_) return value_;
    std::call_once(decoded_, [this] {
      if (auto value = decode_kept_value(cbor_))
        from_cbor_ = std::make_shared<const json>(std::move(*value));
      cbor_ = {};
    });
    return from_cbor_;
  }

 private:
  std::shared_ptr<const json> value_;
  mutable std::vector<uint8_t> cbor_;
  mutable std::once_flag decoded_;
  mutable std::shared_ptr<const json> from_cbor_;
};
}  // namespace

std::shared_ptr<const json> ToolContext::kept(const LoadedTrace& trace,
                                              const std::string& key) const {
  auto found = trace.entry().find<KeptToolValue>(key);
  return found ? found->value() : nullptr;
}

void ToolContext::keep(const LoadedTrace& trace, const std::string& key,
                       std::shared_ptr<const json> value) {
  if (on_keep) on_keep(trace.entry().identity(), key, value);
  trace.entry().put<KeptToolValue>(key, std::make_shared<const KeptToolValue>(std::move(value)));
}

// The server's side of a worker's keep(): the value goes on the entry of the
// same file when it is still resident (an evicted trace's analyses go with it).
void keep_from_worker(TraceCache& cache, const FileIdentity& id, const std::string& key,
                      std::vector<uint8_t> value_cbor) {
  if (auto entry = cache.find_resident(id))
    entry->put<KeptToolValue>(key, std::make_shared<const KeptToolValue>(std::move(value_cbor)));
}

// ---------------------------------------------------------------- registry

std::map<std::string, ToolHandler>& registered_tool_handlers() {
  static std::map<std::string, ToolHandler> handlers;
  return handlers;
}

ToolRegistrar::ToolRegistrar(const char* name, ToolHandler handler) {
  registered_tool_handlers()[name] = std::move(handler);
}

std::map<std::string, KeptHandler>& registered_kept_handlers() {
  static std::map<std::string, KeptHandler> handlers;
  return handlers;
}

KeptRegistrar::KeptRegistrar(const char* name, KeptHandler handler) {
  registered_kept_handlers()[name] = std::move(handler);
}

std::string check_tool_definition(const json& d) {
  if (!d.is_object()) return "the schema file is not a JSON object";
  static const std::regex name_format("^[A-Za-z0-9_.-]{1,128}$");
  if (!d.contains("name") || !d["name"].is_string() ||
      !std::regex_match(d["name"].get<std::string>(), name_format))
    return "\"name\" must be 1-128 characters of [A-Za-z0-9_.-]";
  if (!d.contains("description") || !d["description"].is_string() ||
      d["description"].get<std::string>().empty())
    return "\"description\" is required";
  for (const char* key : {"inputSchema", "outputSchema"}) {
    if (!d.contains(key)) {
      if (std::string(key) == "inputSchema") return "\"inputSchema\" is required";
      continue;
    }
    const json& s = d[key];
    if (!s.is_object() || s.value("type", "") != "object")
      return fmt::format("\"{}\" must be a JSON Schema with \"type\": \"object\"", key);
  }
  for (const auto& [key, _] : d.items()) {
    static const char* const known[] = {"name",         "title",       "description", "inputSchema",
                                        "outputSchema", "annotations", "icons",       "_meta"};
    if (std::none_of(std::begin(known), std::end(known),
                     [&key = key](const char* k) { return key == k; }))
      return fmt::format("unknown top-level key \"{}\"", key);
  }
  return "";
}

std::vector<ToolSpec> builtin_tools(std::vector<std::string>& problems) {
  std::vector<ToolSpec> tools;
  const auto& handlers = registered_tool_handlers();
  std::map<std::string, bool> has_schema;
  for (const EmbeddedFile& file : embedded_tool_schemas()) {
    std::string path(file.path);
    json definition = json::parse(file.content, nullptr, /*allow_exceptions=*/false);
    if (definition.is_discarded()) {
      problems.push_back(fmt::format("tools_schema/{}: not valid JSON", path));
      continue;
    }
    if (std::string problem = check_tool_definition(definition); !problem.empty()) {
      problems.push_back(fmt::format("tools_schema/{}: {}", path, problem));
      continue;
    }
    std::string name = definition["name"].get<std::string>();
    if (path != name + ".json") {
      problems.push_back(
          fmt::format("tools_schema/{}: name \"{}\" differs from the file name", path, name));
      continue;
    }
    has_schema[name] = true;
    auto handler = handlers.find(name);
    if (handler == handlers.end()) {
      problems.push_back(
          fmt::format("tool {}: schema tools_schema/{} has no handler "
                      "(JARVIS_MCP_TOOL in src/mcp/tools/{}.cpp)",
                      name, path, name));
      continue;
    }
    const auto& kept = registered_kept_handlers();
    const auto kept_handler = kept.find(name);
    tools.push_back({name, std::move(definition), handler->second,
                     kept_handler == kept.end() ? KeptHandler() : kept_handler->second});
  }
  for (const auto& [name, _] : handlers)
    if (!has_schema.count(name))
      problems.push_back(
          fmt::format("tool {}: handler registered but tools_schema/{}.json is missing "
                      "(re-run cmake after adding it)",
                      name, name));
  std::sort(tools.begin(), tools.end(),
            [](const ToolSpec& a, const ToolSpec& b) { return a.name < b.name; });
  return tools;
}

}  // namespace jarvis::mcp
