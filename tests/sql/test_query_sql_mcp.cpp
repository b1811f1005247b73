// query_sql end to end through the MCP server: rows, the schema, the cut and
// a refused query as an isError result.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "mcp_harness.h"
#include "test_analysis_support.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

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

  TEST_CASE("query_sql over a sweep: the trace tables of every run, read under the roots only") {
    jarvis::testing::TempDir tmp;
    namespace fs = std::filesystem;
    const std::string t = tmp.path;
    fs::create_directories(t + "/in");
    fs::create_directories(t + "/outside");
    fs::copy(golden::shared_dir() + "/sweeps/h100_gpt2_ddp", t + "/outside/sweep",
             fs::copy_options::recursive);
    // OUT (inside the roots) records the runs' paths (outside them).
    std::string cmd = std::string(JARVIS_BINARY) + " sweep '" + t + "/outside/sweep' --out '" + t +
                      "/in/out' --cache '" + t + "/in/cache' --quiet > /dev/null";
    REQUIRE(std::system(cmd.c_str()) == 0);
    jarvis::mcp::ServerOptions inside;
    inside.roots = {t + "/in"};
    Harness h(inside);
    h.initialize();
    json s =
        h.tool_result(1, "load_sweep", {{"path", t + "/in/out"}, {"cache_dir", t + "/in/cache"}});
    std::string handle = s["sweep"];
    json r =
        h.tool_result(2, "query_sql", {{"sweep", handle}, {"sql", "SELECT count(*) FROM runs"}});
    CHECK(r["rows"][0][0] == 6);
    CHECK(r["traces_loaded"] == 0);
    // The trace tables would read the runs' files: outside the roots, refused.
    json reply =
        h.call_tool(3, "query_sql", {{"sweep", handle}, {"sql", "SELECT count(*) FROM kernels"}});
    CHECK(reply["result"]["isError"] == true);
    std::string text = reply["result"]["content"][0]["text"];
    CHECK(text.find("run 0") != std::string::npos);
    reply = h.call_tool(4, "query_sql", {{"sweep", handle}, {"trace", "x"}, {"sql", "SELECT 1"}});
    CHECK(reply["result"]["isError"] == true);

    // With the traces inside the roots the same query answers, one run read
    // per configuration asked for.
    jarvis::mcp::ServerOptions all;
    all.roots = {t};
    Harness h2(all);
    h2.initialize();
    s = h2.tool_result(1, "load_sweep", {{"path", t + "/outside/sweep"}, {"cache_dir", "none"}});
    handle = s["sweep"].get<std::string>();
    r = h2.tool_result(2, "query_sql",
                       {{"sweep", handle},
                        {"sql",
                         "SELECT threads, channel, count(*) FROM kernels WHERE threads = 512 AND "
                         "channel = 42 GROUP BY 1, 2"}});
    REQUIRE(r["rows"].size() == 1);
    CHECK(r["rows"][0][0] == 512);
    CHECK(r["traces_loaded"] == 1);
    CHECK(r["rows"][0][2].get<int64_t>() > 0);
    r = h2.tool_result(3, "query_sql", {{"sweep", handle}, {"schema", true}});
    bool kernels = false, skew = false;
    for (const auto& tb : r["tables"]) {
      kernels |= tb["name"] == "kernels" && tb["columns"][1]["name"] == "threads";
      skew |= tb["name"] == "collective_skew";
    }
    CHECK(kernels);
    CHECK(skew);
  }

  TEST_CASE("query_sql traces=[...]: several rank traces as one configuration") {
    jarvis::testing::TempDir tmp;
    std::string ranks = tmp.path + "/ranks";
    std::string cmd = "python3 '" + std::string(JARVIS_SOURCE_DIR) +
                      "/tools/make_multirank_traces.py' --src '" + golden::shared_dir() +
                      "/nccl/hta_allreduce_2ranks_rank0/trace.json.gz' --out '" + ranks +
                      "' --ranks 2 > /dev/null";
    REQUIRE(std::system(cmd.c_str()) == 0);
    json truth = json::parse(std::ifstream(ranks + "/truth.json"));
    jarvis::mcp::ServerOptions inside;
    inside.roots = {tmp.path};
    Harness h(inside);
    h.initialize();
    json loaded = h.tool_result(1, "load_trace", {{"path", ranks + "/rank1.json.gz"}});
    json r = h.tool_result(
        2, "query_sql",
        {{"traces", {ranks + "/rank0.json.gz", loaded["trace"]}},
         {"sql",
          "SELECT rank, count(*), max(start_skew_us) FROM collective_skew GROUP BY rank ORDER BY "
          "rank"}});
    REQUIRE(r["rows"].size() == 2);
    double spread = 0;
    for (const auto& t : truth["instances"]) {
      auto d = t["delays_us"].get<std::vector<double>>();
      spread = std::max(
          spread, *std::max_element(d.begin(), d.end()) - *std::min_element(d.begin(), d.end()));
    }
    for (int k = 0; k < 2; ++k) {
      CHECK(r["rows"][k][0] == k);
      CHECK(r["rows"][k][1] == truth["instances"].size());
      CHECK(r["rows"][k][2].get<double>() == doctest::Approx(spread).epsilon(1e-9));
    }
    // A trace outside the roots is refused.
    json reply = h.call_tool(
        3, "query_sql",
        {{"traces", {ranks + "/rank0.json.gz", "/etc/passwd.json"}}, {"sql", "SELECT 1"}});
    CHECK(reply["result"]["isError"] == true);
  }

}  // TEST_SUITE

}  // namespace JARVIS_TEST_FILE
}  // namespace
