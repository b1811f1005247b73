#include "mcp/server.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <future>

#include <fmt/format.h>

#include "engine/engine.h"
#include "mcp/fixtures.h"
#include "mcp/json_schema.h"
#include "mcp/result_shape.h"
#include "mcp/worker_call.h"

namespace jarvis::mcp {

namespace {

constexpr const char* kServerName = "jarvis";
// The one version of the build (CMake project version), as `jarvis --version`.
constexpr const char* kServerVersion = JARVIS_VERSION;

// A JSON-RPC error raised while handling a request.
struct RpcError {
  int code;
  std::string message;
  json data = nullptr;
};

// The request was cancelled by the client: no reply.
struct Cancelled {};

// How long a call waits for the kept values of answered workers still
// arriving: a 6 MB analysis takes 40-70 ms; the bound holds for a worker
// that stalls after its answer (it is ended once it makes no progress).
constexpr std::chrono::milliseconds kKeptValuesWait{10'000};

std::string id_key(const json& id) {
  return id.dump();
}

bool valid_id(const json& id) {
  return id.is_string() || id.is_number_integer();
}

// A request (to be run, and answered under its id), as opposed to a
// notification, a response, or something invalid.
bool is_request(const json& message) {
  return message.is_object() && message.contains("method") && message.contains("id") &&
         valid_id(message["id"]);
}

// The bytes a reply takes on the wire (as the transports write it).
size_t serialized_size(const json& reply) {
  return reply.dump(-1, ' ', false, json::error_handler_t::replace).size();
}

const char* kDefaultInstructions =
    "jarvis analyses PyTorch profiler (Kineto) traces and reproduces AMD TraceLens's numbers. "
    "Start with load_trace (a path inside the allowed roots) to get a handle, then call the "
    "analysis tools with that handle (ops_summary for the top operators). The prompts describe "
    "complete analysis workflows. Results: the text is a short summary, the data is in "
    "structuredContent; row lists hold up to `limit` rows (default 20; `detail`: summary, rows or "
    "full), `truncated` names the lists that were cut ({list, shown, total}), `next` suggests "
    "calls ({tool, arguments, why}) and `trace_caveats` ({trace, confidence, warnings}) says when "
    "a trace cannot fully support the result's conclusions (few GPU events, unlinked kernels, no "
    "steady state, graph-captured work): repeat those caveats with any conclusion.";

}  // namespace

const std::vector<std::string>& legacy_versions() {
  static const std::vector<std::string> versions = {"2025-11-25", "2025-06-18", "2025-03-26",
                                                    "2024-11-05"};
  return versions;
}

bool is_supported_version(std::string_view version) {
  if (version == kModernVersion) return true;
  const auto& v = legacy_versions();
  return std::find(v.begin(), v.end(), version) != v.end();
}

namespace {

std::string_view trim_json_space(std::string_view text) {
  size_t b = text.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  size_t e = text.find_last_not_of(" \t\r\n");
  return text.substr(b, e - b + 1);
}

}  // namespace

JsonTextScan scan_json_text(std::string_view text, size_t max_depth) {
  JsonTextScan scan;
  // Every value but the root is an element of an array or object, and all
  // elements of a container but its first follow a comma: so the values
  // number at most 1 + commas + containers.
  size_t depth = 0, commas = 0, containers = 0;
  bool in_string = false;
  // Members of a root object: the string after '{' or ',' at depth 1 is a
  // key; its value runs from the ':' to the next ',' or '}' at depth 1.
  bool root_object = false, expect_key = false;
  size_t string_start = 0, value_start = 0;
  std::string_view key;
  bool in_value = false;
  auto end_member = [&](size_t end) {
    if (!in_value) return;
    std::string_view value = trim_json_space(text.substr(value_start, end - value_start));
    if (key == "id") scan.id_text = value;
    if (key == "method") scan.method_text = value;
    in_value = false;
  };
  for (size_t k = 0; k < text.size(); ++k) {
    char c = text[k];
    if (in_string) {
      if (c == '\\') {
        ++k;  // the escaped character cannot end the string
      } else if (c == '"') {
        in_string = false;
        if (root_object && depth == 1 && expect_key) {
          key = text.substr(string_start, k - string_start);
          expect_key = false;
        }
      }
    } else if (c == '"') {
      in_string = true;
      string_start = k + 1;
    } else if (c == ',') {
      ++commas;
      if (root_object && depth == 1) {
        end_member(k);
        expect_key = true;
      }
    } else if (c == ':') {
      if (root_object && depth == 1 && !in_value) {
        in_value = true;
        value_start = k + 1;
      }
    } else if (c == '[' || c == '{') {
      if (depth == 0 && containers == 0) {
        scan.root_is_array = c == '[';
        root_object = c == '{';
        expect_key = root_object;
      }
      ++containers;
      if (++depth > max_depth) {
        scan.too_deep = true;
        break;
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      if (root_object && depth == 1) end_member(k);
      --depth;
    }
  }
  scan.values = 1 + commas + containers;
  return scan;
}

json scanned_request_id(const JsonTextScan& scan) {
  constexpr size_t kLongestId = 1024;
  if (!scan.id_text || scan.id_text->empty() || scan.id_text->size() > kLongestId) return json();
  json id = json::parse(*scan.id_text, nullptr, /*allow_exceptions=*/false);
  return id.is_discarded() || id.is_structured() ? json() : id;
}

// Tools that answer from what the session holds, at once: they never wait
// on a worker or a parse, so they take no long-call slot (issue 74 point 4).
bool is_quick_tool(const json& params) {
  static constexpr std::string_view kQuick[] = {"list_traces", "unload_trace", "tool_schema"};
  const json name = params.value("name", json());
  return name.is_string() && std::find(std::begin(kQuick), std::end(kQuick),
                                       name.get_ref<const std::string&>()) != std::end(kQuick);
}

bool scanned_runs_on_pool(const JsonTextScan& scan) {
  if (scan.root_is_array) return true;
  if (!scan.id_text || !scan.method_text) return false;
  return *scan.method_text != "\"initialize\"" && *scan.method_text != "\"ping\"";
}

bool json_nesting_exceeds(std::string_view text, size_t max_depth) {
  return scan_json_text(text, max_depth).too_deep;
}

size_t max_json_values(size_t max_message_bytes) {
  return std::max(kMinJsonValues, max_message_bytes / kParsedBytesPerValue);
}

ParsedMessage parse_message_text(std::string_view text, size_t max_values) {
  JsonTextScan scan = scan_json_text(text, kMaxJsonDepth);
  if (scan.too_deep)
    return {json(), make_error(nullptr, rpc::kInvalidRequest,
                               fmt::format("Invalid Request: JSON nested deeper than {} levels",
                                           kMaxJsonDepth))};
  if (scan.values > max_values)
    return {json(), make_error(nullptr, rpc::kInvalidRequest,
                               fmt::format("Invalid Request: the message holds up to {} JSON "
                                           "values, more than the limit of {}",
                                           scan.values, max_values))};
  json message = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (message.is_discarded())
    return {json(), make_error(nullptr, rpc::kParseError, "Parse error: invalid JSON")};
  return {std::move(message), std::nullopt, parsed_memory_bound(text.size(), scan)};
}

json make_error(const json& id, int code, const std::string& message, const json& data) {
  json error = {{"code", code}, {"message", message}};
  if (!data.is_null()) error["data"] = data;
  return {{"jsonrpc", "2.0"}, {"id", valid_id(id) ? id : json()}, {"error", std::move(error)}};
}

// ---------------------------------------------------------------- Server

Server::Server(ServerOptions options) : options_(std::move(options)) {
  std::vector<std::string> roots = options_.roots;
  if (roots.empty()) roots.push_back(std::filesystem::current_path().string());
  paths_ = PathPolicy(roots, options_.arch_dirs);
  tools_ = builtin_tools(problems_);
  if (!options_.tools.empty()) {
    const auto& keep = options_.tools;
    for (const auto& tool : tools_)
      if (std::find(keep.begin(), keep.end(), tool.name) == keep.end())
        unserved_.push_back(tool.name);
    std::erase_if(tools_, [&](const ToolSpec& tool) {
      return std::find(keep.begin(), keep.end(), tool.name) == keep.end();
    });
  }
  prompts_ = skill_prompts();
  if (options_.conformance_fixtures) {
    for (auto& tool : fixture_tools()) tools_.push_back(std::move(tool));
    for (auto& prompt : fixture_prompts()) prompts_.push_back(std::move(prompt));
  }
  instructions_ = options_.instructions.empty() ? kDefaultInstructions : options_.instructions;
  cache_ = std::make_unique<TraceCache>(options_.max_memory_bytes);
  stateless_traces_ = std::make_shared<TraceStore>(*cache_, TraceStore::Handles::Capability,
                                                   options_.session_idle_ttl);
  stateless_traces_->set_path_loader(trace_path_loader());
}

Server::~Server() {
  // The stores hold references into the cache: release them first, and the
  // threads still reading workers' kept values into it end first.
  stateless_traces_.reset();
  abandon_kept_values(*cache_);
}

void Server::set_long_call_limit(size_t limit) {
  long_call_limit_.store(limit);
}

size_t Server::long_call_limit() const {
  return long_call_limit_.load();
}

bool Server::try_begin_long_call() {
  size_t running = long_calls_.load();
  do {
    const size_t limit = long_call_limit_.load();
    if (limit > 0 && running >= limit) return false;
  } while (!long_calls_.compare_exchange_weak(running, running + 1));
  return true;
}

void Server::end_long_call() {
  long_calls_.fetch_sub(1);
}

const ToolSpec* Server::find_tool(std::string_view name) const {
  for (const auto& tool : tools_)
    if (tool.name == name) return &tool;
  return nullptr;
}

bool Server::is_unserved(std::string_view name) const {
  return std::find(unserved_.begin(), unserved_.end(), name) != unserved_.end();
}

json Server::server_info() const {
  return {{"name", kServerName},
          {"title", "jarvis — PyTorch trace analysis"},
          {"version", kServerVersion}};
}

json Server::capabilities() const {
  json caps = {{"tools", {{"listChanged", false}}}, {"logging", json::object()}};
  if (!prompts_.empty()) caps["prompts"] = {{"listChanged", false}};
  if (options_.conformance_fixtures) {
    caps["resources"] = {{"subscribe", true}, {"listChanged", false}};
    caps["completions"] = json::object();
  }
  return caps;
}

ParsedMessage Server::parse_message(std::string_view text) const {
  if (text.size() > options_.max_message_bytes)
    return {json(), make_error(nullptr, rpc::kInvalidRequest,
                               fmt::format("message of {} bytes exceeds the limit of {} bytes",
                                           text.size(), options_.max_message_bytes))};
  return parse_message_text(text, max_json_values(options_.max_message_bytes));
}

std::shared_ptr<Session> Server::new_session() {
  return std::make_shared<Session>(*this);
}

std::function<std::string(const std::string&)> Server::trace_path_loader() const {
  return [this](const std::string& path) { return paths_.trace_path(path).string(); };
}

std::shared_ptr<Session> Server::new_stateless_session() {
  return std::make_shared<Session>(*this, stateless_traces_);
}

json Server::list_resources() const {
  return options_.conformance_fixtures ? fixture_resources() : json::array();
}

json Server::list_resource_templates() const {
  return options_.conformance_fixtures ? fixture_resource_templates() : json::array();
}

std::optional<json> Server::read_resource(const std::string& uri) const {
  if (!options_.conformance_fixtures) return std::nullopt;
  return read_fixture_resource(uri);
}

// ---------------------------------------------------------------- Session

struct Session::Call {
  json id;
  std::shared_ptr<std::atomic<bool>> cancelled;
  const Emit& emit;
  json meta = json::object();  // params._meta
  bool modern = false;
};

struct Session::PendingClientRequest {
  std::promise<json> reply;  // the response message
};

Session::Session(Server& server, std::shared_ptr<TraceStore> traces)
    : server_(server), traces_(std::move(traces)) {}

Session::Session(Server& server)
    : Session(server, std::make_shared<TraceStore>(server.trace_cache())) {
  traces_->set_path_loader(server.trace_path_loader());
}

bool Session::initialized() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return initialized_;
}

std::string Session::protocol_version() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return version_;
}

size_t Session::in_flight() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return in_flight_.size();
}

void Session::cancel_all() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [_, flag] : in_flight_) flag->store(true);
  for (auto& [_, pending] : pending_)
    pending->reply.set_value(make_error(nullptr, rpc::kInternalError, "connection closed"));
  pending_.clear();
}

bool Session::version_at_least(const std::string& version) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return version_ >= version;  // dates compare as strings
}

std::optional<json> Session::handle_text(std::string_view text, const Emit& emit) {
  ParsedMessage parsed = server_.parse_message(text);
  if (parsed.error) return parsed.error;
  return handle(parsed.message, emit);
}

std::optional<json> Session::handle(const json& message, const Emit& emit,
                                    const std::atomic<bool>* abandoned) {
  if (message.is_array()) return handle_batch(message, emit, abandoned);
  return handle_one(message, emit);
}

std::optional<json> Session::batch_refusal(const json& batch) const {
  // JSON-RPC batches exist only in 2025-03-26; elsewhere one -32600.
  if (protocol_version() != "2025-03-26")
    return make_error(
        nullptr, rpc::kInvalidRequest,
        "Invalid Request: JSON-RPC batches are not supported by this protocol version; "
        "send one message at a time");
  if (batch.empty())
    return make_error(nullptr, rpc::kInvalidRequest, "Invalid Request: empty batch");
  const ServerOptions& options = server_.options();
  // Thousands of cheap requests in one small batch would each build a full
  // reply (4,000 tools/list: 218 MB): refuse the batch before running any.
  if (batch.size() > options.max_batch_messages)
    return make_error(nullptr, rpc::kInvalidRequest,
                      fmt::format("Invalid Request: batch too large: {} messages, at most {}",
                                  batch.size(), options.max_batch_messages));
  return std::nullopt;
}

std::optional<json> Session::handle_batch(const json& batch, const Emit& emit,
                                          const std::atomic<bool>* abandoned) {
  if (auto refused = batch_refusal(batch)) return refused;
  const ServerOptions& options = server_.options();
  json replies = json::array();
  size_t reply_bytes = 0;
  for (const auto& message : batch) {
    // The client left: the rest of its batch is not run (issue 74 point 4).
    if (abandoned && abandoned->load()) break;
    // Past the reply budget, requests are not run: their replies could only
    // grow the batch's. Notifications and responses add no reply.
    if (reply_bytes >= options.max_batch_reply_bytes && is_request(message)) {
      replies.push_back(make_error(
          message["id"], rpc::kInvalidRequest,
          fmt::format("Invalid Request: the batch's replies reached the limit of {} bytes; this "
                      "request was not run: send it again on its own",
                      options.max_batch_reply_bytes)));
      continue;
    }
    auto reply = handle_one(message, emit);
    if (!reply) continue;
    reply_bytes += serialized_size(*reply);
    replies.push_back(std::move(*reply));
  }
  if (replies.empty()) return std::nullopt;
  return replies;
}

std::optional<json> Session::handle_one(const json& message, const Emit& emit) {
  if (!message.is_object())
    return make_error(nullptr, rpc::kInvalidRequest, "Invalid Request: expected a JSON-RPC object");
  json id = message.contains("id") ? message["id"] : json();
  bool has_id = message.contains("id");
  if (has_id && !valid_id(id))
    return make_error(nullptr, rpc::kInvalidRequest,
                      "Invalid Request: id must be a string or an integer");
  if (message.value("jsonrpc", json()) != "2.0")
    return make_error(id, rpc::kInvalidRequest, "Invalid Request: \"jsonrpc\" must be \"2.0\"");
  if (!message.contains("method")) {
    if (has_id && (message.contains("result") || message.contains("error"))) {
      handle_client_response(message);
      return std::nullopt;
    }
    return make_error(id, rpc::kInvalidRequest, "Invalid Request: no \"method\"");
  }
  if (!message["method"].is_string())
    return make_error(id, rpc::kInvalidRequest, "Invalid Request: \"method\" must be a string");
  std::string method = message["method"].get<std::string>();
  // A reference, not a copy: params may hold most of a message of many MB.
  static const json kNoParams = json::object();
  const json& params = message.contains("params") ? message["params"] : kNoParams;
  if (!has_id) {
    if (params.is_object()) handle_notification(method, params);
    return std::nullopt;
  }
  if (!params.is_object())
    return make_error(id, rpc::kInvalidParams, "Invalid params: \"params\" must be an object");
  return handle_request(id, method, params, emit);
}

void Session::handle_notification(const std::string& method, const json& params) {
  if (method == "notifications/cancelled") {
    json request_id = params.value("requestId", json());
    if (!valid_id(request_id)) return;
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = in_flight_.find(id_key(request_id));
    if (it != in_flight_.end()) it->second->store(true);
  }
  // notifications/initialized, roots/list_changed, progress, unknown: nothing to do.
}

void Session::handle_client_response(const json& message) {
  std::shared_ptr<PendingClientRequest> pending;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = pending_.find(id_key(message["id"]));
    if (it == pending_.end()) return;  // late or unknown: ignore
    pending = it->second;
    pending_.erase(it);
  }
  pending->reply.set_value(message);
}

std::optional<json> Session::handle_request(const json& id, const std::string& method,
                                            const json& params, const Emit& emit) {
  Call call{id, std::make_shared<std::atomic<bool>>(false), emit};
  if (params.contains("_meta") && params["_meta"].is_object()) call.meta = params["_meta"];
  call.modern = method == "server/discover" ||
                (method != "initialize" && call.meta.contains(kMetaProtocolVersion));
  std::string key = id_key(id);
  const bool tool_call = method == "tools/call";
  const size_t max_calls = server_.options().max_calls_per_session;
  // A tool call holds a transport thread for its whole run; the cheap ones
  // (listing, unloading, a schema) do not count against the server's cap.
  const bool long_call = tool_call && !is_quick_tool(params);
  bool holds_slot = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (in_flight_.count(key))
      return make_error(id, rpc::kInvalidRequest, "Invalid Request: this id is already in use");
    if (tool_call && max_calls > 0 && tool_calls_ >= max_calls)
      return json{
          {"jsonrpc", "2.0"},
          {"id", id},
          {"result", tool_error_result(
                         fmt::format("this session already has {} tool calls running, the most "
                                     "one session may (the server's other clients share its "
                                     "workers); wait for one to finish or cancel one, then call "
                                     "again",
                                     tool_calls_),
                         ErrorKind::Unsupported)}};
    if (long_call && !server_.try_begin_long_call())
      return json{
          {"jsonrpc", "2.0"},
          {"id", id},
          {"result",
           tool_error_result(
               fmt::format("the server is running {} long calls, the most it runs at once (its "
                           "other threads stay free for initialize, ping, tools/list, "
                           "list_traces, unload_trace and tool_schema); this call was not run: "
                           "retry in a moment",
                           server_.long_call_limit()),
               ErrorKind::Unsupported)}};
    holds_slot = long_call;
    if (method != "initialize") in_flight_[key] = call.cancelled;
    if (tool_call) ++tool_calls_;
  }
  struct EndLongCall {
    Server& server;
    bool held;
    ~EndLongCall() {
      if (held) server.end_long_call();
    }
  } end_long_call{server_, holds_slot};
  std::optional<json> reply;
  try {
    json result =
        call.modern ? modern_request(call, method, params) : legacy_request(call, method, params);
    if (!call.cancelled->load())
      reply = json{{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
  } catch (const RpcError& e) {
    if (!call.cancelled->load()) reply = make_error(id, e.code, e.message, e.data);
  } catch (const Cancelled&) {
  } catch (const std::exception& e) {
    reply = make_error(id, rpc::kInternalError, fmt::format("Internal error: {}", e.what()));
  }
  std::lock_guard<std::mutex> lock(mutex_);
  in_flight_.erase(key);
  if (tool_call) --tool_calls_;
  return reply;
}

json Session::legacy_request(Call& call, const std::string& method, const json& params) {
  if (method == "initialize") return initialize(params);
  if (method == "ping") return json::object();
  if (!initialized())
    throw RpcError{
        rpc::kInvalidRequest,
        fmt::format("Server not initialized: send \"initialize\" before \"{}\"", method)};
  if (method == "logging/setLevel") return set_log_level(params);
  if (method == "resources/subscribe" || method == "resources/unsubscribe") {
    if (!server_.options().conformance_fixtures)
      throw RpcError{rpc::kMethodNotFound, "Method not found: " + method};
    if (!params.contains("uri") || !params["uri"].is_string())
      throw RpcError{rpc::kInvalidParams, "Invalid params: \"uri\" (string) is required"};
    return json::object();
  }
  return common_request(call, method, params, /*modern=*/false);
}

json Session::modern_request(Call& call, const std::string& method, const json& params) {
  if (!call.meta.contains(kMetaProtocolVersion) || !call.meta[kMetaProtocolVersion].is_string() ||
      !call.meta.contains(kMetaClientCapabilities) ||
      !call.meta[kMetaClientCapabilities].is_object())
    throw RpcError{rpc::kInvalidParams,
                   fmt::format("Invalid params: a {} request must carry params._meta[\"{}\"] and "
                               "params._meta[\"{}\"]",
                               kModernVersion, kMetaProtocolVersion, kMetaClientCapabilities)};
  std::string requested = call.meta[kMetaProtocolVersion].get<std::string>();
  if (requested != kModernVersion)
    throw RpcError{rpc::kUnsupportedProtocolVersion,
                   fmt::format("Unsupported protocol version {}", requested),
                   {{"supported", {kModernVersion}}, {"requested", requested}}};
  json result;
  if (method == "server/discover") {
    result = {{"supportedVersions", {kModernVersion}},
              {"capabilities", server_.capabilities()},
              {"instructions", server_.instructions()}};
  } else {
    result = common_request(call, method, params, /*modern=*/true);
  }
  static const char* const cacheable[] = {
      "server/discover",          "tools/list",    "prompts/list", "resources/list",
      "resources/templates/list", "resources/read"};
  if (std::any_of(std::begin(cacheable), std::end(cacheable),
                  [&](const char* m) { return method == m; })) {
    result["ttlMs"] = 0;
    result["cacheScope"] = "public";
  }
  result["resultType"] = "complete";
  result["_meta"][kMetaServerInfo] = server_.server_info();
  return result;
}

json Session::common_request(Call& call, const std::string& method, const json& params,
                             bool modern) {
  if (method == "tools/list") return list_tools(params, modern);
  if (method == "tools/call") return call_tool(call, params, modern);
  if (method == "prompts/list") {
    if (server_.prompts().empty())
      throw RpcError{rpc::kMethodNotFound, "Method not found: " + method};
    json prompts = json::array();
    for (const auto& prompt : server_.prompts()) prompts.push_back(prompt.definition);
    return {{"prompts", prompts}};
  }
  if (method == "prompts/get") return get_prompt(params);
  if (server_.options().conformance_fixtures) {
    if (method == "resources/list") return {{"resources", server_.list_resources()}};
    if (method == "resources/templates/list")
      return {{"resourceTemplates", server_.list_resource_templates()}};
    if (method == "resources/read") {
      if (!params.contains("uri") || !params["uri"].is_string())
        throw RpcError{rpc::kInvalidParams, "Invalid params: \"uri\" (string) is required"};
      auto contents = server_.read_resource(params["uri"].get<std::string>());
      if (!contents)
        throw RpcError{modern ? rpc::kInvalidParams : rpc::kResourceNotFound,
                       "Resource not found",
                       {{"uri", params["uri"]}}};
      return {{"contents", *contents}};
    }
    if (method == "completion/complete")
      return {{"completion", {{"values", json::array()}, {"total", 0}, {"hasMore", false}}}};
  }
  throw RpcError{rpc::kMethodNotFound, "Method not found: " + method};
}

json Session::initialize(const json& params) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (initialized_)
    throw RpcError{rpc::kInvalidRequest, "Invalid Request: this session is already initialized"};
  if (!params.contains("protocolVersion") || !params["protocolVersion"].is_string())
    throw RpcError{rpc::kInvalidParams, "Invalid params: \"protocolVersion\" (string) is required"};
  std::string requested = params["protocolVersion"].get<std::string>();
  const auto& known = legacy_versions();
  // A version we do not know gets our newest; the client decides whether it can use it.
  version_ = std::find(known.begin(), known.end(), requested) != known.end() ? requested
                                                                             : kLatestLegacyVersion;
  if (params.contains("capabilities") && params["capabilities"].is_object())
    client_capabilities_ = params["capabilities"];
  initialized_ = true;
  json info = server_.server_info();
  if (version_ < "2025-06-18") info.erase("title");
  return {{"protocolVersion", version_},
          {"capabilities", server_.capabilities()},
          {"serverInfo", info},
          {"instructions", server_.instructions()}};
}

json Session::set_log_level(const json& params) {
  LogLevel level;
  if (!params.contains("level") || !params["level"].is_string() ||
      !parse_log_level(params["level"].get<std::string>(), level))
    throw RpcError{rpc::kInvalidParams,
                   "Invalid params: \"level\" must be one of debug, info, notice, warning, error, "
                   "critical, alert, emergency"};
  std::lock_guard<std::mutex> lock(mutex_);
  log_level_ = level;
  return json::object();
}

json Session::list_tools(const json& params, bool modern) const {
  const auto& tools = server_.tools();
  size_t page = std::max<size_t>(1, server_.options().tools_page_size);
  size_t start = 0;
  if (params.contains("cursor") && !params["cursor"].is_null()) {
    const json& cursor = params["cursor"];
    bool ok = cursor.is_string() && cursor.get<std::string>().rfind("tools:", 0) == 0;
    if (ok) {
      const std::string digits = cursor.get<std::string>().substr(6);
      ok = !digits.empty() && digits.size() < 10 &&
           std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
      if (ok) start = std::stoul(digits);
      ok = ok && start > 0 && start < tools.size();
    }
    if (!ok) throw RpcError{rpc::kInvalidParams, "Invalid params: unknown or stale cursor"};
  }
  bool rich = modern || version_at_least("2025-06-18");
  bool annotated = modern || version_at_least("2025-03-26");
  json list = json::array();
  for (size_t k = start; k < tools.size() && k < start + page; ++k) {
    json tool = tools[k].definition;
    if (!rich) tool.erase("title");
    if (!rich || !server_.options().list_output_schemas) tool.erase("outputSchema");
    if (!annotated) tool.erase("annotations");
    list.push_back(std::move(tool));
  }
  json result = {{"tools", list}};
  if (start + page < tools.size()) result["nextCursor"] = fmt::format("tools:{}", start + page);
  return result;
}

json Session::get_prompt(const json& params) const {
  if (!params.contains("name") || !params["name"].is_string())
    throw RpcError{rpc::kInvalidParams, "Invalid params: \"name\" (string) is required"};
  std::string name = params["name"].get<std::string>();
  json arguments = params.value("arguments", json::object());
  if (!arguments.is_object())
    throw RpcError{rpc::kInvalidParams, "Invalid params: \"arguments\" must be an object"};
  for (const auto& prompt : server_.prompts()) {
    if (prompt.definition["name"] != name &&
        std::find(prompt.aliases.begin(), prompt.aliases.end(), name) == prompt.aliases.end())
      continue;
    for (const auto& arg : prompt.definition.value("arguments", json::array()))
      if (arg.value("required", false) && !arguments.contains(arg["name"].get<std::string>()))
        throw RpcError{rpc::kInvalidParams,
                       fmt::format("Invalid params: prompt {} needs argument \"{}\"", name,
                                   arg["name"].get<std::string>())};
    return prompt.render(arguments);
  }
  throw RpcError{rpc::kInvalidParams, fmt::format("Invalid params: unknown prompt \"{}\"", name)};
}

json Session::client_request(Call& call, const std::string& method, const json& params) {
  if (call.modern)
    throw ToolError("requests to the client are not available in protocol 2026-07-28");
  std::string capability = method.substr(0, method.find('/'));
  if (capability == "elicitation" || capability == "sampling" || capability == "roots") {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!client_capabilities_.contains(capability))
      throw ToolError(fmt::format("the client did not declare the \"{}\" capability", capability));
  }
  auto pending = std::make_shared<PendingClientRequest>();
  std::future<json> reply = pending->reply.get_future();
  std::string request_id;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    request_id = fmt::format("jarvis-{}", next_client_request_++);
    pending_[id_key(request_id)] = pending;
  }
  call.emit({{"jsonrpc", "2.0"}, {"id", request_id}, {"method", method}, {"params", params}});
  auto deadline = std::chrono::steady_clock::now() + server_.options().client_request_timeout;
  while (reply.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready) {
    if (call.cancelled->load() || std::chrono::steady_clock::now() > deadline) {
      std::lock_guard<std::mutex> lock(mutex_);
      pending_.erase(id_key(request_id));
      if (call.cancelled->load()) throw Cancelled{};
      throw ToolError(fmt::format("the client did not answer {} in time", method));
    }
  }
  json message = reply.get();
  if (message.contains("error"))
    throw ToolError(fmt::format("the client answered {} with an error: {}", method,
                                message["error"].value("message", std::string("?"))));
  return message.value("result", json::object());
}

namespace {
// The key a worker's result of this call is kept under (Session::kept_results_),
// or "" when it is not kept: only the pure analyses of one loaded trace named by
// a handle this store lists now (a path may name a file that changes), and no
// call that writes files.
std::string kept_result_key(const std::string& tool, const json& args, const TraceStore& traces) {
  static constexpr std::string_view kPure[] = {"insights", "ops_summary", "critical_path"};
  if (std::find(std::begin(kPure), std::end(kPure), tool) == std::end(kPure)) return "";
  if (!args.contains("trace") || !args["trace"].is_string() || args.contains("output_dir") ||
      args.contains("traces"))
    return "";
  const std::string handle = args["trace"].get<std::string>();
  bool listed = false;
  for (const auto& h : traces.list()) listed = listed || h.handle == handle;
  return listed ? tool + "\n" + args.dump() : "";
}

// The tools that change what the session holds (its handles, the sweeps it
// loaded; compare loads a trace path under a new handle) run in the server,
// and so do the conformance fixtures (they ask the client, over the server's
// channel); every other built-in call can run in a worker whose changes die
// with it.
bool runs_in_worker(const std::string& tool) {
  static constexpr std::string_view kSessionState[] = {"load_trace", "unload_trace", "list_traces",
                                                       "load_sweep", "compare"};
  return registered_tool_handlers().count(tool) > 0 &&
         std::find(std::begin(kSessionState), std::end(kSessionState), tool) ==
             std::end(kSessionState);
}

// A tool with a time limit argument (query_sql's timeout_ms) runs in a
// worker even when calls are not isolated: SQLite checks its limit between
// steps, and one step (trim or replace over a long value) ran for minutes
// past it, holding the stdio server's only request thread so that neither a
// cancellation nor the next request was answered (issue 74 point 2). A
// worker is killed at its limit (ToolContext::start_time_limit) or at the
// cancellation, whatever it is doing.
bool has_time_limit(const ToolSpec& tool) {
  const json schema = tool.definition.value("inputSchema", json::object());
  return schema.value("properties", json::object()).contains("timeout_ms");
}
}  // namespace

json Session::call_tool(Call& call, const json& params, bool modern) {
  if (!params.contains("name") || !params["name"].is_string())
    throw RpcError{rpc::kInvalidParams, "Invalid params: \"name\" (string) is required"};
  std::string name = params["name"].get<std::string>();
  json args = params.contains("arguments") && !params["arguments"].is_null() ? params["arguments"]
                                                                             : json::object();
  if (!args.is_object())
    throw RpcError{rpc::kInvalidParams, "Invalid params: \"arguments\" must be an object"};
  const ToolSpec* tool = server_.find_tool(name);
  if (!tool && server_.is_unserved(name))
    throw RpcError{rpc::kInvalidParams,
                   fmt::format("Tool {} is not served: this server was started with a tool "
                               "selection (jarvis serve --profile / --tools) that leaves it out; "
                               "tools/list names the tools it serves. Restart it with --tools {} "
                               "(or without --profile) to use it.",
                               name, name)};
  if (!tool)
    throw RpcError{rpc::kInvalidParams,
                   fmt::format("Unknown tool: {} (call tools/list for the available tools)", name)};

  bool structured = modern || version_at_least("2025-06-18");
  const json& input_schema = tool->definition["inputSchema"];
  // detail: "full" means every row: a row limit the caller did not give is
  // then the schema's maximum, not its default (issue 64 point 1).
  std::vector<std::string> limits_given;
  for (const char* key : kLimitNames)
    if (args.contains(key)) limits_given.emplace_back(key);
  apply_defaults(input_schema, args);
  if (args.value("detail", std::string()) == "full")
    for (const char* key : kLimitNames) {
      const json& prop = input_schema["properties"].value(key, json::object());
      if (args.contains(key) && prop.contains("maximum") &&
          std::find(limits_given.begin(), limits_given.end(), key) == limits_given.end())
        args[key] = prop["maximum"];
    }
  if (std::string problem = validate_json(input_schema, args); !problem.empty())
    return tool_error_result(
        fmt::format("Invalid arguments for tool {}: {}. Fix the arguments to match "
                    "the tool's inputSchema and call it again.",
                    name, problem),
        ErrorKind::InvalidInput);

  ToolContext ctx(*traces_, server_.paths());
  ctx.cancel_flag_ = call.cancelled.get();
  if (call.meta.contains("progressToken") &&
      (call.meta["progressToken"].is_string() || call.meta["progressToken"].is_number_integer())) {
    json token = call.meta["progressToken"];
    ctx.on_progress = [&call, token](double done, double total, const std::string& message) {
      if (call.cancelled->load()) return;
      json p = {{"progressToken", token}, {"progress", done}};
      if (total > 0) p["total"] = total;
      if (!message.empty()) p["message"] = message;
      call.emit({{"jsonrpc", "2.0"}, {"method", "notifications/progress"}, {"params", p}});
    };
  }
  std::optional<LogLevel> threshold;
  if (modern) {
    LogLevel level;
    if (call.meta.contains(kMetaLogLevel) && call.meta[kMetaLogLevel].is_string() &&
        parse_log_level(call.meta[kMetaLogLevel].get<std::string>(), level))
      threshold = level;
  } else {
    std::lock_guard<std::mutex> lock(mutex_);
    threshold = log_level_;
  }
  if (threshold) {
    LogLevel min = *threshold;
    ctx.on_log = [&call, min](LogLevel level, const std::string& message) {
      if (level < min || call.cancelled->load()) return;
      call.emit({{"jsonrpc", "2.0"},
                 {"method", "notifications/message"},
                 {"params",
                  {{"level", log_level_name(level)}, {"logger", "jarvis"}, {"data", message}}}});
    };
  }
  ctx.on_client_request = [this, &call](const std::string& method, const json& p) {
    return client_request(call, method, p);
  };

  ToolResult out;
  const bool in_worker =
      runs_in_worker(name) && (server_.options().isolate_calls || has_time_limit(*tool));
  const std::string kept_key = in_worker ? kept_result_key(name, args, *traces_) : std::string();
  std::optional<ToolResult> kept;
  if (!kept_key.empty()) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = kept_results_.find(kept_key); it != kept_results_.end()) kept = it->second;
  }
  try {
    // An analysis an earlier call kept on the trace (ToolContext::keep) is
    // formatted here, without a worker: forking one costs more than that.
    std::optional<ToolResult> from_kept;
    // What the workers of calls answered already keep is still arriving
    // (call_in_worker's answer_at_result): in place before it is looked
    // for, or before a worker forks without it (40-70 ms for an x256
    // insights analysis; past the bound, the call derives what it needs).
    if (!kept && in_worker) wait_for_kept_values(ctx.traces().cache(), kKeptValuesWait);
    if (!kept && in_worker && tool->kept) from_kept = tool->kept(args, ctx);
    if (kept)
      out = *kept;
    else if (from_kept)
      out = std::move(*from_kept);
    else
      out = in_worker ? call_in_worker(tool->handler, args, ctx, name, call.cancelled.get(),
                                       server_.options().max_memory_bytes,
                                       /*answer_at_result=*/true)
                      : tool->handler(args, ctx);
  } catch (const Cancelled&) {
    throw;
  } catch (const std::runtime_error& e) {  // jarvis::Error (ToolError, TraceError, ...)
    if (call.cancelled->load()) throw Cancelled{};
    return tool_error_result(e);
  } catch (const std::exception& e) {
    // An engine invariant broke on this input (a missing table, an index out
    // of range): still the tool's failure, which the agent can work around,
    // not a protocol fault. Nothing was stored: caches keep only successes.
    if (call.cancelled->load()) throw Cancelled{};
    return tool_error_result(fmt::format("{} failed on this input: {}", name, e.what()),
                             error_kind_of(e));
  }
  if (call.cancelled->load()) throw Cancelled{};
  if (!kept) out.caveats = ctx.trace_caveats();
  if (!kept_key.empty() && !kept) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (kept_results_.size() >= kKeptResults) kept_results_.clear();
    kept_results_.emplace(kept_key, out);
  }
  {
    // A healthy trace's notes are said once a session, then referred to;
    // a low-confidence trace's cautions travel with every conclusion.
    std::lock_guard<std::mutex> lock(mutex_);
    for (json& c : out.caveats) {
      if (c.value("confidence", std::string()) != "high") continue;
      const std::string label = c.value("trace", std::string());
      if (!notes_given_.insert(label).second)
        c = {{"trace", label},
             {"confidence", "high"},
             {"warnings", json::array()},
             {"given_before", true}};
    }
  }

  // Limit/detail, truncation notes, next calls, integers, and the text each
  // protocol version gets: src/mcp/result_shape.h.
  json result = assemble_tool_result(name, args, out, structured);
  if (tool->definition.contains("outputSchema")) {
    if (std::string problem = validate_json(tool->definition["outputSchema"], out.structured);
        !problem.empty())
      throw RpcError{
          rpc::kInternalError,
          fmt::format("tool {} produced a result that does not match its outputSchema: {}", name,
                      problem)};
    if (structured) result["structuredContent"] = std::move(out.structured);
  }
  return result;
}

}  // namespace jarvis::mcp
