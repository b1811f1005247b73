// Helpers of the HTTP security tests: an in-process server on a free
// loopback port, session setup, and raw sockets for requests (or source
// addresses) that httplib's client would not use.
#pragma once

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "mcp/transport.h"
#include "mcp_harness.h"

namespace jarvis::mcp::testing {

struct Live {
  Server server;
  HttpServer http;
  std::thread thread;
  explicit Live(HttpOptions options = {}, ServerOptions server_options = shared_root_options())
      : server(std::move(server_options)), http(server, std::move(options)) {
    http.bind();
    thread = std::thread([this] { http.run(); });
  }
  ~Live() {
    http.stop();
    thread.join();
  }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", http.port());
    c.set_read_timeout(20);
    return c;
  }
};

inline httplib::Headers headers(const std::string& session = "") {
  httplib::Headers h = {{"Accept", "application/json, text/event-stream"}};
  if (!session.empty()) h.emplace("Mcp-Session-Id", session);
  return h;
}

inline std::string init_body(const std::string& version = "2025-11-25") {
  return json{{"jsonrpc", "2.0"},
              {"id", 1},
              {"method", "initialize"},
              {"params",
               {{"protocolVersion", version},
                {"capabilities", json::object()},
                {"clientInfo", {{"name", "t"}, {"version", "0"}}}}}}
      .dump();
}

inline std::string open_session(httplib::Client& c, const std::string& version = "2025-11-25") {
  auto res = c.Post("/mcp", headers(), init_body(version), "application/json");
  REQUIRE(res);
  REQUIRE(res->status == 200);
  return res->get_header_value("Mcp-Session-Id");
}

inline std::string ping_body(int id) {
  return json{{"jsonrpc", "2.0"}, {"id", id}, {"method", "ping"}}.dump();
}

// A normal request on a fresh connection succeeds: the server is still up.
inline void answers_next_request(const Live& live) {
  auto c = live.client();
  std::string id = open_session(c);
  auto res = c.Post("/mcp", headers(id), ping_body(77), "application/json");
  REQUIRE(res);
  CHECK(res->status == 200);
  CHECK(json::parse(res->body)["id"] == 77);
}

// A raw TCP connection to the server, from `source` (any 127.x.y.z works on
// Linux without setup), for requests httplib's client would not send.
inline int connect_raw(int port, const char* source = nullptr) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (source) {
    sockaddr_in from{};
    from.sin_family = AF_INET;
    REQUIRE(::inet_pton(AF_INET, source, &from.sin_addr) == 1);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from) == 0);
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

inline void send_all(int fd, const std::string& data) {
  for (size_t off = 0; off < data.size();) {
    ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return;  // the server may close early: that is the point
    off += static_cast<size_t>(n);
  }
}

// What arrives up to the end of the response headers (or until the peer closes).
inline std::string receive_some(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) {
    out.append(buf, static_cast<size_t>(n));
    if (out.find("\r\n\r\n") != std::string::npos) break;
  }
  return out;
}

}  // namespace jarvis::mcp::testing
