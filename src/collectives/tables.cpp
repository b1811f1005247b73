// The multi-rank report's tables (collective_instances / _summary / _ranks).
#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "collectives/collectives.h"
#include "pycompat/numeric.h"
#include "report/stats.h"

namespace jarvis::collectives {
namespace {

Cell number_or_missing(double v) {
  return std::isnan(v) ? Cell() : Cell(v);
}

// The most frequent value (lowest on ties).
std::pair<int64_t, size_t> mode(const std::vector<int64_t>& values) {
  std::map<int64_t, size_t> counts;
  for (int64_t v : values) ++counts[v];
  std::pair<int64_t, size_t> best{-1, 0};
  for (auto [v, n] : counts)
    if (n > best.second) best = {v, n};
  return best;
}

std::vector<double> finite(std::vector<double> v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return std::isnan(x); }), v.end());
  return v;
}

}  // namespace

Table collective_instances_table(const MultiRankReport& report) {
  std::vector<std::string> columns = {
      "process_group", "collective", "seq",           "dtype",       "in_msg_nelems", "msg_size_mb",
      "group_size",    "ranks",      "start_skew_us", "end_skew_us", "last_rank",     "first_rank",
      "dur_us_min",    "dur_us_max", "algbw_gbps",    "busbw_gbps",  "mean_wait_us"};
  for (int64_t r : report.ranks) columns.push_back(fmt::format("wait_us_rank{}", r));
  Table t("collective_instances", columns);
  const size_t wait_col = columns.size() - report.ranks.size();
  for (const MatchedInstance& m : report.instances) {
    auto& row = t.add_row();
    row[0] = Cell(m.process_group);
    row[1] = Cell(m.collective);
    row[2] = Cell(m.seq);
    row[3] = Cell(m.dtype);
    row[4] = m.in_msg_nelems >= 0 ? Cell(m.in_msg_nelems) : Cell();
    row[5] = number_or_missing(m.msg_size_mb);
    row[6] = Cell(m.group_size);
    row[7] = Cell(m.ranks.size());
    row[8] = Cell(m.start_skew_us);
    row[9] = Cell(m.end_skew_us);
    row[10] = Cell(m.last_rank);
    row[11] = Cell(m.first_rank);
    row[12] = Cell(m.dur_us_min);
    row[13] = Cell(m.dur_us_max);
    row[14] = number_or_missing(m.bw.algbw_gbps);
    row[15] = number_or_missing(m.bw.busbw_gbps);
    row[16] = Cell(pycompat::numpy_mean(m.wait_us));
    for (size_t k = 0; k < m.ranks.size(); ++k) {
      auto pos = std::find(report.ranks.begin(), report.ranks.end(), m.ranks[k]);
      row[wait_col + static_cast<size_t>(pos - report.ranks.begin())] = Cell(m.wait_us[k]);
    }
  }
  return t;
}

Table collective_summary_table(const MultiRankReport& report) {
  using Key = std::tuple<std::string, std::string, std::string, int64_t>;  // coll, pg, dtype, n
  std::map<Key, std::vector<const MatchedInstance*>> groups;
  for (const MatchedInstance& m : report.instances)
    groups[{m.collective, m.process_group, m.dtype, m.in_msg_nelems}].push_back(&m);
  Table t("collective_summary",
          {"collective", "process_group", "dtype", "in_msg_nelems", "msg_size_mb", "group_size",
           "count", "dur_us_min_mean", "dur_us_max_mean", "total_comm_us", "start_skew_us_mean",
           "start_skew_us_max", "total_wait_us", "algbw_gbps_mean", "busbw_gbps_mean",
           "straggler_rank", "straggler_count"});
  std::vector<std::pair<double, std::vector<Cell>>> rows;
  for (const auto& [key, list] : groups) {
    std::vector<double> dmin, dmax, skew, algbw, busbw;
    std::vector<int64_t> last;
    double wait = 0;
    for (const MatchedInstance* m : list) {
      dmin.push_back(m->dur_us_min);
      dmax.push_back(m->dur_us_max);
      skew.push_back(m->start_skew_us);
      algbw.push_back(m->bw.algbw_gbps);
      busbw.push_back(m->bw.busbw_gbps);
      last.push_back(m->last_rank);
      for (double w : m->wait_us) wait += w;
    }
    const MatchedInstance& first = *list.front();
    auto [straggler, times] = mode(last);
    const double total_comm = pycompat::numpy_sum(dmin);
    auto fa = finite(algbw), fb = finite(busbw);
    rows.push_back(
        {total_comm,
         {Cell(first.collective), Cell(first.process_group), Cell(first.dtype),
          first.in_msg_nelems >= 0 ? Cell(first.in_msg_nelems) : Cell(),
          number_or_missing(first.msg_size_mb), Cell(first.group_size), Cell(list.size()),
          Cell(pycompat::numpy_mean(dmin)), Cell(pycompat::numpy_mean(dmax)), Cell(total_comm),
          Cell(pycompat::numpy_mean(skew)), Cell(stats::max(skew)), Cell(wait),
          number_or_missing(pycompat::numpy_mean(fa)), number_or_missing(pycompat::numpy_mean(fb)),
          Cell(straggler), Cell(times)}});
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (auto& [total, cells] : rows) t.rows.push_back(std::move(cells));
  return t;
}

Table rank_collectives_table(const std::vector<CollectiveInstance>& instances) {
  Table t("rank_collectives",
          {"process_group", "collective", "seq", "dtype", "in_msg_nelems", "msg_size_mb",
           "group_size", "stream", "ts", "dur_us", "algbw_gbps", "busbw_gbps", "kernel"});
  for (const CollectiveInstance& i : instances) {
    auto& row = t.add_row();
    row[0] = Cell(i.process_group);
    row[1] = Cell(i.collective);
    row[2] = Cell(i.seq);
    row[3] = Cell(i.dtype);
    row[4] = i.in_msg_nelems >= 0 ? Cell(i.in_msg_nelems) : Cell();
    row[5] = number_or_missing(i.msg_size_mb);
    row[6] = Cell(i.group_size);
    row[7] = i.kernel.stream != kNoInt ? Cell(i.kernel.stream) : Cell();
    row[8] = Cell(i.kernel.ts);
    row[9] = Cell(i.kernel.dur);
    row[10] = number_or_missing(i.bw.algbw_gbps);
    row[11] = number_or_missing(i.bw.busbw_gbps);
    row[12] = Cell(i.kernel_name);
  }
  return t;
}

Table collective_ranks_table(const MultiRankReport& report) {
  Table t("collective_ranks", {"rank", "instances", "total_wait_us", "mean_wait_us", "times_last",
                               "times_first", "clock_offset_us"});
  for (int64_t r : report.ranks) {
    std::vector<double> waits;
    size_t last = 0, first = 0;
    for (const MatchedInstance& m : report.instances) {
      auto pos = std::find(m.ranks.begin(), m.ranks.end(), r);
      if (pos == m.ranks.end()) continue;
      waits.push_back(m.wait_us[static_cast<size_t>(pos - m.ranks.begin())]);
      last += m.last_rank == r;
      first += m.first_rank == r;
    }
    auto& row = t.add_row();
    row[0] = Cell(r);
    row[1] = Cell(waits.size());
    row[2] = Cell(pycompat::numpy_sum(waits));
    row[3] = number_or_missing(pycompat::numpy_mean(waits));
    row[4] = Cell(last);
    row[5] = Cell(first);
    row[6] = Cell(report.clock_offset_us.at(r));
  }
  return t;
}

StragglerVerdict straggler_verdict(const MultiRankReport& report) {
  StragglerVerdict v;
  v.instances = report.instances.size();
  std::map<int64_t, size_t> last;
  for (const MatchedInstance& m : report.instances) {
    ++last[m.last_rank];
    for (double w : m.wait_us) v.total_wait_us += w;
  }
  for (const auto& [rank, count] : last)  // ascending ranks: the lowest wins ties
    if (count > v.last_count) {
      v.rank = rank;
      v.last_count = count;
    }
  if (v.instances == 0) {
    v.text = "no matched collective instances: no rank waits for another";
    return v;
  }
  const double share = static_cast<double>(v.last_count) / static_cast<double>(v.instances);
  const double ranks = static_cast<double>(std::max<size_t>(report.ranks.size(), 1));
  v.straggler = share >= 0.5 && share * ranks >= 1.5;
  v.text = v.straggler
               ? fmt::format(
                     "straggler: rank {} started last at {} of {} collective instances; the ranks "
                     "waited {:.1f} us in all for the last arrival",
                     v.rank, v.last_count, v.instances, v.total_wait_us)
               : fmt::format(
                     "no straggler: the last arrival is spread over the ranks (rank {} last most "
                     "often, at {} of {} instances); the ranks waited {:.1f} us in all",
                     v.rank, v.last_count, v.instances, v.total_wait_us);
  return v;
}

}  // namespace jarvis::collectives
