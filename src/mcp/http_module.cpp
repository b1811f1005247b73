// make_http_endpoint (transport.h): the Streamable HTTP transport from its
// module, libjarvis_http.so (cmake/mcp.cmake).
#include "base/module_loader.h"
#include "mcp/transport.h"

namespace jarvis::mcp {

std::unique_ptr<HttpEndpoint> make_http_endpoint(Server& server, const HttpOptions& options) {
  auto entry =
      reinterpret_cast<HttpModuleEntry>(load_module_entry("libjarvis_http.so", kHttpModuleEntry));
  return std::unique_ptr<HttpEndpoint>(entry(server, options));
}

}  // namespace jarvis::mcp
