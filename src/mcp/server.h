// The MCP protocol core, independent of the transport.
//
// A Server holds what every connection shares (the tools, prompts, options,
// the cache of parsed traces under the memory budget, the capability-handle
// store of stateless 2026-07-28 requests). A Session is one stdio process or
// one HTTP session: negotiated version, log level, its own handles (a
// TraceStore over the shared cache), the requests in flight (for
// cancellation) and the requests we sent to the client. Transports feed messages to
// Session::handle*, from any number of threads, and deliver what comes back.
//
// Eras are chosen per message: a request whose params._meta carries
// "io.modelcontextprotocol/protocolVersion" (and server/discover) is served
// statelessly as 2026-07-28; everything else follows the initialize handshake
// (2024-11-05 ... 2025-11-25).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "mcp/tool.h"

namespace jarvis::mcp {

inline constexpr const char* kLatestLegacyVersion = "2025-11-25";
inline constexpr const char* kModernVersion = "2026-07-28";
inline constexpr const char* kMetaProtocolVersion = "io.modelcontextprotocol/protocolVersion";
inline constexpr const char* kMetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities";
inline constexpr const char* kMetaLogLevel = "io.modelcontextprotocol/logLevel";
inline constexpr const char* kMetaServerInfo = "io.modelcontextprotocol/serverInfo";

// Legacy revisions we answer, newest first.
const std::vector<std::string>& legacy_versions();
bool is_supported_version(std::string_view version);  // any era

// JSON-RPC error codes.
namespace rpc {
inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;
// Implementation-defined server error: the request was not run because the
// messages already waiting hold too much memory (stdio); retry later.
inline constexpr int kServerBusy = -32000;
inline constexpr int kResourceNotFound = -32002;
inline constexpr int kHeaderMismatch = -32020;
inline constexpr int kUnsupportedProtocolVersion = -32022;
}  // namespace rpc

// An error response. Its "id" is the request's when that is a valid id
// (string or integer), else null: JSON-RPC 2.0 §5 requires the member, null
// when the id could not be determined (parse errors, invalid requests).
json make_error(const json& id, int code, const std::string& message, const json& data = nullptr);

// The deepest nesting of arrays and objects a message may have. Tool
// arguments need a handful of levels; a limit keeps every recursive walk
// over a message (schema validation, dump, copies) shallow.
inline constexpr size_t kMaxJsonDepth = 64;

// What one linear scan of a message's text finds (strings skipped), before
// any parser or recursion sees it.
struct JsonTextScan {
  bool too_deep = false;  // arrays/objects nest deeper than the limit (the scan stopped there)
  size_t values = 0;      // at least the number of values a parse would build
  // The root's shape and the raw text of its "id" and "method" members (the
  // last of each, as the parser keeps), read in the same pass so a transport
  // can refuse a request it has no room for without building it.
  bool root_is_array = false;
  std::optional<std::string_view> id_text, method_text;
};
JsonTextScan scan_json_text(std::string_view text, size_t max_depth);

// True when `text` nests arrays/objects deeper than `max_depth`.
bool json_nesting_exceeds(std::string_view text, size_t max_depth);

// The id of the request whose text was scanned, parsed from its raw span
// (null when absent, not a scalar, or longer than any real id).
json scanned_request_id(const JsonTextScan& scan);
// True when the scanned message would be a request run on the worker pool:
// a batch, or an object with "id" and a "method" other than initialize/ping.
bool scanned_runs_on_pool(const JsonTextScan& scan);
// A tools/call's params naming a tool that answers from what the session
// holds, at once (list_traces, unload_trace, tool_schema): it takes no
// long-call slot, and over stdio it runs on the quick lane.
bool is_quick_tool(const json& params);

// A parsed value costs far more than its text: nlohmann::json, measured
// (peak RSS), takes 27-43 bytes per value of `[[],..]`, `[{},..]` or `[1,..]`
// (2-3 bytes of text each), 64 per short string and 96 per object member;
// strings add their own length. So a 60 MiB message of `{},` took ~2 GB.
// Counting values as scan_json_text does, 128 bytes each bounds them all;
// a message may hold max_message_bytes / 128 values (524,288 under the
// default 64 MiB), so it parses into at most its text plus the cap again.
inline constexpr size_t kParsedBytesPerValue = 128;
inline constexpr size_t kMinJsonValues = size_t{1} << 16;  // small caps still take real messages
size_t max_json_values(size_t max_message_bytes);
// Bytes a message of `text_bytes` may hold once parsed (text + values x per-value cost).
inline size_t parsed_memory_bound(size_t text_bytes, const JsonTextScan& scan) {
  return text_bytes + scan.values * kParsedBytesPerValue;
}

// Parses one JSON-RPC message; on failure returns the error reply instead:
// -32700 for invalid JSON, -32600 for nesting beyond kMaxJsonDepth or more
// than `max_values` values (refused before parsing).
struct ParsedMessage {
  json message;
  std::optional<json> error;  // set when the text is refused
  size_t memory_bound = 0;    // bytes the parsed message may hold: text + values x per-value cost
};
ParsedMessage parse_message_text(std::string_view text, size_t max_values);

// A prompt served by prompts/list and prompts/get.
struct Prompt {
  json definition;                                    // {name, title?, description?, arguments?}
  std::function<json(const json& arguments)> render;  // -> {description?, messages}
  std::vector<std::string> aliases;  // other names prompts/get accepts (TraceLens's skill names)
};

// Prompts from the skill documents compiled in from skills/ (front matter
// `name:` and `description:`). Files without a name are skipped.
std::vector<Prompt> skill_prompts();

struct ServerOptions {
  std::vector<std::string> roots;        // --root; empty = the current directory
  bool conformance_fixtures = false;     // add the conformance suite's fixtures
  size_t max_message_bytes = 64u << 20;  // one JSON-RPC message (stdio line, HTTP body)
  // A 2025-03-26 batch: at most this many messages, and its replies stop at
  // this many bytes (the requests after that are answered with an error and
  // not run), so a small batch cannot grow into a reply of hundreds of MB.
  size_t max_batch_messages = 64;
  size_t max_batch_reply_bytes = 16u << 20;
  size_t tools_page_size = 100;  // tools/list page size
  // tools/list carries each tool's outputSchema too (--output-schemas). Off:
  // they were half of the listing's 95 KB, which every client pays in every
  // conversation; the tool_schema tool gives any one of them.
  bool list_output_schemas = false;
  std::chrono::milliseconds client_request_timeout{60000};
  std::string instructions;       // initialize.instructions ("" = default text)
  uint64_t max_memory_bytes = 0;  // --max-memory: budget of the parsed-trace cache (0 = none)
  // Idle time after which an HTTP session, or a stateless client's handle, is forgotten.
  std::chrono::seconds session_idle_ttl{30 * 60};
  std::vector<std::string> arch_dirs;  // --arch-dir: arch JSON files readable besides the roots
  // --profile / --tools (tool_profiles.h): the built-in tools listed and run;
  // empty = all. A call to another built-in tool is refused, naming the selection.
  std::vector<std::string> tools;
  // Each analysis call in a worker process forked for it (mcp/worker_call.h),
  // so that a crash ends that call only. `jarvis serve` turns it on for HTTP
  // (many sessions share the process); the tools that change a session's
  // state (load_trace, ...) always run in the server.
  bool isolate_calls = false;
  // Tool calls one session may have running at once; 0 = no limit. A call
  // past it is answered at once with a tool error (the session waits for, or
  // cancels, one of its own), so one client cannot occupy every worker
  // (issue 63 point 3). `jarvis serve --http` sets a quarter of --workers.
  size_t max_calls_per_session = 0;
};

class Session;

class Server {
 public:
  explicit Server(ServerOptions options);
  ~Server();

  const ServerOptions& options() const { return options_; }
  const PathPolicy& paths() const { return paths_; }
  // Tools in tools/list order (built-ins sorted by name, then fixtures).
  const std::vector<ToolSpec>& tools() const { return tools_; }
  const ToolSpec* find_tool(std::string_view name) const;
  // A built-in tool left out by ServerOptions::tools.
  bool is_unserved(std::string_view name) const;
  const std::vector<Prompt>& prompts() const { return prompts_; }
  // Schema/handler mismatches found at startup (those tools are not served).
  const std::vector<std::string>& registry_problems() const { return problems_; }

  json server_info() const;
  json capabilities() const;
  const std::string& instructions() const { return instructions_; }
  // Parses a message's text under this server's limits: its size
  // (max_message_bytes), nesting depth and value count (max_json_values).
  ParsedMessage parse_message(std::string_view text) const;

  std::shared_ptr<Session> new_session();
  // A session for one stateless (2026-07-28) request. They share one store
  // of unguessable capability handles that is never listed, so a handle
  // outlives its request but only its holder can use or unload it.
  std::shared_ptr<Session> new_stateless_session();
  TraceCache& trace_cache() { return *cache_; }
  // Long calls: requests that hold a transport thread for as long as they
  // run (a tool call other than list_traces, unload_trace and tool_schema;
  // an HTTP GET stream). At most `limit` run at once over all sessions and
  // clients (0 = no limit): the HTTP transport keeps some of its threads out
  // of their reach, so initialize, ping, tools/list and the quick tools are
  // answered whoever holds the rest (issue 74 point 4).
  void set_long_call_limit(size_t limit);
  size_t long_call_limit() const;
  // False at the limit; else the caller holds a slot until end_long_call().
  bool try_begin_long_call();
  void end_long_call();
  // Confines a trace path named where a handle is expected (TraceStore::set_path_loader).
  std::function<std::string(const std::string&)> trace_path_loader() const;

  // Fixture resources (conformance mode only).
  json list_resources() const;
  json list_resource_templates() const;
  std::optional<json> read_resource(const std::string& uri) const;

 private:
  ServerOptions options_;
  PathPolicy paths_;
  std::vector<ToolSpec> tools_;
  std::vector<Prompt> prompts_;
  std::vector<std::string> problems_;
  std::vector<std::string> unserved_;  // built-in tools left out by ServerOptions::tools
  std::string instructions_;
  std::unique_ptr<TraceCache> cache_;  // before the stores that reference it
  std::shared_ptr<TraceStore> stateless_traces_;
  std::atomic<size_t> long_calls_{0}, long_call_limit_{0};
};

// Delivers a message related to the request being handled (progress, log,
// a request to the client) on that request's channel. Must be thread-safe.
using Emit = std::function<void(const json&)>;

class Session {
 public:
  Session(Server& server, std::shared_ptr<TraceStore> traces);
  explicit Session(Server& server);

  // Handles one message given as text: -32700 on bad JSON, batches per the
  // negotiated version. Returns the reply (an object, an array for a batch,
  // or nothing for notifications, responses and cancelled requests).
  std::optional<json> handle_text(std::string_view text, const Emit& emit);
  // Handles one parsed message (object or array). Once `abandoned` turns
  // true (the client left), a batch runs none of its remaining messages.
  std::optional<json> handle(const json& message, const Emit& emit,
                             const std::atomic<bool>* abandoned = nullptr);
  // The error a batch is refused with as a whole (wrong protocol version,
  // empty, too many messages), or nothing when it would be run.
  std::optional<json> batch_refusal(const json& batch) const;

  bool initialized() const;
  std::string protocol_version() const;  // "" before initialize
  TraceStore& traces() { return *traces_; }
  // Cancels every request in flight and fails every pending client request
  // (the transport is going away).
  void cancel_all();
  // Number of requests running now.
  size_t in_flight() const;

 private:
  struct Call;  // one request being handled
  struct PendingClientRequest;

  std::optional<json> handle_one(const json& message, const Emit& emit);
  std::optional<json> handle_batch(const json& batch, const Emit& emit,
                                   const std::atomic<bool>* abandoned);
  void handle_notification(const std::string& method, const json& params);
  void handle_client_response(const json& message);
  std::optional<json> handle_request(const json& id, const std::string& method, const json& params,
                                     const Emit& emit);
  json legacy_request(Call& call, const std::string& method, const json& params);
  json modern_request(Call& call, const std::string& method, const json& params);
  json common_request(Call& call, const std::string& method, const json& params, bool modern);
  json initialize(const json& params);
  json list_tools(const json& params, bool modern) const;
  json call_tool(Call& call, const json& params, bool modern);
  json get_prompt(const json& params) const;
  json set_log_level(const json& params);
  json client_request(Call& call, const std::string& method, const json& params);
  bool version_at_least(const std::string& version) const;

  Server& server_;
  std::shared_ptr<TraceStore> traces_;
  mutable std::mutex mutex_;
  bool initialized_ = false;
  std::string version_;
  json client_capabilities_ = json::object();
  std::optional<LogLevel> log_level_;
  // Traces whose high-confidence notes this session was given in full: later
  // replies refer to them in one line (issue 64 point 4).
  std::set<std::string> notes_given_;
  std::map<std::string, std::shared_ptr<std::atomic<bool>>> in_flight_;  // id key -> cancel flag
  size_t tool_calls_ = 0;  // tools/call requests among in_flight_
  std::map<std::string, std::shared_ptr<PendingClientRequest>> pending_;
  uint64_t next_client_request_ = 1;
  // What a worker returned for a pure analysis of a loaded trace (insights,
  // ops_summary, critical_path on a handle), by tool and arguments: the
  // session's next identical call is answered from it instead of forking a
  // worker that derives it all again (issue 75 point 2). A handle names one
  // unchanged file for as long as it is loaded, and a result is used only
  // while its handle is; at most kKeptResults are kept.
  std::map<std::string, ToolResult> kept_results_;
  static constexpr size_t kKeptResults = 32;
};

}  // namespace jarvis::mcp
