// libFuzzer target for the MCP JSON-RPC message layer: each input is split
// into lines, and every line is handled as one message by a fresh session
// (as the stdio transport would). The first line is replaced by a valid
// initialize half of the time so the fuzzer also reaches the initialized
// methods. Tools are confined to an empty temporary root, so no file is read.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "mcp/server.h"

namespace {

jarvis::mcp::Server& server() {
  static jarvis::mcp::Server* instance = [] {
    auto root = std::filesystem::temp_directory_path() / "jarvis_fuzz_root";
    std::filesystem::create_directories(root);
    jarvis::mcp::ServerOptions options;
    options.roots = {root.string()};
    options.conformance_fixtures = false;
    options.max_message_bytes = 1 << 20;
    options.client_request_timeout = std::chrono::milliseconds(1);
    return new jarvis::mcp::Server(options);
  }();
  return *instance;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  auto session = server().new_session();
  jarvis::mcp::Emit emit = [](const nlohmann::json& message) {
    // Every emitted message must serialize.
    (void)message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  };
  if (size > 0 && (data[0] & 1)) {
    session->handle_text(
        R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"fuzz","version":"0"}}})",
        emit);
  }
  size_t start = 0;
  while (start <= input.size()) {
    size_t end = input.find('\n', start);
    if (end == std::string_view::npos) end = input.size();
    auto reply = session->handle_text(input.substr(start, end - start), emit);
    // JSON-RPC 2.0: a reply's id is null only when the request's id could not
    // be read, i.e. on a parse error or an invalid request; never on a result.
    if (reply && reply->is_object() && reply->contains("id") && (*reply)["id"].is_null()) {
      const nlohmann::json& r = *reply;
      bool error = r.contains("error") && r["error"].is_object() && r["error"].contains("code");
      int code =
          error && r["error"]["code"].is_number_integer() ? r["error"]["code"].get<int>() : 0;
      if (!error || (code != -32700 && code != -32600)) __builtin_trap();
    }
    start = end + 1;
  }
  return 0;
}
