// What the shared sweeps can and cannot conclude: per-configuration changes
// against the median configuration from each run's own gpu_timeline.csv
// (`jarvis report` of the H100 traces, TraceLens's CSVs of the MI300
// reports), empty results with their reason, and vendor-aware follow-ups.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>
#include <set>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "golden.h"
#include "mcp_harness.h"
#include "report/table.h"
#include "sweep/sweep.h"
#include "test_analysis_support.h"
#include "test_sweep_support.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace sw = jarvis::sweep;
using jarvis::Table;
using namespace jarvis::sweep_testing;

namespace {

double timeline_value(const std::string& csv, const std::string& type) {
  Table t = jarvis::read_csv_file(csv);
  for (size_t k = 0; k < t.rows.size(); ++k)
    if (t.at(k, "type").text() == type) return std::stod(t.at(k, "time ms").text());
  return NAN;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

std::string mi300(const char* set) {
  return jarvis::golden::shared_dir() + "/sweeps/tracelens_mi300_nccl_sweep/" + set;
}

sw::Sweep load_reports(const char* set) {
  sw::LoadOptions o;
  o.cache_dir = "none";
  return sw::load_sweep(mi300(set), o);
}

}  // namespace

TEST_SUITE("sweep") {
  TEST_CASE("sweep conclusions: H100 differences are idle time, busy is flat, no collectives") {
    const H100& h = h100();
    std::map<std::string, double> busy, idle, total, gemm;
    for (const auto& c : h.configs) {
      std::string csv = h.report_dir.at(c.label) + "/gpu_timeline.csv";
      busy[c.label] = timeline_value(csv, "busy_time");
      idle[c.label] = timeline_value(csv, "idle_time");
      total[c.label] = timeline_value(csv, "total_time");
      double sum = 0;
      for (const auto& g : read_gemm(h.report_dir.at(c.label) + "/GEMM.csv"))
        if (!std::isnan(g.mean)) sum += g.mean * g.count;
      gemm[c.label] = sum / 1e3;
    }
    auto values = [](const std::map<std::string, double>& m) {
      std::vector<double> v;
      for (const auto& [k, x] : m) v.push_back(x);
      return v;
    };
    double m_busy = median(values(busy)), m_idle = median(values(idle)),
           m_total = median(values(total));
    auto vb = values(busy);
    // The reading: busy time flat within 0.35 % across the sweep.
    CHECK((*std::max_element(vb.begin(), vb.end()) - *std::min_element(vb.begin(), vb.end())) /
              m_busy <
          0.0035);
    Table t = sw::what_changed_table(h.sweep);
    REQUIRE(t.rows.size() == 6);
    for (size_t r = 0; r < t.rows.size(); ++r) {
      std::string label = t.at(r, "full_config").text();
      CAPTURE(label);
      CHECK(t.at(r, "busy_ms").number() == doctest::Approx(busy[label]).epsilon(1e-9));
      CHECK(t.at(r, "delta_busy_ms").number() ==
            doctest::Approx(busy[label] - m_busy).epsilon(1e-6));
      CHECK(t.at(r, "delta_idle_ms").number() ==
            doctest::Approx(idle[label] - m_idle).epsilon(1e-6));
      CHECK(t.at(r, "delta_total_ms").number() ==
            doctest::Approx(total[label] - m_total).epsilon(1e-6));
      CHECK(t.at(r, "gemm_total_ms").number() == doctest::Approx(gemm[label]).epsilon(1e-9));
      CHECK(t.at(r, "collectives").number() == 0);
      std::string why = t.at(r, "explanation").text();
      CHECK(why.find("no collectives in this sweep") != std::string::npos);
      double db = busy[label] - m_busy, di = idle[label] - m_idle;
      if (std::fabs(di) > std::fabs(db))
        CHECK(why.find("the difference is GPU idle time") != std::string::npos);
    }
    CHECK(sw::nccl_empty_reason(h.sweep).find("single-rank") != std::string::npos);
    // Summary_By_Config: no work field, so time per step (iterations found
    // as launch repeats: the traces have no ProfilerStep) and a ranking.
    Table summary = sw::gpu_timeline_tables(h.sweep)[3];
    std::set<double> ranks;
    for (size_t r = 0; r < summary.rows.size(); ++r) {
      CHECK(summary.at(r, "unit").text() == "step");
      CHECK(summary.at(r, "normalisation").text().find("detected as repeats") != std::string::npos);
      ranks.insert(summary.at(r, "rank_by_normalised").number());
    }
    CHECK(ranks == std::set<double>{1, 2, 3, 4, 5, 6});
  }

  TEST_CASE("sweep conclusions: MI300 reports give idle, collectives and empty reasons") {
    sw::Sweep kernels_only = load_reports("compare_test");
    sw::Sweep ops = load_reports("compare_test_ops");
    // Idle of kernel-only reports, which TraceLens names "idle".
    Table summary = sw::gpu_timeline_tables(kernels_only)[3];
    for (size_t r = 0; r < summary.rows.size(); ++r) {
      std::string threads = std::to_string(static_cast<int>(summary.at(r, "threads").number()));
      double idle = timeline_value(mi300("compare_test") + "/" + threads +
                                       "thread/perf_56ch_rank7_perf_report_csvs/gpu_timeline.csv",
                                   "idle");
      CHECK(summary.at(r, "idle_time_ms").number() == idle);
    }
    CHECK(sw::gemm_variance_table(kernels_only, 5).rows.empty());
    CHECK(sw::gemm_empty_reason(kernels_only).find("no GEMM sheet") != std::string::npos);
    CHECK(sw::gemm_empty_reason(ops).empty());
    // Collectives of report runs: the coll_analysis operation counts.
    for (const auto& run : ops.runs) {
      Table ca = jarvis::read_csv_file(run.input.path + "/coll_analysis.csv");
      double count = 0;
      for (size_t r = 0; r < ca.rows.size(); ++r)
        count += std::stod(ca.at(r, "operation_count").text());
      CHECK(count > 0);
      CHECK(static_cast<double>(sw::collective_count(run.data)) == count);
    }
    CHECK(sw::nccl_empty_reason(ops).empty());
    CHECK(sw::nccl_empty_reason(kernels_only).find("coll_analysis") != std::string::npos);
    // Two sweeps of different configurations: said, not "0 rows".
    try {
      sw::compare_sweeps(kernels_only, ops);
      FAIL("expected a SweepError");
    } catch (const sw::SweepError& e) {
      CHECK(std::string(e.what()).find("no configuration in common") != std::string::npos);
      CHECK(std::string(e.what()).find("threads=256 channel=56") != std::string::npos);
    }
    // AMD names (Cijk_ GEMMs, RCCL's ncclDevKernel) are AMD's.
    CHECK(std::string(sw::kernel_vendor(ops.runs[0].data.kernel_names)) == "amd");
  }

  TEST_CASE("sweep conclusions: NVIDIA kernels get an Nsight Compute command") {
    const H100& h = h100();
    Table top = sw::gemm_variance_table(h.sweep, 5);
    std::vector<std::string> names;
    for (size_t r = 0; r < top.rows.size(); ++r) names.push_back(top.at(r, "kernel_name").text());
    CHECK(std::string(sw::kernel_vendor(names)) == "nvidia");
    std::string cmd = sw::nsight_compute_command(names);
    CHECK(cmd.rfind("ncu ", 0) == 0);
    CHECK(cmd.find("--kernel-name-base demangled") != std::string::npos);
    CHECK(cmd.find("sm__throughput.avg.pct_of_peak_sustained_elapsed") != std::string::npos);
    CHECK(cmd.find("SQ_") == std::string::npos);
    // The regex in the command selects exactly the listed kernels.
    size_t a = cmd.find("regex:'") + 7, b = cmd.find("' ", a);
    std::string quoted = cmd.substr(a, b - a);
    std::regex re(sw::rocprof_config(names).regex);
    for (const auto& n : names) CHECK(std::regex_search(n, re));
    CHECK(quoted == sw::rocprof_config(names).regex);
  }

  TEST_CASE("sweep MCP: flags, key numbers, plots and the gate over MCP") {
    const H100& h = h100();
    jarvis::testing::TempDir tmp;
    auto options = jarvis::mcp::testing::shared_root_options();
    options.roots.push_back(tmp.path);
    options.roots.push_back(h.tmp.path);  // the shared per-run cache
    jarvis::mcp::testing::Harness mcp(options);
    mcp.initialize();
    using nlohmann::json;
    json r = mcp.tool_result(1, "load_sweep", {{"path", h.root}, {"cache_dir", h.cache_dir}});
    std::string handle = r["sweep"];
    REQUIRE(r["flags"].size() == 2);
    CHECK(r["flags"][1].get<std::string>().find("at most 1 run(s) per configuration") == 0);
    CHECK(r["runs"][0]["collectives"] == 0);
    json g = mcp.tool_result(2, "sweep_gpu_timeline", {{"sweep", handle}});
    CHECK(g["what_changed"].size() == 6);
    json v = mcp.tool_result(3, "sweep_gemm_variance", {{"sweep", handle}});
    CHECK(!v["by_kernel_by_spread"].empty());
    double last = INFINITY;
    for (const auto& row : v["by_kernel_by_spread"]) {
      if (!row.contains("max_us") || !row["max_us"].is_number()) continue;
      double spread = row["max_us"].get<double>() - row["min_us"].get<double>();
      CHECK(spread <= last + 1e-9);
      last = spread;
    }
    json p = mcp.tool_result(
        4, "sweep_plots",
        {{"sweep", handle}, {"candidate", handle}, {"output_dir", tmp.path + "/plots"}});
    std::set<std::string> names;
    for (const auto& f : p["files"]) {
      CHECK(std::filesystem::exists(f.get<std::string>()));
      names.insert(std::filesystem::path(f.get<std::string>()).filename().string());
    }
    for (const char* f : {"box_threads.svg", "violin_channel.svg",
                          "interaction_channel_threads.svg", "sweep.html", "compare.html"})
      CHECK_MESSAGE(names.count(f) == 1, f);
    // The gate over MCP: the H100 runs against themselves as repeats, 6 a side.
    json gate =
        mcp.tool_result(5, "regression_gate",
                        {{"base", json::array({h.root})}, {"candidate", json::array({h.root})}});
    CHECK(gate["regression"] == false);
    CHECK(gate["base_runs"] == 6);
    for (const auto& row : gate["rows"]) CHECK(row["verdict"] == "same");
    json bad = mcp.call_tool(6, "regression_gate", {{"candidate", json::array({h.root})}});
    CHECK(bad["result"]["isError"] == true);
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
