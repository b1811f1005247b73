// Report comparison (TraceLens compare_perf_reports_pytorch): golden tests
// against the H100-vs-MI300 reference comparison, and unit tests of the
// merge / diff / split / sort rules on small constructed reports.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "compare/compare.h"
#include "compare/compare_frame.h"
#include "golden.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace fs = std::filesystem;
using jarvis::Cell;
using jarvis::CompareOptions;
using jarvis::CompareResult;
using jarvis::NamedReport;
using jarvis::Table;

namespace {

std::string conformance(const std::string& sub) {
  return jarvis::golden::shared_dir() + "/conformance/" + sub;
}

// The reference comparison, as COMMANDS.txt says it was run:
// h100 baseline, mi300 variant, sheet groups ops_summary, ops_all, roofline.
CompareResult reference_inputs_compared() {
  std::vector<NamedReport> reports = {
      jarvis::load_report_dir(conformance("h100_qwen1.5-0.5b/perf_report_csvs"), "h100"),
      jarvis::load_report_dir(conformance("mi300_qwen1.5-0.5b/perf_report_csvs"), "mi300")};
  CompareOptions options;
  options.sheet_groups = {"ops_summary", "ops_all", "roofline"};
  return jarvis::compare_reports(reports, options);
}

// Every reference CSV must be produced, cell for cell and row for row.
void check_against_reference(const CompareResult& result) {
  std::string ref_dir = conformance("compare_qwen_h100_vs_mi300");
  size_t checked = 0;
  for (const auto& entry : fs::directory_iterator(ref_dir)) {
    if (entry.path().extension() != ".csv") continue;
    std::string name = entry.path().stem().string();
    CAPTURE(name);
    const Table* actual = result.table(name);
    REQUIRE(actual != nullptr);
    Table expected = jarvis::read_csv_file(entry.path().string());
    auto r = jarvis::golden::compare_tables(expected, jarvis::parse_csv(actual->to_csv(), name));
    INFO(r.summary());
    CHECK(r.ok());
    ++checked;
  }
  CHECK(checked == 19);
}

Table table(const std::string& name, const std::string& csv) {
  Table t = jarvis::parse_csv(csv, name);
  jarvis::frame::infer_column_types(t);
  return t;
}

std::vector<std::string> column(const Table& t, const std::string& col) {
  std::vector<std::string> out;
  int c = t.col(col);
  REQUIRE(c >= 0);
  for (size_t r = 0; r < t.rows.size(); ++r)
    out.push_back(jarvis::golden::cell_text(t, r, static_cast<size_t>(c)));
  return out;
}

}  // namespace

TEST_CASE("compare: report CSV dirs reproduce the H100 vs MI300 reference comparison") {
  CompareResult result = reference_inputs_compared();
  check_against_reference(result);
  // Sheets of the reference run beyond the 19 files: none (no SDPA_bwd/CONV).
  CHECK(result.tables.size() == 19);
  CHECK(result.tables[0].name == "ops_summary");
  CHECK(result.tables[1].name == "ops_unique_args_intersect_mi300");
  CHECK(result.tables.back().name == "bin_eltwise_only_variant_mi300");
}

TEST_CASE("compare: an empty split sheet is written as a lone newline") {
  CompareResult result = reference_inputs_compared();
  const Table* t = result.table("GEMM_only_baseline_mi300");
  REQUIRE(t);
  CHECK(t->to_csv() == "\n");
}

TEST_CASE("compare: gpu_timeline diff and pct, pct missing for a zero baseline") {
  NamedReport a{"ref",
                {table("gpu_timeline",
                       "type,time ms,percent\ncomputation_time,10.0,80.0\n"
                       "exposed_comm_time,0.0,0.0\nidle_time,2.5,20.0\n")}};
  NamedReport b{"tgt",
                {table("gpu_timeline",
                       "type,time ms,percent\ncomputation_time,12.0,75.0\n"
                       "exposed_comm_time,1.0,6.25\nidle_time,3.0,18.75\n")}};
  CompareOptions options;
  options.sheet_groups = {"gpu_timeline"};
  CompareResult r = jarvis::compare_reports({a, b}, options);
  REQUIRE(r.tables.size() == 1);
  const Table& t = r.tables[0];
  CHECK(t.name == "gpu_timeline");
  CHECK(t.columns == std::vector<std::string>{"type", "time ms__tgt_diff", "time ms__tgt_pct",
                                              "ref::time ms", "ref::percent", "tgt::time ms",
                                              "tgt::percent"});
  CHECK(column(t, "type") ==
        std::vector<std::string>{"computation_time", "exposed_comm_time", "idle_time"});
  CHECK(column(t, "time ms__tgt_diff") == std::vector<std::string>{"2.0", "1.0", "0.5"});
  CHECK(column(t, "time ms__tgt_pct") == std::vector<std::string>{"20.0", "", "20.0"});
}

TEST_CASE("compare: gpu_timeline keeps first-appearance key order, variant-only keys last") {
  NamedReport a{"ref", {table("gpu_timeline", "type,time ms\nz_busy,1.0\na_idle,2.0\n")}};
  NamedReport b{"tgt",
                {table("gpu_timeline", "type,time ms\nm_new,4.0\na_idle,1.0\nz_busy,3.0\n")}};
  CompareOptions options;
  options.sheet_groups = {"gpu_timeline"};
  auto t = jarvis::compare_reports({a, b}, options).tables.at(0);
  CHECK(column(t, "type") == std::vector<std::string>{"z_busy", "a_idle", "m_new"});
  CHECK(column(t, "ref::time ms") == std::vector<std::string>{"1.0", "2.0", ""});
  options.merge_order = jarvis::frame::MergeOrder::Lexicographic;
  t = jarvis::compare_reports({a, b}, options).tables.at(0);
  CHECK(column(t, "type") == std::vector<std::string>{"a_idle", "m_new", "z_busy"});
}

TEST_CASE("compare: ops_summary int column gaining missing values is written as float") {
  NamedReport a{"h",
                {table("ops_summary",
                       "name,total_direct_kernel_time_sum,total_direct_kernel_time_ms,Count,"
                       "Cumulative Percentage (%)\naten::mm,3000.0,3.0,4,60.0\n"
                       "aten::add,2000.0,2.0,10,100.0\n")}};
  NamedReport b{"m",
                {table("ops_summary",
                       "name,total_direct_kernel_time_sum,total_direct_kernel_time_ms,Count,"
                       "Cumulative Percentage (%)\naten::add,1000.0,1.0,10,25.0\n"
                       "aten::fill_,500.0,0.5,3,37.5\naten::mm,4000.0,4.0,4,100.0\n")}};
  CompareOptions options;
  options.sheet_groups = {"ops_summary"};
  auto t = jarvis::compare_reports({a, b}, options).tables.at(0);
  CHECK(t.columns == std::vector<std::string>{"name", "total_direct_kernel_time_ms__m_diff",
                                              "total_direct_kernel_time_ms__m_pct", "Count__m_diff",
                                              "Count__m_pct", "h::total_direct_kernel_time_ms",
                                              "h::Count", "h::Cumulative Percentage (%)",
                                              "m::total_direct_kernel_time_ms", "m::Count"});
  CHECK(column(t, "name") == std::vector<std::string>{"aten::mm", "aten::add", "aten::fill_"});
  CHECK(column(t, "h::Count") == std::vector<std::string>{"4.0", "10.0", ""});
  CHECK(column(t, "m::Count") == std::vector<std::string>{"4", "10", "3"});
  CHECK(column(t, "total_direct_kernel_time_ms__m_pct") ==
        std::vector<std::string>{"33.33333333333333", "-50.0", ""});
  CHECK(column(t, "Count__m_diff") == std::vector<std::string>{"0.0", "0.0", ""});
}

TEST_CASE("compare: per-op split into intersect / only_baseline / only_variant") {
  const std::string header =
      "name,Input type,Input Dims,Input Strides,Concrete Inputs,operation_count,"
      "total_direct_kernel_time_sum,total_direct_kernel_time_mean,note\n";
  NamedReport a{"h",
                {table("ops_unique_args", header + "mm,bf16,\"(1, 2)\",\"(2, 1)\",(),2,10.0,5.0,\n"
                                                   "add,bf16,(4),(1),(),1,3.0,3.0,\n"
                                                   "mul,bf16,(4),(1),(),1,7.0,7.0,\n")}};
  NamedReport b{"m",
                {table("ops_unique_args", header + "mm,bf16,\"(1, 2)\",\"(2, 1)\",(),2,12.0,6.0,x\n"
                                                   "mul,bf16,(4),(1),(),1,3.5,3.5,\n"
                                                   "fill_,bf16,(4),(1),(),3,1.0,0.5,\n")}};
  CompareOptions options;
  options.sheet_groups = {"ops_all"};
  auto r = jarvis::compare_reports({a, b}, options);
  REQUIRE(r.tables.size() == 3);
  const Table& both = r.tables[0];
  CHECK(both.name == "ops_unique_args_intersect_m");
  CHECK(column(both, "name") == std::vector<std::string>{"mm", "mul"});
  CHECK(column(both, "total_direct_kernel_time_sum__m_pct") ==
        std::vector<std::string>{"20.0", "-50.0"});
  CHECK(both.col("h::note") < 0);  // all missing in this sheet: dropped
  CHECK(both.col("m::note") >= 0);
  const Table& base_only = r.tables[1];
  CHECK(base_only.name == "ops_unique_args_only_baseline_m");
  CHECK(column(base_only, "name") == std::vector<std::string>{"add"});
  CHECK(base_only.col("m::operation_count") < 0);
  CHECK(base_only.col("total_direct_kernel_time_sum__m_diff") < 0);  // variant columns go
  const Table& var_only = r.tables[2];
  CHECK(var_only.name == "ops_unique_args_only_variant_m");
  CHECK(column(var_only, "name") == std::vector<std::string>{"fill_"});
  CHECK(var_only.col("h::total_direct_kernel_time_sum") < 0);
}

TEST_CASE("compare: duplicate keys give the product of their rows") {
  NamedReport a{"h",
                {table("kernel_summary",
                       "Parent op category,Kernel name,Kernel duration (µs)_sum,"
                       "Kernel duration (µs)_count,Kernel duration (µs)_mean\n"
                       "GEMM,k1,10.0,1,10.0\nother,k1,4.0,2,2.0\n")}};
  NamedReport b{"m",
                {table("kernel_summary",
                       "Parent op category,Kernel name,Kernel duration (µs)_sum,"
                       "Kernel duration (µs)_count,Kernel duration (µs)_mean\n"
                       "GEMM,k1,8.0,1,8.0\nGEMM,k1,1.0,1,1.0\n")}};
  CompareOptions options;
  options.sheet_groups = {"kernel_summary"};
  auto t = jarvis::compare_reports({a, b}, options).tables.at(0);
  CHECK(t.rows.size() == 4);
  CHECK(t.col("h::Parent op category") < 0);  // deleted before merging
  CHECK(column(t, "Kernel duration (µs)_sum__m_diff") ==
        std::vector<std::string>{"-2.0", "-9.0", "4.0", "-3.0"});
}

TEST_CASE("compare: bad input is refused with a clear error") {
  NamedReport a{"x", {table("gpu_timeline", "type,time ms\nbusy,1.0\n")}};
  CompareOptions options;
  options.sheet_groups = {"gpu_timeline"};
  CHECK_THROWS_WITH_AS(jarvis::compare_reports({a}, options),
                       "need at least two reports to compare", std::runtime_error);
  CHECK_THROWS_WITH_AS(jarvis::compare_reports({a, a}, options),
                       "report tags must be unique; 'x' is used twice", std::runtime_error);
  NamedReport b{"y", {}};
  CHECK_THROWS_WITH_AS(jarvis::compare_reports({a, b}, options),
                       "report 'y' has no sheet 'gpu_timeline'", std::runtime_error);
  options.sheet_groups = {"ops_summary"};
  CHECK_THROWS_WITH_AS(jarvis::compare_reports({a, b}, options),
                       "ops_summary sheet not found in report 'x'", std::runtime_error);
  options.sheet_groups = {"bogus"};
  CHECK_THROWS_AS(jarvis::compare_reports({a, b}, options), std::runtime_error);
  CHECK_THROWS_AS(jarvis::load_report_dir("/nonexistent/dir", "t"), std::runtime_error);
}

TEST_CASE("compare frame: descending sort puts missing last and matches NumPy on ties") {
  using jarvis::frame::argsort_descending;
  double nan = std::nan("");
  CHECK(argsort_descending({1.0, nan, 3.0, 2.0}) == std::vector<size_t>{2, 3, 0, 1});
  // Small arrays use insertion sort: ties keep their original order.
  CHECK(argsort_descending({5.0, 1.0, 5.0, 5.0}) == std::vector<size_t>{0, 2, 3, 1});
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
