// Output 7: baseline vs candidate sweep, matched by configuration label.
// A change counts as noise when it is smaller than twice the standard error
// of the difference of the two means: for a GEMM row the spread of its
// instances within the runs, for a timeline total the spread across the
// config's ranks (unknown with one rank per config).
#include <algorithm>
#include <cmath>
#include <map>

#include "pycompat/numeric.h"
#include "report/stats.h"
#include "sweep/sweep.h"

namespace jarvis::sweep {
namespace {

Cell num(double v) {
  return std::isnan(v) ? Cell() : Cell(v);
}

struct Sample {
  double sum = 0, sumsq_dev = 0;  // pooled over ranks: sum of means, within-run variance x (n-1)
  int64_t n = 0;                  // instances
  std::vector<double> run_means;
  const Run* first = nullptr;
};

using RowKey = std::tuple<std::string, std::string, std::string, std::string>;

std::map<RowKey, Sample> gemm_samples(const Sweep& s) {
  std::map<RowKey, Sample> out;
  for (const Run& run : s.runs)
    for (const GemmRow& g : run.data.gemms) {
      if (g.kernel_name.empty() || std::isnan(g.mean_us) || g.count <= 0) continue;
      Sample& x = out[{s.config_label(run), g.kernel_name, g.op, g.shape}];
      x.sum += g.mean_us * static_cast<double>(g.count);
      if (!std::isnan(g.std_us) && g.count > 1)
        x.sumsq_dev += g.std_us * g.std_us * static_cast<double>(g.count - 1);
      x.n += g.count;
      x.run_means.push_back(g.mean_us);
      if (!x.first) x.first = &run;
    }
  return out;
}

double mean_of(const Sample& x) {
  return x.n ? x.sum / static_cast<double>(x.n) : NAN;
}
// Standard error of the mean from the pooled within-run variance.
double std_error(const Sample& x) {
  if (x.n < 2) return NAN;
  return std::sqrt(x.sumsq_dev / static_cast<double>(x.n - 1) / static_cast<double>(x.n));
}

void add_config_fields(const Sweep& s, const Run& run, std::vector<Cell>& row) {
  std::vector<Cell> all;
  add_field_cells(s, run, all);
  for (size_t f = 0; f < s.layout.fields.size(); ++f)
    if (s.layout.fields[f] != "rank") row.push_back(all[f]);
}

void add_change(double b, double c, double noise, std::vector<Cell>& row) {
  row.push_back(num(c - b));
  row.push_back(b != 0 ? num(100.0 * (c - b) / b) : Cell());
  row.push_back(num(noise));
  if (std::isnan(noise)) {
    row.push_back(Cell());
    row.push_back(Cell("no noise estimate: one sample per side"));
  } else {
    bool inside = std::fabs(c - b) <= noise;
    row.push_back(Cell(inside));
    row.push_back(Cell(inside ? "inside run-to-run noise" : "beyond run-to-run noise"));
  }
}

Table kernel_changes(const Sweep& base, const Sweep& cand) {
  auto b = gemm_samples(base), c = gemm_samples(cand);
  std::vector<std::string> cols{"full_config"};
  for (const auto& f : base.config_fields()) cols.push_back(f);
  for (const char* x :
       {"kernel_name", "op", "shape", "base_mean_us", "cand_mean_us", "base_count", "cand_count",
        "delta_us", "change_percent", "noise_us", "within_noise", "note"})
    cols.push_back(x);
  Table t("compare_gemm_kernels", cols);
  for (const auto& [key, xb] : b) {
    auto it = c.find(key);
    if (it == c.end()) continue;
    const Sample& xc = it->second;
    std::vector<Cell> row{Cell(std::get<0>(key))};
    add_config_fields(base, *xb.first, row);
    double mb = mean_of(xb), mc = mean_of(xc);
    double se = std::hypot(std_error(xb), std_error(xc));
    row.insert(row.end(), {Cell(std::get<1>(key)), Cell(std::get<2>(key)), Cell(std::get<3>(key)),
                           num(mb), num(mc), Cell(xb.n), Cell(xc.n)});
    add_change(mb, mc, 2 * se, row);
    t.rows.push_back(std::move(row));
  }
  int d = t.col("delta_us");
  std::stable_sort(t.rows.begin(), t.rows.end(), [d](const auto& x, const auto& y) {
    return std::fabs(x[d].number()) > std::fabs(y[d].number());
  });
  return t;
}

struct TimelineSample {
  std::map<std::string, std::vector<double>> by_type;  // per rank, ms
  const Run* first = nullptr;
};

std::map<std::string, TimelineSample> timeline_samples(const Sweep& s,
                                                       std::vector<std::string>& order) {
  std::map<std::string, TimelineSample> out;
  for (const Run& run : s.runs) {
    std::string label = s.config_label(run);
    auto [it, fresh] = out.try_emplace(label);
    if (fresh) order.push_back(label);
    if (!it->second.first) it->second.first = &run;
    for (const auto& r : run.data.timeline) it->second.by_type[r.type].push_back(r.time_ms);
  }
  return out;
}

double se_of(const std::vector<double>& v) {
  return v.size() < 2 ? NAN
                      : pycompat::pandas_groupby_std(v) / std::sqrt(static_cast<double>(v.size()));
}

Table timeline_changes(const Sweep& base, const Sweep& cand) {
  std::vector<std::string> order, unused;
  auto b = timeline_samples(base, order);
  auto c = timeline_samples(cand, unused);
  std::vector<std::string> cols{"full_config"};
  for (const auto& f : base.config_fields()) cols.push_back(f);
  for (const char* x : {"type", "base_ms", "cand_ms", "base_ranks", "cand_ranks", "delta_ms",
                        "change_percent", "noise_ms", "within_noise", "note"})
    cols.push_back(x);
  Table t("compare_gpu_timeline", cols);
  for (const std::string& label : order) {
    auto it = c.find(label);
    if (it == c.end()) continue;
    for (const auto& [type, vb] : b[label].by_type) {
      auto jt = it->second.by_type.find(type);
      if (jt == it->second.by_type.end()) continue;
      std::vector<Cell> row{Cell(label)};
      add_config_fields(base, *b[label].first, row);
      double mb = pycompat::pandas_groupby_mean(vb), mc = pycompat::pandas_groupby_mean(jt->second);
      row.insert(row.end(),
                 {Cell(type), num(mb), num(mc), Cell(vb.size()), Cell(jt->second.size())});
      add_change(mb, mc, 2 * std::hypot(se_of(vb), se_of(jt->second)), row);
      t.rows.push_back(std::move(row));
    }
  }
  return t;
}

}  // namespace

std::vector<Table> compare_sweeps(const Sweep& base, const Sweep& cand) {
  if (base.config_fields() != cand.config_fields())
    throw SweepError("the two sweeps have different config fields; give both the same layout");
  return {timeline_changes(base, cand), kernel_changes(base, cand)};
}

}  // namespace jarvis::sweep
