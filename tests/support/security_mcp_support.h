// The in-process MCP security tests' shared steps: a server confined to a
// scratch root, reading a tool reply, and checking the server answers on.
#pragma once

#include <doctest/doctest.h>

#include <string>

#include "mcp_harness.h"
#include "security_support.h"

namespace jarvis::mcp::testing {

inline ServerOptions root_options(const jarvis::testing::ScratchDir& root) {
  ServerOptions options;
  options.roots = {root.str()};
  return options;
}

inline bool tool_error(const json& reply) {
  return reply.contains("result") && reply["result"].value("isError", false);
}

inline std::string tool_text(const json& reply) {
  return reply["result"]["content"][0]["text"].get<std::string>();
}

inline void answers_next_request(Harness& h) {
  json pong = h.request(9999, "ping");
  CHECK(pong.contains("result"));
}

}  // namespace jarvis::mcp::testing
