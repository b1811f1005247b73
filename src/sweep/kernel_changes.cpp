// Per-kernel attribution of what changed between configurations: which
// kernels moved most against a reference configuration, in time per unit of
// work, and whether each move is beyond the noise.
//
// The noise test is the rank test of significance.h on the unit of
// repetition that can carry it: the configuration's runs when there are
// enough of them (the claim "this configuration changed the kernel"), else
// the iterations of the runs (which says only that the runs differ beyond
// step-to-step jitter), else "cannot tell". Picking the top kernels out of
// many and testing each at alpha would flag chance differences, so alpha is
// divided by the number of kernels compared (Bonferroni).
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

double mean_of(const std::vector<double>& v) {
  return v.empty() ? NAN : pycompat::pandas_groupby_mean(v);
}

// One kernel in one configuration, in µs per unit of work.
struct KernelSamples {
  std::vector<double> per_run;   // each run's mean per iteration
  std::vector<double> per_step;  // every iteration of runs with kernel_step_us
  double value() const { return mean_of(per_run); }
};

// A run's per-iteration time of every kernel; a run without per-iteration
// attribution gives its window total over its steps (the trace window as
// one step without steps, as normalise() takes it).
struct RunKernels {
  std::map<std::string, std::vector<double>> steps;  // empty without attribution
  std::map<std::string, double> per_step;
};

RunKernels run_kernels(const RunData& d) {
  RunKernels k;
  if (!d.step_ms.empty() && !d.kernel_step_us.empty()) {
    for (const auto& [name, v] : d.kernel_step_us) {
      k.steps[name] = v;
      k.per_step[name] = mean_of(v);
    }
    return k;
  }
  double steps = d.step_ms.empty() ? 1.0 : static_cast<double>(d.step_ms.size());
  for (const auto& [name, us] : d.kernel_time_us) k.per_step[name] = us / steps;
  return k;
}

struct ConfigKernels {
  std::string label;
  const Run* first = nullptr;
  Normalisation norm;
  std::vector<RunKernels> runs;
  size_t runs_with_steps = 0;
  size_t steps = 0;
};

ConfigKernels config_kernels(const Sweep& sweep, const std::string& label,
                             const std::vector<const Run*>& runs) {
  ConfigKernels c{label, runs.front(), normalise(sweep, runs), {}, 0, 0};
  for (const Run* r : runs) {
    c.runs.push_back(run_kernels(r->data));
    if (!c.runs.back().steps.empty()) {
      c.runs_with_steps++;
      c.steps += r->data.step_ms.size();
    }
  }
  return c;
}

// A kernel absent from a run took no time in it: 0, so that a kernel that
// appears or disappears with the configuration counts as a change.
KernelSamples samples_of(const ConfigKernels& c, const std::string& name) {
  KernelSamples s;
  const double units = c.norm.units_per_step;
  for (const RunKernels& r : c.runs) {
    auto it = r.per_step.find(name);
    s.per_run.push_back((it == r.per_step.end() ? 0.0 : it->second) / units);
    if (r.steps.empty()) continue;
    size_t n = r.steps.begin()->second.size();
    auto st = r.steps.find(name);
    for (size_t i = 0; i < n; ++i)
      s.per_step.push_back((st == r.steps.end() ? 0.0 : st->second[i]) / units);
  }
  return s;
}

struct Judgement {
  std::string noise;  // "across runs" | "across iterations" | ""
  std::string verdict;
  size_t n_ref = 0, n_cfg = 0;
  double p = NAN;
  std::string note;
};

// The noise estimate that can reach the corrected alpha: runs first, then
// iterations; else "cannot tell" with the sizes that fell short.
Judgement judge(const KernelSamples& ref, const KernelSamples& cfg, double alpha_k, double alpha,
                size_t kernels) {
  Judgement j;
  std::string corrected =
      fmt::format("{:.3g} ({} / {} kernel(s) compared, Bonferroni)", alpha_k, alpha, kernels);
  const std::vector<double>* a = nullptr;
  const std::vector<double>* b = nullptr;
  if (min_two_sided_p(ref.per_run.size(), cfg.per_run.size()) < alpha_k) {
    j.noise = "across runs", a = &ref.per_run, b = &cfg.per_run;
  } else if (min_two_sided_p(ref.per_step.size(), cfg.per_step.size()) < alpha_k) {
    j.noise = "across iterations", a = &ref.per_step, b = &cfg.per_step;
  }
  if (!a) {
    j.verdict = "cannot tell";
    j.n_ref = ref.per_run.size(), j.n_cfg = cfg.per_run.size();
    j.note = fmt::format(
        "cannot tell: {} + {} run(s) and {} + {} iteration(s); the rank test cannot reach p < "
        "{}; repeat the runs (or profile more steps)",
        ref.per_run.size(), cfg.per_run.size(), ref.per_step.size(), cfg.per_step.size(),
        corrected);
    return j;
  }
  RankTest t = mann_whitney(*a, *b);
  j.n_ref = a->size(), j.n_cfg = b->size(), j.p = t.p;
  bool beyond = t.p < alpha_k;
  j.verdict = beyond ? "beyond noise" : "within noise";
  const char* unit = j.noise == "across runs" ? "runs" : "iterations";
  j.note = fmt::format("{} the {} noise: p = {:.3g} {} {} with {} + {} {}", j.verdict, j.noise, t.p,
                       beyond ? "<" : ">=", corrected, j.n_ref, j.n_cfg, unit);
  if (beyond && j.noise == "across iterations")
    j.note +=
        "; this says the runs differ beyond step-to-step jitter, not that the configuration "
        "does: repeat the runs to claim it";
  return j;
}

struct KernelRow {
  std::string name;
  double ref = NAN, cfg = NAN, delta = NAN;
  Judgement j;
};

std::vector<KernelRow> compare_kernels(const ConfigKernels& ref, const ConfigKernels& cfg,
                                       const KernelChangeOptions& o) {
  std::set<std::string> names;
  for (const auto* c : {&ref, &cfg})
    for (const RunKernels& r : c->runs)
      for (const auto& [name, v] : r.per_step) names.insert(name);
  std::vector<KernelRow> rows;
  for (const std::string& name : names) {
    KernelSamples a = samples_of(ref, name), b = samples_of(cfg, name);
    rows.push_back({name, a.value(), b.value(), b.value() - a.value(), {}});
  }
  std::stable_sort(rows.begin(), rows.end(), [](const KernelRow& x, const KernelRow& y) {
    return std::fabs(x.delta) > std::fabs(y.delta);
  });
  if (rows.size() > o.top_n) rows.resize(o.top_n);
  double alpha_k = o.alpha / static_cast<double>(std::max<size_t>(1, names.size()));
  for (KernelRow& r : rows)
    r.j = judge(samples_of(ref, r.name), samples_of(cfg, r.name), alpha_k, o.alpha, names.size());
  return rows;
}

std::vector<ConfigKernels> all_config_kernels(const Sweep& sweep) {
  std::vector<ConfigKernels> out;
  for (const auto& [label, runs] : config_runs(sweep))
    out.push_back(config_kernels(sweep, label, runs));
  return out;
}

bool has_kernel_times(const Sweep& sweep) {
  return std::any_of(sweep.runs.begin(), sweep.runs.end(),
                     [](const Run& r) { return !r.data.kernel_time_us.empty(); });
}

}  // namespace

// Long template names share their first tens of characters (three CUTLASS
// GEMMs read alike): keep the start and the end, where they differ.
std::string short_kernel(const std::string& name) {
  if (name.size() <= 80) return name;
  return fmt::format("{}...{}", name.substr(0, 50), name.substr(name.size() - 27));
}

std::string kernel_reference(const Sweep& sweep, const KernelChangeOptions& options) {
  auto configs = config_runs(sweep);
  if (!options.reference.empty()) {
    std::string known;
    for (const auto& [label, runs] : configs) {
      if (label == options.reference) return label;
      known += (known.empty() ? "" : ", ") + label;
    }
    throw SweepError(
        fmt::format("reference configuration '{}' is not in the sweep; its "
                    "configurations are: {}",
                    options.reference, known));
  }
  std::vector<std::pair<double, std::string>> by_time;
  for (const auto& [label, runs] : configs)
    by_time.push_back({normalise(sweep, runs).value_ms, label});
  // A configuration without a time (no timeline) sorts last, not at random.
  std::stable_sort(by_time.begin(), by_time.end(), [](const auto& a, const auto& b) {
    if (std::isnan(a.first) || std::isnan(b.first))
      return !std::isnan(a.first) && std::isnan(b.first);
    return a.first < b.first;
  });
  return by_time.empty() ? "" : by_time[(by_time.size() - 1) / 2].second;
}

std::string kernel_changes_empty_reason(const Sweep& sweep) {
  if (!has_kernel_times(sweep))
    return "no per-kernel times: report runs (TraceLens CSVs or workbooks, rocprof files) "
           "carry no per-kernel GPU time of the run; give the traces";
  if (config_runs(sweep).size() < 2) return "one configuration: nothing to compare against";
  return "";
}

Table what_changed_kernels_table(const Sweep& sweep, const KernelChangeOptions& options) {
  std::vector<std::string> cols{"full_config"};
  for (const auto& f : sweep.config_fields()) cols.push_back(f);
  for (const char* c :
       {"reference", "kernel_rank", "kernel_name", "unit", "ref_us", "config_us", "delta_us",
        "change_percent", "noise", "ref_samples", "config_samples", "p_value", "verdict", "note"})
    cols.push_back(c);
  Table t("what_changed_kernels", cols);
  if (!kernel_changes_empty_reason(sweep).empty()) return t;
  const std::string ref_label = kernel_reference(sweep, options);
  std::vector<ConfigKernels> configs = all_config_kernels(sweep);
  const ConfigKernels& ref = *std::find_if(
      configs.begin(), configs.end(), [&](const ConfigKernels& c) { return c.label == ref_label; });
  for (const ConfigKernels& cfg : configs) {
    if (cfg.label == ref_label) continue;
    size_t rank = 0;
    for (const KernelRow& k : compare_kernels(ref, cfg, options)) {
      std::vector<Cell> row{Cell(cfg.label)};
      std::vector<Cell> all;
      add_field_cells(sweep, *cfg.first, all);
      for (size_t f = 0; f < sweep.layout.fields.size(); ++f)
        if (sweep.layout.fields[f] != "rank") row.push_back(all[f]);
      row.insert(row.end(), {Cell(ref_label), Cell(++rank), Cell(k.name),
                             Cell(fmt::format("µs per {}", cfg.norm.unit)), number_cell(k.ref),
                             number_cell(k.cfg), number_cell(k.delta),
                             k.ref != 0 ? number_cell(100 * k.delta / k.ref) : Cell(),
                             Cell(k.j.noise), Cell(k.j.n_ref), Cell(k.j.n_cfg), number_cell(k.j.p),
                             Cell(k.j.verdict), Cell(k.j.note)});
      t.rows.push_back(std::move(row));
    }
  }
  return t;
}

std::string kernel_changes_summary(const Table& k) {
  if (k.rows.empty()) return "";
  size_t top = 0, beyond = 0;
  for (size_t r = 0; r < k.rows.size(); ++r) {
    if (std::fabs(k.at(r, "delta_us").number()) > std::fabs(k.at(top, "delta_us").number()))
      top = r;
    beyond += k.at(r, "verdict").text() == "beyond noise";
  }
  const Cell& pct = k.at(top, "change_percent");
  std::string noise = k.at(top, "noise").text();
  return fmt::format(
      "kernels vs {}: largest change {} in {}: {:+.4g} {} ({}, {}{}); {} of {} top-kernel "
      "row(s) beyond noise",
      k.at(top, "reference").text(), short_kernel(k.at(top, "kernel_name").text()),
      k.at(top, "full_config").text(), k.at(top, "delta_us").number(), k.at(top, "unit").text(),
      pct.missing() ? std::string("new kernel") : fmt::format("{:+.2f} %", pct.number()),
      k.at(top, "verdict").text(), noise.empty() ? std::string() : fmt::format(", {}", noise),
      beyond, k.rows.size());
}

// Per configuration: its top kernel changes against the reference, as text.
std::map<std::string, std::string> kernel_change_texts(const Sweep& sweep,
                                                       const KernelChangeOptions& options) {
  std::map<std::string, std::string> out;
  if (std::string why = kernel_changes_empty_reason(sweep); !why.empty()) {
    for (const Run& r : sweep.runs) out[sweep.config_label(r)] = why;
    return out;
  }
  std::string ref = kernel_reference(sweep, options);
  out[ref] = "the reference configuration of the kernel changes";
  Table k = what_changed_kernels_table(sweep, options);
  for (size_t r = 0; r < k.rows.size(); ++r) {
    std::string& text = out[k.at(r, "full_config").text()];
    const Cell& pct = k.at(r, "change_percent");
    text += fmt::format(
        "{}{} {:+.4g} {} ({}, {})", text.empty() ? fmt::format("vs {}: ", ref) : "; ",
        short_kernel(k.at(r, "kernel_name").text()), k.at(r, "delta_us").number(),
        k.at(r, "unit").text(),
        pct.missing() ? std::string("new kernel") : fmt::format("{:+.2f} %", pct.number()),
        k.at(r, "verdict").text());
  }
  return out;
}

}  // namespace jarvis::sweep
