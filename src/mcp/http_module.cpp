// make_http_endpoint (transport.h): the Streamable HTTP transport from its
// module, libjarvis_http.so (cmake/mcp.cmake).
#include <mutex>

#include "base/module_loader.h"
#include "mcp/transport.h"

namespace jarvis::mcp {

std::unique_ptr<HttpEndpoint> make_http_endpoint(Server& server, const HttpOptions& options) {
  static std::once_flag once;
  static HttpModuleEntry entry = nullptr;
  std::call_once(once, [] {
    entry =
        reinterpret_cast<HttpModuleEntry>(load_module_entry("libjarvis_http.so", kHttpModuleEntry));
  });
  return std::unique_ptr<HttpEndpoint>(entry(server, options));
}

}  // namespace jarvis::mcp
