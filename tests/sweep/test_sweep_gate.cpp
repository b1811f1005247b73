// The statistics of sweep conclusions (significance.h) and the regression
// gate on generated sweeps with a known effect and known noise: expected
// p-values come from enumerating every split of the pooled sample, expected
// medians and per-unit times from the generated durations.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include <fmt/format.h>

#include "golden.h"
#include "sweep/gate.h"
#include "sweep/significance.h"
#include "sweep/sweep.h"
#include "test_analysis_support.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace sw = jarvis::sweep;
namespace fs = std::filesystem;
using jarvis::Table;

namespace {

// Two-sided exact p by enumerating every way to pick |a| of the pooled values:
// the share of splits whose U is at least as far from its mean as the observed.
double enumerated_p(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> pool = a;
  pool.insert(pool.end(), b.begin(), b.end());
  const size_t n = pool.size(), m = a.size();
  auto u_of = [&](const std::vector<bool>& in_a) {
    double u = 0;
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j < n; ++j)
        if (in_a[i] && !in_a[j]) u += pool[i] > pool[j] ? 1 : pool[i] == pool[j] ? 0.5 : 0;
    return u;
  };
  std::vector<bool> obs(n, false);
  for (size_t i = 0; i < m; ++i) obs[i] = true;
  double mu = static_cast<double>(m * (n - m)) / 2, d_obs = std::fabs(u_of(obs) - mu);
  std::vector<bool> pick(n, false);
  std::fill(pick.begin(), pick.begin() + static_cast<long>(m), true);
  size_t total = 0, extreme = 0;
  do {
    ++total;
    if (std::fabs(u_of(pick) - mu) >= d_obs - 1e-12) ++extreme;
  } while (std::prev_permutation(pick.begin(), pick.end()));
  return static_cast<double>(extreme) / static_cast<double>(total);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

// One generated run: `steps` ProfilerSteps, each launching a GEMM-named and
// an elementwise kernel with a host gap; every duration scaled by `factor`
// (the planted effect) and by a per-run noise factor. Returns the step
// durations (ms) written.
struct GenRun {
  std::vector<double> step_ms;
  double gemm_us = 0;  // total of the GEMM kernel
};

// `embed_batch` > 0: each step starts with the token embedding of a
// [embed_batch, 512] batch (an aten::embedding cpu_op with its Input Dims).
GenRun write_run(const std::string& path, double factor, double noise, int steps, double work = 1.0,
                 int embed_batch = 0) {
  GenRun g;
  std::string ev;
  double t = 1000;
  int corr = 1;
  for (int s = 0; s < steps; ++s) {
    double gemm = 2000 * work * factor * noise, elem = 500 * work * factor * noise;
    double gap = 300 * factor * noise;
    double start = t, end = t + gemm + elem + gap + 20;
    ev += fmt::format(
        R"({{"ph":"X","cat":"user_annotation","name":"ProfilerStep#{}","pid":1,"tid":1,"ts":{:.3f},"dur":{:.3f}}},)",
        s, start, end - start);
    if (embed_batch > 0)
      ev += fmt::format(
          R"({{"ph":"X","cat":"cpu_op","name":"aten::embedding","pid":1,"tid":1,"ts":{:.3f},"dur":0.5,"args":{{"Input Dims":[[50257,768],[{},512],[],[],[]]}}}},)",
          start + 0.2, embed_batch);
    double k = t + 10;
    for (auto [name, dur] : {std::pair{"sm90_xmma_gemm_bf16bf16_fake", gemm},
                             std::pair{"elementwise_kernel_fake", elem}}) {
      ev += fmt::format(
          R"({{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{0:.3f},"dur":1,"args":{{"correlation":{1}}}}},)"
          R"({{"ph":"s","cat":"ac2g","name":"ac2g","id":{1},"pid":1,"tid":1,"ts":{0:.3f}}},)"
          R"({{"ph":"X","cat":"kernel","name":"{2}","pid":0,"tid":7,"ts":{3:.3f},"dur":{4:.3f},"args":{{"correlation":{1},"stream":7,"device":0}}}},)"
          R"({{"ph":"f","bp":"e","cat":"ac2g","name":"ac2g","id":{1},"pid":0,"tid":7,"ts":{3:.3f}}},)",
          start + 1, corr, name, k, dur);
      ++corr;
      k += dur;
    }
    g.gemm_us += gemm;
    g.step_ms.push_back((end - start) / 1e3);
    t = end + gap;
  }
  ev.pop_back();
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << R"({"schemaVersion":1,"traceEvents":[)" << ev << "]}";
  return g;
}

sw::LoadOptions no_cache(const std::string& pattern) {
  sw::LoadOptions o;
  o.cache_dir = "none";
  o.pattern = pattern;
  o.jobs = 2;
  return o;
}

}  // namespace

TEST_SUITE("sweep") {
  TEST_CASE("sweep stats: Mann-Whitney p equals the enumerated permutation p") {
    std::vector<std::pair<std::vector<double>, std::vector<double>>> cases = {
        {{1, 2, 3}, {4, 5, 6}},
        {{1, 2, 3, 4}, {5, 6, 7, 8}},
        {{1.1, 3.2, 2.5, 7.0, 4.4}, {2.0, 5.5, 6.1, 8.3, 9.9}},
        {{10, 12, 11, 15, 9, 14}, {13, 16, 8, 17, 18, 19, 20}},
    };
    for (const auto& [a, b] : cases) {
      sw::RankTest t = sw::mann_whitney(a, b);
      CHECK(t.exact);
      CHECK(t.p == doctest::Approx(enumerated_p(a, b)).epsilon(1e-12));
    }
    // 3 + 3 can never reach 0.05: complete separation gives 2 / C(6, 3).
    CHECK(sw::min_two_sided_p(3, 3) == doctest::Approx(0.1));
    CHECK(sw::min_two_sided_p(4, 4) == doctest::Approx(2.0 / 70));
    // Ties: the normal approximation with tie correction stays near the
    // enumerated p (it is an approximation; 8 + 8 samples).
    std::vector<double> a{1, 2, 2, 3, 3, 3, 4, 5}, b{3, 4, 4, 5, 5, 6, 6, 7};
    sw::RankTest tied = sw::mann_whitney(a, b);
    CHECK_FALSE(tied.exact);
    CHECK(tied.p == doctest::Approx(enumerated_p(a, b)).epsilon(0.25));
    // All equal: no evidence at all.
    CHECK(sw::mann_whitney({2, 2, 2, 2}, {2, 2, 2, 2}).p == 1.0);
    // The verdict rule: too few samples is "cannot tell", never a verdict.
    auto one = sw::compare_samples({100}, {110}, 0.05, 0);
    CHECK(one.verdict == sw::Verdict::CannotTell);
    CHECK(one.reason.find("cannot reach") != std::string::npos);
    auto three = sw::compare_samples({100, 101, 102}, {200, 201, 202}, 0.05, 0);
    CHECK(three.verdict == sw::Verdict::CannotTell);
    auto five =
        sw::compare_samples({100, 101, 102, 99, 100.5}, {110, 111, 109, 112, 110.5}, 0.05, 2);
    CHECK(five.verdict == sw::Verdict::Slower);
    CHECK(five.change_pct == doctest::Approx(100 * (110.5 / 100.5 - 1)));
    CHECK(five.ci_pct.lo > 0);
    CHECK(five.ci_pct.hi >= five.change_pct);
    // Significant but inside the threshold: same.
    auto small = sw::compare_samples({100, 100.1, 100.2, 100.3, 100.4},
                                     {101, 101.1, 101.2, 101.3, 101.4}, 0.05, 2);
    CHECK(small.verdict == sw::Verdict::Same);
    CHECK(small.test.p < 0.05);
  }

  TEST_CASE("sweep gate: a planted 5 % regression is found, 20 unchanged repeats pass") {
    jarvis::testing::TempDir tmp;
    std::mt19937_64 rng(20261126);
    std::normal_distribution<double> noise(1.0, 0.01);  // 1 % run-to-run noise
    auto make_side = [&](const std::string& dir, double factor, int runs,
                         std::vector<double>* step_means) {
      for (int r = 0; r < runs; ++r) {
        GenRun g = write_run(fmt::format("{}/run{}/trace.json", dir, r), factor, noise(rng), 4);
        if (step_means) {
          double sum = 0;
          for (double s : g.step_ms) sum += s;
          step_means->push_back(sum / static_cast<double>(g.step_ms.size()));
        }
      }
    };
    std::vector<double> base_steps, cand_steps;
    make_side(tmp.path + "/base", 1.0, 5, &base_steps);
    make_side(tmp.path + "/cand", 1.05, 5, &cand_steps);
    sw::GateOptions g;
    // 1 % noise per run: the median of 5 runs moves by ~0.6 %, so a 3 %
    // threshold is ~4 standard deviations of the difference away, and a 5 %
    // regression ~2.5 above it.
    g.threshold_pct = 3;
    auto o = no_cache("run{rep}/trace.json");
    sw::GateSide base = sw::gate_side({tmp.path + "/base"}, o);
    sw::GateSide cand = sw::gate_side({tmp.path + "/cand"}, o);
    REQUIRE(base.runs.size() == 5);
    sw::GateResult res = sw::gate(base, cand, g);
    CHECK(res.regression);
    bool step_seen = false, gemm_seen = false;
    for (const auto& row : res.rows) {
      CAPTURE(row.name);
      if (row.level == "step") {
        step_seen = true;
        CHECK(row.cmp.verdict == sw::Verdict::Slower);
        CHECK(row.cmp.n_base == 5);
        CHECK(row.cmp.base_median == doctest::Approx(median(base_steps)).epsilon(1e-6));
        CHECK(row.cmp.cand_median == doctest::Approx(median(cand_steps)).epsilon(1e-6));
        CHECK(row.cmp.test.p == doctest::Approx(enumerated_p(base_steps, cand_steps)));
      }
      if (row.level == "kernel" && row.name == "sm90_xmma_gemm_bf16bf16_fake") {
        gemm_seen = true;
        CHECK(row.cmp.verdict == sw::Verdict::Slower);
        CHECK(row.cmp.change_pct > 2);
      }
    }
    CHECK(step_seen);
    CHECK(gemm_seen);
    Table t = sw::gate_table(res);
    CHECK(t.at(0, "level").text() == "step");
    CHECK(sw::gate_summary(res, g).find("gate: REGRESSION") == 0);

    // Named baseline: saved and read back, the same verdict.
    std::string file = sw::save_baseline("main-nightly", base, tmp.path + "/baselines");
    CHECK(fs::exists(file));
    sw::GateResult again =
        sw::gate(sw::load_baseline("main-nightly", tmp.path + "/baselines"), cand, g);
    CHECK(again.regression);
    CHECK(again.rows.size() == res.rows.size());
    CHECK_THROWS_AS(sw::load_baseline("missing", tmp.path + "/baselines"), sw::SweepError);
    CHECK_THROWS_AS(sw::save_baseline("../escape", base, tmp.path + "/baselines"), sw::SweepError);

    // 20 unchanged repeats: 5 fresh runs a side each time, nothing flagged.
    size_t flagged = 0;
    for (int rep = 0; rep < 20; ++rep) {
      std::string d = fmt::format("{}/same{}", tmp.path, rep);
      make_side(d + "/a", 1.0, 5, nullptr);
      make_side(d + "/b", 1.0, 5, nullptr);
      sw::GateResult same = sw::gate(sw::gate_side({d + "/a"}, o), sw::gate_side({d + "/b"}, o), g);
      flagged += same.regression ? 1 : 0;
    }
    CHECK(flagged == 0);

    // The CLI: exit 3 on the regression, 0 on an unchanged pair, gate.csv written.
    std::string bin = JARVIS_BINARY;
    std::string common = " --layout 'run{rep}/trace.json' --cache none --threshold 3";
    int rc =
        std::system((bin + " gate --base '" + tmp.path + "/base' --cand '" + tmp.path + "/cand'" +
                     common + " -o '" + tmp.path + "/gate_out' > '" + tmp.path + "/gate.txt'")
                        .c_str());
    CHECK(WEXITSTATUS(rc) == 3);
    CHECK(jarvis::testing::read_text(tmp.path + "/gate.txt").find("gate: REGRESSION") == 0);
    CHECK(fs::exists(tmp.path + "/gate_out/gate.csv"));
    rc = std::system((bin + " gate --base '" + tmp.path + "/same0/a' --cand '" + tmp.path +
                      "/same0/b'" + common + " > /dev/null")
                         .c_str());
    CHECK(WEXITSTATUS(rc) == 0);
    // Named baseline through the CLI, in a private directory.
    rc = std::system((bin + " gate --save-baseline nightly --base '" + tmp.path + "/base'" +
                      common + " --baseline-dir '" + tmp.path + "/bl' --cand '" + tmp.path +
                      "/cand' > /dev/null")
                         .c_str());
    CHECK(WEXITSTATUS(rc) == 3);
    CHECK(fs::exists(tmp.path + "/bl/nightly.json"));

    // Too few runs: cannot tell, not a pass or a fail on the evidence.
    sw::GateSide two = base;
    two.metrics.resize(2);
    two.runs.resize(2);
    sw::GateResult few = sw::gate(two, cand, g);
    CHECK_FALSE(few.regression);
    for (const auto& row : few.rows) CHECK(row.cmp.verdict == sw::Verdict::CannotTell);
  }

  TEST_CASE("sweep normalisation: a batch-size sweep ranks by time per sample") {
    jarvis::testing::TempDir tmp;
    // bs4 has the shortest steps; bs16 does 4x the samples in 2.5x the work.
    std::map<int, double> step_ms;
    for (auto [bs, work] : {std::pair{4, 1.0}, std::pair{8, 1.6}, std::pair{16, 2.5}}) {
      GenRun g = write_run(fmt::format("{}/bs{}/trace.json", tmp.path, bs), 1.0, 1.0, 3, work);
      double sum = 0;
      for (double s : g.step_ms) sum += s;
      step_ms[bs] = sum / static_cast<double>(g.step_ms.size());
    }
    sw::Sweep s = sw::load_sweep(tmp.path, no_cache("bs{batch}/trace.json"));
    REQUIRE(s.runs.size() == 3);
    Table summary = sw::gpu_timeline_tables(s)[3];
    for (size_t r = 0; r < summary.rows.size(); ++r) {
      int bs = static_cast<int>(summary.at(r, "batch").number());
      CAPTURE(bs);
      CHECK(summary.at(r, "unit").text() == "sample");
      CHECK(summary.at(r, "steps").number() == 3);
      CHECK(summary.at(r, "step_ms").number() == doctest::Approx(step_ms[bs]).epsilon(1e-9));
      CHECK(summary.at(r, "normalised_ms").number() ==
            doctest::Approx(step_ms[bs] / bs).epsilon(1e-9));
      CHECK(summary.at(r, "normalisation").text().find("batch") != std::string::npos);
      // bs16 is fastest per sample although bs4 has the least total time.
      CHECK(summary.at(r, "rank_by_normalised").number() == (bs == 16 ? 1 : bs == 8 ? 2 : 3));
    }
    CHECK(summary.at(0, "total_time_ms").number() < summary.at(2, "total_time_ms").number());
    // Without a work field: per step.
    sw::Sweep plain = sw::load_sweep(tmp.path, no_cache("bs{b}/trace.json"));
    Table p = sw::gpu_timeline_tables(plain)[3];
    CHECK(p.at(0, "unit").text() == "step");
    CHECK(p.at(0, "rank_by_normalised").number() == 1);  // bs4: the shortest step
  }

  TEST_CASE("sweep normalisation: without a batch field, the work comes from the trace's shapes") {
    jarvis::testing::TempDir tmp;
    // The layout's field names no work ("variant"); the traces' token
    // embedding says [4, 512], [8, 512], [16, 512].
    std::map<std::string, std::pair<int, double>> runs;  // variant -> batch, mean step ms
    for (auto [variant, bs, work] :
         {std::tuple{"small", 4, 1.0}, std::tuple{"mid", 8, 1.6}, std::tuple{"large", 16, 2.5}}) {
      GenRun g =
          write_run(fmt::format("{}/{}/trace.json", tmp.path, variant), 1.0, 1.0, 3, work, bs);
      double sum = 0;
      for (double x : g.step_ms) sum += x;
      runs[variant] = {bs, sum / static_cast<double>(g.step_ms.size())};
    }
    sw::Sweep s = sw::load_sweep(tmp.path, no_cache("{variant}/trace.json"));
    REQUIRE(s.runs.size() == 3);
    for (const auto& r : s.runs) CHECK(r.data.work_tokens == runs[r.input.values[0]].first * 512);
    Table summary = sw::gpu_timeline_tables(s)[3];
    for (size_t r = 0; r < summary.rows.size(); ++r) {
      std::string v = summary.at(r, "variant").text();
      CAPTURE(v);
      const int bs = runs.at(v).first;
      const double step = runs.at(v).second;
      CHECK(summary.at(r, "unit").text() == "token");
      CHECK(summary.at(r, "normalised_ms").number() ==
            doctest::Approx(step / (bs * 512.0)).epsilon(1e-9));
      CHECK(summary.at(r, "normalisation").text().find("trace's shapes") != std::string::npos);
      CHECK(summary.at(r, "normalisation").text().find(fmt::format("[{}, 512]", bs)) !=
            std::string::npos);
      CHECK(summary.at(r, "rank_by_normalised").number() == (bs == 16 ? 1 : bs == 8 ? 2 : 3));
    }
    // The same work in every run: the step stays the unit.
    jarvis::testing::TempDir same;
    for (const char* v : {"a", "b"})
      write_run(fmt::format("{}/{}/trace.json", same.path, v), 1.0, 1.0, 3, 1.0, 8);
    sw::Sweep flat = sw::load_sweep(same.path, no_cache("{variant}/trace.json"));
    CHECK(sw::gpu_timeline_tables(flat)[3].at(0, "unit").text() == "step");
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
