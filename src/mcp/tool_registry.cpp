// Tool registry: handlers registered by JARVIS_MCP_TOOL joined with the schema
// files compiled in from tools_schema/. Also the ToolContext and PathPolicy helpers.
#include <algorithm>
#include <regex>
#include <system_error>

#include <fmt/format.h>

#include "mcp/embedded.h"
#include "mcp/tool.h"

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

// ---------------------------------------------------------------- paths

PathPolicy::PathPolicy(const std::vector<std::string>& roots) {
  for (const auto& root : roots) {
    std::error_code ec;
    fs::path canonical = fs::canonical(fs::absolute(root), ec);
    if (ec || !fs::is_directory(canonical))
      throw std::runtime_error(fmt::format("--root {}: not an existing directory", root));
    roots_.push_back(canonical);
  }
}

namespace {

bool is_inside(const fs::path& path, const fs::path& root) {
  auto p = path.begin();
  for (auto r = root.begin(); r != root.end(); ++r, ++p) {
    if (r->empty()) continue;  // trailing separator of the root
    if (p == path.end() || *p != *r) return false;
  }
  return true;
}

}  // namespace

fs::path PathPolicy::resolve(const std::string& path, bool must_exist, bool for_write) const {
  if (roots_.empty()) throw ToolError("no directory is allowed: start the server with --root DIR");
  if (path.empty()) throw ToolError("empty path: give a file path under " + roots_[0].string());
  if (path.find('\0') != std::string::npos) throw ToolError("path contains a NUL character");
  fs::path given(path);
  fs::path absolute = given.is_absolute() ? given : roots_[0] / given;
  std::error_code ec;
  // weakly_canonical follows symlinks of the existing prefix, so a link that
  // points outside a root is judged by its target.
  fs::path resolved = fs::weakly_canonical(absolute, ec);
  if (ec) throw ToolError(fmt::format("cannot resolve path '{}': {}", path, ec.message()));
  bool allowed = std::any_of(roots_.begin(), roots_.end(),
                             [&](const fs::path& root) { return is_inside(resolved, root); });
  if (!allowed) {
    std::vector<std::string> names;
    for (const auto& r : roots_) names.push_back(r.string());
    throw ToolError(fmt::format(
        "path '{}' is outside the allowed directories ({}); use a path inside one of them, or "
        "restart the server with --root for the directory you need",
        path, fmt::join(names, ", ")));
  }
  if (must_exist && !fs::exists(resolved, ec))
    throw ToolError(fmt::format("'{}' does not exist (resolved to {})", path, resolved.string()));
  if (for_write) {
    fs::path parent = resolved.parent_path();
    if (!fs::is_directory(parent, ec))
      throw ToolError(
          fmt::format("cannot write '{}': directory {} does not exist", path, parent.string()));
  }
  return resolved;
}

// ---------------------------------------------------------------- context

void ToolContext::report_progress(double done, double total, const std::string& message) {
  if (!on_progress || done <= last_progress_) return;
  last_progress_ = done;
  on_progress(done, total, message);
}

void ToolContext::throw_if_cancelled() const {
  if (cancelled()) throw ToolError("cancelled");
}

void ToolContext::log(LogLevel level, const std::string& message) {
  if (on_log) on_log(level, message);
}

json ToolContext::ask_client(const std::string& method, const json& params) {
  if (!on_client_request) throw ToolError("this transport cannot send requests to the client");
  return on_client_request(method, params);
}

// ---------------------------------------------------------------- registry

std::map<std::string, ToolHandler>& registered_tool_handlers() {
  static std::map<std::string, ToolHandler> handlers;
  return handlers;
}

ToolRegistrar::ToolRegistrar(const char* name, ToolHandler handler) {
  registered_tool_handlers()[name] = std::move(handler);
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
    tools.push_back({name, std::move(definition), handler->second});
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
