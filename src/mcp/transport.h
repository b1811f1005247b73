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
  size_t max_sessions = 256;
  size_t max_get_streams = 16;
  int keepalive_ms = 1000;  // GET stream comment interval (also how fast a gone client is noticed)
};

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
