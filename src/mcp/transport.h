// Transports of the MCP server: newline-delimited JSON-RPC over stdio, and
// Streamable HTTP (POST/GET/DELETE on one endpoint) with sessions.
#pragma once

#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "mcp/server.h"

namespace jarvis::mcp {

// Serves one session on the given descriptors until EOF on `in_fd`.
// Requests run on `workers` threads (1 = in arrival order, so a piped script
// may use a handle right after the load_trace that creates it); ping,
// cancellation and responses are handled by the reader meanwhile, and
// tools/list, prompts/*, resources/list and tool_schema, which read no
// session state, on a lane of their own (answered during a long call). At EOF the
// calls in flight finish, then it returns 0.
int serve_stdio(Server& server, int in_fd = 0, int out_fd = 1, size_t workers = 1);

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 0;                              // 0 = any free port (see HttpServer::port)
  std::string token;                         // bearer token; required when not on loopback
  std::vector<std::string> allowed_origins;  // besides http(s)://localhost|127.0.0.1|[::1][:port]
  size_t threads = 32;                       // worker threads (all sessions)
  size_t max_sessions = 256;    // at the cap, the least recently used idle session is evicted
  size_t max_get_streams = 16;  // also kept below half the workers
  int keepalive_ms = 1000;  // GET stream comment interval (also how fast a gone client is noticed)
  // Slow clients: a request's headers and body must arrive within
  // request_timeout_s; each read or write may stall at most io_timeout_s; an
  // idle keep-alive connection is closed after idle_keepalive_s.
  int request_timeout_s = 15;
  int io_timeout_s = 10;
  int idle_keepalive_s = 2;
  // Connections one address may hold at once; 0 = three quarters of the
  // workers, so one client can never occupy them all.
  size_t max_connections_per_ip = 0;
};

// The pieces of the HTTP checks, exposed for tests.
// Host header names a loopback host: "localhost", "127.0.0.1" or "[::1]",
// optionally followed by ":PORT" (digits) and nothing else.
bool is_local_host_header(const std::string& host);
// Content-Type's media type (before any parameter) is application/json.
bool is_json_media_type(const std::string& content_type);
// Authorization is "Bearer <token>" (scheme in any case, RFC 7235) with the
// expected token, compared in constant time.
bool bearer_token_matches(const std::string& authorization, const std::string& token);

bool is_loopback_host(const std::string& host);

// The client address the per-address connection cap counts a peer under
// (its numeric host as getnameinfo writes it): every loopback address
// (127.0.0.0/8, ::1, ::ffff:127.x.y.z) is one client, "loopback", since any
// local process can connect from all of them; ::ffff:a.b.c.d is a.b.c.d;
// any other address is itself.
std::string connection_cap_address(const std::string& numeric_host);

// A Streamable HTTP endpoint serving one Server.
class HttpEndpoint {
 public:
  virtual ~HttpEndpoint() = default;
  // Binds the socket; throws std::runtime_error when it cannot.
  virtual void bind() = 0;
  virtual int port() const = 0;
  // Serves until stop(); call bind() first.
  virtual void run() = 0;
  virtual void stop() = 0;
  virtual size_t session_count() const = 0;
};

// The endpoint, built on cpp-httplib (src/mcp/http/). The jarvis binary does
// not link it: `jarvis serve --http` loads it from the jarvis_http module
// (make_http_endpoint), so that no other command loads cpp-httplib, OpenSSL
// and brotli at start. The tests link it directly.
class HttpServer final : public HttpEndpoint {
 public:
  // Throws std::runtime_error for options it refuses (no token off loopback).
  HttpServer(Server& server, HttpOptions options);
  ~HttpServer() override;
  void bind() override;
  int port() const override;
  void run() override;
  void stop() override;
  size_t session_count() const override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Loads the jarvis_http module (libjarvis_http.so beside the binary, or in
// ../lib/jarvis/ of an installed tree) and makes an HttpServer there. Throws
// std::runtime_error naming the paths tried when the module cannot be loaded.
std::unique_ptr<HttpEndpoint> make_http_endpoint(Server& server, const HttpOptions& options);

// The module's entry point (extern "C", so dlsym finds it by this name).
inline constexpr const char* kHttpModuleEntry = "jarvis_http_endpoint";
using HttpModuleEntry = HttpEndpoint* (*)(Server& server, const HttpOptions& options);

}  // namespace jarvis::mcp
