// A sweep analysed by one job opens again from its OUT directory and cache
// alone (sweep.h, kSweepManifest): the traces gone, nothing parsed, the same
// tables; over MCP's load_sweep as well.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "golden.h"
#include "mcp_harness.h"
#include "sweep/sweep.h"
#include "test_analysis_support.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace fs = std::filesystem;
namespace sw = jarvis::sweep;
using nlohmann::json;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_SUITE("sweep") {
  TEST_CASE("sweep manifest: OUT and the cache reopen the sweep without its traces") {
    jarvis::testing::TempDir tmp;
    const std::string t = tmp.path;
    fs::copy(jarvis::golden::shared_dir() + "/sweeps/h100_gpt2_ddp", t + "/sweep",
             fs::copy_options::recursive);
    std::string cmd = std::string(JARVIS_BINARY) + " sweep '" + t + "/sweep' --out '" + t +
                      "/out' --cache '" + t + "/cache' --quiet > /dev/null";
    REQUIRE(std::system(cmd.c_str()) == 0);
    REQUIRE(fs::exists(t + "/out/" + sw::kSweepManifest));
    fs::remove_all(t + "/sweep");  // the laptop has OUT and the cache, not the traces

    sw::LoadOptions o;
    o.cache_dir = t + "/cache";
    sw::Sweep s = sw::load_sweep(t + "/out", o);
    CHECK(s.runs.size() == 6);
    CHECK(s.cache_hits == 6);
    CHECK(s.runs_parsed == 0);
    CHECK(s.root == t + "/sweep");
    // Every table rebuilt from the cache is the job's CSV, byte for byte.
    for (const auto& table : sw::sweep_tables(s, 5)) {
      CAPTURE(table.name);
      CHECK(table.to_csv() == slurp(t + "/out/" + table.name + ".csv"));
    }

    auto options = jarvis::mcp::testing::shared_root_options();
    options.roots.push_back(t);
    jarvis::mcp::testing::Harness mcp(options);
    mcp.initialize();
    json r = mcp.tool_result(1, "load_sweep", {{"path", t + "/out"}});
    CHECK(r["run_count"] == 6);
    CHECK(r["cache_hits"] == 6);
    CHECK(r["fields"] == json::array({"threads", "channel", "rank"}));

    // A missing cache entry is an error naming the run, not a crash.
    fs::remove_all(t + "/cache");
    CHECK_THROWS_WITH_AS(sw::load_sweep(t + "/out", {}), doctest::Contains("cache entry"),
                         sw::SweepError);
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
