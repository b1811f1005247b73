// Per-kernel attribution of what changed (what_changed_kernels): on the
// shared H100 sweep against kernel times per iteration recomputed here from
// the traces (kernels linked to their launch calls by correlation id, the
// iterations from the detected launch repeats), and on generated sweeps with
// a planted change to one kernel.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "critical_path/critical_path.h"
#include "mcp_harness.h"
#include "report/table.h"
#include "sweep/significance.h"
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

namespace {

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

// One trace's kernel time per iteration, recomputed: the iterations' launch
// windows from detect_repeats (the H100 traces have no ProfilerStep), each
// kernel placed by the time of the runtime call with its correlation id.
struct PerStep {
  std::vector<double> step_ms;
  std::map<std::string, std::vector<double>> kernel_us;  // per iteration
};

PerStep per_step_from_trace(const std::string& path) {
  jarvis::Trace trace = jarvis::load_trace(path);
  jarvis::CallTree tree(trace);
  auto rep = jarvis::critical_path::detect_repeats(trace, tree);
  REQUIRE(rep);
  REQUIRE(rep->starts.size() >= 2);
  double gpu_end = -INFINITY;
  std::unordered_map<int64_t, double> launch_ts;
  for (jarvis::Uid u = 0; u < trace.events.size(); ++u) {
    const jarvis::Event& e = trace.events[u];
    if (e.is_gpu() && e.has_ts()) gpu_end = std::max(gpu_end, e.end());
    if ((e.cat == jarvis::Cat::CudaRuntime || e.cat == jarvis::Cat::CudaDriver) && e.has_ts() &&
        trace.correlation(e) != jarvis::kNoInt)
      launch_ts[trace.correlation(e)] = e.ts();
  }
  PerStep p;
  std::vector<std::pair<double, double>> windows;
  for (size_t i = 0; i < rep->starts.size(); ++i) {
    jarvis::Uid next = i + 1 < rep->starts.size() ? rep->starts[i + 1] : rep->after;
    double from = trace.events[rep->starts[i]].ts();
    double end = next == jarvis::kNoUid ? gpu_end : trace.events[next].ts();
    p.step_ms.push_back((end - from) / 1e3);
    windows.push_back({from, next == jarvis::kNoUid ? INFINITY : end});
  }
  for (jarvis::Uid u = 0; u < trace.events.size(); ++u) {
    const jarvis::Event& k = trace.events[u];
    if (k.cat != jarvis::Cat::Kernel) continue;
    auto it = launch_ts.find(trace.correlation(k));
    if (it == launch_ts.end()) continue;
    for (size_t w = 0; w < windows.size(); ++w)
      if (it->second >= windows[w].first && it->second < windows[w].second) {
        auto& v = p.kernel_us[std::string(trace.name(u))];
        v.resize(windows.size(), 0.0);
        v[w] += k.dur();
      }
  }
  return p;
}

// ---- generated sweeps --------------------------------------------------------

struct Kernel {
  const char* name;
  double us;
};
const Kernel kKernels[] = {{"sm90_xmma_gemm_bf16_big", 2000},
                           {"elementwise_kernel_add", 500},
                           {"reduce_kernel_planted", 300}};

// One run of `steps` ProfilerSteps launching the three kernels; each kernel's
// duration is its base x the run's noise x the step's own noise x `planted`
// for the planted (reduce) kernel. Returns each kernel's duration per step
// as written (rounded to the trace's 0.001 µs).
std::map<std::string, std::vector<double>> write_run(const std::string& path, double planted,
                                                     int steps, double run_sd,
                                                     std::mt19937_64& rng) {
  std::normal_distribution<double> run_noise(1.0, run_sd), step_noise(1.0, 0.02);
  double run_factor = run_noise(rng);
  std::map<std::string, std::vector<double>> written;
  std::string ev;
  double t = 1000;
  int corr = 1;
  for (int s = 0; s < steps; ++s) {
    std::vector<double> durs;
    double total = 0;
    for (const Kernel& k : kKernels) {
      double f = std::string(k.name) == "reduce_kernel_planted" ? planted : 1.0;
      double d = std::round(k.us * f * run_factor * step_noise(rng) * 1e3) / 1e3;
      durs.push_back(d);
      written[k.name].push_back(d);
      total += d;
    }
    double start = t, end = t + total + 120;
    written["step_ms"].push_back(std::round((end - start) * 1e3) / 1e6);
    ev += fmt::format(
        R"({{"ph":"X","cat":"user_annotation","name":"ProfilerStep#{}","pid":1,"tid":1,"ts":{:.3f},"dur":{:.3f}}},)",
        s, start, end - start);
    double at = t + 10;
    for (size_t i = 0; i < durs.size(); ++i) {
      ev += fmt::format(
          R"({{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{0:.3f},"dur":1,"args":{{"correlation":{1}}}}},)"
          R"({{"ph":"s","cat":"ac2g","name":"ac2g","id":{1},"pid":1,"tid":1,"ts":{0:.3f}}},)"
          R"({{"ph":"X","cat":"kernel","name":"{2}","pid":0,"tid":7,"ts":{3:.3f},"dur":{4:.3f},"args":{{"correlation":{1},"stream":7,"device":0}}}},)"
          R"({{"ph":"f","bp":"e","cat":"ac2g","name":"ac2g","id":{1},"pid":0,"tid":7,"ts":{3:.3f}}},)",
          start + 1 + static_cast<double>(i), corr, kKernels[i].name, at, durs[i]);
      ++corr;
      at += durs[i];
    }
    t = end + 50;
  }
  ev.pop_back();
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << R"({"schemaVersion":1,"traceEvents":[)" << ev << "]}";
  return written;
}

// variant=base and variant=planted, `runs` runs (as ranks) of `steps` steps
// each, every run scaled by its own noise factor (sd run_sd); returns per
// variant and kernel every run's mean per step.
using RunMeans = std::map<std::string, std::map<std::string, std::vector<double>>>;
RunMeans make_sweep(const std::string& root, int runs, int steps, uint64_t seed,
                    double run_sd = 0.005) {
  std::mt19937_64 rng(seed);
  RunMeans means;
  for (auto [variant, planted] : {std::pair{"base", 1.0}, std::pair{"planted", 1.2}})
    for (int r = 0; r < runs; ++r)
      for (const auto& [name, per_step] :
           write_run(fmt::format("{}/{}/rank{}/trace.json", root, variant, r), planted, steps,
                     run_sd, rng))
        means[variant][name].push_back(mean(per_step));
  return means;
}

sw::Sweep load_generated(const std::string& root) {
  sw::LoadOptions o;
  o.cache_dir = "none";
  o.pattern = "{variant}/rank{rank}/trace.json";
  o.jobs = 2;
  return sw::load_sweep(root, o);
}

int run(const std::string& cmd) {
  int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

}  // namespace

TEST_SUITE("sweep") {
  TEST_CASE("sweep kernels: H100 per-kernel changes equal the traces' kernel times per step") {
    const H100& h = h100();
    std::map<std::string, PerStep> per;
    std::vector<std::pair<double, std::string>> by_step;
    for (const auto& c : h.configs) {
      per[c.label] = per_step_from_trace(h.trace_path(c));
      by_step.push_back({mean(per[c.label].step_ms), c.label});
    }
    // The default reference: the median configuration by time per step.
    std::stable_sort(by_step.begin(), by_step.end());
    const std::string ref = by_step[(by_step.size() - 1) / 2].second;
    CHECK(sw::kernel_reference(h.sweep, {}) == ref);
    auto per_step_mean = [&](const std::string& label, const std::string& kernel) {
      const auto& k = per[label].kernel_us;
      auto it = k.find(kernel);
      return it == k.end() ? 0.0 : mean(it->second);
    };
    Table t = sw::what_changed_kernels_table(h.sweep);
    REQUIRE(t.rows.size() == 5 * 5);
    for (const auto& c : h.configs) {
      if (c.label == ref) continue;
      CAPTURE(c.label);
      std::set<std::string> names;
      for (const auto* l : {&c.label, &ref})
        for (const auto& kv : per[*l].kernel_us) names.insert(kv.first);
      std::vector<std::pair<double, std::string>> expected;
      for (const auto& n : names)
        expected.push_back({per_step_mean(c.label, n) - per_step_mean(ref, n), n});
      std::stable_sort(expected.begin(), expected.end(), [](const auto& a, const auto& b) {
        return std::fabs(a.first) > std::fabs(b.first);
      });
      std::vector<size_t> rows;
      for (size_t r = 0; r < t.rows.size(); ++r)
        if (t.at(r, "full_config").text() == c.label) rows.push_back(r);
      REQUIRE(rows.size() == 5);
      for (size_t i = 0; i < rows.size(); ++i) {
        size_t r = rows[i];
        const std::string& name = expected[i].second;
        CAPTURE(name);
        CHECK(t.at(r, "reference").text() == ref);
        CHECK(t.at(r, "kernel_rank").number() == static_cast<double>(i + 1));
        CHECK(t.at(r, "kernel_name").text() == name);
        CHECK(t.at(r, "unit").text() == "µs per step");
        double e_ref = per_step_mean(ref, name), e_cfg = per_step_mean(c.label, name);
        CHECK(t.at(r, "ref_us").number() == doctest::Approx(e_ref).epsilon(1e-9));
        CHECK(t.at(r, "config_us").number() == doctest::Approx(e_cfg).epsilon(1e-9));
        CHECK(t.at(r, "delta_us").number() == doctest::Approx(e_cfg - e_ref).epsilon(1e-9));
        if (e_ref != 0)
          CHECK(t.at(r, "change_percent").number() ==
                doctest::Approx(100 * (e_cfg - e_ref) / e_ref).epsilon(1e-9));
        // One run per configuration and a few iterations each: the rank
        // test cannot reach the corrected alpha, so no verdict.
        size_t n_ref = per[ref].step_ms.size(), n_cfg = per[c.label].step_ms.size();
        REQUIRE(sw::min_two_sided_p(n_ref, n_cfg) >= 0.05 / static_cast<double>(names.size()));
        CHECK(t.at(r, "verdict").text() == "cannot tell");
        CHECK(t.at(r, "note").text().find(fmt::format("1 + 1 run(s) and {} + {} iteration(s)",
                                                      n_ref, n_cfg)) != std::string::npos);
      }
    }
    // what_changed carries the same changes as text, and names the reference.
    Table w = sw::what_changed_table(h.sweep);
    for (size_t r = 0; r < w.rows.size(); ++r) {
      std::string label = w.at(r, "full_config").text(), text = w.at(r, "kernel_changes").text();
      CAPTURE(label);
      if (label == ref) {
        CHECK(text.find("reference configuration") != std::string::npos);
        continue;
      }
      CHECK(text.rfind("vs " + ref + ": ", 0) == 0);
      for (size_t k = 0; k < t.rows.size(); ++k)
        if (t.at(k, "full_config").text() == label)
          CHECK(text.find(sw::short_kernel(t.at(k, "kernel_name").text())) != std::string::npos);
    }
    // A named reference, and one that is not a configuration.
    sw::KernelChangeOptions o;
    o.reference = h.configs[0].label;
    o.top_n = 2;
    Table named = sw::what_changed_kernels_table(h.sweep, o);
    CHECK(named.rows.size() == 5 * 2);
    CHECK(named.at(0, "reference").text() == h.configs[0].label);
    o.reference = "threads=1 channel=1";
    CHECK_THROWS_WITH_AS(sw::what_changed_kernels_table(h.sweep, o),
                         doctest::Contains("threads=256 channel=28"), sw::SweepError);
    std::string line = sw::kernel_changes_summary(t);
    CHECK(line.find("kernels vs " + ref) == 0);
    CHECK(line.find("0 of 25 top-kernel row(s) beyond noise") != std::string::npos);
  }

  TEST_CASE("sweep kernels: a planted kernel change is found beyond noise, others are not") {
    jarvis::testing::TempDir tmp;
    // Five runs a side: the test across runs (5 + 5 can reach 0.05 / 3).
    RunMeans means = make_sweep(tmp.path + "/runs", 5, 6, 20261127);
    sw::Sweep s = load_generated(tmp.path + "/runs");
    REQUIRE(s.runs.size() == 10);
    CHECK(sw::kernel_reference(s, {}) == "variant=base");  // the faster one of two
    Table t = sw::what_changed_kernels_table(s);
    REQUIRE(t.rows.size() == 3);
    for (size_t r = 0; r < t.rows.size(); ++r) {
      std::string name = t.at(r, "kernel_name").text();
      CAPTURE(name);
      CHECK(t.at(r, "full_config").text() == "variant=planted");
      CHECK(t.at(r, "noise").text() == "across runs");
      CHECK(t.at(r, "ref_samples").number() == 5);
      CHECK(t.at(r, "config_samples").number() == 5);
      double e_ref = mean(means["base"][name]), e_cfg = mean(means["planted"][name]);
      CHECK(t.at(r, "ref_us").number() == doctest::Approx(e_ref).epsilon(1e-9));
      CHECK(t.at(r, "delta_us").number() == doctest::Approx(e_cfg - e_ref).epsilon(1e-9));
      CHECK(t.at(r, "p_value").number() ==
            doctest::Approx(sw::mann_whitney(means["base"][name], means["planted"][name]).p));
      if (r == 0) {
        CHECK(name == "reduce_kernel_planted");
        CHECK(t.at(r, "change_percent").number() ==
              doctest::Approx(100 * (e_cfg - e_ref) / e_ref).epsilon(1e-9));
        CHECK(t.at(r, "change_percent").number() > 15);  // planted: +20 %
        CHECK(t.at(r, "verdict").text() == "beyond noise");
      } else {
        CHECK(t.at(r, "verdict").text() == "within noise");
      }
    }
    CHECK(sw::kernel_changes_summary(t).find("largest change reduce_kernel_planted in "
                                             "variant=planted") != std::string::npos);

    // One run a side with 8 iterations: the test across iterations, which
    // says the runs differ, not that the configuration does. Without
    // run-to-run noise here, so that the unchanged kernels' iterations are
    // alike on both sides (a run-level shift is what this test detects).
    make_sweep(tmp.path + "/one", 1, 8, 7, 0.0);
    Table u = sw::what_changed_kernels_table(load_generated(tmp.path + "/one"));
    REQUIRE(u.rows.size() == 3);
    CHECK(u.at(0, "kernel_name").text() == "reduce_kernel_planted");
    CHECK(u.at(0, "noise").text() == "across iterations");
    CHECK(u.at(0, "ref_samples").number() == 8);
    CHECK(u.at(0, "verdict").text() == "beyond noise");
    CHECK(u.at(0, "note").text().find("repeat the runs to claim it") != std::string::npos);

    // 20 fresh sweeps of each kind: the planted kernel first and beyond noise
    // every time; of the 40 tests of unchanged kernels per kind, the
    // corrected alpha (0.05 / 3) lets about 0.7 through by chance, so more
    // than 3 would mean the noise is not being accounted for.
    for (auto kind : {std::tuple{5, 6, 0.005}, std::tuple{1, 8, 0.0}}) {
      // Named copies, not a structured binding: clang refuses bindings
      // inside doctest's CAPTURE lambda.
      const int runs = std::get<0>(kind), steps = std::get<1>(kind);
      const double run_sd = std::get<2>(kind);
      CAPTURE(runs);
      size_t planted_found = 0, unchanged_flagged = 0;
      for (int rep = 0; rep < 20; ++rep) {
        std::string dir = fmt::format("{}/rep{}_{}", tmp.path, runs, rep);
        make_sweep(dir, runs, steps, 1000 + static_cast<uint64_t>(rep), run_sd);
        Table x = sw::what_changed_kernels_table(load_generated(dir));
        REQUIRE(x.rows.size() == 3);
        for (size_t r = 0; r < x.rows.size(); ++r) {
          bool beyond = x.at(r, "verdict").text() == "beyond noise";
          if (x.at(r, "kernel_name").text() == "reduce_kernel_planted")
            planted_found += r == 0 && beyond ? 1 : 0;
          else
            unchanged_flagged += beyond ? 1 : 0;
        }
      }
      CHECK(planted_found == 20);
      CHECK(unchanged_flagged <= 3);
    }

    // Two runs a side, two iterations each: too few for any test.
    make_sweep(tmp.path + "/few", 2, 2, 11);
    Table f = sw::what_changed_kernels_table(load_generated(tmp.path + "/few"));
    REQUIRE(f.rows.size() == 3);
    for (size_t r = 0; r < f.rows.size(); ++r) CHECK(f.at(r, "verdict").text() == "cannot tell");

    // Report runs carry no per-kernel times: empty, with the reason.
    sw::LoadOptions reports;
    reports.cache_dir = "none";
    sw::Sweep mi300 = sw::load_sweep(
        jarvis::golden::shared_dir() + "/sweeps/tracelens_mi300_nccl_sweep/compare_test_ops",
        reports);
    CHECK(sw::what_changed_kernels_table(mi300).rows.empty());
    CHECK(sw::kernel_changes_empty_reason(mi300).find("no per-kernel times") == 0);

    // The CLI: what_changed_kernels.csv with --top-kernels and --reference,
    // the summary line on stderr; an unknown reference is an error.
    std::string bin = JARVIS_BINARY;
    std::string cmd = bin + " sweep '" + tmp.path +
                      "/runs' --layout '{variant}/rank{rank}/trace.json'" +
                      " --cache none --jobs 2 --top-kernels 1 --reference 'variant=planted'";
    REQUIRE(run(cmd + " -o '" + tmp.path + "/out' > /dev/null 2> '" + tmp.path + "/err'") == 0);
    Table csv = jarvis::read_csv_file(tmp.path + "/out/what_changed_kernels.csv");
    REQUIRE(csv.rows.size() == 1);
    CHECK(csv.at(0, "full_config").text() == "variant=base");
    CHECK(csv.at(0, "kernel_name").text() == "reduce_kernel_planted");
    CHECK(jarvis::testing::read_text(tmp.path + "/err").find("kernels vs variant=planted") !=
          std::string::npos);
    CHECK(run(bin + " sweep '" + tmp.path + "/runs' --layout '{variant}/rank{rank}/trace.json'" +
              " --cache none --reference 'variant=nope' -o '" + tmp.path +
              "/bad' > /dev/null 2> '" + tmp.path + "/bad_err'") != 0);
    CHECK(jarvis::testing::read_text(tmp.path + "/bad_err").find("variant=base") !=
          std::string::npos);
  }

  TEST_CASE("sweep kernels: MCP sweep_gpu_timeline gives the kernel changes") {
    const H100& h = h100();
    auto options = jarvis::mcp::testing::shared_root_options();
    options.roots.push_back(h.tmp.path);
    jarvis::mcp::testing::Harness mcp(options);
    mcp.initialize();
    using nlohmann::json;
    json r = mcp.tool_result(1, "load_sweep", {{"path", h.root}, {"cache_dir", h.cache_dir}});
    std::string handle = r["sweep"];
    json reply = mcp.call_tool(2, "sweep_gpu_timeline",
                               {{"sweep", handle}, {"top_kernels", 3}, {"detail", "full"}});
    json g = reply["result"]["structuredContent"];
    const std::string ref = sw::kernel_reference(h.sweep, {});
    CHECK(g["kernel_reference"] == ref);
    CHECK(g["kernel_changes_reason"] == "");
    REQUIRE(g["what_changed_kernels"].size() == 5 * 3);
    sw::KernelChangeOptions o;
    o.top_n = 3;
    Table t = sw::what_changed_kernels_table(h.sweep, o);
    for (size_t k = 0; k < t.rows.size(); ++k) {
      CHECK(g["what_changed_kernels"][k]["kernel_name"] == t.at(k, "kernel_name").text());
      CHECK(g["what_changed_kernels"][k]["delta_us"].get<double>() ==
            doctest::Approx(t.at(k, "delta_us").number()));
    }
    std::string text = reply["result"]["content"][0]["text"];
    CHECK(text.find(sw::kernel_changes_summary(t)) != std::string::npos);
    // A default reply keeps every configuration's what_changed row and the
    // kernel rows' verdicts; the long notes are for detail=full.
    json d = mcp.tool_result(4, "sweep_gpu_timeline", {{"sweep", handle}});
    CHECK(d["what_changed"].size() == 6);
    REQUIRE(!d["what_changed_kernels"].empty());
    CHECK(d["what_changed_kernels"][0].contains("verdict"));
    CHECK_FALSE(d["what_changed_kernels"][0].contains("note"));
    CHECK(g["what_changed_kernels"][0].contains("note"));
    json bad = mcp.call_tool(3, "sweep_gpu_timeline", {{"sweep", handle}, {"reference", "x=1"}});
    CHECK(bad["result"]["isError"] == true);
  }

  TEST_CASE("sweep compare: bootstrap intervals of the median change with the sample sizes") {
    jarvis::testing::TempDir tmp;
    // Two sweeps of the same configuration: 4 runs of 6 steps each, the
    // candidate's reduce kernel 20 % slower (steps ~4 % longer).
    std::mt19937_64 rng(99);
    std::vector<double> base_steps, cand_steps, base_runs, cand_runs;
    for (int r = 0; r < 4; ++r)
      for (auto [side, planted] : {std::pair{"a", 1.0}, std::pair{"b", 1.2}}) {
        auto w = write_run(fmt::format("{}/{}/variant{}/rank{}/trace.json", tmp.path, side, 1, r),
                           planted, 6, 0.005, rng);
        auto& steps = std::string(side) == "a" ? base_steps : cand_steps;
        steps.insert(steps.end(), w["step_ms"].begin(), w["step_ms"].end());
        (std::string(side) == "a" ? base_runs : cand_runs).push_back(mean(w["step_ms"]));
      }
    sw::LoadOptions o;
    o.cache_dir = "none";
    o.pattern = "variant{variant}/rank{rank}/trace.json";
    auto tables =
        sw::compare_sweeps(sw::load_sweep(tmp.path + "/a", o), sw::load_sweep(tmp.path + "/b", o));
    const Table& tl = tables[0];
    size_t seen = 0;
    for (size_t r = 0; r < tl.rows.size(); ++r) {
      if (tl.at(r, "type").text() != "step_time") continue;
      ++seen;
      CHECK(tl.at(r, "within_run_samples").text() == "24 + 24 steps");
      sw::Interval within = sw::bootstrap_median_change_pct(base_steps, cand_steps);
      CHECK(tl.at(r, "within_run_ci_low_percent").number() ==
            doctest::Approx(within.lo).epsilon(1e-6));
      CHECK(tl.at(r, "within_run_ci_high_percent").number() ==
            doctest::Approx(within.hi).epsilon(1e-6));
      sw::Interval across = sw::bootstrap_median_change_pct(base_runs, cand_runs);
      CHECK(tl.at(r, "across_run_ci_low_percent").number() ==
            doctest::Approx(across.lo).epsilon(1e-6));
      CHECK(tl.at(r, "across_run_ci_high_percent").number() ==
            doctest::Approx(across.hi).epsilon(1e-6));
      // The planted change (~ +2 % of the step: 60 of ~2920 us) lies inside
      // both intervals, and the within-run interval excludes 0.
      double planted = 100 * 60.0 / (2800 + 120);
      CHECK(within.lo > 0);
      CHECK(within.lo <= planted);
      CHECK(within.hi >= planted);
      CHECK(across.lo <= planted);
      CHECK(across.hi >= planted);
      CHECK(tl.at(r, "base_runs").number() == 4);
      CHECK(tl.at(r, "note").text().find("(bootstrap)") != std::string::npos);
    }
    CHECK(seen == 1);
    // One run a side: no across-run interval.
    auto one = sw::compare_sweeps(h100().sweep, h100().sweep);
    for (size_t r = 0; r < one[0].rows.size(); ++r)
      CHECK(one[0].at(r, "across_run_ci_low_percent").missing());
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
