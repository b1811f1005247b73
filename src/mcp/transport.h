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
// cancellation and responses are handled by the reader meanwhile. At EOF the
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

class HttpServer {
 public:
  HttpServer(Server& server, HttpOptions options);
  ~HttpServer();
  // Binds the socket; throws std::runtime_error when it cannot.
  void bind();
  int port() const;
  // Serves until stop(); call bind() first.
  void run();
  void stop();
  size_t session_count() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace jarvis::mcp
