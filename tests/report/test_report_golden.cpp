// Golden tests: the core report sheets of every conformance trace against the
// TraceLens reference CSVs (perf_report_csvs/<sheet>.csv).
#include <doctest/doctest.h>

#include <filesystem>
#include <map>
#include <memory>

#include "golden.h"
#include "report/report.h"
#include "report_fixture.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace {

using jarvis::golden::Options;

// How each sheet is matched: row by row, in order. The single-key sorts of
// ops_summary, ops_summary_by_category and kernel_summary are NumPy's
// unstable introsort in TraceLens; jarvis runs the same algorithm, so tied
// rows must come out in the reference's order too.
Options sheet_options(const std::string&) {
  return Options{};
}

void check_sheet(const std::string& sheet) {
  for (const auto& dir : jarvis::golden::conformance_dirs()) {
    std::string ref = dir + "/perf_report_csvs/" + sheet + ".csv";
    if (!std::filesystem::exists(ref)) continue;
    const auto& fx = jarvis::testing::report_fixture(dir);
    const jarvis::Table* actual = fx.report.find(sheet);
    std::string trace = std::filesystem::path(dir).filename().string();
    INFO(trace << " / " << sheet);
    REQUIRE_MESSAGE(actual != nullptr, trace << ": sheet " << sheet << " not produced");
    auto result =
        jarvis::golden::compare_tables(jarvis::read_csv_file(ref), *actual, sheet_options(sheet));
    MESSAGE(trace << " " << sheet << ": " << std::string(result.ok() ? "MATCH " : "MISMATCH ")
                  << result.summary());
    CHECK(result.ok());
  }
}

}  // namespace

TEST_CASE("golden report: gpu_timeline") {
  check_sheet("gpu_timeline");
}
TEST_CASE("golden report: ops_summary_by_category") {
  check_sheet("ops_summary_by_category");
}
TEST_CASE("golden report: ops_summary") {
  check_sheet("ops_summary");
}
TEST_CASE("golden report: ops_unique_args") {
  check_sheet("ops_unique_args");
}
TEST_CASE("golden report: kernel_summary") {
  check_sheet("kernel_summary");
}
TEST_CASE("golden report: short_kernel_histogram") {
  check_sheet("short_kernel_histogram");
}
TEST_CASE("golden report: short_kernels_summary") {
  check_sheet("short_kernels_summary");
}

TEST_CASE("golden report: sheet order follows TraceLens") {
  for (const auto& dir : jarvis::golden::conformance_dirs()) {
    const auto& fx = jarvis::testing::report_fixture(dir);
    std::vector<std::string> core;
    for (const auto& t : fx.report.tables)
      for (const char* name :
           {"gpu_timeline", "ops_summary_by_category", "ops_summary", "ops_unique_args",
            "kernel_summary", "short_kernel_histogram", "short_kernels_summary"})
        if (t.name == name) core.push_back(t.name);
    CHECK(core == std::vector<std::string>{"gpu_timeline", "ops_summary_by_category", "ops_summary",
                                           "ops_unique_args", "kernel_summary",
                                           "short_kernel_histogram", "short_kernels_summary"});
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
