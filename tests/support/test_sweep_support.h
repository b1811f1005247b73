// Shared by the sweep tests: the H100 sweep loaded once (cold, cache in a
// temp dir) with a `jarvis report` of every run, and helpers that recompute
// the GEMM variance rows from a GEMM.csv sheet.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "golden.h"
#include "report/table.h"
#include "sweep/sweep.h"
#include "test_analysis_support.h"

namespace jarvis::sweep_testing {

struct Config {
  std::string threads, channel, label;
};

struct H100 {
  std::string root;
  jarvis::testing::TempDir tmp;
  std::string cache_dir;
  sweep::Sweep sweep;
  std::vector<Config> configs;
  std::map<std::string, std::string> report_dir;  // label -> perf_report_csvs

  std::string relative(const Config& c) const {
    return c.threads + "thread/nccl_" + c.channel + "channels/torch_profiler/rank0/trace.json.gz";
  }
  std::string trace_path(const Config& c) const { return root + "/" + relative(c); }
  const Config& config_by_label(const std::string& label) const {
    for (const auto& c : configs)
      if (c.label == label) return c;
    throw std::runtime_error("no config " + label);
  }
};

// Built once per test run; the unique_ptr removes the temp dir at exit.
inline const H100& h100() {
  static std::unique_ptr<H100> h = [] {
    auto x = std::make_unique<H100>();
    x->root = golden::shared_dir() + "/sweeps/h100_gpt2_ddp";
    x->cache_dir = x->tmp.path + "/cache";
    for (const char* t : {"256", "512"})
      for (const char* c : {"28", "42", "56"})
        x->configs.push_back({t, c, std::string("threads=") + t + " channel=" + c});
    for (const auto& c : x->configs) {
      std::string out = x->tmp.path + "/report_" + c.threads + "_" + c.channel;
      std::string cmd = std::string(JARVIS_BINARY) + " report '" + x->trace_path(c) + "' --out '" +
                        out + "' > /dev/null";
      REQUIRE_MESSAGE(std::system(cmd.c_str()) == 0, cmd);
      x->report_dir[c.label] = out + "/perf_report_csvs";
    }
    sweep::LoadOptions o;
    o.cache_dir = x->cache_dir;
    o.jobs = 2;
    x->sweep = sweep::load_sweep(x->root, o);
    return x;
  }();
  return *h;
}

struct GemmSheetRow {
  std::string op, shape, details;
  double min = NAN, max = NAN, mean = NAN, std = NAN, count = 0;
};

inline double number_or_nan(const Table& t, size_t r, const std::string& col) {
  const Cell& c = t.at(r, col);
  return c.is_text() && !c.text().empty() ? std::stod(c.text()) : NAN;
}

inline std::vector<GemmSheetRow> read_gemm(const std::string& path) {
  Table t = read_csv_file(path);
  std::vector<GemmSheetRow> rows;
  for (size_t r = 0; r < t.rows.size(); ++r) {
    GemmSheetRow g;
    g.op = t.at(r, "name").text();
    for (const auto& col : t.columns) {
      if (col.rfind("param: ", 0) != 0) continue;
      const Cell& c = t.at(r, col);
      if (!c.is_text() || c.text() == "nan") continue;
      if (!g.shape.empty()) g.shape += ' ';
      g.shape.append(col, 7).append("=").append(c.text());
    }
    const Cell& d = t.at(r, "kernel_details__summarize_kernel_stats");
    g.details = d.is_text() ? d.text() : "";
    g.min = number_or_nan(t, r, "Kernel Time (µs)_min");
    g.max = number_or_nan(t, r, "Kernel Time (µs)_max");
    g.mean = number_or_nan(t, r, "Kernel Time (µs)_mean");
    g.std = number_or_nan(t, r, "Kernel Time (µs)_std");
    g.count = number_or_nan(t, r, "name_count");
    rows.push_back(g);
  }
  return rows;
}

struct ExpectedTop {
  std::vector<std::string> fields;
  GemmSheetRow row;
  double diff = 0;
};

// The k rows of a sheet with the largest max - min (sheet order on ties).
inline std::vector<ExpectedTop> top_gemm_rows(const std::vector<GemmSheetRow>& rows, size_t k) {
  std::vector<ExpectedTop> out;
  for (const auto& r : rows)
    if (!r.details.empty() && !std::isnan(r.min) && !std::isnan(r.max))
      out.push_back({{}, r, r.max - r.min});
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.diff > b.diff; });
  if (out.size() > k) out.resize(k);
  return out;
}

inline void check_variance_rows(const Table& t, const std::vector<ExpectedTop>& expected) {
  REQUIRE(t.rows.size() == expected.size());
  for (size_t r = 0; r < expected.size(); ++r) {
    const ExpectedTop& e = expected[r];
    CAPTURE(r);
    CAPTURE(e.row.op);
    CAPTURE(e.row.shape);
    CHECK(t.at(r, "threads").number() == std::stod(e.fields[0]));
    CHECK(t.at(r, "channel").number() == std::stod(e.fields[1]));
    CHECK(t.at(r, "rank").number() == std::stod(e.fields[2]));
    CHECK(t.at(r, "op").text() == e.row.op);
    CHECK(t.at(r, "shape").text() == e.row.shape);
    CHECK(t.at(r, "kernel_time_min_us").number() == doctest::Approx(e.row.min).epsilon(1e-12));
    CHECK(t.at(r, "kernel_time_max_us").number() == doctest::Approx(e.row.max).epsilon(1e-12));
    CHECK(t.at(r, "time_diff_us").number() == doctest::Approx(e.diff).epsilon(1e-12));
    CHECK(t.at(r, "count").number() == e.row.count);
    // The named kernel is one of the row's kernels, and not a memset.
    const std::string& k = t.at(r, "kernel_name").text();
    CHECK(e.row.details.find("'name': '" + k + "'") != std::string::npos);
    CHECK(k.rfind("Memset", 0) == std::string::npos);
  }
}

inline double pivot_cell(const Table& pivot, const std::string& type, const std::string& config) {
  for (size_t r = 0; r < pivot.rows.size(); ++r)
    if (pivot.at(r, "type").text() == type) return pivot.at(r, config).number();
  return NAN;
}

}  // namespace jarvis::sweep_testing
