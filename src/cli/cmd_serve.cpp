// `jarvis serve`: the MCP server over stdio or Streamable HTTP.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include <fmt/format.h>

#include "cli/commands.h"
#include "mcp/transport.h"

namespace jarvis::cli {

namespace {

const char* kUsage =
    "usage: jarvis serve --stdio [options]\n"
    "       jarvis serve --http [HOST:]PORT [options]     (or --http --host H --port P)\n"
    "options:\n"
    "  --root DIR               directory tools may read/write (repeatable; default: cwd)\n"
    "  --token TOKEN            HTTP bearer token (default: $JARVIS_TOKEN; required off loopback)\n"
    "  --allow-origin ORIGIN    extra allowed Origin for HTTP (repeatable)\n"
    "  --max-message-mb N       largest JSON-RPC message accepted, decoded (1-1024, default 64)\n"
    "  --max-memory SIZE        budget of the parsed-trace cache shared by all sessions, e.g.\n"
    "                           4096M or 8G (default: unlimited); least recently used traces\n"
    "                           are evicted and parsed again on next use\n"
    "  --session-ttl-min N      forget HTTP sessions and stateless handles idle this long\n"
    "                           (1-10080 minutes, default 30)\n"
    "  --arch-dir DIR           directory of GPU arch .json files readable besides --root\n"
    "                           (repeatable)\n"
    "  --workers N              threads running requests (default: stdio 1 = in order, HTTP 32)\n"
    "  --conformance-fixtures   add the MCP conformance suite's test fixtures (tests only)\n";

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

std::vector<std::string> all_values(const Args& args, const std::string& flag) {
  std::vector<std::string> out;
  for (size_t k = 0; k + 1 < args.size(); ++k)
    if (args[k] == flag) out.push_back(args[k + 1]);
  return out;
}

// --http takes an optional value: [HOST:]PORT.
void parse_http_address(const Args& args, mcp::HttpOptions& http) {
  for (size_t k = 0; k < args.size(); ++k) {
    if (args[k] != "--http" || k + 1 >= args.size() || args[k + 1].rfind("--", 0) == 0) continue;
    const std::string& addr = args[k + 1];
    size_t colon = addr.rfind(':');
    if (colon == std::string::npos) {
      http.port = std::stoi(addr);
    } else {
      http.host = addr.substr(0, colon);
      http.port = std::stoi(addr.substr(colon + 1));
    }
  }
  if (auto host = flag_value(args, "--host"); !host.empty()) http.host = host;
  if (auto port = flag_value(args, "--port"); !port.empty()) http.port = std::stoi(port);
  if (http.host.size() > 2 && http.host.front() == '[' && http.host.back() == ']')
    http.host = http.host.substr(1, http.host.size() - 2);
  if (http.port < 0 || http.port > 65535) throw std::runtime_error("port out of range");
}

int serve_http(mcp::Server& server, mcp::HttpOptions options) {
  // Block the stop signals in every thread; one thread waits for them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  mcp::HttpServer http(server, options);
  http.bind();
  std::string shown_host =
      options.host.find(':') != std::string::npos ? "[" + options.host + "]" : options.host;
  std::fprintf(stderr, "jarvis serve: listening on http://%s:%d/mcp\n", shown_host.c_str(),
               http.port());
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    http.stop();
  });
  waiter.detach();
  http.run();
  return 0;
}

}  // namespace

int cmd_serve(const Args& args) {
  bool stdio = has_flag(args, "--stdio");
  bool http = has_flag(args, "--http");
  if (stdio == http || has_flag(args, "--help")) {
    std::fputs(kUsage, stderr);
    return has_flag(args, "--help") ? 0 : 2;
  }
  std::signal(SIGPIPE, SIG_IGN);
  mcp::ServerOptions options;
  options.roots = all_values(args, "--root");
  options.conformance_fixtures = has_flag(args, "--conformance-fixtures");
  if (auto mb = flag_value(args, "--max-message-mb"); !mb.empty())
    options.max_message_bytes = bounded_number("--max-message-mb", mb, 1, 1024) << 20;
  if (auto mem = flag_value(args, "--max-memory"); !mem.empty())
    options.max_memory_bytes = memory_size(mem);
  if (auto ttl = flag_value(args, "--session-ttl-min"); !ttl.empty())
    options.session_idle_ttl =
        std::chrono::minutes(bounded_number("--session-ttl-min", ttl, 1, 10080));
  options.arch_dirs = all_values(args, "--arch-dir");
  mcp::Server server(options);
  for (const auto& problem : server.registry_problems())
    std::fprintf(stderr, "jarvis serve: warning: %s\n", problem.c_str());
  std::string workers = flag_value(args, "--workers");
  size_t worker_count = workers.empty() ? 0 : bounded_number("--workers", workers, 1, 1024);
  if (stdio) return mcp::serve_stdio(server, 0, 1, worker_count ? worker_count : 1);

  mcp::HttpOptions http_options;
  parse_http_address(args, http_options);
  http_options.token = flag_value(args, "--token");
  if (http_options.token.empty())
    if (const char* env = std::getenv("JARVIS_TOKEN")) http_options.token = env;
  http_options.allowed_origins = all_values(args, "--allow-origin");
  if (worker_count) http_options.threads = worker_count;
  return serve_http(server, http_options);
}

}  // namespace jarvis::cli
