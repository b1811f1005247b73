// The sweep's own tables are report Tables built from the runs' cached
// analyses (small: one row a run, a kernel name or a timeline type),
// registered as sheets on a connection without a trace. The trace tables are
// partitioned tables (sqlite_binding.h): one partition a trace run, bound on
// the run's trace when a scan reaches it.
#include "sql/sweep_sql.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <map>
#include <numeric>

#include "explore/trace_store.h"
#include "report/pandas_roundtrip.h"
#include "report/report.h"
#include "sql/sqlite_binding.h"
#include "sweep/sweep.h"

namespace jarvis::sql {

struct RunTrace {
  std::shared_ptr<const LoadedTrace> trace;
  std::unique_ptr<QueryContext> ctx;
  std::map<std::string, std::unique_ptr<TableSource>> tables;  // bound on this run, by table
};

struct SweepTraces::Own {
  // No budget: open() frees what it stops keeping (trim), so the cache holds
  // the kept runs and those a scan is reading, whatever their size.
  TraceCache cache{0};
  TraceStore store{cache};
};

SweepTraces::SweepTraces(Resolve resolve, size_t keep)
    : own_(std::make_unique<Own>()), resolve_(std::move(resolve)), keep_(keep) {}

SweepTraces::~SweepTraces() = default;

std::shared_ptr<RunTrace> SweepTraces::open(const sweep::Sweep& s, size_t index) {
  for (auto it = kept_.begin(); it != kept_.end(); ++it)
    if (it->first == index) {
      kept_.splice(kept_.begin(), kept_, it);
      return it->second;
    }
  const sweep::Run& run = s.runs.at(index);
  auto rt = std::make_shared<RunTrace>();
  try {
    std::string path = path_of(run);
    rt->trace = own_->store.load(path).entry;
  } catch (const std::exception& e) {
    throw std::runtime_error(
        fmt::format("run {} ({}): {}; leave it out with WHERE run <> {} (runs lists the runs)",
                    index, run.input.relative, e.what(), index));
  }
  ++loads_;
  rt->ctx = std::make_unique<QueryContext>(*rt->trace);
  kept_.emplace_front(index, rt);
  if (kept_.size() > std::max<size_t>(1, keep_)) {
    kept_.pop_back();
    own_->cache.trim();  // the dropped run's trace, unless a scan still reads it
  }
  return rt;
}

std::string SweepTraces::path_of(const sweep::Run& run) const {
  return resolve_ ? resolve_(run) : run.input.path;
}

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

// The trace runs (reports have no events): a partition each.
std::vector<size_t> trace_runs(const sweep::Sweep& s) {
  std::vector<size_t> out;
  for (size_t i = 0; i < s.runs.size(); ++i)
    if (s.runs[i].data.kind == sweep::RunKind::Trace ||
        s.runs[i].data.kind == sweep::RunKind::Rocprof)
      out.push_back(i);
  return out;
}

std::vector<ColumnDef> field_column_defs(const sweep::Sweep& s,
                                         const std::vector<ColumnDef>& table) {
  std::vector<std::string> fixed;
  for (const ColumnDef& c : table) fixed.push_back(c.name);
  std::vector<std::string> names = columns_with_fields(s, fixed);
  std::vector<ColumnDef> out = {{"run", ColType::Integer, "run index (runs.run)"}};
  for (size_t f = 0; f < s.layout.fields.size(); ++f) {
    bool is_int = f < s.int_fields.size() && s.int_fields[f];
    out.push_back({names[f + 1], is_int ? ColType::Integer : ColType::Text,
                   "layout field " + s.layout.fields[f]});
  }
  return out;
}

std::shared_ptr<const PartitionedTable> trace_table_over_runs(const sweep::Sweep& s,
                                                              const TableDef& def,
                                                              SweepTraces& traces) {
  auto t = std::make_shared<PartitionedTable>();
  t->name = def.name;
  t->columns = field_column_defs(s, def.columns);
  t->fixed = t->columns.size();
  for (size_t c = 0; c < def.columns.size(); ++c) {
    if (def.columns[c].name == "uid") t->key_column = static_cast<int>(t->columns.size());
    t->columns.push_back(def.columns[c]);
  }
  std::vector<size_t> runs = trace_runs(s);
  for (size_t i : runs) t->partitions.push_back(run_cells(s, i));
  t->bind = [&s, &def, &traces, runs](size_t p) -> std::shared_ptr<const TableSource> {
    std::shared_ptr<RunTrace> rt = traces.open(s, runs.at(p));
    auto& slot = rt->tables[def.name];
    if (!slot) {
      try {
        slot = std::make_unique<TableSource>(def.bind(*rt->ctx));
      } catch (const std::exception& e) {
        throw std::runtime_error(fmt::format("table {}, run {} ({}): {}", def.name, runs.at(p),
                                             s.runs[runs.at(p)].input.relative, e.what()));
      }
    }
    // Aliasing: the source lives as long as the run's trace is held.
    return std::shared_ptr<const TableSource>(rt, slot.get());
  };
  return t;
}

// The call trees of the trace runs for parent_uid(run, uid),
// is_ancestor(run, a, uid) and ancestors(run, uid).
std::shared_ptr<const TreeRuns> tree_runs(const sweep::Sweep& s, SweepTraces& traces) {
  auto t = std::make_shared<TreeRuns>();
  std::vector<ColumnDef> own;
  for (const char* c : {"uid", "name", "category", "ts", "dur", "end", "distance"})
    own.push_back({c, ColType::Integer, ""});
  t->fixed = field_column_defs(s, own);
  t->open = [&s, &traces, runs = trace_runs(s)](
                int64_t run, std::vector<Cell>* cells) -> std::shared_ptr<const QueryContext> {
    if (run < 0 || std::find(runs.begin(), runs.end(), static_cast<size_t>(run)) == runs.end())
      return nullptr;
    std::shared_ptr<RunTrace> rt = traces.open(s, static_cast<size_t>(run));
    if (cells) *cells = run_cells(s, static_cast<size_t>(run));
    return std::shared_ptr<const QueryContext>(rt, rt->ctx.get());
  };
  return t;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool has_report(const sweep::Run& run) {
  return run.data.kind == sweep::RunKind::Trace || run.data.kind == sweep::RunKind::Rocprof ||
         run.data.kind == sweep::RunKind::ReportDir;
}

// A run's report sheets as one query reads them: a trace run's report
// (built when first asked, cached with its trace), a report directory's
// <sheet>.csv (read once per query).
class RunSheets {
 public:
  RunSheets(const sweep::Sweep& s, SweepTraces& traces) : s_(s), traces_(traces) {}

  // Sheet `name` (any case) of run `run`, or null when the run has none.
  std::shared_ptr<const Table> get(size_t run, const std::string& name) {
    const sweep::Run& r = s_.runs.at(run);
    if (r.data.kind == sweep::RunKind::ReportDir) {
      auto key = std::make_pair(run, lower(name));
      auto it = csv_.find(key);
      if (it != csv_.end()) return it->second;
      std::shared_ptr<const Table> t;
      std::error_code ec;
      std::filesystem::path dir = traces_.path_of(r);  // under the roots in MCP
      for (const auto& f : std::filesystem::directory_iterator(dir, ec))
        // A symlinked CSV is read only when it stays in the directory, so
        // that no sheet reaches a file the run's own check did not admit.
        if (f.path().extension() == ".csv" && lower(f.path().stem().string()) == key.second &&
            (!f.is_symlink(ec) || std::filesystem::weakly_canonical(f.path(), ec).parent_path() ==
                                      std::filesystem::weakly_canonical(dir, ec))) {
          auto read = std::make_shared<Table>(read_csv_typed(f.path().string()));
          read->name = f.path().stem().string();
          t = std::move(read);
          break;
        }
      csv_[key] = t;
      return t;
    }
    std::shared_ptr<RunTrace> rt = traces_.open(s_, run);
    std::shared_ptr<const Report> report;
    try {
      report = rt->ctx->report_ptr();
    } catch (const std::exception&) {
      return nullptr;  // no GPU event linked to a launch: no report
    }
    for (const Table& t : report->tables)
      if (lower(t.name) == lower(name)) return std::shared_ptr<const Table>(report, &t);
    return nullptr;
  }

 private:
  const sweep::Sweep& s_;
  SweepTraces& traces_;
  std::map<std::pair<size_t, std::string>, std::shared_ptr<const Table>> csv_;
};

// Report sheet `name` over the runs with a report, led by run and the
// fields; null when it is no sheet. Its columns are the sheet's in the first
// report directory holding <name>.csv, else in the first trace run's report
// (the one run read to find them); a run's sheet is matched to them by column
// name (a column it lacks is NULL), and a run without the sheet adds no rows.
std::shared_ptr<const PartitionedTable> sheet_over_runs(const sweep::Sweep& s,
                                                        const std::string& name,
                                                        SweepTraces& traces,
                                                        std::shared_ptr<RunSheets> sheets) {
  std::vector<size_t> runs;
  for (size_t i = 0; i < s.runs.size(); ++i)
    if (has_report(s.runs[i])) runs.push_back(i);
  std::shared_ptr<const Table> first;
  for (size_t i : runs)
    if (s.runs[i].data.kind == sweep::RunKind::ReportDir && (first = sheets->get(i, name))) break;
  if (!first)
    for (size_t i : runs)
      if (s.runs[i].data.kind != sweep::RunKind::ReportDir) {
        first = sheets->get(i, name);
        break;
      }
  if (!first) return nullptr;
  std::vector<ColumnDef> cols = sheet_columns(*first);
  auto t = std::make_shared<PartitionedTable>();
  t->name = first->name;
  t->columns = field_column_defs(s, cols);
  t->fixed = t->columns.size();
  std::vector<std::string> names;
  for (const ColumnDef& c : cols) {
    names.push_back(c.name);
    t->columns.push_back(c);
  }
  for (size_t i : runs) t->partitions.push_back(run_cells(s, i));
  t->bind = [sheets, runs, names, sheet = first->name,
             &s](size_t p) -> std::shared_ptr<const TableSource> {
    auto src = std::make_shared<TableSource>();
    std::shared_ptr<const Table> table;
    try {
      table = sheets->get(runs.at(p), sheet);
    } catch (const std::exception& e) {
      throw std::runtime_error(fmt::format("table {}, run {} ({}): {}", sheet, runs.at(p),
                                           s.runs[runs.at(p)].input.relative, e.what()));
    }
    if (!table) return src;
    std::vector<ColumnDef> own = sheet_columns(*table);
    std::vector<int> from;  // declared column -> the run's column, -1 when absent
    for (const std::string& n : names) {
      auto it =
          std::find_if(own.begin(), own.end(), [&](const ColumnDef& c) { return c.name == n; });
      from.push_back(it == own.end() ? -1 : static_cast<int>(it - own.begin()));
    }
    src->rows = table->rows.size();
    src->cell = [table, from](size_t row, int column, CellSink& out) {
      int k = from.at(static_cast<size_t>(column));
      if (k < 0)
        out.null();
      else
        out.cell(table->rows[row][static_cast<size_t>(k)]);
    };
    return src;
  };
  return t;
}

// The trace views with the run in every join (src/sql/views/ without it
// would join one run's steps with another's ops).
std::vector<std::pair<std::string, std::string>> sweep_views(const sweep::Sweep& s) {
  std::string fields = "run";
  for (const ColumnDef& c : field_column_defs(s, annotations_table().columns))
    if (c.name != "run") fields += ", " + quote_ident(c.name);
  return {
      {"steps",
       fmt::format("CREATE VIEW steps AS SELECT {}, step, uid, name, ts, dur, \"end\", pid, tid "
                   "FROM annotations WHERE step IS NOT NULL AND on_gpu = 0",
                   fields)},
      {"ops_in_step",
       "CREATE VIEW ops_in_step AS SELECT s.step AS step, o.* FROM steps AS s JOIN ops AS o "
       "ON o.run = s.run AND o.pid IS s.pid AND o.tid IS s.tid AND o.ts >= s.ts AND o.ts < "
       "s.\"end\""},
      {"kernels_in_step",
       "CREATE VIEW kernels_in_step AS SELECT s.step AS step, k.* FROM steps AS s JOIN kernels AS "
       "k "
       "ON k.run = s.run AND k.launch_ts >= s.ts AND k.launch_ts < s.\"end\""},
  };
}

const char* table_doc(const std::string& name) {
  if (name == "runs")
    return "one row per run: layout fields, path, steps, kernel time, collectives, "
           "GPU timeline (<type>_ms)";
  if (name == "run_kernels") return "GPU time per kernel name per run (µs)";
  if (name == "collective_skew")
    return "per rank, each collective instance matched across a configuration's ranks "
           "(process_group + seq, aligned clocks): start, wait and skew in µs";
  return "the GPU timeline of each run (the report's gpu_timeline sheet)";
}

}  // namespace

std::vector<Table> sweep_tables(const sweep::Sweep& sweep) {
  return {runs_table(sweep), run_kernels_table(sweep), run_timeline_table(sweep),
          sweep::collective_skew_table(sweep)};
}

QueryResult run_sweep_query(const sweep::Sweep& sweep, const std::string& sql,
                            const QueryLimits& limits, SweepTraces* traces) {
  auto start = std::chrono::steady_clock::now();
  std::unique_ptr<SweepTraces> own;
  if (!traces) {
    own = std::make_unique<SweepTraces>();
    traces = own.get();
  }
  Connection conn;
  conn.add_functions(tree_runs(sweep, *traces));
  for (Table& t : sweep_tables(sweep)) {
    std::string name = t.name;
    conn.add_sheet(name, std::make_shared<const Table>(std::move(t)));
  }
  for (const TableDef* def : builtin_tables())
    conn.add_partitioned(trace_table_over_runs(sweep, *def, *traces));
  for (const auto& [name, view] : sweep_views(sweep)) conn.exec_trusted(view, name);
  conn.lock_down(start + std::chrono::milliseconds(std::max<int64_t>(1, limits.timeout_ms)),
                 limits.max_bytes, limits.cancelled);
  QueryResult r;
  // Each round registers the one report sheet SQLite could not find (as
  // run_query does over a trace).
  auto sheets = std::make_shared<RunSheets>(sweep, *traces);
  for (int round = 0;; ++round) {
    try {
      r = conn.run(sql, limits);
      break;
    } catch (const QueryError& e) {
      std::string table = missing_table(conn.last_error());
      std::shared_ptr<const PartitionedTable> sheet;
      if (!table.empty() && round <= 64) {
        try {
          sheet = sheet_over_runs(sweep, table, *traces, sheets);
        } catch (const std::exception& load) {
          throw QueryError(fmt::format("table {}: {}", table, load.what()));
        }
      }
      if (!sheet) throw QueryError(with_nearest_name(e.what(), sweep_catalog(sweep)));
      conn.add_partitioned(std::move(sheet));
    }
  }
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
  size_t traced = trace_runs(sweep).size();
  // The trace tables and views, each led by run and the layout fields.
  for (const TableInfo& t : catalog()) {
    TableInfo info{
        t.name,
        t.name == "ancestors"
            ? std::string("table-valued function: SELECT * FROM ancestors(run, uid) lists the "
                          "call-tree ancestors of run's event uid, nearest first")
            : fmt::format("{}; over the {} trace run(s), loaded when a scan reaches them", t.doc,
                          traced),
        {}};
    std::vector<ColumnDef> own;
    for (const ColumnInfo& c : t.columns) own.push_back({c.name, ColType::Text, ""});
    for (const ColumnDef& c : field_column_defs(sweep, own))
      if (std::none_of(t.columns.begin(), t.columns.end(),
                       [&](const ColumnInfo& x) { return x.name == c.name; }))
        info.columns.push_back({c.name, col_type_name(c.type), c.doc});
    for (const ColumnInfo& c : t.columns) info.columns.push_back(c);
    out.push_back(std::move(info));
  }
  out.push_back({"<report sheet>",
                 "every sheet of the runs' TraceLens reports by name (ops_summary, "
                 "unified_perf_summary, GEMM, kernel_summary, coll_analysis, ...): a trace run's "
                 "report, a report directory's <sheet>.csv; led by run and the layout fields",
                 {}});
  return out;
}

}  // namespace jarvis::sql
