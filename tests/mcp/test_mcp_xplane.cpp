// An XPlane trace over MCP: category_filter (the tool that writes a trace's
// perf report) writes TraceLens's JAX report sheets for an .xplane.pb into
// jax_perf_report_csvs/, the same files `jarvis report` writes, matching
// TraceLens's reference CSVs for the legacy conv sample.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>

#include "golden.h"
#include "mcp_harness.h"
#include "report/table.h"
#include "test_analysis_support.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using jarvis::mcp::json;
using jarvis::mcp::testing::Harness;

namespace {

namespace fs = std::filesystem;

const std::string kJaxDir = jarvis::golden::shared_dir() + "/jax";
const std::string kLegacy = kJaxDir + "/jax_conv_minimal_legacy/trace.xplane.pb";
const std::string kRefCsvs = kJaxDir + "/jax_conv_minimal_perf_report_csvs";

}  // namespace

TEST_CASE("category_filter on an .xplane.pb writes the JAX report sheets of `jarvis report`") {
  if (!fs::exists(kLegacy)) return;
  jarvis::testing::TempDir scratch;
  jarvis::mcp::ServerOptions options;
  options.roots = {jarvis::golden::shared_dir(), scratch.path};
  Harness h(options);
  h.initialize();
  const std::string out = scratch.path + "/prepared";
  json loaded = h.tool_result(1, "load_trace", {{"path", kLegacy}});
  json prepared = h.tool_result(
      2, "category_filter", {{"trace", loaded["trace"]}, {"output_dir", out}, {"arch", "MI300X"}});
  std::set<std::string> files;
  for (const auto& f : prepared["files"]) files.insert(f.get<std::string>());

  // The CLI's report of the same trace.
  const std::string cli = scratch.path + "/cli";
  const std::string cmd = std::string(JARVIS_BINARY) + " report '" + kLegacy + "' --out '" + cli +
                          "' --no-xlsx >/dev/null 2>&1";
  REQUIRE(std::system(cmd.c_str()) == 0);

  size_t compared = 0;
  for (const auto& entry : fs::directory_iterator(cli + "/perf_report_csvs")) {
    if (entry.path().extension() != ".csv") continue;
    const std::string name = entry.path().filename().string();
    CAPTURE(name);
    const std::string written = out + "/jax_perf_report_csvs/" + name;
    CHECK(files.count(written) == 1);
    REQUIRE(fs::exists(written));
    CHECK(jarvis::testing::read_text(written) == jarvis::testing::read_text(entry.path().string()));
    ++compared;
  }
  CHECK(compared >= 9);

  // TraceLens's reference CSVs, cell for cell.
  size_t references = 0;
  for (const auto& entry : fs::directory_iterator(kRefCsvs)) {
    const std::string name = entry.path().filename().string();
    CAPTURE(name);
    jarvis::golden::Options exact;
    exact.rel_tol = 1e-9;
    auto result = jarvis::golden::compare_tables(
        jarvis::read_csv_file(entry.path().string()),
        jarvis::read_csv_file(out + "/jax_perf_report_csvs/" + name), exact);
    MESSAGE(name << ": " << result.summary());
    CHECK(result.ok());
    ++references;
  }
  CHECK(references == 9);
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
