// Outputs 1-3: GEMM time variance per run (the seed's
// top5_gemm_kernels_time_variance.csv), its cross-run view per GEMM row, and
// the instances of the top rows with timestamps and collective overlap.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>

#include "pycompat/numeric.h"
#include "report/stats.h"
#include "sweep/number_cell.h"
#include "sweep/sweep.h"

namespace jarvis::sweep {
namespace {

struct TopRow {
  const Run* run;
  const GemmRow* gemm;
  double diff;
};

bool is_int_text(const std::string& s) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}

bool has_rank_field(const Sweep& sweep) {
  const auto& f = sweep.layout.fields;
  return std::find(f.begin(), f.end(), "rank") != f.end();
}

// Field columns, plus `rank` (from the trace) when the layout has no rank field.
std::vector<std::string> field_columns(const Sweep& sweep) {
  std::vector<std::string> cols = sweep.layout.fields;
  if (!has_rank_field(sweep)) cols.push_back("rank");
  return cols;
}

void add_run_cells(const Sweep& sweep, const Run& run, std::vector<Cell>& row) {
  add_field_cells(sweep, run, row);
  if (!has_rank_field(sweep)) row.push_back(run.data.rank >= 0 ? Cell(run.data.rank) : Cell());
}

// The run's top_k GEMM rows by max - min (stable: sheet order on ties).
std::vector<TopRow> top_rows(const Sweep& sweep, size_t top_k) {
  std::vector<TopRow> all;
  for (const Run& run : sweep.runs) {
    std::vector<TopRow> mine;
    for (const GemmRow& g : run.data.gemms)
      if (!g.kernel_name.empty()) mine.push_back({&run, &g, g.max_us - g.min_us});
    std::stable_sort(mine.begin(), mine.end(),
                     [](const TopRow& a, const TopRow& b) { return a.diff > b.diff; });
    if (mine.size() > top_k) mine.resize(top_k);
    all.insert(all.end(), mine.begin(), mine.end());
  }
  std::stable_sort(all.begin(), all.end(),
                   [](const TopRow& a, const TopRow& b) { return a.diff > b.diff; });
  return all;
}

const GemmInstance* extreme_instance(const GemmRow& g, bool longest) {
  const GemmInstance* best = nullptr;
  for (const auto& i : g.instances)
    if (!best || (longest ? i.kernel_time_us > best->kernel_time_us
                          : i.kernel_time_us < best->kernel_time_us))
      best = &i;
  return best;
}

// The shortest and longest instance's start as offsets from the run's first
// GPU event (ms): trace clocks start anywhere (~4.5e9 ms), an offset reads.
void add_timestamp_cells(const GemmRow& g, double first_gpu_ts, std::vector<Cell>& row) {
  const GemmInstance* lo = extreme_instance(g, false);
  const GemmInstance* hi = extreme_instance(g, true);
  if (!lo || !hi) {
    row.insert(row.end(), 3, Cell());
    return;
  }
  row.push_back(number_cell((lo->start_us - first_gpu_ts) / 1e3));
  row.push_back(number_cell((hi->start_us - first_gpu_ts) / 1e3));
  row.push_back(number_cell(std::fabs(hi->start_us - lo->start_us) / 1e3));
}

std::vector<std::string> instance_columns(const Sweep& sweep, bool overlap) {
  std::vector<std::string> cols = field_columns(sweep);
  for (const char* c :
       {"kernel_name", "op", "shape", "instance", "op_uid", "kernel_time_us", "start_us", "end_us",
        "start_since_first_gpu_ms", "end_since_first_gpu_ms", "is_min", "is_max", "config", "run"})
    cols.push_back(c);
  if (overlap)
    for (const char* c :
         {"overlapping_collective_count", "overlapping_collective_names", "overlap_us",
          "overlap_percent", "max_overlap_collective", "max_overlap_us"})
      cols.push_back(c);
  return cols;
}

void add_overlap_cells(const GemmInstance& inst, std::vector<Cell>& row) {
  std::string names;
  const OverlapHit* top = nullptr;
  for (const auto& h : inst.collectives) {
    names += (names.empty() ? "" : ";") + h.collective;
    if (!top || h.overlap_us > top->overlap_us) top = &h;
  }
  row.push_back(Cell(inst.collectives.size()));
  row.push_back(Cell(names));
  row.push_back(Cell(inst.overlap_us));
  row.push_back(inst.kernel_time_us > 0 ? Cell(100.0 * inst.overlap_us / inst.kernel_time_us)
                                        : Cell());
  row.push_back(top ? Cell(top->collective) : Cell());
  row.push_back(top ? Cell(top->overlap_us) : Cell());
}

Table instances_table(const Sweep& sweep, size_t top_k, bool overlap, std::string name) {
  Table t(std::move(name), instance_columns(sweep, overlap));
  for (const TopRow& top : top_rows(sweep, top_k)) {
    const GemmRow& g = *top.gemm;
    const GemmInstance* lo = extreme_instance(g, false);
    const GemmInstance* hi = extreme_instance(g, true);
    double t0 = top.run->data.first_gpu_ts;
    for (size_t k = 0; k < g.instances.size(); ++k) {
      const GemmInstance& inst = g.instances[k];
      std::vector<Cell> row;
      add_run_cells(sweep, *top.run, row);
      row.insert(row.end(),
                 {Cell(inst.kernel_name), Cell(g.op), Cell(g.shape), Cell(k), Cell(inst.op_uid),
                  number_cell(inst.kernel_time_us), number_cell(inst.start_us),
                  number_cell(inst.end_us), number_cell((inst.start_us - t0) / 1e3),
                  number_cell((inst.end_us - t0) / 1e3), Cell(&inst == lo), Cell(&inst == hi),
                  Cell(sweep.config_label(*top.run)), Cell(top.run->input.relative)});
      if (overlap) add_overlap_cells(inst, row);
      t.rows.push_back(std::move(row));
    }
  }
  return t;
}

struct Spread {
  std::vector<double> means;
  std::vector<const Run*> runs;
  int64_t instances = 0;
};

}  // namespace

Table run_health_table(const Sweep& sweep) {
  std::vector<std::string> cols = field_columns(sweep);
  for (const char* c : {"run", "kind", "confidence", "warnings"}) cols.push_back(c);
  Table t("run_health", cols);
  for (const Run& run : sweep.runs) {
    std::vector<Cell> row;
    add_run_cells(sweep, run, row);
    row.push_back(Cell(run.input.relative));
    row.push_back(Cell(std::string(run_kind_name(run.data.kind))));
    std::string warnings;
    for (const auto& w : run.data.health_warnings) warnings += (warnings.empty() ? "" : "; ") + w;
    auto text_or_na = [](const std::string& text) { return text.empty() ? Cell() : Cell(text); };
    row.push_back(text_or_na(run.data.health_confidence));  // a report input: no verdict
    row.push_back(text_or_na(warnings));
    t.rows.push_back(std::move(row));
  }
  return t;
}

void add_field_cells(const Sweep& sweep, const Run& run, std::vector<Cell>& row) {
  for (size_t f = 0; f < sweep.layout.fields.size(); ++f) {
    const std::string& v = run.input.values[f];
    bool as_int = f < sweep.int_fields.size() ? sweep.int_fields[f] : is_int_text(v);
    row.push_back(as_int ? Cell(static_cast<int64_t>(std::stoll(v))) : Cell(v));
  }
}

std::vector<bool> integer_fields(const Sweep& sweep) {
  std::vector<bool> out;
  for (size_t f = 0; f < sweep.layout.fields.size(); ++f)
    out.push_back(std::all_of(sweep.runs.begin(), sweep.runs.end(),
                              [f](const Run& r) { return is_int_text(r.input.values[f]); }));
  return out;
}

Table gemm_variance_table(const Sweep& sweep, size_t top_k) {
  std::vector<std::string> cols = field_columns(sweep);
  for (const char* c : {"kernel_name", "kernel_time_min_us", "kernel_time_max_us", "time_diff_us",
                        "kernel_time_mean_us", "kernel_time_std_us", "count", "op", "shape",
                        "min_duration_timestamp_ms", "max_duration_timestamp_ms",
                        "time_between_min_max_ms", "config", "run"})
    cols.push_back(c);
  Table t("gemm_variance", cols);
  for (const TopRow& top : top_rows(sweep, top_k)) {
    const GemmRow& g = *top.gemm;
    std::vector<Cell> row;
    add_run_cells(sweep, *top.run, row);
    row.insert(row.end(), {Cell(g.kernel_name), number_cell(g.min_us), number_cell(g.max_us),
                           number_cell(top.diff), number_cell(g.mean_us), number_cell(g.std_us),
                           Cell(g.count), Cell(g.op), Cell(g.shape)});
    add_timestamp_cells(g, top.run->data.first_gpu_ts, row);
    row.push_back(Cell(sweep.config_label(*top.run)));
    row.push_back(Cell(top.run->input.relative));
    t.rows.push_back(std::move(row));
  }
  return t;
}

Table gemm_kernel_spread_table(const Sweep& sweep) {
  std::map<std::tuple<std::string, std::string, std::string>, Spread> by_row;
  for (const Run& run : sweep.runs)
    for (const GemmRow& g : run.data.gemms) {
      if (g.kernel_name.empty() || std::isnan(g.mean_us)) continue;
      Spread& s = by_row[{g.kernel_name, g.op, g.shape}];
      s.means.push_back(g.mean_us);
      s.runs.push_back(&run);
      s.instances += g.count;
    }
  Table t("gemm_variance_by_kernel",
          {"kernel_name", "op", "shape", "runs", "instances", "mean_us", "std_us", "min_us",
           "max_us", "cv", "slowest_config", "slowest_run", "fastest_config", "fastest_run"});
  for (const auto& [key, s] : by_row) {
    size_t hi = std::max_element(s.means.begin(), s.means.end()) - s.means.begin();
    size_t lo = std::min_element(s.means.begin(), s.means.end()) - s.means.begin();
    double mean = pycompat::pandas_groupby_mean(s.means);
    double sd = pycompat::pandas_groupby_std(s.means);  // sample std (ddof 1), NaN for one run
    t.rows.push_back({Cell(std::get<0>(key)), Cell(std::get<1>(key)), Cell(std::get<2>(key)),
                      Cell(s.means.size()), Cell(s.instances), number_cell(mean), number_cell(sd),
                      number_cell(s.means[lo]), number_cell(s.means[hi]),
                      number_cell(mean > 0 ? sd / mean : NAN),
                      Cell(sweep.config_label(*s.runs[hi])), Cell(s.runs[hi]->input.relative),
                      Cell(sweep.config_label(*s.runs[lo])), Cell(s.runs[lo]->input.relative)});
  }
  int cv = t.col("cv");
  std::stable_sort(t.rows.begin(), t.rows.end(), [cv](const auto& a, const auto& b) {
    double x = a[cv].missing() ? -1 : a[cv].number(), y = b[cv].missing() ? -1 : b[cv].number();
    return x > y;
  });
  return t;
}

Table gemm_timestamps_table(const Sweep& sweep, size_t top_k) {
  return instances_table(sweep, top_k, false, "gemm_variance_timestamps");
}

Table gemm_overlap_table(const Sweep& sweep, size_t top_k) {
  return instances_table(sweep, top_k, true, "gemm_variance_coll_overlap");
}

}  // namespace jarvis::sweep
