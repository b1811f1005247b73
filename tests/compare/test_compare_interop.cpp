// `compare` across input kinds: traces, TraceLens / jarvis report
// directories and report workbooks, PyTorch-style or kernel-only (rocprof),
// in any mix. Checked against TraceLens's own comparisons of the NCCL sweep
// reports and against the comparison of the traces themselves.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "compare/compare_inputs.h"
#include "compare/compare_traces.h"
#include "golden.h"
#include "mcp_harness.h"
#include "report/table.h"
#include "report/xlsx.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace fs = std::filesystem;
using jarvis::CompareInputKind;
using jarvis::CompareTracesOptions;
using jarvis::Table;
using jarvis::TraceComparison;

namespace {

std::string shared(const std::string& sub) {
  return jarvis::golden::shared_dir() + "/" + sub;
}
std::string sweep_case(const std::string& sub) {
  return shared("sweeps/tracelens_mi300_nccl_sweep/" + sub);
}
std::string conformance(const std::string& sub) {
  return shared("conformance/" + sub);
}

struct TempDir {
  fs::path path;
  TempDir()
      : path(fs::temp_directory_path() / ("jarvis_compare_interop_" + std::to_string(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// Writes the report at `dir` (a directory of <sheet>.csv files) as a
// workbook, as TraceLens --output_xlsx_path would hold it.
std::string as_xlsx(const std::string& dir, const fs::path& out) {
  jarvis::NamedReport report = jarvis::load_report_dir(dir, "x");
  jarvis::write_xlsx(report.sheets, out.string());
  return out.string();
}

CompareTracesOptions thread_sweep_options(std::vector<std::string> sheets) {
  // How TraceLens's tests ran it (tests/test_compare_perf_reports.py):
  // names 256thread 512thread; the reference rows are in pandas >= 2.2
  // merge order (gpu_timeline types sorted).
  CompareTracesOptions o;
  o.reference_tag = "256thread";
  o.target_tag = "512thread";
  o.compare.sheet_groups = std::move(sheets);
  o.compare.merge_order = jarvis::frame::MergeOrder::Lexicographic;
  return o;
}

// The table as it is written and read back (the text pandas would write).
Table written(const Table& t) {
  return jarvis::parse_csv(t.to_csv(), t.name);
}

// Every CSV in `ref_dir` equals the result sheet of that name, cell for cell
// and row for row. Returns how many sheets were checked.
size_t check_reference_dir(const TraceComparison& c, const std::string& ref_dir) {
  size_t checked = 0;
  for (const auto& entry : fs::directory_iterator(ref_dir)) {
    if (entry.path().extension() != ".csv") continue;
    std::string name = entry.path().stem().string();
    CAPTURE(name);
    const Table* actual = c.result.table(name);
    REQUIRE(actual != nullptr);
    auto r = jarvis::golden::compare_tables(jarvis::read_csv_file(entry.path().string()),
                                            written(*actual));
    INFO(r.summary());
    CHECK(r.ok());
    ++checked;
  }
  return checked;
}

std::vector<std::string> sheet_names(const TraceComparison& c) {
  std::vector<std::string> names;
  for (const auto& t : c.result.tables) names.push_back(t.name);
  return names;
}

// The two comparisons give the same sheets with the same cells, row for
// row. Workbooks store whole-number floats as integers (pandas read_excel
// reads them back as int too), so `exact_types` is off for them.
void check_same_comparison(const TraceComparison& expected, const TraceComparison& actual,
                           bool exact_types = true) {
  REQUIRE(sheet_names(actual) == sheet_names(expected));
  jarvis::golden::Options o;
  o.check_int_float = exact_types;
  o.rel_tol = 1e-12;  // the workbook keeps 15-16 digits
  for (const auto& t : expected.result.tables) {
    CAPTURE(t.name);
    auto r = jarvis::golden::compare_tables(written(t), written(*actual.result.table(t.name)), o);
    INFO(r.summary());
    CHECK(r.ok());
  }
}

bool has_note(const TraceComparison& c, const std::string& text) {
  for (const auto& n : c.notes)
    if (n.find(text) != std::string::npos) return true;
  return false;
}

std::string error_of(const std::string& ref, const std::string& target,
                     const CompareTracesOptions& options = {}) {
  try {
    jarvis::compare_traces(ref, target, options);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("compare interop: input kinds are told apart by the engine") {
  TempDir tmp;
  std::string kernel_only = sweep_case("compare_test/256thread");
  auto in = jarvis::detect_compare_input(kernel_only);
  CHECK(in.kind == CompareInputKind::ReportDir);
  CHECK(in.path == kernel_only + "/perf_56ch_rank7_perf_report_csvs");
  in = jarvis::detect_compare_input(conformance("h100_bert-small"));
  CHECK(in.kind == CompareInputKind::ReportDir);  // a report --out DIR: its perf_report_csvs
  CHECK(fs::path(in.path).filename() == "perf_report_csvs");
  in = jarvis::detect_compare_input(conformance("h100_bert-small/perf_report_csvs"));
  CHECK(in.kind == CompareInputKind::ReportDir);
  in = jarvis::detect_compare_input(conformance("h100_bert-small/trace.json.gz"));
  CHECK(in.kind == CompareInputKind::Trace);
  in = jarvis::detect_compare_input(shared("rocprof/mi350_aorta_train/908_results.json.gz"));
  CHECK(in.kind == CompareInputKind::Trace);
  std::string xlsx = as_xlsx(conformance("h100_bert-small/perf_report_csvs"), tmp.path / "r.xlsx");
  CHECK(jarvis::detect_compare_input(xlsx).kind == CompareInputKind::ReportXlsx);

  // Two report directories inside one directory are ambiguous.
  fs::create_directories(tmp.path / "two/a_perf_report_csvs");
  fs::create_directories(tmp.path / "two/b_perf_report_csvs");
  std::ofstream(tmp.path / "two/a_perf_report_csvs/gpu_timeline.csv") << "type,time ms\n";
  std::ofstream(tmp.path / "two/b_perf_report_csvs/gpu_timeline.csv") << "type,time ms\n";
  CHECK_THROWS_WITH(jarvis::detect_compare_input((tmp.path / "two").string()),
                    doctest::Contains("holds 2 report directories"));
}

TEST_CASE("compare interop: kernel-only TraceLens report dirs reproduce TraceLens's comparison") {
  std::string ref = sweep_case("compare_test/reference/compare_56ch_rank7_across_threads_csvs");
  std::string a = sweep_case("compare_test/256thread");
  std::string b = sweep_case("compare_test/512thread");
  TraceComparison c =
      jarvis::compare_traces(a, b, thread_sweep_options({"gpu_timeline", "kernel_summary"}));
  CHECK(check_reference_dir(c, ref) == 2);
  CHECK(sheet_names(c) == std::vector<std::string>{"gpu_timeline", "kernel_summary"});

  // Under "all" TraceLens stops at the missing ops_summary; jarvis compares
  // the sheets both reports have and says what it skipped.
  TraceComparison all = jarvis::compare_traces(a, b, thread_sweep_options({"all"}));
  CHECK(check_reference_dir(all, ref) == 2);
  CHECK(sheet_names(all) == sheet_names(c));
  CHECK(has_note(all, "sheet 'ops_summary' skipped"));

  // The same reports as workbooks.
  TempDir tmp;
  std::string xa = as_xlsx(a + "/perf_56ch_rank7_perf_report_csvs", tmp.path / "256.xlsx");
  std::string xb = as_xlsx(b + "/perf_56ch_rank7_perf_report_csvs", tmp.path / "512.xlsx");
  TraceComparison x = jarvis::compare_traces(xa, xb, thread_sweep_options({"all"}));
  CHECK(check_reference_dir(x, ref) == 2);
}

TEST_CASE("compare interop: PyTorch-style TraceLens report dirs reproduce TraceLens's comparison") {
  std::string ref = sweep_case("compare_test_ops/reference/compare_28ch_rank0_across_threads_csvs");
  std::string a = sweep_case("compare_test_ops/256thread");
  std::string b = sweep_case("compare_test_ops/512thread");
  TraceComparison c =
      jarvis::compare_traces(a, b, thread_sweep_options({"gpu_timeline", "ops_summary"}));
  CHECK(check_reference_dir(c, ref) == 2);

  // ops_summary has no TraceLens reference here: every row's diff is the
  // 512thread value minus the 256thread value read from the inputs.
  auto ms_by_name = [](const std::string& dir) {
    Table t = jarvis::read_csv_file(dir + "/perf_28ch_rank0_perf_report_csvs/ops_summary.csv");
    std::map<std::string, double> out;
    int name = t.col("name"), ms = t.col("total_direct_kernel_time_ms");
    for (const auto& row : t.rows) out[row[name].text()] = std::stod(row[ms].text());
    return out;
  };
  auto base = ms_by_name(a), variant = ms_by_name(b);
  const Table* ops = c.result.table("ops_summary");
  REQUIRE(ops != nullptr);
  size_t both = 0;
  int diff = ops->col("total_direct_kernel_time_ms__512thread_diff");
  REQUIRE(diff >= 0);
  for (const auto& row : ops->rows) {
    std::string name = row[0].text();
    CAPTURE(name);
    if (!base.count(name) || !variant.count(name)) continue;
    CHECK(row[diff].number() == doctest::Approx(variant[name] - base[name]));
    ++both;
  }
  CHECK(both > 10);
  CHECK(ops->rows.size() >= std::max(base.size(), variant.size()));

  // As workbooks, and mixed workbook / directory.
  TempDir tmp;
  std::string xa = as_xlsx(a + "/perf_28ch_rank0_perf_report_csvs", tmp.path / "256.xlsx");
  TraceComparison x =
      jarvis::compare_traces(xa, b, thread_sweep_options({"gpu_timeline", "ops_summary"}));
  CHECK(check_reference_dir(x, ref) == 2);
  check_same_comparison(c, x, /*exact_types=*/false);
}

TEST_CASE("compare interop: TraceLens report dirs and workbooks compare as their traces do") {
  TempDir tmp;
  for (std::string model : {"bert-small", "falconsai-nsfw", "qwen1.5-0.5b"}) {
    CAPTURE(model);
    std::string h100 = conformance("h100_" + model), mi300 = conformance("mi300_" + model);
    CompareTracesOptions o;
    o.reference_tag = "h100";
    o.target_tag = "mi300";
    TraceComparison traces =
        jarvis::compare_traces(h100 + "/trace.json.gz", mi300 + "/trace.json.gz", o);
    CHECK(traces.result.tables.size() >= 18);

    TraceComparison dirs =
        jarvis::compare_traces(h100 + "/perf_report_csvs", mi300 + "/perf_report_csvs", o);
    check_same_comparison(traces, dirs);

    std::string xh = as_xlsx(h100 + "/perf_report_csvs", tmp.path / (model + "_h100.xlsx"));
    std::string xm = as_xlsx(mi300 + "/perf_report_csvs", tmp.path / (model + "_mi300.xlsx"));
    TraceComparison books = jarvis::compare_traces(xh, xm, o);
    check_same_comparison(traces, books, /*exact_types=*/false);

    // Mixed: a trace against a report directory or a workbook, either way round.
    check_same_comparison(traces, jarvis::compare_traces(h100 + "/trace.json.gz", mi300, o));
    check_same_comparison(traces, jarvis::compare_traces(h100, mi300 + "/trace.json.gz", o));
    check_same_comparison(traces, jarvis::compare_traces(xh, mi300 + "/trace.json.gz", o), false);
    check_same_comparison(traces, jarvis::compare_traces(h100 + "/trace.json.gz", xm, o), false);
  }
}

TEST_CASE("compare interop: rocprofv3 results against TraceLens's report of them") {
  std::string dir = shared("rocprof/mi350_aorta_train");
  CompareTracesOptions o;
  o.reference_tag = "tracelens";
  o.target_tag = "jarvis";
  TraceComparison c =
      jarvis::compare_traces(dir + "/perf_report_csvs", dir + "/908_results.json.gz", o);
  REQUIRE(sheet_names(c) == std::vector<std::string>{"gpu_timeline", "kernel_summary"});
  // jarvis's rocprof report of the same file is TraceLens's: every diff is 0.
  for (const auto& sheet_col : std::vector<std::pair<std::string, std::string>>{
           {"gpu_timeline", "time ms__jarvis_diff"},
           {"kernel_summary", "Total Kernel Time (ms)__jarvis_diff"},
           {"kernel_summary", "Count__jarvis_diff"}}) {
    const std::string& sheet = sheet_col.first;  // CAPTURE cannot take a structured binding
    const std::string& col = sheet_col.second;
    CAPTURE(sheet);
    const Table& t = *c.result.table(sheet);
    int d = t.col(col);
    REQUIRE(d >= 0);
    CHECK(t.rows.size() > 3);
    for (const auto& row : t.rows) CHECK(row[d].number() == doctest::Approx(0.0).epsilon(1e-9));
  }
}

TEST_CASE("compare interop: a PyTorch trace against a kernel-only report") {
  CompareTracesOptions o;
  TraceComparison c = jarvis::compare_traces(conformance("mi300_qwen1.5-0.5b/trace.json.gz"),
                                             shared("rocprof/mi350_aorta_train"), o);
  // Both have gpu_timeline; kernel_summary is keyed differently (PyTorch:
  // "Kernel name", rocprof: "name") and ops/roofline sheets are PyTorch-only.
  CHECK(sheet_names(c) == std::vector<std::string>{"gpu_timeline"});
  CHECK(has_note(c, "sheet 'kernel_summary' skipped"));
  CHECK(has_note(c, "sheet 'ops_summary' skipped"));
  const Table& t = *c.result.table("gpu_timeline");
  CHECK(t.col("reference::time ms") >= 0);
  CHECK(t.col("target::time ms") >= 0);

  o.compare.sheet_groups = {"kernel_summary"};
  CHECK(error_of(conformance("mi300_qwen1.5-0.5b/trace.json.gz"),
                 shared("rocprof/mi350_aorta_train"), o)
            .find("has no column 'Kernel name'") != std::string::npos);
}

TEST_CASE("compare interop: bad inputs are refused with messages naming them") {
  TempDir tmp;
  std::string good = conformance("h100_bert-small/perf_report_csvs");
  CHECK(error_of("/nonexistent/x.xlsx", good) ==
        "REF: /nonexistent/x.xlsx: no such file or directory");
  CHECK(error_of(good + "/gpu_timeline.csv", good).find("REF: ") == 0);
  CHECK(error_of(good, good + "/gpu_timeline.csv").find("a single CSV sheet") != std::string::npos);
  fs::create_directories(tmp.path / "empty");
  CHECK(error_of(good, (tmp.path / "empty").string()).find("TARGET: ") == 0);

  std::string junk = (tmp.path / "junk.xlsx").string();
  std::ofstream(junk) << "not a zip";
  std::string msg = error_of(junk, good);
  CHECK(msg.find("REF: " + junk + ": not a readable xlsx workbook") == 0);

  // A workbook none of whose sheets the other side has.
  Table other = jarvis::parse_csv("a,b\n1,2\n", "something_else");
  std::string lone = (tmp.path / "lone.xlsx").string();
  jarvis::write_xlsx({other}, lone);
  msg = error_of(lone, good);
  CAPTURE(msg);
  CHECK(msg.find("have no sheet both sides share") != std::string::npos);
  CHECK(msg.find(lone) != std::string::npos);
  CHECK(msg.find("'reference' has something_else") != std::string::npos);
}

TEST_CASE("compare interop: the CLI and the MCP tool take every input kind") {
  TempDir tmp;
  std::string a = sweep_case("compare_test/256thread");
  std::string b = sweep_case("compare_test/512thread");
  fs::path out = tmp.path / "cli";
  std::string cmd = std::string(JARVIS_BINARY) + " compare '" + a + "' '" + b + "' --out '" +
                    out.string() + "' --names 256thread 512thread --merge-order lexicographic" +
                    " > /dev/null 2>&1";
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::string ref = sweep_case("compare_test/reference/compare_56ch_rank7_across_threads_csvs");
  for (std::string sheet : {"gpu_timeline.csv", "kernel_summary.csv"}) {
    CAPTURE(sheet);
    auto r = jarvis::golden::compare_csv_files(ref + "/" + sheet, (out / sheet).string());
    INFO(r.summary());
    CHECK(r.ok());
  }

  auto options = jarvis::mcp::testing::shared_root_options();
  options.roots.push_back(tmp.path.string());
  jarvis::mcp::testing::Harness h(options);
  h.initialize();
  std::string xa = as_xlsx(a + "/perf_56ch_rank7_perf_report_csvs", tmp.path / "256.xlsx");
  auto r = h.tool_result(1, "compare",
                         {{"reference_trace", xa},
                          {"target_trace", b},
                          {"reference_tag", "256thread"},
                          {"target_tag", "512thread"}});
  CHECK(r["reference"]["handle"].is_null());
  REQUIRE(r["sheets"].size() == 2);
  CHECK(r["sheets"][0]["name"] == "gpu_timeline");
  CHECK(r["sheets"][1]["name"] == "kernel_summary");
  CHECK(r["gpu_timeline"].size() == 5);

  auto reply = h.call_tool(
      2, "compare",
      {{"reference_trace", xa},
       {"target_trace", conformance("h100_bert-small/perf_report_csvs/gpu_timeline.csv")}});
  REQUIRE(reply.contains("result"));
  CHECK(reply["result"]["isError"] == true);
  std::string text = reply["result"]["content"][0]["text"];
  CHECK(text.find("target_trace: ") != std::string::npos);
  CHECK(text.find("a single CSV sheet") != std::string::npos);
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
