#include "collectives/collectives_json.h"

#include <algorithm>
#include <cmath>

#include "explore/trace_store.h"

namespace jarvis::collectives {
namespace {

nlohmann::json number_or_null(double v) {
  return std::isnan(v) ? nlohmann::json() : nlohmann::json(v);
}

nlohmann::json cell_json(const Cell& c) {
  if (c.is_int()) return std::get<int64_t>(c.v);
  if (c.is_double()) return number_or_null(std::get<double>(c.v));
  if (c.is_bool()) return std::get<bool>(c.v);
  if (c.is_text()) return c.text();
  return nullptr;
}

}  // namespace

nlohmann::json summary_json(const TraceCollectiveSummary& s) {
  nlohmann::json top = nlohmann::json::array();
  for (const TopCollective& t : s.top)
    top.push_back({{"collective", t.collective},
                   {"dtype", t.dtype},
                   {"msg_size_mb", number_or_null(t.msg_size_mb)},
                   {"count", t.count},
                   {"total_us", t.total_us},
                   {"mean_busbw_gbps", number_or_null(t.mean_busbw_gbps)}});
  return {{"count", s.count},
          {"total_us", s.total_us},
          {"exposed_us", s.exposed_us},
          {"exposed_percent", s.total_us > 0 ? s.exposed_us / s.total_us * 100.0 : 0.0},
          {"top", top}};
}

nlohmann::json loaded_trace_collectives_json(const LoadedTrace& entry) {
  auto summary = entry.cached<TraceCollectiveSummary>("collectives", [&] {
    auto tree = trace_call_tree(entry);
    auto timeline = trace_timeline(entry);
    return summarize_trace(entry.trace(), *tree, 5, timeline.get());
  });
  return summary->count ? summary_json(*summary) : nlohmann::json();
}

nlohmann::json table_rows_json(const Table& table, size_t max_rows) {
  nlohmann::json rows = nlohmann::json::array();
  for (size_t r = 0; r < table.rows.size() && r < max_rows; ++r) {
    nlohmann::json row = nlohmann::json::object();
    for (size_t c = 0; c < table.columns.size(); ++c)
      row[table.columns[c]] = cell_json(table.rows[r][c]);
    rows.push_back(std::move(row));
  }
  return rows;
}

nlohmann::json multi_rank_json(const CollectiveReportResult& result, size_t top_n) {
  const MultiRankReport& report = result.report;
  nlohmann::json offsets = nlohmann::json::object();
  for (const auto& [rank, offset] : report.clock_offset_us) offsets[std::to_string(rank)] = offset;
  // The instance table sorted by skew, largest first.
  Table worst = result.tables.at(0);
  const int skew = worst.col("start_skew_us");
  std::stable_sort(worst.rows.begin(), worst.rows.end(), [skew](const auto& a, const auto& b) {
    return a[static_cast<size_t>(skew)].number() > b[static_cast<size_t>(skew)].number();
  });
  return {{"ranks", report.ranks},
          {"clock_offset_us", offsets},
          {"instance_count", report.instances.size()},
          {"summary", table_rows_json(result.tables.at(1), result.tables.at(1).rows.size())},
          {"ranks_table", table_rows_json(result.tables.at(2), result.tables.at(2).rows.size())},
          {"worst_skew", table_rows_json(worst, top_n)}};
}

}  // namespace jarvis::collectives
