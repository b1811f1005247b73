// What the forked-worker tests (tests/mcp/test_worker_lifetime.cpp,
// test_worker_fairness.cpp) share: JSON-RPC requests, a free local port, the
// reply of a POST, a process's children from /proc, and a query that runs
// until its time limit.
#pragma once

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mcp/transport.h"

namespace jarvis::mcp::testing {

// Runs until the query's time limit (the progress handler ends it there).
inline constexpr const char* kEndlessSql =
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n";

inline json rpc_request(int id, const std::string& method, const json& params) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}};
}

inline json tool_request(int id, const std::string& tool, const json& args) {
  return rpc_request(id, "tools/call", {{"name", tool}, {"arguments", args}});
}

inline std::vector<pid_t> children_of(pid_t pid) {
  std::vector<pid_t> out;
  std::error_code ec;
  const auto tasks = std::filesystem::path("/proc") / std::to_string(pid) / "task";
  for (const auto& task : std::filesystem::directory_iterator(tasks, ec)) {
    std::ifstream in(task.path() / "children");
    pid_t child = 0;
    while (in >> child) out.push_back(child);
  }
  return out;
}

inline int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  socklen_t size = sizeof addr;
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &size) == 0);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// The JSON-RPC reply of a POST answered as JSON or as one SSE event.
inline json reply_of(const std::string& body) {
  const size_t data = body.find("data: ");
  return json::parse(data == std::string::npos ? body : body.substr(data + 6));
}

}  // namespace jarvis::mcp::testing
