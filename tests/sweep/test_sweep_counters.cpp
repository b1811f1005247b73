// Issue 12 x 11: the rocprofv3 counters of a sweep's top-variance GEMM
// kernels across configurations. A sweep of two configurations is built in a
// temp dir (TraceLens-style report directories whose GEMM row names a real
// MI350 GEMM kernel); one configuration has rocprof_traces/ holding the CSV
// fixture of tests/rocprof/csv_908. The expected counter means are computed
// here from the fixture's counter_collection.csv.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <filesystem>
#include <map>

#include "report/table.h"
#include "sweep/sweep.h"
#include "test_loader_support.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using namespace jarvis;
using namespace jarvis::loader_test;

namespace {

// read_csv_file keeps cells as text.
double number_at(const Table& t, size_t r, const char* column) {
  return std::stod(t.at(r, column).to_csv_text(false));
}

const std::string kFixture = std::string(JARVIS_SOURCE_DIR) + "/tests/rocprof/csv_908";

// The fixture's longest-running Cijk (Tensile GEMM) kernel, without ".kd".
std::string fixture_gemm_kernel() {
  Table trace = read_csv_file(kFixture + "/908_kernel_trace.csv");
  std::map<std::string, double> total;
  for (size_t r = 0; r < trace.rows.size(); ++r) {
    std::string name = trace.at(r, "Kernel_Name").to_csv_text(false);
    if (!name.starts_with("Cijk_")) continue;
    total[name] += number_at(trace, r, "End_Timestamp") - number_at(trace, r, "Start_Timestamp");
  }
  REQUIRE_FALSE(total.empty());
  auto best = std::max_element(total.begin(), total.end(),
                               [](auto& a, auto& b) { return a.second < b.second; });
  std::string name = best->first;
  return name.ends_with(".kd") ? name.substr(0, name.size() - 3) : name;
}

void write_report(const fs::path& dir, const std::string& kernel, double min_us, double max_us) {
  fs::create_directories(dir);
  write_file(dir / "gpu_timeline.csv",
             "type,time ms,percent\ncomputation_time,10.0,50.0\ntotal_time,20.0,100.0\n");
  write_file(dir / "GEMM.csv",
             fmt::format("name,param: M,param: N,param: K,name_count,Kernel Time (µs)_min,"
                         "Kernel Time (µs)_max,Kernel Time (µs)_mean,Kernel Time (µs)_std,"
                         "Kernel Time (µs)_sum,kernel_details__summarize_kernel_stats\n"
                         "aten::mm,64,32,256,4,{0},{1},{2},1.0,{3},\"[{{'name': '{4}', "
                         "'mean_duration_us': {2}}}]\"\n",
                         min_us, max_us, (min_us + max_us) / 2, 2 * (min_us + max_us), kernel));
}

}  // namespace

TEST_CASE("sweep counters: rocprofv3 counters of the top-variance GEMM kernels per config") {
  std::string kernel = fixture_gemm_kernel();
  TempDir dir;
  write_report(dir.path / "cfg1" / "report", kernel, 10, 30);
  write_report(dir.path / "cfg2" / "report", kernel, 12, 14);
  fs::create_directories(dir.path / "cfg1" / "rocprof_traces");
  for (const auto& e : fs::directory_iterator(kFixture))
    fs::copy_file(e.path(), dir.path / "cfg1" / "rocprof_traces" / e.path().filename());

  sweep::LoadOptions options;
  options.pattern = "cfg{cfg}/report";
  options.cache_dir = "none";
  sweep::Sweep s = sweep::load_sweep(dir.path.string(), options);
  REQUIRE(s.runs.size() == 2);
  Table t = sweep::gemm_counters_table(s, 5);
  REQUIRE(t.rows.size() == 1);  // cfg2 has no rocprof_traces/
  CHECK(t.at(0, "config").text() == "cfg=1");
  CHECK(t.at(0, "kernel_name").text() == kernel);

  // Independent: dispatches from the kernel trace, counter means from the
  // counter collection (one row per dispatch and counter).
  Table trace = read_csv_file(kFixture + "/908_kernel_trace.csv");
  int64_t dispatches = 0;
  for (size_t r = 0; r < trace.rows.size(); ++r)
    if (trace.at(r, "Kernel_Name").to_csv_text(false) == kernel + ".kd") ++dispatches;
  CHECK(t.at(0, "dispatches").number() == dispatches);
  Table counters = read_csv_file(kFixture + "/908_counter_collection.csv");
  std::map<std::string, std::pair<double, int>> sums;
  for (size_t r = 0; r < counters.rows.size(); ++r) {
    if (counters.at(r, "Kernel_Name").to_csv_text(false) != kernel + ".kd") continue;
    auto& [sum, n] = sums[counters.at(r, "Counter_Name").to_csv_text(false)];
    sum += number_at(counters, r, "Counter_Value");
    ++n;
  }
  REQUIRE_FALSE(sums.empty());
  for (const auto& [counter_name, sn] : sums) {
    const std::string& name = counter_name;  // clang 14 cannot capture a binding
    CAPTURE(name);
    REQUIRE(t.col(name + "_mean") >= 0);
    CHECK(t.at(0, name + "_mean").number() == doctest::Approx(sn.first / sn.second));
  }
  // The counters table is among the sweep outputs once a config has rocprof data.
  bool listed = false;
  for (const Table& out : sweep::sweep_tables(s, 5)) listed = listed || out.name == "gemm_counters";
  CHECK(listed);
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
