// Golden tests of the coll_analysis sheet: TraceLens's NcclAnalyser summary
// on a real 2-rank allreduce trace, and no sheet wherever TraceLens wrote none.
#include <doctest/doctest.h>

#include <filesystem>

#include "golden.h"
#include "report/coll_analysis.h"
#include "report/report.h"
#include "report_fixture.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace {

std::string nccl_dir() {
  return jarvis::golden::shared_dir() + "/nccl/hta_allreduce_2ranks_rank0";
}

}  // namespace

TEST_CASE("golden coll_analysis: hta allreduce rank 0 equals TraceLens") {
  const auto& fx = jarvis::testing::report_fixture(nccl_dir());
  const jarvis::Table* actual = fx.report.find("coll_analysis");
  REQUIRE(actual != nullptr);
  auto expected = jarvis::read_csv_file(nccl_dir() + "/perf_report_csvs/coll_analysis.csv");
  auto result = jarvis::golden::compare_tables(expected, *actual);
  MESSAGE(result.summary());
  CHECK(result.ok());
  CHECK(actual->rows.size() == 7);
  // The sheet comes last, after the short-kernel sheets, as in TraceLens.
  CHECK(fx.report.tables.back().name == "coll_analysis");
}

TEST_CASE("golden coll_analysis: no sheet where TraceLens writes none") {
  for (const auto& dir : jarvis::golden::conformance_dirs()) {
    const bool expected = std::filesystem::exists(dir + "/perf_report_csvs/coll_analysis.csv");
    const auto& fx = jarvis::testing::report_fixture(dir);
    INFO(dir);
    CHECK((fx.report.find("coll_analysis") != nullptr) == expected);
  }
}

TEST_CASE("coll_analysis: switched off by ReportOptions") {
  const auto& fx = jarvis::testing::report_fixture(nccl_dir());
  jarvis::ReportOptions options;
  options.collective_analysis = false;
  options.kernel_summary = false;
  options.short_kernel_study = false;
  auto report = jarvis::build_report(fx.trace, fx.tree, options);
  CHECK(report.find("coll_analysis") == nullptr);
}

TEST_CASE("coll_analysis: the collective kernels among the GPU events are those of the trace") {
  const auto& fx = jarvis::testing::report_fixture(nccl_dir());
  auto all = jarvis::collective_kernels(fx.trace);
  auto among_gpu = jarvis::collective_kernels(fx.trace, fx.tree.gpu_event_uids());
  REQUIRE(all.size() == 21);
  REQUIRE(among_gpu.size() == all.size());
  for (size_t k = 0; k < all.size(); ++k) {
    CHECK(among_gpu[k].uid == all[k].uid);
    CHECK(among_gpu[k].process_group_name.repr() == all[k].process_group_name.repr());
  }
}

TEST_CASE("coll_analysis: kernels missing a grouping field are left out") {
  const auto& fx = jarvis::testing::report_fixture(nccl_dir());
  auto kernels = jarvis::collective_kernels(fx.trace);
  REQUIRE(kernels.size() == 21);  // 15 allreduce + 6 broadcast kernels in the trace
  kernels[0].dtype = jarvis::PyValue::none();
  auto table = jarvis::coll_analysis_table(kernels);
  int64_t count = 0;
  for (size_t r = 0; r < table.rows.size(); ++r)
    count += std::get<int64_t>(table.at(r, "operation_count").v);
  CHECK(count == 20);
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
