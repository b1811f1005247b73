// Outputs 4 and 5: per-configuration views (mean over the ranks of a config):
// the GPU timeline as the seed's gpu_timeline_all_configs_mean.xlsx sheets,
// and NCCL statistics with cross-rank skew where several ranks were traced.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "collectives/collectives.h"
#include "pycompat/numeric.h"
#include "report/stats.h"
#include "sweep/number_cell.h"
#include "sweep/sweep.h"

namespace jarvis::sweep {
namespace {

namespace co = collectives;

// Runs grouped by configuration label, in sweep (sorted field) order.
std::vector<std::pair<std::string, std::vector<const Run*>>> configs(const Sweep& sweep) {
  std::vector<std::pair<std::string, std::vector<const Run*>>> out;
  std::map<std::string, size_t> index;
  for (const Run& run : sweep.runs) {
    std::string label = sweep.config_label(run);
    auto [it, fresh] = index.emplace(label, out.size());
    if (fresh) out.push_back({label, {}});
    out[it->second].second.push_back(&run);
  }
  return out;
}

// Config field cells of a run (the layout fields without rank).
void add_config_cells(const Sweep& sweep, const Run& run, std::vector<Cell>& row) {
  std::vector<Cell> all;
  add_field_cells(sweep, run, all);
  for (size_t f = 0; f < sweep.layout.fields.size(); ++f)
    if (sweep.layout.fields[f] != "rank") row.push_back(all[f]);
}

std::vector<std::string> config_columns(const Sweep& sweep) {
  std::vector<std::string> cols{"full_config"};
  for (const auto& f : sweep.config_fields()) cols.push_back(f);
  cols.push_back("num_ranks");
  return cols;
}

struct TimelineMean {
  std::map<std::string, std::pair<double, double>> by_type;  // type -> (time ms, percent)
};

TimelineMean timeline_mean(const std::vector<const Run*>& runs) {
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> acc;
  for (const Run* r : runs)
    for (const TimelineRow& row : r->data.timeline) {
      acc[row.type].first.push_back(row.time_ms);
      acc[row.type].second.push_back(row.percent);
    }
  TimelineMean m;
  for (auto& [type, v] : acc)
    m.by_type[type] = {pycompat::pandas_groupby_mean(v.first),
                       pycompat::pandas_groupby_mean(v.second)};
  return m;
}

Table pivot(const std::vector<std::pair<std::string, TimelineMean>>& means, bool percent,
            std::string name) {
  std::vector<std::string> cols{"type"};
  std::set<std::string> types;
  for (const auto& [label, m] : means) {
    cols.push_back(label);
    for (const auto& [type, v] : m.by_type) types.insert(type);
  }
  Table t(std::move(name), cols);
  for (const std::string& type : types) {
    std::vector<Cell> row{Cell(type)};
    for (const auto& [label, m] : means) {
      auto it = m.by_type.find(type);
      row.push_back(it == m.by_type.end()
                        ? Cell()
                        : number_cell(percent ? it->second.second : it->second.first));
    }
    t.rows.push_back(std::move(row));
  }
  return t;
}

// ---- NCCL --------------------------------------------------------------------

using GroupKey = std::tuple<std::string, std::string, std::string, double, int64_t>;

struct NcclAcc {
  std::vector<double> durs;  // per instance (trace runs)
  std::vector<double> algbw, busbw;
  int64_t count = 0;
  double dur_sum = 0, dur_min = INFINITY, dur_max = -INFINITY;
  std::set<const Run*> ranks;
  std::vector<double> start_skew, end_skew;
};

co::CollectiveInstance to_instance(const CollectiveRecord& r) {
  co::CollectiveInstance i;
  i.kernel.ts = r.ts;
  i.kernel.dur = r.dur;
  i.kernel_name = r.kernel_name;
  i.process_group = r.process_group;
  i.collective = r.collective;
  i.type = co::collective_type(r.collective);
  i.dtype = r.dtype;
  i.in_msg_nelems = r.in_msg_nelems;
  i.group_size = r.group_size;
  i.group_ranks = r.group_ranks;
  i.seq = r.seq;
  i.msg_size_mb = r.msg_size_mb;
  i.bw = {r.algbw, r.busbw};
  return i;
}

// Skews of a config's ranks, by group key; "" or the reason they are missing.
std::string add_skews(const Sweep& sweep, const std::vector<const Run*>& runs,
                      std::map<GroupKey, NcclAcc>& acc) {
  std::vector<co::RankTrace> ranks;
  for (const Run* r : runs) {
    if (r->data.collectives.empty()) continue;
    co::RankTrace rt;
    rt.rank = sweep.rank_of(*r);
    rt.path = r->input.path;
    for (const auto& rec : r->data.collectives) rt.instances.push_back(to_instance(rec));
    ranks.push_back(std::move(rt));
  }
  if (ranks.size() < 2) return ranks.empty() ? "" : "one rank: no skew";
  try {
    co::MultiRankReport rep = co::match_ranks(std::move(ranks));
    for (const auto& m : rep.instances) {
      auto it = acc.find({m.process_group, m.collective, m.dtype, m.msg_size_mb, m.group_size});
      if (it == acc.end()) continue;
      it->second.start_skew.push_back(m.start_skew_us);
      it->second.end_skew.push_back(m.end_skew_us);
    }
    return "";
  } catch (const co::CollectiveError& e) {
    return std::string("ranks not matched: ") + e.what();
  }
}

void accumulate_run(const Run& run, std::map<GroupKey, NcclAcc>& acc) {
  if (!run.data.collectives.empty()) {
    for (const auto& r : run.data.collectives) {
      NcclAcc& a = acc[{r.process_group, r.collective, r.dtype, r.msg_size_mb, r.group_size}];
      a.durs.push_back(r.dur);
      a.algbw.push_back(r.algbw);
      a.busbw.push_back(r.busbw);
      a.count++;
      a.dur_sum += r.dur;
      a.dur_min = std::min(a.dur_min, r.dur);
      a.dur_max = std::max(a.dur_max, r.dur);
      a.ranks.insert(&run);
    }
    return;
  }
  // Report directories: coll_analysis groups, bandwidth from the mean duration.
  for (const auto& g : run.data.collective_groups) {
    NcclAcc& a = acc[{g.process_group, g.collective, g.dtype, g.msg_size_mb, g.group_size}];
    double mean = g.count ? g.dur_sum / static_cast<double>(g.count) : NAN;
    auto bw = co::bandwidth(co::collective_type(g.collective), g.msg_size_mb, g.group_size, mean);
    a.algbw.push_back(bw.algbw_gbps);
    a.busbw.push_back(bw.busbw_gbps);
    a.count += g.count;
    a.dur_sum += g.dur_sum;
    a.dur_min = std::min(a.dur_min, g.dur_min);
    a.dur_max = std::max(a.dur_max, g.dur_max);
    a.ranks.insert(&run);
  }
}

// Extremes ignoring NaN (a bandwidth is NaN when its size is unknown).
double extreme(const std::vector<double>& v, bool largest) {
  double out = NAN;
  for (double x : v)
    if (!std::isnan(x) && (std::isnan(out) || (largest ? x > out : x < out))) out = x;
  return out;
}
double max_of(const std::vector<double>& v) {
  return extreme(v, true);
}
double min_of(const std::vector<double>& v) {
  return extreme(v, false);
}

}  // namespace

std::vector<Table> gpu_timeline_tables(const Sweep& sweep) {
  std::vector<std::string> cols = config_columns(sweep);
  cols.insert(cols.end(), {"type", "time ms", "percent"});
  Table all("All_Data", cols);
  std::vector<std::pair<std::string, TimelineMean>> means;
  Table summary("Summary_By_Config", config_columns(sweep));
  const char* keys[] = {"computation_time", "exposed_comm_time", "exposed_memcpy_time",
                        "busy_time",        "idle_time",         "total_time"};
  for (const char* k : keys) summary.columns.push_back(std::string(k) + "_ms");
  for (const char* c : {"gemm_total_ms", "steps", "step_ms", "normalised_ms", "unit",
                        "normalisation", "rank_by_normalised"})
    summary.columns.push_back(c);
  for (const auto& [label, runs] : configs(sweep)) {
    TimelineMean m = timeline_mean(runs);
    std::vector<Cell> head{Cell(label)};
    add_config_cells(sweep, *runs.front(), head);
    head.push_back(Cell(runs.size()));
    for (const auto& [type, v] : m.by_type) {
      std::vector<Cell> row = head;
      row.insert(row.end(), {Cell(type), number_cell(v.first), number_cell(v.second)});
      all.rows.push_back(std::move(row));
    }
    std::vector<Cell> srow = head;
    for (const char* k : keys) {
      auto it = m.by_type.find(k);
      // TraceLens's kernel-only (rocprof) reports name idle time "idle".
      if (it == m.by_type.end() && std::string(k) == "idle_time") it = m.by_type.find("idle");
      srow.push_back(it == m.by_type.end() ? Cell() : number_cell(it->second.first));
    }
    std::vector<double> gemm;
    for (const Run* r : runs) {
      if (r->data.gemms.empty()) continue;
      double sum = 0;
      for (const auto& g : r->data.gemms)
        if (!std::isnan(g.sum_us)) sum += g.sum_us;
      gemm.push_back(sum / 1e3);
    }
    srow.push_back(gemm.empty() ? Cell() : number_cell(pycompat::pandas_groupby_mean(gemm)));
    Normalisation n = normalise(sweep, runs);
    srow.insert(srow.end(), {number_cell(n.steps), number_cell(n.step_ms), number_cell(n.value_ms),
                             Cell(n.unit), Cell(n.how), Cell()});
    summary.rows.push_back(std::move(srow));
    means.push_back({label, std::move(m)});
  }
  // 1 = least time per unit of work: the ranking a batch-size sweep needs
  // (total time would name the smallest batch fastest).
  int nc = summary.col("normalised_ms"), rc = summary.col("rank_by_normalised");
  std::vector<size_t> order(summary.rows.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto key = [&](size_t i) {
    const Cell& c = summary.rows[i][nc];
    return c.missing() ? INFINITY : c.number();
  };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key(a) < key(b); });
  for (size_t k = 0; k < order.size(); ++k)
    if (!summary.rows[order[k]][nc].missing()) summary.rows[order[k]][rc] = Cell(k + 1);
  return {all, pivot(means, false, "Pivot_Time_ms"), pivot(means, true, "Pivot_Percent"), summary};
}

Table nccl_table(const Sweep& sweep) {
  std::vector<std::string> cols = config_columns(sweep);
  for (const char* c : {"process_group",
                        "collective",
                        "dtype",
                        "msg_size_mb",
                        "group_size",
                        "count",
                        "count_per_rank",
                        "comm_latency_mean_us",
                        "comm_latency_median_us",
                        "comm_latency_min_us",
                        "comm_latency_max_us",
                        "total_comm_latency_ms_per_rank",
                        "algbw_gbps_mean",
                        "algbw_gbps_min",
                        "algbw_gbps_max",
                        "busbw_gbps_mean",
                        "busbw_gbps_min",
                        "busbw_gbps_max",
                        "start_skew_us_mean",
                        "start_skew_us_max",
                        "end_skew_us_mean",
                        "end_skew_us_max",
                        "note"})
    cols.push_back(c);
  Table t("nccl_by_config", cols);
  for (const auto& [label, runs] : configs(sweep)) {
    std::map<GroupKey, NcclAcc> acc;
    for (const Run* r : runs) accumulate_run(*r, acc);
    std::string note = add_skews(sweep, runs, acc);
    for (const auto& [key, a] : acc) {
      std::vector<Cell> row{Cell(label)};
      add_config_cells(sweep, *runs.front(), row);
      double nranks = static_cast<double>(a.ranks.size());
      row.insert(row.end(), {Cell(a.ranks.size()),
                             Cell(std::get<0>(key)),
                             Cell(std::get<1>(key)),
                             Cell(std::get<2>(key)),
                             number_cell(std::get<3>(key)),
                             Cell(std::get<4>(key)),
                             Cell(a.count),
                             number_cell(a.count / nranks),
                             number_cell(a.dur_sum / a.count),
                             a.durs.empty() ? Cell() : number_cell(stats::median(a.durs)),
                             number_cell(a.dur_min),
                             number_cell(a.dur_max),
                             number_cell(a.dur_sum / nranks / 1e3),
                             number_cell(pycompat::pandas_groupby_mean(a.algbw)),
                             number_cell(min_of(a.algbw)),
                             number_cell(max_of(a.algbw)),
                             number_cell(pycompat::pandas_groupby_mean(a.busbw)),
                             number_cell(min_of(a.busbw)),
                             number_cell(max_of(a.busbw)),
                             number_cell(pycompat::pandas_groupby_mean(a.start_skew)),
                             number_cell(max_of(a.start_skew)),
                             number_cell(pycompat::pandas_groupby_mean(a.end_skew)),
                             number_cell(max_of(a.end_skew)),
                             Cell(note)});
      t.rows.push_back(std::move(row));
    }
  }
  return t;
}

}  // namespace jarvis::sweep

namespace jarvis::sweep {

Table collective_skew_table(const Sweep& sweep) {
  const auto& fields = sweep.layout.fields;
  bool rank_field = std::find(fields.begin(), fields.end(), "rank") != fields.end();
  std::vector<std::string> cols = {"run"};
  for (const std::string& f : fields) cols.push_back(f == "run" ? "field_run" : f);
  if (!rank_field) cols.push_back("rank");
  for (const char* c :
       {"process_group", "seq", "collective", "type", "dtype", "msg_mb", "ranks", "start_us",
        "dur_us", "wait_us", "start_skew_us", "end_skew_us", "first_rank", "last_rank"})
    cols.push_back(c);
  Table t("collective_skew", cols);
  for (const auto& [label, runs] : configs(sweep)) {
    std::vector<co::RankTrace> ranks;
    std::map<int64_t, const Run*> run_of_rank;
    for (const Run* r : runs) {
      if (r->data.collectives.empty()) continue;
      co::RankTrace rt;
      rt.rank = sweep.rank_of(*r);
      rt.path = r->input.path;
      for (const auto& rec : r->data.collectives) rt.instances.push_back(to_instance(rec));
      run_of_rank[rt.rank] = r;
      ranks.push_back(std::move(rt));
    }
    if (ranks.size() < 2) continue;
    co::MultiRankReport rep;
    try {
      rep = co::match_ranks(std::move(ranks));
    } catch (const co::CollectiveError&) {
      continue;  // nccl_by_config's note says why
    }
    for (const co::MatchedInstance& m : rep.instances) {
      for (size_t i = 0; i < m.ranks.size(); ++i) {
        auto it = run_of_rank.find(m.ranks[i]);
        if (it == run_of_rank.end()) continue;
        const Run& run = *it->second;
        std::vector<Cell> row = {Cell(static_cast<int64_t>(&run - sweep.runs.data()))};
        add_field_cells(sweep, run, row);
        if (!rank_field) row.emplace_back(m.ranks[i]);
        row.emplace_back(m.process_group);
        row.emplace_back(m.seq);
        row.emplace_back(m.collective);
        row.emplace_back(std::string(co::collective_type_name(m.type)));
        row.emplace_back(m.dtype);
        row.emplace_back(m.msg_size_mb);
        row.emplace_back(static_cast<int64_t>(m.ranks.size()));
        row.emplace_back(m.start_us[i]);
        row.emplace_back(m.dur_us[i]);
        row.emplace_back(m.wait_us[i]);
        row.emplace_back(m.start_skew_us);
        row.emplace_back(m.end_skew_us);
        row.emplace_back(m.first_rank);
        row.emplace_back(m.last_rank);
        t.rows.push_back(std::move(row));
      }
    }
  }
  return t;
}

}  // namespace jarvis::sweep
