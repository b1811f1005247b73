// Conclusions a sweep's numbers can carry: time normalised by the work a
// configuration does, what changed per configuration and whether the
// configuration can explain it, and why a table is empty.
#include <algorithm>
#include <cmath>
#include <map>
#include <regex>
#include <set>

#include <fmt/format.h>

#include "pycompat/numeric.h"
#include "sweep/number_cell.h"
#include "sweep/sweep.h"

namespace jarvis::sweep {
namespace {

double median(std::vector<double> v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return std::isnan(x); }), v.end());
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

double mean(const std::vector<double>& v) {
  return v.empty() ? NAN : pycompat::pandas_groupby_mean(v);
}

// A run's timeline value; TraceLens's kernel-only reports name idle "idle".
double timeline_ms(const Run& run, const std::string& type) {
  for (const auto& r : run.data.timeline)
    if (r.type == type || (type == "idle_time" && r.type == "idle")) return r.time_ms;
  return NAN;
}

double config_mean(const std::vector<const Run*>& runs, const std::string& type) {
  std::vector<double> v;
  for (const Run* r : runs)
    if (double x = timeline_ms(*r, type); !std::isnan(x)) v.push_back(x);
  return mean(v);
}

double gemm_total_ms(const std::vector<const Run*>& runs) {
  std::vector<double> v;
  for (const Run* r : runs) {
    if (r->data.gemms.empty()) continue;
    double sum = 0;
    for (const auto& g : r->data.gemms)
      if (!std::isnan(g.sum_us)) sum += g.sum_us;
    v.push_back(sum / 1e3);
  }
  return mean(v);
}

bool matches(const std::string& field, const char* pattern) {
  return std::regex_match(field, std::regex(pattern, std::regex::icase));
}

}  // namespace

std::vector<std::pair<std::string, std::vector<const Run*>>> config_runs(const Sweep& sweep) {
  std::vector<std::pair<std::string, std::vector<const Run*>>> out;
  std::map<std::string, size_t> index;
  for (const Run& run : sweep.runs) {
    auto [it, fresh] = index.emplace(sweep.config_label(run), out.size());
    if (fresh) out.push_back({it->first, {}});
    out[it->second].second.push_back(&run);
  }
  return out;
}

int64_t collective_count(const RunData& run) {
  if (!run.collectives.empty()) return static_cast<int64_t>(run.collectives.size());
  int64_t n = 0;
  for (const auto& g : run.collective_groups) n += g.count;
  return n;
}

std::string nccl_empty_reason(const Sweep& sweep) {
  for (const Run& r : sweep.runs)
    if (collective_count(r.data) > 0) return "";
  bool reports = std::any_of(sweep.runs.begin(), sweep.runs.end(),
                             [](const Run& r) { return r.data.kind != RunKind::Trace; });
  return reports ? "no collectives in this sweep: no run's report has a coll_analysis sheet with "
                   "rows (TraceLens writes it for traces with NCCL/RCCL kernels); give reports "
                   "made from multi-rank traces"
                 : "no collectives in this sweep: no run has an NCCL/RCCL kernel (a single-rank "
                   "run launches none, so NCCL settings cannot act); profile two or more ranks "
                   "to measure communication";
}

std::string gemm_empty_reason(const Sweep& sweep) {
  for (const Run& r : sweep.runs)
    for (const auto& g : r.data.gemms)
      if (!g.kernel_name.empty()) return "";
  bool reports = std::any_of(sweep.runs.begin(), sweep.runs.end(),
                             [](const Run& r) { return r.data.kind != RunKind::Trace; });
  return reports ? "no GEMM rows: the runs' reports have no GEMM sheet with kernel details "
                   "(kernel-only or rocprof reports have no ops); give reports made from "
                   "PyTorch profiler traces, or the traces"
                 : "no GEMM rows: no run has a GEMM op (aten::mm / addmm / ...) with kernels";
}

Normalisation normalise(const Sweep& sweep, const std::vector<const Run*>& runs) {
  Normalisation n;
  std::vector<double> steps, step_means;
  for (const Run* r : runs) {
    steps.push_back(static_cast<double>(r->data.step_ms.size()));
    if (!r->data.step_ms.empty()) step_means.push_back(mean(r->data.step_ms));
  }
  n.steps = mean(steps);
  n.step_ms = mean(step_means);
  double batch = NAN, seq = NAN, tokens = NAN;
  std::string batch_f, seq_f, tokens_f;
  const Run& first = *runs.front();
  for (size_t f = 0; f < sweep.layout.fields.size(); ++f) {
    const std::string& name = sweep.layout.fields[f];
    double v = NAN;
    try {
      v = std::stod(first.input.values[f]);
    } catch (...) {
      continue;
    }
    if (matches(
            name,
            "bs|batch|batch_?size|batchsize|mbs|gbs|micro_?batch(_size)?|global_?batch(_size)?"))
      batch = v, batch_f = name;
    else if (matches(name,
                     "seq|seqlen|seq_?len(gth)?|sequence_?len(gth)?|sl|ctx|context_?len(gth)?"))
      seq = v, seq_f = name;
    else if (matches(name, "tokens|num_?tokens|tokens_?per_?step"))
      tokens = v, tokens_f = name;
  }
  std::string per;
  if (!std::isnan(tokens)) {
    n.unit = "token", n.units_per_step = tokens,
    per = fmt::format("{} (field {})", "tokens", tokens_f);
  } else if (!std::isnan(batch) && !std::isnan(seq)) {
    n.unit = "token", n.units_per_step = batch * seq,
    per = fmt::format("({} x {})", batch_f, seq_f);
  } else if (!std::isnan(batch)) {
    n.unit = "sample", n.units_per_step = batch, per = fmt::format("{}", batch_f);
  } else if (!std::isnan(seq)) {
    n.unit = "token", n.units_per_step = seq, per = fmt::format("{} (one sequence)", seq_f);
  }
  if (per.empty()) {
    // No work field: the op shapes, when every trace run shows its work and
    // it differs between runs (else the step is the unit already).
    std::set<double> tokens_seen, samples_seen;
    bool all_tokens = true, all_samples = true, any = false;
    for (const Run& r : sweep.runs) {
      if (r.data.kind != RunKind::Trace) continue;
      any = true;
      all_tokens &= !std::isnan(r.data.work_tokens);
      all_samples &= !std::isnan(r.data.work_samples);
      tokens_seen.insert(r.data.work_tokens);
      samples_seen.insert(r.data.work_samples);
    }
    auto config_mean_of = [&](double RunData::*field) {
      std::vector<double> v;
      for (const Run* r : runs) v.push_back(r->data.*field);
      return mean(v);
    };
    std::string shape = runs.front()->data.work_shape;
    if (any && all_tokens && tokens_seen.size() > 1) {
      n.unit = "token", n.units_per_step = config_mean_of(&RunData::work_tokens);
      per = fmt::format("tokens per step from the trace's shapes ({})", shape);
    } else if (any && all_samples && samples_seen.size() > 1) {
      n.unit = "sample", n.units_per_step = config_mean_of(&RunData::work_samples);
      per = fmt::format("samples per step from the trace's shapes ({})", shape);
    }
  }
  double step = n.step_ms;
  std::string step_how = "mean step time";
  for (const Run* r : runs)
    if (!r->data.step_source.empty()) {
      step_how = r->data.step_source == "profiler_step"
                     ? "mean ProfilerStep time"
                     : "mean iteration time (iterations detected as repeats of the launch "
                       "sequence)";
      break;
    }
  if (std::isnan(step)) {
    step = config_mean(runs, "total_time");
    step_how = "total_time of the trace window (no ProfilerStep: taken as one step)";
  }
  if (n.unit.empty()) {
    n.unit = std::isnan(n.step_ms) ? "trace window" : "step";
    n.units_per_step = 1;
    n.how = step_how;
  } else {
    n.how = step_how + " / " + per;
  }
  n.value_ms = step / n.units_per_step;
  return n;
}

Table what_changed_table(const Sweep& sweep, const KernelChangeOptions& options) {
  std::map<std::string, std::string> kernel_texts = kernel_change_texts(sweep, options);
  std::vector<std::string> cols{"full_config"};
  for (const auto& f : sweep.config_fields()) cols.push_back(f);
  for (const char* c :
       {"num_ranks", "total_ms", "busy_ms", "idle_ms", "comm_ms", "gemm_total_ms", "delta_total_ms",
        "delta_busy_ms", "delta_idle_ms", "delta_comm_ms", "delta_gemm_ms", "steps", "step_ms",
        "step_spread_in_run_ms", "collectives", "explanation", "kernel_changes"})
    cols.push_back(c);
  Table t("what_changed", cols);
  struct Row {
    std::string label;
    const Run* first;
    size_t ranks;
    double total, busy, idle, comm, gemm, steps, step, step_spread;
    int64_t colls;
  };
  std::vector<Row> rows;
  for (const auto& [label, runs] : config_runs(sweep)) {
    Row r{label,
          runs.front(),
          runs.size(),
          config_mean(runs, "total_time"),
          config_mean(runs, "busy_time"),
          config_mean(runs, "idle_time"),
          NAN,
          gemm_total_ms(runs),
          0,
          NAN,
          NAN,
          0};
    r.comm = config_mean(runs, "total_comm_time");
    if (std::isnan(r.comm)) r.comm = config_mean(runs, "exposed_comm_time");
    Normalisation n = normalise(sweep, runs);
    r.steps = n.steps;
    r.step = n.step_ms;
    for (const Run* run : runs) {
      r.colls += collective_count(run->data);
      const auto& s = run->data.step_ms;
      if (s.size() >= 2) {
        auto [lo, hi] = std::minmax_element(s.begin(), s.end());
        r.step_spread = std::isnan(r.step_spread) ? *hi - *lo : std::max(r.step_spread, *hi - *lo);
      }
    }
    rows.push_back(r);
  }
  auto med = [&](double Row::*m) {
    std::vector<double> v;
    for (const Row& r : rows) v.push_back(r.*m);
    return median(v);
  };
  double m_total = med(&Row::total), m_busy = med(&Row::busy), m_idle = med(&Row::idle),
         m_comm = med(&Row::comm), m_gemm = med(&Row::gemm);
  std::vector<double> step_means;
  for (const Row& r : rows)
    if (!std::isnan(r.step)) step_means.push_back(r.step);
  double config_step_spread = step_means.size() >= 2
                                  ? *std::max_element(step_means.begin(), step_means.end()) -
                                        *std::min_element(step_means.begin(), step_means.end())
                                  : NAN;
  bool no_collectives =
      std::all_of(rows.begin(), rows.end(), [](const Row& r) { return r.colls == 0; });
  for (const Row& r : rows) {
    double dt = r.total - m_total, db = r.busy - m_busy, di = r.idle - m_idle;
    std::vector<std::string> why;
    why.push_back(
        fmt::format("total {:+.3f} ms vs the median configuration: busy {:+.3f} ms "
                    "({:+.2f} %), idle {:+.3f} ms",
                    dt, db, m_busy != 0 ? 100 * db / m_busy : NAN, di));
    if (!std::isnan(db) && !std::isnan(di) && std::fabs(di) > std::fabs(db) &&
        std::fabs(db) <= 0.005 * m_busy)
      why.push_back(
          "busy time is flat (within 0.5 %): the difference is GPU idle time, i.e. host "
          "side (launch, data loading, Python), which these fields do not obviously set");
    if (!std::isnan(r.step_spread) && !std::isnan(config_step_spread) &&
        r.step_spread >= config_step_spread)
      why.push_back(
          fmt::format("steps inside one run differ by {:.3f} ms, as much as the "
                      "configurations' mean steps do ({:.3f} ms): noise explains it",
                      r.step_spread, config_step_spread));
    if (no_collectives)
      why.push_back(
          "no collectives in this sweep: communication settings (NCCL threads, "
          "channels, ...) cannot act");
    std::vector<Cell> row{Cell(r.label)};
    std::vector<Cell> all;
    add_field_cells(sweep, *r.first, all);
    for (size_t f = 0; f < sweep.layout.fields.size(); ++f)
      if (sweep.layout.fields[f] != "rank") row.push_back(all[f]);
    std::string text;
    for (const auto& w : why) text += (text.empty() ? "" : "; ") + w;
    row.insert(row.end(),
               {Cell(r.ranks), number_cell(r.total), number_cell(r.busy), number_cell(r.idle),
                number_cell(r.comm), number_cell(r.gemm), number_cell(dt), number_cell(db),
                number_cell(di), number_cell(r.comm - m_comm), number_cell(r.gemm - m_gemm),
                number_cell(r.steps), number_cell(r.step), number_cell(r.step_spread),
                Cell(r.colls), Cell(text), Cell(kernel_texts[r.label])});
    t.rows.push_back(std::move(row));
  }
  return t;
}

}  // namespace jarvis::sweep
