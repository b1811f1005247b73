// Output 7: baseline vs candidate sweep, matched by configuration label.
//
// The claim "configuration X got slower" is about runs, so its noise is the
// spread across repeated runs of X: the verdict comes from a Mann-Whitney
// test on the per-run values (significance.h) and is "cannot tell" when
// there are too few runs a side for the test to reach alpha. Two other
// estimates are reported beside it, each named for what it measures:
//   - within_run_p: the same test on the op instances (GEMM rows) or the
//     ProfilerSteps (step time) of the runs, with the sample sizes and a
//     bootstrap interval of the change of medians; it says these traces
//     differ, not that the configuration does (the across-run interval sits
//     beside across_run_p when each side has two runs or more);
//   - sweep_spread: how far this row's per-run value moves across all runs of
//     the baseline sweep (every configuration). When the configurations do
//     not act on it, that is what repeating a run moves it by; a change
//     smaller than it is no evidence of anything.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "pycompat/numeric.h"
#include "sweep/number_cell.h"
#include "sweep/significance.h"
#include "sweep/sweep.h"

namespace jarvis::sweep {
namespace {

constexpr double kAlpha = 0.05;

struct Sample {
  double sum = 0;                  // sum of instance times (mean x count per run)
  int64_t n = 0;                   // instances
  std::vector<double> run_values;  // per run: the row's mean
  std::vector<double> within;      // per instance (trace runs) or per step
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
      x.n += g.count;
      x.run_values.push_back(g.mean_us);
      for (const auto& i : g.instances) x.within.push_back(i.kernel_time_us);
      if (!x.first) x.first = &run;
    }
  return out;
}

double spread(const std::vector<double>& v) {
  if (v.size() < 2) return NAN;
  auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return *hi - *lo;
}

void add_config_fields(const Sweep& s, const Run& run, std::vector<Cell>& row) {
  std::vector<Cell> all;
  add_field_cells(s, run, all);
  for (size_t f = 0; f < s.layout.fields.size(); ++f)
    if (s.layout.fields[f] != "rank") row.push_back(all[f]);
}

// delta, change %, across-run p and bootstrap interval, within-run p, sample
// sizes and bootstrap interval, sweep spread, verdict, note.
void add_judgement(double b, double c, const Sample& xb, const Sample& xc, double sweep_spread,
                   const char* within_unit, const char* unit, std::vector<Cell>& row) {
  SampleComparison across = compare_samples(xb.run_values, xc.run_values, kAlpha, 0);
  RankTest within = mann_whitney(xb.within, xc.within);
  // The interval of the relative change of medians (fixed seed): how large
  // the change may be, where the p-value says only whether there is one.
  Interval within_ci = bootstrap_median_change_pct(xb.within, xc.within);
  bool has_within = !xb.within.empty() && !xc.within.empty();
  double delta = c - b;
  row.push_back(number_cell(delta));
  row.push_back(b != 0 ? number_cell(100.0 * delta / b) : Cell());
  row.push_back(across.verdict == Verdict::CannotTell ? Cell() : number_cell(across.test.p));
  row.push_back(number_cell(across.ci_pct.lo));
  row.push_back(number_cell(across.ci_pct.hi));
  row.push_back(has_within ? number_cell(within.p) : Cell());
  row.push_back(
      has_within ? Cell(fmt::format("{} + {} {}", xb.within.size(), xc.within.size(), within_unit))
                 : Cell());
  row.push_back(number_cell(within_ci.lo));
  row.push_back(number_cell(within_ci.hi));
  row.push_back(number_cell(sweep_spread));
  std::string note;
  if (across.verdict == Verdict::CannotTell) {
    note = fmt::format("cannot tell: {} run(s) a side, so the run-to-run noise is unknown",
                       across.n_base);
    if (across.n_base != across.n_cand)
      note = fmt::format(
          "cannot tell: {} baseline and {} candidate run(s), too few for a test "
          "across runs",
          across.n_base, across.n_cand);
  } else {
    note = fmt::format("across runs: {}", across.reason);
  }
  if (!xb.within.empty() && !xc.within.empty())
    note += within.min_p >= kAlpha
                ? fmt::format("; within the runs only {} + {} {}: no test possible",
                              xb.within.size(), xc.within.size(), within_unit)
                : fmt::format(
                      "; within the runs ({} + {} {}) p = {:.3g}, median change 95 % CI "
                      "{:+.2f} .. {:+.2f} % (bootstrap), which says these traces differ, not "
                      "the configurations",
                      xb.within.size(), xc.within.size(), within_unit, within.p, within_ci.lo,
                      within_ci.hi);
  if (!std::isnan(sweep_spread) && std::fabs(delta) <= sweep_spread)
    note += fmt::format(
        "; the change ({:.4g} {}) is within the baseline sweep's own spread "
        "across its runs ({:.4g} {})",
        std::fabs(delta), unit, sweep_spread, unit);
  row.push_back(Cell(std::string(verdict_name(across.verdict))));
  row.push_back(Cell(note));
}

const char* const kJudgementColumns[] = {"across_run_p",
                                         "across_run_ci_low_percent",
                                         "across_run_ci_high_percent",
                                         "within_run_p",
                                         "within_run_samples",
                                         "within_run_ci_low_percent",
                                         "within_run_ci_high_percent",
                                         "sweep_spread",
                                         "verdict",
                                         "note"};

Table kernel_changes(const Sweep& base, const Sweep& cand) {
  auto b = gemm_samples(base), c = gemm_samples(cand);
  // The row's per-run means over every run of the baseline sweep.
  std::map<std::tuple<std::string, std::string, std::string>, std::vector<double>> across_sweep;
  for (const auto& [key, x] : b) {
    auto& v = across_sweep[{std::get<1>(key), std::get<2>(key), std::get<3>(key)}];
    v.insert(v.end(), x.run_values.begin(), x.run_values.end());
  }
  std::vector<std::string> cols{"full_config"};
  for (const auto& f : base.config_fields()) cols.push_back(f);
  for (const char* x : {"kernel_name", "op", "shape", "base_mean_us", "cand_mean_us", "base_runs",
                        "cand_runs", "base_count", "cand_count", "delta_us", "change_percent"})
    cols.push_back(x);
  for (const char* x : kJudgementColumns)
    cols.push_back(std::string(x) == "sweep_spread" ? "sweep_spread_us" : x);
  Table t("compare_gemm_kernels", cols);
  for (const auto& [key, xb] : b) {
    auto it = c.find(key);
    if (it == c.end()) continue;
    const Sample& xc = it->second;
    std::vector<Cell> row{Cell(std::get<0>(key))};
    add_config_fields(base, *xb.first, row);
    double mb = xb.sum / static_cast<double>(xb.n), mc = xc.sum / static_cast<double>(xc.n);
    row.insert(row.end(), {Cell(std::get<1>(key)), Cell(std::get<2>(key)), Cell(std::get<3>(key)),
                           number_cell(mb), number_cell(mc), Cell(xb.run_values.size()),
                           Cell(xc.run_values.size()), Cell(xb.n), Cell(xc.n)});
    double sp = spread(across_sweep[{std::get<1>(key), std::get<2>(key), std::get<3>(key)}]);
    add_judgement(mb, mc, xb, xc, sp, "instances", "µs", row);
    t.rows.push_back(std::move(row));
  }
  int d = t.col("delta_us");
  std::stable_sort(t.rows.begin(), t.rows.end(), [d](const auto& x, const auto& y) {
    return std::fabs(x[d].number()) > std::fabs(y[d].number());
  });
  return t;
}

// Per config: per timeline type the per-run values; "step_time" from the
// runs' ProfilerSteps (per-run mean, the steps themselves as within-run samples).
struct ConfigSamples {
  std::map<std::string, Sample> by_type;
  const Run* first = nullptr;
};

std::map<std::string, ConfigSamples> timeline_samples(const Sweep& s,
                                                      std::vector<std::string>& order) {
  std::map<std::string, ConfigSamples> out;
  for (const Run& run : s.runs) {
    std::string label = s.config_label(run);
    auto [it, fresh] = out.try_emplace(label);
    if (fresh) order.push_back(label);
    if (!it->second.first) it->second.first = &run;
    for (const auto& r : run.data.timeline) {
      Sample& x = it->second.by_type[r.type];
      x.run_values.push_back(r.time_ms);
      x.sum += r.time_ms;
      x.n++;
    }
    if (!run.data.step_ms.empty()) {
      Sample& x = it->second.by_type["step_time"];
      double mean = pycompat::pandas_groupby_mean(run.data.step_ms);
      x.run_values.push_back(mean);
      x.sum += mean;
      x.n++;
      x.within.insert(x.within.end(), run.data.step_ms.begin(), run.data.step_ms.end());
    }
  }
  return out;
}

Table timeline_changes(const Sweep& base, const Sweep& cand) {
  std::vector<std::string> order, unused;
  auto b = timeline_samples(base, order);
  auto c = timeline_samples(cand, unused);
  std::map<std::string, std::vector<double>> across_sweep;
  for (const auto& [label, cs] : b)
    for (const auto& [type, x] : cs.by_type) {
      auto& v = across_sweep[type];
      v.insert(v.end(), x.run_values.begin(), x.run_values.end());
    }
  std::vector<std::string> cols{"full_config"};
  for (const auto& f : base.config_fields()) cols.push_back(f);
  for (const char* x :
       {"type", "base_ms", "cand_ms", "base_runs", "cand_runs", "delta_ms", "change_percent"})
    cols.push_back(x);
  for (const char* x : kJudgementColumns)
    cols.push_back(std::string(x) == "sweep_spread" ? "sweep_spread_ms" : x);
  Table t("compare_gpu_timeline", cols);
  for (const std::string& label : order) {
    auto it = c.find(label);
    if (it == c.end()) continue;
    for (const auto& [type, xb] : b[label].by_type) {
      auto jt = it->second.by_type.find(type);
      if (jt == it->second.by_type.end()) continue;
      const Sample& xc = jt->second;
      std::vector<Cell> row{Cell(label)};
      add_config_fields(base, *b[label].first, row);
      double mb = xb.sum / static_cast<double>(xb.n), mc = xc.sum / static_cast<double>(xc.n);
      row.insert(row.end(), {Cell(type), number_cell(mb), number_cell(mc),
                             Cell(xb.run_values.size()), Cell(xc.run_values.size())});
      add_judgement(mb, mc, xb, xc, spread(across_sweep[type]), "steps", "ms", row);
      t.rows.push_back(std::move(row));
    }
  }
  return t;
}

std::string labels_text(const std::set<std::string>& labels) {
  std::string out;
  size_t k = 0;
  for (const auto& l : labels) {
    if (k++ == 4) return out + ", ...";
    out += (out.empty() ? "" : ", ") + l;
  }
  return out;
}

}  // namespace

std::vector<Table> compare_sweeps(const Sweep& base, const Sweep& cand) {
  if (base.config_fields() != cand.config_fields())
    throw SweepError("the two sweeps have different config fields; give both the same layout");
  std::set<std::string> lb, lc;
  for (const Run& r : base.runs) lb.insert(base.config_label(r));
  for (const Run& r : cand.runs) lc.insert(cand.config_label(r));
  bool common = std::any_of(lb.begin(), lb.end(), [&](const auto& l) { return lc.count(l) > 0; });
  if (!common)
    throw SweepError(fmt::format(
        "no configuration in common: the baseline has {}, the candidate {}; compare sweeps of the "
        "same configurations (or use `jarvis gate` to compare all runs of each side as repeats)",
        labels_text(lb), labels_text(lc)));
  return {timeline_changes(base, cand), kernel_changes(base, cand)};
}

}  // namespace jarvis::sweep
