// Sweeps on the two shared sweeps: every number of the sweep tables is
// recomputed here from the per-run TraceLens-format reports (`jarvis report`
// for the H100 traces, TraceLens's own CSVs for the MI300 reports) or from
// the traces themselves, never from the sweep module's intermediate data.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "golden.h"
#include "insights/trace_health.h"
#include "report/table.h"
#include "report/xlsx.h"
#include "sweep/sweep.h"
#include "test_analysis_support.h"
#include "test_sweep_support.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace sw = jarvis::sweep;
namespace fs = std::filesystem;
using jarvis::Table;
using namespace jarvis::sweep_testing;

TEST_SUITE("sweep") {
  TEST_CASE("sweep: H100 runs, fields and no failures") {
    const H100& h = h100();
    const sw::Sweep& s = h.sweep;
    CHECK(s.layout.fields == std::vector<std::string>{"threads", "channel", "rank"});
    REQUIRE(s.runs.size() == 6);
    CHECK(s.failures.empty());
    CHECK(s.cache_hits == 0);
    std::vector<std::string> labels;
    for (const auto& r : s.runs) labels.push_back(s.config_label(r));
    CHECK(labels.front() == "threads=256 channel=28");
    CHECK(labels.back() == "threads=512 channel=56");
    for (const auto& r : s.runs) CHECK(s.rank_of(r) == 0);
  }

  TEST_CASE("sweep: gemm_variance equals the top rows of each run's GEMM sheet") {
    const H100& h = h100();
    std::vector<ExpectedTop> expected;
    for (const auto& cfg : h.configs) {
      auto rows = top_gemm_rows(read_gemm(h.report_dir.at(cfg.label) + "/GEMM.csv"), 5);
      for (auto& r : rows) r.fields = {cfg.threads, cfg.channel, "0"};
      expected.insert(expected.end(), rows.begin(), rows.end());
    }
    std::stable_sort(expected.begin(), expected.end(),
                     [](const auto& a, const auto& b) { return a.diff > b.diff; });
    Table t = sw::gemm_variance_table(h.sweep, 5);
    CHECK(std::vector<std::string>(t.columns.begin(), t.columns.begin() + 7) ==
          std::vector<std::string>{"threads", "channel", "rank", "kernel_name",
                                   "kernel_time_min_us", "kernel_time_max_us", "time_diff_us"});
    check_variance_rows(t, expected);
  }

  TEST_CASE("sweep: by-kernel spread from the per-run GEMM means") {
    const H100& h = h100();
    std::map<std::string, std::vector<double>> means;  // op|shape -> per-run mean
    for (const auto& cfg : h.configs)
      for (const auto& g : read_gemm(h.report_dir.at(cfg.label) + "/GEMM.csv"))
        means[g.op + "|" + g.shape].push_back(g.mean);
    Table t = sw::gemm_kernel_spread_table(h.sweep);
    REQUIRE(t.rows.size() == means.size());
    double last_cv = INFINITY;
    for (size_t r = 0; r < t.rows.size(); ++r) {
      std::string key = t.at(r, "op").text() + "|" + t.at(r, "shape").text();
      CAPTURE(key);
      REQUIRE(means.count(key) == 1);
      const auto& v = means[key];
      double mean = 0, ss = 0;
      for (double x : v) mean += x / static_cast<double>(v.size());
      for (double x : v) ss += (x - mean) * (x - mean);
      double sd = std::sqrt(ss / static_cast<double>(v.size() - 1));
      CHECK(t.at(r, "runs").number() == v.size());
      CHECK(t.at(r, "mean_us").number() == doctest::Approx(mean).epsilon(1e-12));
      CHECK(t.at(r, "std_us").number() == doctest::Approx(sd).epsilon(1e-9));
      CHECK(t.at(r, "min_us").number() == *std::min_element(v.begin(), v.end()));
      CHECK(t.at(r, "max_us").number() == *std::max_element(v.begin(), v.end()));
      CHECK(t.at(r, "cv").number() == doctest::Approx(sd / mean).epsilon(1e-9));
      CHECK(t.at(r, "cv").number() <= last_cv);
      last_cv = t.at(r, "cv").number();
      // The slowest config is the run whose mean is the max.
      std::string slow = t.at(r, "slowest_config").text();
      const auto& cfg = h.config_by_label(slow);
      bool found = false;
      for (const auto& g : read_gemm(h.report_dir.at(cfg.label) + "/GEMM.csv"))
        if (g.op + "|" + g.shape == key) found = g.mean == t.at(r, "max_us").number();
      CHECK(found);
    }
  }

  TEST_CASE("sweep: GPU timeline per config equals each run's gpu_timeline sheet") {
    const H100& h = h100();
    auto tables = sw::gpu_timeline_tables(h.sweep);
    REQUIRE(tables.size() == 4);
    CHECK(tables[0].name == "All_Data");
    CHECK(tables[1].name == "Pivot_Time_ms");
    CHECK(tables[2].name == "Pivot_Percent");
    CHECK(tables[3].name == "Summary_By_Config");
    const Table& summary = tables[3];
    REQUIRE(summary.rows.size() == 6);
    for (size_t r = 0; r < summary.rows.size(); ++r) {
      const auto& cfg = h.config_by_label(summary.at(r, "full_config").text());
      Table tl = jarvis::read_csv_file(h.report_dir.at(cfg.label) + "/gpu_timeline.csv");
      for (size_t k = 0; k < tl.rows.size(); ++k) {
        std::string type = tl.at(k, "type").text();
        double ms = std::stod(tl.at(k, "time ms").text());
        double pct = std::stod(tl.at(k, "percent").text());
        CAPTURE(type);
        if (summary.col(type + "_ms") >= 0)
          CHECK(summary.at(r, type + "_ms").number() == doctest::Approx(ms).epsilon(1e-12));
        CHECK(pivot_cell(tables[1], type, cfg.label) == doctest::Approx(ms).epsilon(1e-12));
        CHECK(pivot_cell(tables[2], type, cfg.label) == doctest::Approx(pct).epsilon(1e-12));
      }
      CHECK(summary.at(r, "num_ranks").number() == 1);
      CHECK(summary.at(r, "threads").number() == std::stod(cfg.threads));
    }
    CHECK(tables[0].rows.size() == 6 * 8);
  }

  TEST_CASE("sweep: instances carry the trace's kernel timestamps") {
    const H100& h = h100();
    Table top = sw::gemm_variance_table(h.sweep, 5);
    Table inst = sw::gemm_timestamps_table(h.sweep, 5);
    size_t expected_rows = 0;
    for (size_t r = 0; r < top.rows.size(); ++r)
      expected_rows += static_cast<size_t>(top.at(r, "count").number());
    REQUIRE(inst.rows.size() == expected_rows);
    // Check the instances of the first run against its trace, read here.
    const auto& cfg = h.configs.front();
    jarvis::Trace trace = jarvis::load_trace(h.trace_path(cfg));
    std::map<std::pair<std::string, double>, double> kernels;  // (name, ts) -> end
    double first_gpu = INFINITY;
    for (jarvis::Uid u = 0; u < trace.events.size(); ++u) {
      const auto& e = trace.events[u];
      if (!e.is_gpu() || !e.has_ts()) continue;
      first_gpu = std::min(first_gpu, e.ts());
      if (e.cat == jarvis::Cat::Kernel)
        kernels[{std::string(trace.name(u)), e.ts()}] = e.ts() + e.dur();
    }
    size_t checked = 0;
    for (size_t r = 0; r < inst.rows.size(); ++r) {
      if (inst.at(r, "run").text() != h.relative(cfg)) continue;
      double start = inst.at(r, "start_us").number();
      auto it = kernels.find({inst.at(r, "kernel_name").text(), start});
      REQUIRE_MESSAGE(it != kernels.end(), inst.at(r, "kernel_name").text());
      CHECK(inst.at(r, "end_us").number() == it->second);
      CHECK(inst.at(r, "start_since_first_gpu_ms").number() ==
            doctest::Approx((start - first_gpu) / 1e3).epsilon(1e-12));
      ++checked;
    }
    CHECK(checked > 0);
    // Per top row: the shortest / longest instance equal the sheet's min / max.
    std::map<std::string, std::pair<double, double>> extremes;
    for (size_t r = 0; r < inst.rows.size(); ++r) {
      std::string key =
          inst.at(r, "run").text() + inst.at(r, "op").text() + inst.at(r, "shape").text();
      double t = inst.at(r, "kernel_time_us").number();
      if (inst.at(r, "is_min").v == jarvis::Cell(true).v) extremes[key].first = t;
      if (inst.at(r, "is_max").v == jarvis::Cell(true).v) extremes[key].second = t;
    }
    for (size_t r = 0; r < top.rows.size(); ++r) {
      std::string key =
          top.at(r, "run").text() + top.at(r, "op").text() + top.at(r, "shape").text();
      CHECK(extremes[key].first == doctest::Approx(top.at(r, "kernel_time_min_us").number()));
      CHECK(extremes[key].second == doctest::Approx(top.at(r, "kernel_time_max_us").number()));
    }
  }

  TEST_CASE("sweep: run_health carries each trace run's own health verdict") {
    const H100& h = h100();
    Table t = sw::run_health_table(h.sweep);
    CHECK(t.columns == std::vector<std::string>{"threads", "channel", "rank", "run", "kind",
                                                "confidence", "warnings"});
    REQUIRE(t.rows.size() == 6);
    for (size_t k = 0; k < t.rows.size(); ++k) {
      const auto& row = t.rows[k];
      std::string run = row[3].text();
      CAPTURE(run);
      jarvis::Trace trace = jarvis::load_trace(h.root + "/" + run);
      jarvis::CallTree tree(trace);
      auto health = jarvis::insights::trace_health(trace, tree);
      std::string warnings;
      for (const auto& w : health.warnings) warnings += (warnings.empty() ? "" : "; ") + w;
      CHECK(row[4].text() == "trace");
      CHECK(row[5].text() == health.confidence);
      CHECK((row[6].is_text() ? row[6].text() : std::string()) == warnings);
      CHECK_FALSE(health.confidence.empty());
    }
    // The sweep page shows the verdicts of trace runs.
    std::string html = sw::sweep_html_page(h.sweep, sw::sweep_tables(h.sweep, 5));
    CHECK(html.find("Trace health per run") != std::string::npos);
    for (const auto& run : h.sweep.runs) CHECK(html.find(run.input.relative) != std::string::npos);
  }

  TEST_CASE("sweep: a warm load reads every run from the cache and gives the same tables") {
    const H100& h = h100();
    sw::LoadOptions o;
    o.cache_dir = h.cache_dir;
    o.jobs = 2;
    sw::Sweep warm = sw::load_sweep(h.root, o);
    CHECK(warm.cache_hits == 6);
    auto cold_tables = sw::sweep_tables(h.sweep, 5);
    auto warm_tables = sw::sweep_tables(warm, 5);
    REQUIRE(cold_tables.size() == warm_tables.size());
    for (size_t k = 0; k < cold_tables.size(); ++k) {
      CAPTURE(cold_tables[k].name);
      CHECK(cold_tables[k].to_csv() == warm_tables[k].to_csv());
    }
  }

  TEST_CASE("sweep: progress per run and cancellation") {
    const H100& h = h100();
    sw::LoadOptions o;
    o.cache_dir = "none";
    o.jobs = 1;
    size_t calls = 0;
    o.progress = [&calls](size_t done, size_t total, const std::string&) {
      ++calls;
      CHECK(total == 6);
      return done < 2;
    };
    CHECK_THROWS_WITH_AS(sw::load_sweep(h.root, o), "cancelled", sw::SweepError);
    CHECK(calls == 2);
  }

  TEST_CASE("sweep: TraceLens report directories of the MI300 sweep") {
    std::string root =
        jarvis::golden::shared_dir() + "/sweeps/tracelens_mi300_nccl_sweep/compare_test_ops";
    sw::LoadOptions o;
    o.cache_dir = "none";
    sw::Sweep s = sw::load_sweep(root, o);
    REQUIRE(s.runs.size() == 2);
    CHECK(s.layout.pattern == "{threads}thread/perf_{channel}ch_rank{rank}_perf_report_csvs");
    CHECK(s.runs[0].input.values == std::vector<std::string>{"256", "28", "0"});
    CHECK(s.runs[1].input.values == std::vector<std::string>{"512", "28", "0"});
    std::vector<ExpectedTop> expected;
    for (const char* t : {"256", "512"}) {
      std::string dir = root + "/" + t + "thread/perf_28ch_rank0_perf_report_csvs";
      auto rows = top_gemm_rows(read_gemm(dir + "/GEMM.csv"), 3);
      for (auto& r : rows) r.fields = {t, "28", "0"};
      expected.insert(expected.end(), rows.begin(), rows.end());
    }
    std::stable_sort(expected.begin(), expected.end(),
                     [](const auto& a, const auto& b) { return a.diff > b.diff; });
    check_variance_rows(sw::gemm_variance_table(s, 3), expected);
    CHECK(sw::gemm_timestamps_table(s, 3).rows.empty());  // no traces, no instances
    for (const auto& row : sw::run_health_table(s).rows) {
      CHECK(row[4].text() == "report");
      CHECK_FALSE(row[5].is_text());  // no trace, no verdict
    }

    // NCCL: one row per coll_analysis group, latency from its sums.
    Table nccl = sw::nccl_table(s);
    size_t groups = 0;
    for (const char* t : {"256", "512"}) {
      Table ca = jarvis::read_csv_file(root + "/" + t +
                                       "thread/perf_28ch_rank0_perf_report_csvs/coll_analysis.csv");
      groups += ca.rows.size();
      for (size_t r = 0; r < ca.rows.size(); ++r) {
        double mb = std::stod(ca.at(r, "In msg size (MB)_first").text());
        double count = std::stod(ca.at(r, "operation_count").text());
        double sum = std::stod(ca.at(r, "dur_sum").text());
        bool found = false;
        for (size_t n = 0; n < nccl.rows.size(); ++n) {
          if (nccl.at(n, "threads").number() != std::stod(t) ||
              nccl.at(n, "msg_size_mb").number() != mb ||
              nccl.at(n, "collective").text() != ca.at(r, "Collective name").text() ||
              nccl.at(n, "dtype").text() != ca.at(r, "dtype").text())
            continue;
          found = true;
          CHECK(nccl.at(n, "count").number() == count);
          CHECK(nccl.at(n, "comm_latency_mean_us").number() == doctest::Approx(sum / count));
          CHECK(nccl.at(n, "comm_latency_min_us").number() ==
                std::stod(ca.at(r, "dur_min").text()));
          CHECK(nccl.at(n, "total_comm_latency_ms_per_rank").number() ==
                doctest::Approx(sum / 1e3));
          CHECK(nccl.at(n, "start_skew_us_mean").missing());
        }
        CHECK(found);
      }
    }
    CHECK(nccl.rows.size() == groups);
    // Timeline from gpu_timeline.csv.
    auto tl = sw::gpu_timeline_tables(s);
    Table ref = jarvis::read_csv_file(
        root + "/512thread/perf_28ch_rank0_perf_report_csvs/gpu_timeline.csv");
    for (size_t k = 0; k < ref.rows.size(); ++k)
      CHECK(pivot_cell(tl[1], ref.at(k, "type").text(), "threads=512 channel=28") ==
            doctest::Approx(std::stod(ref.at(k, "time ms").text())).epsilon(1e-12));
  }

  TEST_CASE("sweep: kernel-only TraceLens reports give timelines") {
    std::string root =
        jarvis::golden::shared_dir() + "/sweeps/tracelens_mi300_nccl_sweep/compare_test";
    sw::LoadOptions o;
    o.cache_dir = "none";
    sw::Sweep s = sw::load_sweep(root, o);
    REQUIRE(s.runs.size() == 2);
    CHECK(s.runs[0].input.values == std::vector<std::string>{"256", "56", "7"});
    CHECK(sw::gemm_variance_table(s, 5).rows.empty());
    Table summary = sw::gpu_timeline_tables(s)[3];
    Table ref = jarvis::read_csv_file(
        root + "/256thread/perf_56ch_rank7_perf_report_csvs/gpu_timeline.csv");
    for (size_t k = 0; k < ref.rows.size(); ++k)
      if (ref.at(k, "type").text() == "total_time")
        CHECK(summary.at(0, "total_time_ms").number() == std::stod(ref.at(k, "time ms").text()));
    CHECK(!s.runs[0].data.kernel_names.empty());
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
