// The sweep's tables are report Tables built from the runs' cached analyses
// (small: one row a run, a kernel name or a timeline type), registered as
// sheets on a connection without a trace.
#include "sql/sweep_sql.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <numeric>

#include "sql/sqlite_binding.h"
#include "sweep/sweep.h"

namespace jarvis::sql {
namespace {

// The layout fields, then `fixed`; a field named like a fixed column is
// renamed field_<name>, so a declaration never holds a name twice.
std::vector<std::string> columns_with_fields(const sweep::Sweep& s,
                                             const std::vector<std::string>& fixed) {
  std::vector<std::string> cols = {"run"};
  for (const std::string& f : s.layout.fields) {
    bool clash = f == "run" || std::find(fixed.begin(), fixed.end(), f) != fixed.end();
    cols.push_back(clash ? "field_" + f : f);
  }
  cols.insert(cols.end(), fixed.begin(), fixed.end());
  return cols;
}

std::vector<Cell> run_cells(const sweep::Sweep& s, size_t index) {
  std::vector<Cell> row = {Cell(static_cast<int64_t>(index))};
  sweep::add_field_cells(s, s.runs[index], row);
  return row;
}

// if/else, not ?: over two Cell temporaries (GCC 12 -Wmaybe-uninitialized).
Cell real_or_null(double v, bool present) {
  if (!present) return Cell();
  return Cell(v);
}

Cell text_or_null(const std::string& s) {
  if (s.empty()) return Cell();
  return Cell(s);
}

// The timeline types of every run, in order of first appearance.
std::vector<std::string> timeline_types(const sweep::Sweep& s) {
  std::vector<std::string> types;
  for (const sweep::Run& run : s.runs)
    for (const sweep::TimelineRow& t : run.data.timeline)
      if (std::find(types.begin(), types.end(), t.type) == types.end()) types.push_back(t.type);
  return types;
}

Table runs_table(const sweep::Sweep& s) {
  // A layout's rank field is the rank; without one, the trace's rank.
  bool rank_field =
      std::find(s.layout.fields.begin(), s.layout.fields.end(), "rank") != s.layout.fields.end();
  std::vector<std::string> fixed = {"path", "kind"};
  if (!rank_field) fixed.push_back("rank");
  for (const char* c : {"steps", "step_ms_mean", "step_source", "kernels", "kernel_time_ms",
                        "collectives", "confidence"})
    fixed.push_back(c);
  std::vector<std::string> types = timeline_types(s);
  for (const std::string& t : types) fixed.push_back(t + "_ms");
  Table table("runs", columns_with_fields(s, fixed));
  for (size_t i = 0; i < s.runs.size(); ++i) {
    const sweep::Run& run = s.runs[i];
    const sweep::RunData& d = run.data;
    std::vector<Cell> row = run_cells(s, i);
    row.emplace_back(run.input.relative);
    row.emplace_back(std::string(sweep::run_kind_name(d.kind)));
    int64_t rank = s.rank_of(run);
    if (!rank_field && rank >= 0)
      row.emplace_back(rank);
    else if (!rank_field)
      row.emplace_back();
    row.emplace_back(static_cast<int64_t>(d.step_ms.size()));
    double step_sum = std::accumulate(d.step_ms.begin(), d.step_ms.end(), 0.0);
    row.push_back(
        real_or_null(step_sum / std::max<double>(1, d.step_ms.size()), !d.step_ms.empty()));
    row.push_back(text_or_null(d.step_source));
    row.emplace_back(static_cast<int64_t>(d.kernel_names.size()));
    double kernel_us = 0;
    for (const auto& [name, us] : d.kernel_time_us) kernel_us += us;
    row.push_back(real_or_null(kernel_us / 1e3, !d.kernel_time_us.empty()));
    row.emplace_back(sweep::collective_count(d));
    row.push_back(text_or_null(d.health_confidence));
    for (const std::string& t : types) {
      auto it = std::find_if(d.timeline.begin(), d.timeline.end(),
                             [&](const sweep::TimelineRow& r) { return r.type == t; });
      row.push_back(real_or_null(it == d.timeline.end() ? 0 : it->time_ms, it != d.timeline.end()));
    }
    table.rows.push_back(std::move(row));
  }
  return table;
}

Table run_kernels_table(const sweep::Sweep& s) {
  Table table("run_kernels", columns_with_fields(s, {"kernel", "time_us"}));
  for (size_t i = 0; i < s.runs.size(); ++i)
    for (const auto& [name, us] : s.runs[i].data.kernel_time_us) {
      std::vector<Cell> row = run_cells(s, i);
      row.emplace_back(name);
      row.emplace_back(us);
      table.rows.push_back(std::move(row));
    }
  return table;
}

Table run_timeline_table(const sweep::Sweep& s) {
  Table table("run_timeline", columns_with_fields(s, {"type", "time ms", "percent"}));
  for (size_t i = 0; i < s.runs.size(); ++i)
    for (const sweep::TimelineRow& t : s.runs[i].data.timeline) {
      std::vector<Cell> row = run_cells(s, i);
      row.emplace_back(t.type);
      row.emplace_back(t.time_ms);
      row.emplace_back(t.percent);
      table.rows.push_back(std::move(row));
    }
  return table;
}

const char* table_doc(const std::string& name) {
  if (name == "runs")
    return "one row per run: layout fields, path, steps, kernel time, collectives, "
           "GPU timeline (<type>_ms)";
  if (name == "run_kernels") return "GPU time per kernel name per run (µs)";
  return "the GPU timeline of each run (the report's gpu_timeline sheet)";
}

}  // namespace

std::vector<Table> sweep_tables(const sweep::Sweep& sweep) {
  return {runs_table(sweep), run_kernels_table(sweep), run_timeline_table(sweep)};
}

QueryResult run_sweep_query(const sweep::Sweep& sweep, const std::string& sql,
                            const QueryLimits& limits) {
  auto start = std::chrono::steady_clock::now();
  Connection conn;
  conn.add_functions();
  for (Table& t : sweep_tables(sweep)) {
    std::string name = t.name;
    conn.add_sheet(name, std::make_shared<const Table>(std::move(t)));
  }
  conn.lock_down(start + std::chrono::milliseconds(std::max<int64_t>(1, limits.timeout_ms)));
  QueryResult r = conn.run(sql, limits);
  r.table.name = "query";
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

std::vector<TableInfo> sweep_catalog(const sweep::Sweep& sweep) {
  std::vector<TableInfo> out;
  for (const Table& t : sweep_tables(sweep)) {
    TableInfo info{t.name, fmt::format("{} ({} rows)", table_doc(t.name), t.rows.size()), {}};
    for (const ColumnDef& c : sheet_columns(t))
      info.columns.push_back({c.name, col_type_name(c.type), ""});
    out.push_back(std::move(info));
  }
  return out;
}

}  // namespace jarvis::sql
