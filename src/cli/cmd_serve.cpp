// `jarvis serve`: the MCP server over stdio or Streamable HTTP.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <set>
#include <thread>

#include <unistd.h>

#include <fmt/format.h>

#include "base/output_confinement.h"
#include "base/output_guard.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/suggest.h"
#include "mcp/tool_profiles.h"
#include "mcp/transport.h"
#include "mcp/worker_call.h"

namespace jarvis::cli {

namespace {

struct ServeArgs {
  bool stdio = false, conformance_fixtures = false, output_schemas = false;
  bool http = false;  // --http given (with or without an address)
  std::string http_address;
  std::string host, port, token, max_message_mb, max_memory, session_ttl_min, workers,
      client_timeout_s, isolate_calls;
  std::vector<std::string> roots, allow_origins, arch_dirs, profiles, tools;
};

// A whole number in [lo, hi]; anything else (negative, junk, absurd) stops
// the start instead of wrapping around to "no limit".
uint64_t bounded_number(const std::string& flag, const std::string& text, uint64_t lo,
                        uint64_t hi) {
  size_t used = 0;
  uint64_t value = 0;
  bool digits = !text.empty() && std::all_of(text.begin(), text.end(), ::isdigit);
  try {
    if (digits) value = std::stoull(text, &used);
  } catch (const std::exception&) {
    digits = false;
  }
  if (!digits || used != text.size() || value < lo || value > hi)
    throw std::runtime_error(
        fmt::format("{} {}: expected a whole number from {} to {}", flag, text, lo, hi));
  return value;
}

// "512M", "8G", "1048576" (bytes) -> bytes; at least 64 MiB.
uint64_t memory_size(const std::string& text) {
  std::string digits = text;
  uint64_t unit = 1;
  if (!digits.empty() && std::string("kKmMgG").find(digits.back()) != std::string::npos) {
    char u = static_cast<char>(std::toupper(digits.back()));
    unit = u == 'K' ? 1ull << 10 : u == 'M' ? 1ull << 20 : 1ull << 30;
    digits.pop_back();
  }
  uint64_t n = bounded_number("--max-memory", digits, 1, (1ull << 50) / unit);
  if (n * unit < (64ull << 20)) throw std::runtime_error("--max-memory " + text + ": at least 64M");
  return n * unit;
}

// Without --max-memory: half of the machine's physical memory (at least
// 1 GiB), so that a long-running server evicts least recently used traces
// instead of growing until the kernel kills it.
uint64_t default_memory_budget() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  const uint64_t physical =
      pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
  return std::max<uint64_t>(1ull << 30, physical / 2);
}

// --http [HOST:]PORT, or --http with --host / --port.
void parse_http_address(const ServeArgs& a, mcp::HttpOptions& http) {
  const std::string& addr = a.http_address;
  if (!addr.empty()) {
    size_t colon = addr.rfind(':');
    if (colon != std::string::npos) http.host = addr.substr(0, colon);
    std::string port = colon == std::string::npos ? addr : addr.substr(colon + 1);
    http.port = static_cast<int>(bounded_number("--http", port, 0, 65535));
  }
  if (!a.host.empty()) http.host = a.host;
  if (!a.port.empty()) http.port = static_cast<int>(bounded_number("--port", a.port, 0, 65535));
  if (http.host.size() > 2 && http.host.front() == '[' && http.host.back() == ']')
    http.host = http.host.substr(1, http.host.size() - 2);
}

// How long a stopping server waits for its calls to return once their
// workers are killed and their cancel flags set; a call that checks neither
// (a trace still parsing) does not hold the exit past it.
constexpr auto kStopGrace = std::chrono::seconds(2);

// On SIGTERM / SIGINT: end every worker process, cancel the calls in
// flight, stop accepting, and exit when the server's threads have returned,
// or after kStopGrace (or at a second signal) whatever still runs
// (issue 74 point 3: a SIGTERM'd server ran on while a 60 s query did).
[[noreturn]] void stop_promptly(mcp::HttpEndpoint& http, const sigset_t& stop_signals) {
  const size_t killed = mcp::end_all_workers();
  if (killed > 0)
    std::fprintf(stderr, "jarvis serve: stopping; ended %zu call(s) running in workers\n", killed);
  http.stop();
  const auto grace_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(kStopGrace).count();
  const timespec grace{static_cast<time_t>(grace_ns / 1000000000),
                       static_cast<long>(grace_ns % 1000000000)};
  while (sigtimedwait(&stop_signals, nullptr, &grace) < 0 && errno == EINTR) {
  }
  std::fprintf(stderr, "jarvis serve: calls still running at the stop; exiting without them\n");
  std::_Exit(0);
}

int serve_http(mcp::Server& server, mcp::HttpOptions options) {
  // Block the stop signals in every thread; one thread waits for them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  // Never destroyed (a static points to it: no leak checker counts it): on a
  // stop signal run() returns while the waiter below may still be inside
  // stop() (ThreadSanitizer saw the endpoint freed under it); the process
  // exits right after either way.
  static mcp::HttpEndpoint* endpoint = nullptr;
  endpoint = mcp::make_http_endpoint(server, options).release();
  mcp::HttpEndpoint& http = *endpoint;
  http.bind();
  std::string shown_host =
      options.host.find(':') != std::string::npos ? "[" + options.host + "]" : options.host;
  std::fprintf(stderr, "jarvis serve: listening on http://%s:%d/mcp\n", shown_host.c_str(),
               http.port());
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    stop_promptly(http, stop_signals);
  });
  waiter.detach();
  http.run();
  return 0;
}

mcp::ServerOptions server_options(const ServeArgs& a) {
  mcp::ServerOptions options;
  options.roots = a.roots;
  options.conformance_fixtures = a.conformance_fixtures;
  options.list_output_schemas = a.output_schemas;
  if (!a.max_message_mb.empty())
    options.max_message_bytes = bounded_number("--max-message-mb", a.max_message_mb, 1, 1024) << 20;
  options.max_memory_bytes =
      a.max_memory.empty() ? default_memory_budget() : memory_size(a.max_memory);
  // Charged as inputs expand and as queries allocate, not only once parsed.
  set_process_memory_budget(options.max_memory_bytes);
  if (!a.session_ttl_min.empty())
    options.session_idle_ttl =
        std::chrono::minutes(bounded_number("--session-ttl-min", a.session_ttl_min, 1, 10080));
  if (!a.client_timeout_s.empty())
    options.client_request_timeout =
        std::chrono::seconds(bounded_number("--client-timeout-s", a.client_timeout_s, 1, 86400));
  options.arch_dirs = a.arch_dirs;
  const std::vector<std::string> known = mcp::builtin_tool_names();
  try {
    options.tools = mcp::select_tools(a.profiles, a.tools, known);
  } catch (const std::invalid_argument& e) {
    std::string hint;
    for (const auto& t : a.tools)
      if (std::find(known.begin(), known.end(), t) == known.end()) {
        hint = did_you_mean(t, std::set<std::string>(known.begin(), known.end()));
        break;
      }
    throw std::runtime_error(std::string(e.what()) + hint);
  }
  return options;
}

int run_serve(const ServeArgs& a) {
  if (a.stdio == a.http) usage_error("give exactly one of --stdio and --http");
  if (a.stdio && (!a.host.empty() || !a.port.empty() || !a.token.empty()))
    usage_error("--host, --port and --token apply to --http");
  mcp::ServerOptions options;
  size_t worker_count = 0;
  try {
    options = server_options(a);
    if (!a.workers.empty()) worker_count = bounded_number("--workers", a.workers, 1, 1024);
  } catch (const std::runtime_error& e) {
    usage_error(e.what());
  }
  // Outputs only inside the roots (and the cache directory: the agents' gate
  // baselines), checked on the directory each write holds (issue 74 point 9).
  {
    std::vector<std::filesystem::path> writable(options.roots.begin(), options.roots.end());
    if (const std::string cache = jarvis_cache_dir(); !cache.empty()) writable.emplace_back(cache);
    set_output_roots(writable);
  }
  std::signal(SIGPIPE, SIG_IGN);
  // A crash in one analysis must not end the other sessions of an HTTP
  // server; a stdio server has one client, who may trade that for speed.
  options.isolate_calls = a.isolate_calls.empty() ? a.http : a.isolate_calls == "on";
  // One HTTP client may have a quarter of the workers' calls running at once.
  if (a.http)
    options.max_calls_per_session =
        std::max<size_t>(1, (worker_count ? worker_count : mcp::HttpOptions{}.threads) / 4);
  mcp::Server server(options);
  for (const auto& problem : server.registry_problems())
    std::fprintf(stderr, "jarvis serve: warning: %s\n", problem.c_str());
  if (a.stdio) return mcp::serve_stdio(server, 0, 1, worker_count ? worker_count : 1);

  mcp::HttpOptions http_options;
  try {
    parse_http_address(a, http_options);
  } catch (const std::runtime_error& e) {
    usage_error(e.what());
  }
  http_options.token = a.token;
  if (http_options.token.empty())
    if (const char* env = std::getenv("JARVIS_TOKEN")) http_options.token = env;
  http_options.allowed_origins = a.allow_origins;
  if (worker_count) http_options.threads = worker_count;
  return serve_http(server, http_options);
}

}  // namespace

Runner add_serve(CLI::App& app) {
  auto a = std::make_shared<ServeArgs>();
  CLI::App* cmd = app.add_subcommand("serve", "MCP server for agents over stdio or HTTP");
  cmd->add_flag("--stdio", a->stdio, "JSON-RPC over stdin/stdout");
  CLI::Option* http =
      cmd->add_option("--http", a->http_address,
                      "Streamable HTTP on [HOST:]PORT (default 127.0.0.1:8080; or --host/--port)")
          ->expected(0, 1);
  cmd->add_option("--host", a->host, "HTTP bind address (default 127.0.0.1)");
  cmd->add_option("--port", a->port, "HTTP port");
  cmd->add_option("--root", a->roots,
                  "directory tools may read/write (repeatable; default: the working directory)")
      ->allow_extra_args(false);
  cmd->add_option("--token", a->token,
                  "HTTP bearer token (default: $JARVIS_TOKEN; required off loopback)");
  cmd->add_option("--allow-origin", a->allow_origins, "extra allowed Origin (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--max-message-mb", a->max_message_mb,
                  "largest JSON-RPC message accepted, decoded (1-1024, default 64)");
  cmd->add_option("--max-memory", a->max_memory,
                  "budget of the parsed-trace cache shared by all sessions, and of the "
                  "server with its worker processes together, e.g. 4096M or 8G (default: half "
                  "the physical memory); least recently used traces are evicted, and a call "
                  "that parses one again says so");
  cmd->add_option("--session-ttl-min", a->session_ttl_min,
                  "forget HTTP sessions and stateless handles idle this long (1-10080, "
                  "default 30)");
  cmd->add_option("--client-timeout-s", a->client_timeout_s,
                  "how long a tool waits for the client's answer to a sampling or elicitation "
                  "request (1-86400, default 60)");
  cmd->add_option("--arch-dir", a->arch_dirs,
                  "directory of GPU arch .json files readable besides --root (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--isolate-calls", a->isolate_calls,
                  "run each analysis call in a worker process forked for it, so that a crash "
                  "ends that call only (default: on for --http, off for --stdio; costs a fork; "
                  "a pure analysis's result is kept: docs/security.md)")
      ->check(CLI::IsMember({"on", "off"}));
  cmd->add_option("--workers", a->workers,
                  "threads running requests (default: stdio 1 = in order, HTTP 32)");
  std::string profile_help =
      "serve only the tools of a profile (repeatable; a smaller tools/list):";
  std::vector<std::string> profile_names;
  for (const auto& p : mcp::tool_profiles()) {
    profile_help += fmt::format(" {} = {};", p.name, p.what);
    profile_names.push_back(p.name);
  }
  cmd->add_option("--profile", a->profiles, profile_help)
      ->check(CLI::IsMember(profile_names))
      ->allow_extra_args(false);
  cmd->add_option("--tools", a->tools,
                  "serve only these tools, comma-separated (with --profile: added to it)")
      ->delimiter(',')
      ->allow_extra_args(false);
  cmd->add_flag("--output-schemas", a->output_schemas,
                "list every tool's outputSchema in tools/list (default: left out, one "
                "tool_schema call away; they double the listing)");
  cmd->add_flag("--conformance-fixtures", a->conformance_fixtures,
                "add the MCP conformance suite's test fixtures (tests only)");
  return [a, http] {
    a->http = http->count() > 0;
    return run_serve(*a);
  };
}

}  // namespace jarvis::cli
