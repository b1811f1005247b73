// query_sql end to end through the MCP server: rows, the schema, the cut and
// a refused query as an isError result.
#include <doctest/doctest.h>

#include "mcp_harness.h"

using namespace jarvis;
using namespace jarvis::mcp::testing;
using jarvis::mcp::json;

TEST_SUITE("sql") {
  TEST_CASE("query_sql: rows, schema, limit and refusals through the MCP server") {
    Harness h;
    h.initialize();
    std::string trace = golden::shared_dir() + "/nccl/hta_allreduce_2ranks_rank0/trace.json.gz";
    json r = h.tool_result(
        1, "query_sql", {{"trace", trace}, {"sql", "SELECT step, name FROM steps ORDER BY step"}});
    REQUIRE(r["rows"].size() == 3);
    CHECK(r["columns"] == json({"step", "name"}));
    CHECK(r["rows"][0] == json({4, "ProfilerStep#4"}));
    CHECK(r["complete"] == true);

    r = h.tool_result(2, "query_sql",
                      {{"trace", trace}, {"sql", "SELECT uid FROM events"}, {"limit", 5}});
    CHECK(r["rows"].size() == 5);
    CHECK(r["complete"] == false);
    CHECK(r["cut_by"] == "row limit 5");

    r = h.tool_result(3, "query_sql", {{"trace", trace}, {"schema", true}});
    bool events = false, sheet = false;
    for (const auto& t : r["tables"]) {
      events |= t["name"] == "events";
      sheet |= t["name"] == "ops_summary";
    }
    CHECK(events);
    CHECK(sheet);

    json reply =
        h.call_tool(4, "query_sql", {{"trace", trace}, {"sql", "ATTACH '/etc/passwd' AS x"}});
    CHECK(reply["result"]["isError"] == true);
    CHECK(reply["result"]["content"][0]["text"].get<std::string>().find("not allowed") !=
          std::string::npos);
    // A trace outside the roots is refused before any SQL runs.
    reply = h.call_tool(5, "query_sql", {{"trace", "/etc/passwd"}, {"sql", "SELECT 1"}});
    CHECK(reply["result"]["isError"] == true);
  }

}  // TEST_SUITE
