// In-process MCP test harness: one Server and one Session, messages in,
// replies and notifications out.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "golden.h"
#include "mcp/server.h"
#include "mcp/tool.h"

namespace jarvis::mcp::testing {

inline std::string conformance_trace(const std::string& name) {
  return golden::shared_dir() + "/conformance/" + name + "/trace.json.gz";
}

inline ServerOptions shared_root_options() {
  ServerOptions options;
  options.roots = {golden::shared_dir()};
  return options;
}

// A server confined to `root` whose tool calls run in forked workers (what
// `serve --http` does by default).
inline ServerOptions isolated_options(const std::string& root) {
  ServerOptions options;
  options.roots = {root};
  options.isolate_calls = true;
  return options;
}

// The analysis a reply carries, without the session's caveat bookkeeping
// (a trace's notes are given in full once a session, then referred to), so
// that two calls' answers compare equal.
inline nlohmann::json analysis_of(const nlohmann::json& reply) {
  nlohmann::json sc = reply["result"]["structuredContent"];
  sc.erase("trace_caveats");
  return sc;
}

// A session of `server` past initialize, for tests that drive several
// sessions of one server (the Harness holds one).
inline std::shared_ptr<Session> initialized_session(Server& server) {
  auto session = server.new_session();
  Emit ignore = [](const json&) {};
  session->handle({{"jsonrpc", "2.0"},
                   {"id", 0},
                   {"method", "initialize"},
                   {"params",
                    {{"protocolVersion", "2025-11-25"},
                     {"capabilities", json::object()},
                     {"clientInfo", {{"name", "test"}, {"version", "0"}}}}}},
                  ignore);
  session->handle({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}, ignore);
  return session;
}

// The reply of a tools/call on `session` (a null json when none came).
inline json session_tool_call(const std::shared_ptr<Session>& session, int id,
                              const std::string& tool, json args) {
  Emit ignore = [](const json&) {};
  auto reply = session->handle({{"jsonrpc", "2.0"},
                                {"id", id},
                                {"method", "tools/call"},
                                {"params", {{"name", tool}, {"arguments", std::move(args)}}}},
                               ignore);
  return reply ? *reply : json();
}

// Puts `wrapper` in front of a registered tool's handler for the life of the
// object (construct it before the Server, which joins handlers and schemas);
// the wrapper gets the original handler to call.
struct WrappedToolHandler {
  using Wrapper = std::function<ToolResult(const json&, ToolContext&, const ToolHandler&)>;
  std::string name;
  ToolHandler original;
  WrappedToolHandler(std::string tool, Wrapper wrapper) : name(std::move(tool)) {
    original = registered_tool_handlers().at(name);
    registered_tool_handlers()[name] = [this, wrapper = std::move(wrapper)](const json& args,
                                                                            ToolContext& ctx) {
      return wrapper(args, ctx, original);
    };
  }
  WrappedToolHandler(const WrappedToolHandler&) = delete;
  WrappedToolHandler& operator=(const WrappedToolHandler&) = delete;
  ~WrappedToolHandler() { registered_tool_handlers()[name] = original; }
};

struct Harness {
  Server server;
  std::shared_ptr<Session> session;
  std::mutex mutex;
  std::vector<json> notes;  // everything emitted besides replies
  Emit emit = [this](const json& m) {
    std::lock_guard<std::mutex> lock(mutex);
    notes.push_back(m);
  };

  explicit Harness(ServerOptions options = shared_root_options())
      : server(std::move(options)), session(server.new_session()) {}

  // The reply (null json when none).
  json send(const json& message) {
    auto reply = session->handle(message, emit);
    return reply ? *reply : json();
  }
  json send_text(const std::string& text) {
    auto reply = session->handle_text(text, emit);
    return reply ? *reply : json();
  }
  json request(int id, const std::string& method, json params = json::object()) {
    return send(
        {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}});
  }
  json initialize(const std::string& version = "2025-11-25") {
    json reply = request(0, "initialize",
                         {{"protocolVersion", version},
                          {"capabilities", json::object()},
                          {"clientInfo", {{"name", "test"}, {"version", "0"}}}});
    send({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});
    return reply;
  }
  json call_tool(int id, const std::string& name, json args, json meta = nullptr) {
    json params = {{"name", name}, {"arguments", std::move(args)}};
    if (!meta.is_null()) params["_meta"] = meta;
    return request(id, "tools/call", params);
  }
  // structuredContent of a successful call (fails the test otherwise).
  json tool_result(int id, const std::string& name, json args) {
    json reply = call_tool(id, name, std::move(args));
    if (!reply.contains("result") || reply["result"].value("isError", false))
      throw std::runtime_error("tool call failed: " + reply.dump());
    return reply["result"]["structuredContent"];
  }
};

}  // namespace jarvis::mcp::testing
