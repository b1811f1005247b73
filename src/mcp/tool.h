// The tool plug-in interface of the MCP server.
//
// A tool is two files:
//   tools_schema/<name>.json   {name, title, description, inputSchema, outputSchema, annotations}
//                              (the single source of truth for tools/list; compiled into the
//                              binary)
//   src/mcp/tools/<name>.cpp   the adapter: parse arguments, call the engine, shape the result,
//                              registered with JARVIS_MCP_TOOL(<name>, handler).
//
// The server validates the arguments against inputSchema (filling in `default`s)
// before the handler runs, and checks the structured result against outputSchema.
// A handler either returns a ToolResult or throws ToolError with a message that
// tells the agent what to do instead (sent back as an isError result).
// See docs/adding-a-tool.md.
#pragma once

#include <atomic>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"

namespace jarvis {
class TraceCache;
class TraceStore;
class LoadedTrace;
struct FileIdentity;
}  // namespace jarvis

namespace jarvis::mcp {

using json = nlohmann::json;

// A failure the agent can act on (bad argument value, unknown handle, file not
// found, ...). Becomes a tools/call result with isError:true and this text.
class ToolError : public ErrorOf<ErrorKind::InvalidInput> {
 public:
  using ErrorOf::ErrorOf;
};

// A row list of a result: the array at `pointer` (a JSON pointer into
// structured), cut by the `limit` / `detail` arguments (src/mcp/result_shape.h).
// `total`: rows there were before the handler itself cut the list (e.g.
// ops_summary's matched rows); unset = the array's size.
struct RowList {
  std::string pointer;
  std::optional<size_t> total;
};

struct ToolResult {
  json structured = json::object();  // structuredContent; must match the tool's outputSchema
  // A short human summary (a few lines: totals, the top rows). Clients that get
  // structuredContent see only this; older clients get it followed by the
  // structured data as JSON. Empty: the server writes a generic one.
  std::string text;
  json content;                        // rarely needed: explicit content blocks (replaces `text`)
  std::vector<RowList> row_lists;      // arrays `limit` / `detail` cut
  std::vector<std::string> full_only;  // JSON pointers of optional fields kept at detail=full only
  json next = json::array();           // suggested next calls: {tool, arguments, why}
  // Health warnings of the traces the call analysed ({trace, confidence,
  // warnings}); filled by the server from ToolContext::trace_caveats.
  json caveats = json::array();
  ToolResult() = default;
  ToolResult(json structured_content, std::string text_block = {})  // NOLINT: implicit on purpose
      : structured(std::move(structured_content)), text(std::move(text_block)) {}
  // Declares a row list; chainable.
  ToolResult& rows(std::string pointer, std::optional<size_t> total = std::nullopt) {
    row_lists.push_back({std::move(pointer), total});
    return *this;
  }
  // Suggests a next call (tool name, its arguments, why); chainable.
  ToolResult& suggest(std::string tool, json arguments, std::string why) {
    next.push_back(
        {{"tool", std::move(tool)}, {"arguments", std::move(arguments)}, {"why", std::move(why)}});
    return *this;
  }
};

// MCP log levels, lowest first (notifications/message, logging/setLevel).
enum class LogLevel { Debug, Info, Notice, Warning, Error, Critical, Alert, Emergency };
const char* log_level_name(LogLevel level);
bool parse_log_level(std::string_view name, LogLevel& level);

// The directories a session may read and write (--root, repeatable), and
// the rules for what tools may write there (docs/security.md).
class PathPolicy {
 public:
  PathPolicy() = default;
  // Roots are made absolute and canonical; a root that does not exist is an
  // error. arch_dirs: extra directories arch JSON files may be read from.
  explicit PathPolicy(const std::vector<std::string>& roots,
                      const std::vector<std::string>& arch_dirs = {});
  PathPolicy(const PathPolicy& o) : roots_(o.roots_), given_(o.given_), arch_dirs_(o.arch_dirs_) {}
  PathPolicy& operator=(const PathPolicy& o);
  const std::vector<std::filesystem::path>& roots() const { return roots_; }
  // Resolves `path` (relative paths are taken against the first root) the
  // way the kernel will: component by component, every symlink followed,
  // then checks that the result lies inside a root. A path that does not
  // even spell a place inside a root is refused before the file system is
  // looked at, so the answers tell nothing about files elsewhere.
  // must_exist: the path must exist. for_write: its parent directory must
  // exist and the path itself must not be a symlink.
  // Throws ToolError with a message naming the roots.
  std::filesystem::path resolve(const std::string& path, bool must_exist, bool for_write) const;

  // A file a tool is about to write: `extension` (".svg", ".html", ".md")
  // required; never a symlink, a directory or a trace; an existing file only
  // when this server wrote it (or it lies in a jarvis output directory) or
  // `overwrite` is set.
  std::filesystem::path output_file(const std::string& path, std::string_view extension,
                                    bool overwrite) const;
  // A directory a tool writes its files into: new, holding only files this
  // server wrote, or one a jarvis tool wrote before (it holds a
  // .jarvis-output marker), unless `overwrite`; never holding symlinks or
  // traces. Creates nothing: call mark_output_dir once the tool succeeded.
  std::filesystem::path output_dir(const std::string& path, bool overwrite) const;
  void mark_output_dir(const std::filesystem::path& dir) const;
  // Records a file a tool wrote, so a later call may replace it and
  // load_trace never reads it.
  void note_written(const std::filesystem::path& path) const;
  bool written_by_us(const std::filesystem::path& path) const;
  // What the files this server wrote are (written files, claimed output
  // directories): a forked worker sends its additions back to the server
  // (src/mcp/worker_call.h), which merges them, so a later call may replace
  // what the worker wrote.
  struct WrittenState {
    std::set<std::string> written, claimed;
  };
  WrittenState written_state() const;
  void merge_written_state(const WrittenState& added) const;
  std::unique_lock<std::mutex> hold_for_fork() const { return std::unique_lock(written_mutex_); }

  // A trace to read: resolved like resolve(must_exist), named .json or
  // .json.gz, and nothing a jarvis tool wrote (a planted findings file or
  // report is never read as a trace).
  std::filesystem::path trace_path(const std::string& path) const;

  // The `arch` argument of a tool: a bundled arch name (any case) becomes
  // its canonical name; anything else must be a .json file under a root or
  // an --arch-dir and become its canonical path. "" and "none" pass through.
  // Errors never quote the file's contents.
  std::string resolve_arch(const std::string& arch) const;

 private:
  std::vector<std::filesystem::path> roots_;
  std::vector<std::filesystem::path> given_;  // roots as given, made absolute
  std::vector<std::filesystem::path> arch_dirs_;
  mutable std::mutex written_mutex_;
  mutable std::set<std::string> written_;
  mutable std::set<std::string> claimed_;  // output directories tools of this server write
};

// What a handler may use besides its arguments. One per tools/call.
class ToolContext {
 public:
  ToolContext(TraceStore& traces, const PathPolicy& paths) : traces_(traces), paths_(paths) {}

  // The session's loaded traces (handles from load_trace).
  TraceStore& traces() { return traces_; }
  const PathPolicy& paths() const { return paths_; }
  std::filesystem::path resolve_path(const std::string& path, bool must_exist,
                                     bool for_write) const {
    return paths_.resolve(path, must_exist, for_write);
  }
  // PathPolicy::output_file / output_dir / resolve_arch.
  std::filesystem::path output_file(const std::string& path, std::string_view extension,
                                    bool overwrite = false) const {
    return paths_.output_file(path, extension, overwrite);
  }
  std::filesystem::path output_dir(const std::string& path, bool overwrite = false) const {
    return paths_.output_dir(path, overwrite);
  }
  std::string arch(const std::string& arch) const { return paths_.resolve_arch(arch); }

  // notifications/progress when the client asked for it (a progressToken);
  // a no-op otherwise. Non-increasing values are dropped.
  void report_progress(double done, double total, const std::string& message = {});
  // True once the client cancelled this call; long loops should check it and
  // return early (the result is discarded anyway).
  bool cancelled() const { return cancel_flag_ && cancel_flag_->load(); }
  // Throws ToolError("cancelled", ErrorKind::Cancelled) when cancelled().
  void throw_if_cancelled() const;
  // notifications/message to the client, subject to its log level.
  void log(LogLevel level, const std::string& message);
  // Sends a request to the client (sampling/createMessage, elicitation/create,
  // roots/list) and waits for its result. Throws ToolError if the client did
  // not declare the capability or answered with an error.
  json ask_client(const std::string& method, const json& params);

  // The call's time-limited part (a query's timeout_ms) starts now and may
  // run `ms`. In a worker process the server kills the worker
  // kTimeLimitGrace (base/forked_call.h) past it, so the limit holds even
  // inside one step the engine's own check cannot interrupt; in the server
  // it does nothing (the tool's own check is all there is).
  void start_time_limit(int64_t ms) {
    if (on_time_limit) on_time_limit(ms);
  }

  // Records the health of a trace this call analysed (insights/trace_health.h
  // to_json: confidence, warnings, ...). When it has warnings, the server adds
  // them to the result (structured `trace_caveats`, the first lines of the
  // text), so no conclusion about that trace travels without them. Once per
  // trace label.
  void add_trace_caveats(const std::string& trace, const json& health) {
    if (!health.is_object() || !health.contains("warnings") || health["warnings"].empty()) return;
    for (const json& c : trace_caveats_)
      if (c["trace"] == trace) return;
    trace_caveats_.push_back({{"trace", trace},
                              {"confidence", health.value("confidence", std::string())},
                              {"warnings", health["warnings"]}});
  }
  const json& trace_caveats() const { return trace_caveats_; }

  // What a call derived from a loaded trace and keeps for later calls
  // (issue 75 point 2): an analysis whose result does not depend on the
  // call's other arguments (insights' findings and plan for one arch), kept
  // on the trace's shared cache entry under `key`, so that the next call
  // (of this session or another on the same file, with any arguments, in a
  // worker or in the server) formats it instead of deriving it again. In a
  // forked worker, keep() also sends the value to the server (on_keep), which
  // puts it on its entry: the worker's own copy dies with it. Evicted with
  // the trace. kept() is null until a call kept the key.
  std::shared_ptr<const json> kept(const LoadedTrace& trace, const std::string& key) const;
  void keep(const LoadedTrace& trace, const std::string& key, std::shared_ptr<const json> value);

  // Wiring, set by the session that runs the call (tests may set these too).
  std::function<void(double, double, const std::string&)> on_progress;
  std::function<void(LogLevel, const std::string&)> on_log;
  std::function<json(const std::string&, const json&)> on_client_request;
  std::function<void(int64_t ms)> on_time_limit;
  // Set in a worker: sends a kept value (keep()) to the server (after the
  // call's result: worker_call.cpp).
  std::function<void(const FileIdentity&, const std::string&, std::shared_ptr<const json>)> on_keep;
  const std::atomic<bool>* cancel_flag_ = nullptr;

 private:
  TraceStore& traces_;
  const PathPolicy& paths_;
  double last_progress_ = -1;
  json trace_caveats_ = json::array();
};

using ToolHandler = std::function<ToolResult(const json& args, ToolContext& ctx)>;
// A tool's answer from what earlier calls kept (ToolContext::kept), or
// nullopt when it must run: the server calls it before forking a worker for
// the call, and answers from it without one. It runs in the server, so it
// only reads kept values and formats them: no analysis, nothing that may
// crash on a trace's contents (registered by JARVIS_MCP_TOOL_KEPT).
using KeptHandler = std::function<std::optional<ToolResult>(const json& args, ToolContext& ctx)>;

// A tool as the server serves it: its schema file joined with its handler.
struct ToolSpec {
  std::string name;
  json definition;  // the schema file: name, title, description, inputSchema, outputSchema, ...
  ToolHandler handler;
  KeptHandler kept = {};  // empty: every call runs `handler`
};

// _meta key of an isError tool result naming the error's kind.
inline constexpr const char* kMetaErrorKind = "jarvis/errorKind";

// The tools/call result of a failed tool: isError with `message` for the
// agent, and the error's kind (base/error.h: "invalid_input", "not_found",
// "unsupported", "cancelled", "internal") under _meta[kMetaErrorKind], so a
// client can tell "fix the arguments" from "not found" or "unsupported"
// without parsing the text. Not in structuredContent: clients validate that
// against the tool's outputSchema.
json tool_error_result(const std::string& message, ErrorKind kind);
// The same for an exception a tool raised (the kind: error_kind_of).
json tool_error_result(const std::exception& e);

// Handlers registered by JARVIS_MCP_TOOL, by name.
std::map<std::string, ToolHandler>& registered_tool_handlers();

struct ToolRegistrar {
  ToolRegistrar(const char* name, ToolHandler handler);
};
// The server's side of a worker's ToolContext::keep (mcp/worker_call.cpp).
// `value_cbor`: the value's CBOR, as a kKept frame carries it (decoded when a
// call first reads the value).
// Put on the entry of `cache` (the server's, which every session's store
// shares) when the trace is still resident there.
void keep_from_worker(TraceCache& cache, const FileIdentity& id, const std::string& key,
                      std::vector<uint8_t> value_cbor);
// Handlers registered by JARVIS_MCP_TOOL_KEPT, by name.
std::map<std::string, KeptHandler>& registered_kept_handlers();
struct KeptRegistrar {
  KeptRegistrar(const char* name, KeptHandler handler);
};

// The built-in tools, sorted by name: every embedded schema joined with its
// handler. Mismatches (a schema without handler or the reverse, a schema whose
// name differs from its file name, a malformed schema) are appended to
// `problems` and the tool is left out.
std::vector<ToolSpec> builtin_tools(std::vector<std::string>& problems);

// Checks a schema file's shape (name format, description, object schemas).
// Returns "" when fine, else the problem.
std::string check_tool_definition(const json& definition);

}  // namespace jarvis::mcp

// Registers `handler` (a function or lambda) as the handler of tool `name`.
// Use once at namespace scope in src/mcp/tools/<name>.cpp.
#define JARVIS_MCP_TOOL(name, handler) \
  static const ::jarvis::mcp::ToolRegistrar jarvis_mcp_tool_registrar_##name(#name, handler)

// Registers `handler` as the answer of tool `name` from kept analyses
// (KeptHandler), beside its JARVIS_MCP_TOOL.
#define JARVIS_MCP_TOOL_KEPT(name, handler) \
  static const ::jarvis::mcp::KeptRegistrar jarvis_mcp_kept_registrar_##name(#name, handler)
