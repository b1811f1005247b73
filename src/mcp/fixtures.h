// Test-only fixtures the MCP conformance suite expects (tools, prompts and
// resources named test_* / test://...). Served only with --conformance-fixtures.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "mcp/server.h"

namespace jarvis::mcp {

std::vector<ToolSpec> fixture_tools();
std::vector<Prompt> fixture_prompts();
json fixture_resources();
json fixture_resource_templates();
// The `contents` array of a fixture resource, or nothing when unknown.
std::optional<json> read_fixture_resource(const std::string& uri);

}  // namespace jarvis::mcp
