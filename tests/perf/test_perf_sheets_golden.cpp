// Golden tests: unified_perf_summary and every perf-model sheet (GEMM,
// SDPA_fwd, CONV_fwd, UnaryElementwise, ...) of each conformance trace,
// built with the GPU arch named in its COMMANDS.txt, against the TraceLens
// reference CSVs. A trace whose COMMANDS.txt names no arch (TraceLens ran
// without --gpu_arch_json_path) is built without one too: its reference has
// the FLOPs/bytes columns but no roofline columns, and so must ours.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>

#include "golden.h"
#include "perf/categories.h"
#include "perf/gpu_arch.h"
#include "report/perf_tables.h"
#include "report_fixture.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace {

namespace fs = std::filesystem;

// The arch TraceLens was run with: `--gpu_arch_json_path arch/<NAME>.json`.
std::string arch_of(const std::string& dir) {
  std::ifstream in(dir + "/COMMANDS.txt");
  std::stringstream ss;
  ss << in.rdbuf();
  std::smatch m;
  std::string text = ss.str();
  if (std::regex_search(text, m, std::regex("--gpu_arch_json_path arch/([A-Za-z0-9_]+)\\.json")))
    return m[1];
  return "";
}

struct PerfReport {
  std::optional<jarvis::GpuArch> arch;  // empty: TraceLens ran without one
  jarvis::Report report;
};

const PerfReport& perf_report(const std::string& dir) {
  static std::map<std::string, std::unique_ptr<PerfReport>> cache;
  auto& slot = cache[dir];
  if (!slot) {
    const auto& fx = jarvis::testing::report_fixture(dir);
    slot = std::make_unique<PerfReport>();
    std::string arch = arch_of(dir);
    jarvis::ReportOptions opts;
    if (!arch.empty()) {
      slot->arch = jarvis::perf::load_gpu_arch(arch);
      opts.arch = &*slot->arch;
    }
    jarvis::add_perf_tables(slot->report, fx.trace, fx.tree, opts);
  }
  return *slot;
}

// Every perf sheet name TraceLens can write (family, or family_fwd / _bwd).
bool is_perf_sheet(const std::string& name) {
  if (name == "unified_perf_summary") return true;
  for (std::string_view f : jarvis::perf::sheet_families()) {
    std::string fam(f);
    if (name == fam || name == fam + "_fwd" || name == fam + "_bwd") return true;
  }
  return false;
}

}  // namespace

TEST_CASE("golden perf sheets: unified_perf_summary and per-family sheets") {
  for (const auto& dir : jarvis::golden::conformance_dirs()) {
    std::string trace = fs::path(dir).filename().string();
    const PerfReport& pr = perf_report(dir);
    std::vector<std::string> expected_sheets;
    for (const auto& entry : fs::directory_iterator(dir + "/perf_report_csvs")) {
      std::string sheet = entry.path().stem().string();
      if (is_perf_sheet(sheet)) expected_sheets.push_back(sheet);
    }
    std::sort(expected_sheets.begin(), expected_sheets.end());
    std::vector<std::string> produced;
    for (const auto& t : pr.report.tables) produced.push_back(t.name);
    std::vector<std::string> produced_sorted = produced;
    std::sort(produced_sorted.begin(), produced_sorted.end());
    INFO(trace);
    CHECK(produced_sorted == expected_sheets);
    for (const std::string& sheet : expected_sheets) {
      const jarvis::Table* actual = pr.report.find(sheet);
      INFO(trace << " / " << sheet);
      REQUIRE_MESSAGE(actual != nullptr, trace << ": sheet " << sheet << " not produced");
      auto result = jarvis::golden::compare_tables(
          jarvis::read_csv_file(dir + "/perf_report_csvs/" + sheet + ".csv"), *actual);
      MESSAGE(trace << " " << sheet << ": " << std::string(result.ok() ? "MATCH " : "MISMATCH ")
                    << result.summary());
      CHECK(result.ok());
    }
  }
}

TEST_CASE("build_report: perf sheets built beside the other sheets equal add_perf_tables") {
  // build_report computes the perf-model sheets on one thread while another
  // builds the launcher and kernel sheets; the result must be the one-thread
  // composition's, cell for cell, with the same model failures.
  for (const auto& dir : jarvis::golden::conformance_dirs()) {
    std::string trace = fs::path(dir).filename().string();
    const auto& fx = jarvis::testing::report_fixture(dir);
    const PerfReport& pr = perf_report(dir);
    jarvis::ReportOptions opts;
    if (pr.arch) opts.arch = &*pr.arch;
    jarvis::Report full = jarvis::build_report(fx.trace, fx.tree, opts);
    INFO(trace);
    std::vector<std::string> perf_sheets;
    for (const auto& t : full.tables)
      if (is_perf_sheet(t.name)) perf_sheets.push_back(t.name);
    std::vector<std::string> expected;
    for (const auto& t : pr.report.tables) expected.push_back(t.name);
    CHECK(perf_sheets == expected);
    for (const auto& t : pr.report.tables) {
      const jarvis::Table* built = full.find(t.name);
      REQUIRE(built != nullptr);
      CHECK_MESSAGE(built->to_csv() == t.to_csv(), trace << " / " << t.name);
    }
    REQUIRE(full.model_failures.size() == pr.report.model_failures.size());
    for (size_t k = 0; k < full.model_failures.size(); ++k) {
      CHECK(full.model_failures[k].op == pr.report.model_failures[k].op);
      CHECK(full.model_failures[k].reason == pr.report.model_failures[k].reason);
      CHECK(full.model_failures[k].count == pr.report.model_failures[k].count);
    }
  }
}

TEST_CASE("perf rows API: per-op rows behind the sheets (Qwen MI300)") {
  std::string dir;
  for (const auto& d : jarvis::golden::conformance_dirs())
    if (fs::path(d).filename() == "mi300_qwen1.5-0.5b") dir = d;
  REQUIRE(!dir.empty());
  const auto& fx = jarvis::testing::report_fixture(dir);
  REQUIRE(perf_report(dir).arch.has_value());
  const auto& arch = *perf_report(dir).arch;
  auto rows = jarvis::report::unified_perf_rows(fx.trace, fx.tree, &arch);
  // The SDPA op absorbs its nested _flash_attention_forward and fill_ (spec §15.5).
  double sdpa_time = 0;
  size_t sdpa_count = 0;
  for (const auto& r : rows) {
    if (r.name != "aten::_scaled_dot_product_flash_attention") continue;
    ++sdpa_count;
    sdpa_time += r.kernel_time_us;
    REQUIRE(r.metrics);
    CHECK(r.category == "SDPA_fwd");
    CHECK(r.sheet == "SDPA");
    CHECK(r.metrics->gflops == doctest::Approx(10.239377408).epsilon(1e-12));
    REQUIRE(r.metrics->roofline);
    CHECK(r.metrics->roofline->bound == "COMPUTE_BOUND");
  }
  CHECK(sdpa_count == 24);
  CHECK(sdpa_time == doctest::Approx(4016.34326171875).epsilon(1e-9));
  // Every GEMM-sheet row is a modeled GEMM with the Qwen reference mm among them.
  auto gemm = jarvis::report::perf_sheet_rows(fx.trace, fx.tree, "GEMM", false, &arch);
  REQUIRE(!gemm.empty());
  bool found_mm = false;
  for (const auto& r : gemm) {
    CHECK(r.category == "GEMM");
    const auto* m = jarvis::perf::find_param(r.metrics->params(), "M");
    const auto* n = jarvis::perf::find_param(r.metrics->params(), "N");
    if (r.name == "aten::mm" && m && n && m->value.i == 8944 && n->value.i == 2816) {
      found_mm = true;
      CHECK(r.metrics->gflops == doctest::Approx(51.581550592).epsilon(1e-12));
      CHECK(r.metrics->roofline->time_us == doctest::Approx(72.85529744632768).epsilon(1e-12));
    }
  }
  CHECK(found_mm);
  // No backward rows in an inference trace.
  CHECK(jarvis::report::perf_sheet_rows(fx.trace, fx.tree, "SDPA", true, &arch).empty());
}

TEST_CASE("unified_perf_summary: the streamed table equals the table over the held rows") {
  // The report folds each unified row into its group as it is built; tools
  // hold the rows (unified_perf_rows). Both must give the same summary,
  // including the groups' first-valid cells, params and kernel details.
  for (const auto& dir : jarvis::golden::conformance_dirs()) {
    const auto& fx = jarvis::testing::report_fixture(dir);
    const jarvis::GpuArch* arch = perf_report(dir).arch ? &*perf_report(dir).arch : nullptr;
    auto rows = jarvis::report::unified_perf_rows(fx.trace, fx.tree, arch);
    REQUIRE_MESSAGE(!rows.empty(), dir);
    jarvis::ReportOptions options;
    options.arch = arch;
    auto streamed = jarvis::unified_perf_summary(fx.trace, fx.tree, options);
    REQUIRE_MESSAGE(streamed.has_value(), dir);
    jarvis::Table held = jarvis::report::unified_perf_summary_table(fx.trace, rows);
    CHECK_MESSAGE(streamed->to_csv() == held.to_csv(), dir);
    // Every row is counted once in the summary.
    int64_t counted = 0;
    int count_col = held.col("operation_count");
    REQUIRE(count_col >= 0);
    for (const auto& r : held.rows)
      counted += std::get<int64_t>(r[static_cast<size_t>(count_col)].v);
    CHECK(counted == static_cast<int64_t>(rows.size()));
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
