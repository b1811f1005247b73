# MCP end-to-end tests driven by Node tools from ../shared: the official
# TypeScript SDK clients (stdio + HTTP, both protocol eras), the MCP
# conformance suite (HTTP, --conformance-fixtures) and the Inspector CLI.
# Each skips (exit 77) only when node is missing; the pinned npm packages are
# installed on first use (npm ci), which needs the npm registry.
set(JARVIS_SHARED ${CMAKE_SOURCE_DIR}/../shared)
add_test(NAME mcp_e2e_client
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/support/needs_shared.sh ${CMAKE_SOURCE_DIR}/../shared
          --needs "the MCP SDK client's pinned npm packages (mcp-client/)"
          ${CMAKE_SOURCE_DIR}/tests/e2e/run_client_e2e.sh $<TARGET_FILE:jarvis> ${JARVIS_SHARED})
add_test(NAME mcp_conformance
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/support/needs_shared.sh ${CMAKE_SOURCE_DIR}/../shared
          --needs "the MCP conformance suite's pinned npm packages (mcp-conformance/)"
          ${CMAKE_SOURCE_DIR}/tests/e2e/run_conformance.sh $<TARGET_FILE:jarvis> ${JARVIS_SHARED}
          ${CMAKE_SOURCE_DIR})
add_test(NAME mcp_inspector
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/support/needs_shared.sh ${CMAKE_SOURCE_DIR}/../shared
          --needs "the MCP Inspector's pinned npm packages (mcp-conformance/)"
          ${CMAKE_SOURCE_DIR}/tests/e2e/run_inspector.sh $<TARGET_FILE:jarvis> ${JARVIS_SHARED})
set_tests_properties(mcp_e2e_client mcp_conformance mcp_inspector PROPERTIES
  SKIP_RETURN_CODE 77 TIMEOUT 600 RESOURCE_LOCK mcp_npm)
