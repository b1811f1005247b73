// jarvis sql TRACE ["SELECT ..."] [--format table|csv|json] [--out FILE]:
// one read-only SQL statement over a trace (docs/sql.md). Without a query:
// an interactive shell on a terminal, else the query is read from stdin.
// jarvis sql TRACE --export FILE: every table and view into an SQLite file.
// jarvis sql SWEEP_DIR ...: the sweep's per-run tables and the trace tables
// over every run (sql/sweep_sql.h).
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "base/atomic_file.h"
#include "base/forked_call.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "engine/engine.h"

namespace jarvis::cli {
namespace {

struct SqlArgs {
  std::vector<std::string> inputs;  // the positional arguments: traces (or a sweep), then the query
  std::string trace, query, format = "table", out, export_path, layout;
  std::vector<std::string> ranks;  // several trace files: one query over them as ranks
  bool schema = false;
  size_t max_rows = 100000;
  int64_t timeout_ms = 60000;
};

std::string cell_text(const Cell& c) {
  if (c.is_int()) return std::to_string(std::get<int64_t>(c.v));
  if (c.is_double()) return fmt::format("{}", std::get<double>(c.v));
  if (c.is_text()) return c.text();
  if (c.is_bool()) return std::get<bool>(c.v) ? "1" : "0";
  return "NULL";
}

// Columns padded to their widest cell (cells past 60 characters cut with …).
std::string as_table(const Table& t) {
  constexpr size_t kMaxWidth = 60;
  auto clip = [](std::string s) {
    if (s.size() > kMaxWidth) s = s.substr(0, kMaxWidth - 3) + "...";
    return s;
  };
  std::vector<size_t> width(t.columns.size());
  for (size_t c = 0; c < t.columns.size(); ++c) width[c] = clip(t.columns[c]).size();
  for (const auto& row : t.rows)
    for (size_t c = 0; c < row.size(); ++c)
      width[c] = std::max(width[c], clip(cell_text(row[c])).size());
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    for (size_t c = 0; c < cells.size(); ++c) {
      if (c) out += "  ";
      out += fmt::format("{:<{}}", clip(cells[c]), width[c]);
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    out += '\n';
  };
  line(t.columns);
  std::vector<std::string> rule;
  for (size_t w : width) rule.push_back(std::string(w, '-'));
  line(rule);
  for (const auto& row : t.rows) {
    std::vector<std::string> cells;
    for (const Cell& c : row) cells.push_back(cell_text(c));
    line(cells);
  }
  return out;
}

std::string as_json(const Table& t) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const auto& row : t.rows) {
    nlohmann::ordered_json o = nlohmann::ordered_json::object();
    for (size_t c = 0; c < row.size(); ++c) {
      const Cell& cell = row[c];
      if (cell.is_int())
        o[t.columns[c]] = std::get<int64_t>(cell.v);
      else if (cell.is_double())
        o[t.columns[c]] = std::get<double>(cell.v);
      else if (cell.is_text())
        o[t.columns[c]] = cell.text();
      else
        o[t.columns[c]] = nullptr;
    }
    rows.push_back(std::move(o));
  }
  return rows.dump(1) + "\n";
}

std::string render(const Table& t, const std::string& format) {
  if (format == "csv") return t.to_csv();
  if (format == "json") return as_json(t);
  return as_table(t);
}

// What a query runs over: a loaded trace or a loaded sweep.
struct Source {
  std::function<engine::SqlQueryResult(const std::string&, const engine::SqlQueryLimits&)> query;
  std::function<std::string()> schema;
  std::string name;
};

// A query's result as its child process sends it back: the rendered text,
// the row count and what cut it ("" when complete). CBOR: a trace's names
// may be invalid UTF-8, which JSON text refuses.
std::string query_answer(const Source& src, const SqlArgs& a, const std::string& query) {
  engine::SqlQueryLimits limits;
  limits.max_rows = a.max_rows;
  limits.max_bytes = size_t{1} << 30;
  limits.timeout_ms = a.timeout_ms;
  engine::SqlQueryResult r = src.query(query, limits);
  const nlohmann::json answer = {{"text", render(r.table, a.format)},
                                 {"rows", r.table.rows.size()},
                                 {"cut_by", r.truncated ? r.truncation : std::string()}};
  const std::vector<uint8_t> bytes = nlohmann::json::to_cbor(answer);
  return std::string(bytes.begin(), bytes.end());
}

// The query runs in a child process killed just past --timeout-ms: SQLite
// checks the limit between steps, and one step (trim, replace or LIKE over a
// long value) ran for minutes past it (issue 74 point 1).
void run_one(const Source& src, const SqlArgs& a, const std::string& query) {
  const std::string bytes =
      call_forked([&] { return query_answer(src, a, query); }, a.timeout_ms, "the query");
  const nlohmann::json answer = nlohmann::json::from_cbor(bytes);
  const std::string& text = answer.at("text").get_ref<const std::string&>();
  if (!a.out.empty()) {
    write_file_atomic(a.out, text);
    fmt::print("{} ({})\n", a.out, count_text(answer.at("rows").get<size_t>(), "row"));
  } else {
    fmt::print("{}", text);
  }
  if (const std::string cut_by = answer.at("cut_by"); !cut_by.empty())
    fmt::print(stderr, "jarvis sql: result cut at the {} (--max-rows)\n", cut_by);
}

// Statements end with ';'. Errors are printed and the shell goes on.
int shell(const Source& src, const SqlArgs& a) {
  fmt::print("jarvis sql on {}: end a statement with ';'; .schema lists the tables, .quit leaves\n",
             src.name);
  std::string pending, line;
  while (true) {
    fmt::print("{}", pending.empty() ? "sql> " : "...> ");
    std::fflush(stdout);
    if (!std::getline(std::cin, line)) break;
    if (pending.empty() && (line == ".quit" || line == ".exit")) break;
    if (pending.empty() && line == ".schema") {
      fmt::print("{}", src.schema());
      continue;
    }
    pending += line + "\n";
    if (line.find(';') == std::string::npos) continue;
    try {
      run_one(src, a, pending);
    } catch (const std::exception& e) {
      fmt::print(stderr, "error: {}\n", e.what());
    }
    pending.clear();
  }
  return 0;
}

int export_file(const LoadedTrace& trace, const SqlArgs& a) {
  engine::SqlExportResult r = engine::export_sqlite(trace, a.export_path);
  size_t tables = 0, views = 0;
  for (const auto& t : r.tables) {
    (t.view ? views : tables) += 1;
    if (!t.skipped.empty())
      fmt::print(stderr, "jarvis sql: table {} left empty: {}\n", t.name, t.skipped);
  }
  fmt::print("{} ({}, {}, {:.2f} s)\n", a.export_path, count_text(tables, "table"),
             count_text(views, "view"), r.seconds);
  return 0;
}

int run_source(const Source& src, const SqlArgs& a) {
  if (a.schema) {
    fmt::print("{}", src.schema());
    return 0;
  }
  if (a.query.empty()) {
    if (isatty(STDIN_FILENO)) return shell(src, a);
    std::string query((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    run_one(src, a, query);
    return 0;
  }
  run_one(src, a, a.query);
  return 0;
}

// A directory that is not a rocprofv3 CSV directory (a trace) is a sweep.
bool is_sweep_dir(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_directory(path, ec) &&
         engine::detect_input_format(path) != engine::InputFormat::RocprofCsv;
}

int run_sweep_sql(const SqlArgs& a) {
  if (!a.export_path.empty())
    throw UsageError("--export takes a trace; a sweep's tables are queried in place");
  engine::SweepLoadOptions options;
  options.pattern = a.layout;
  engine::Sweep sweep;
  if (!a.ranks.empty()) {
    sweep = engine::load_sweep_files(a.ranks, options);
  } else {
    try {
      sweep = engine::load_sweep(a.trace, options);
    } catch (const engine::SweepError& no_layout) {
      // A directory no layout matches, holding trace files: its traces as ranks.
      if (!a.layout.empty()) throw;
      std::vector<std::string> files;
      try {
        files = expand_rank_traces({a.trace});
      } catch (const std::exception&) {
        throw no_layout;
      }
      sweep = engine::load_sweep_files(files, options);
    }
  }
  // The run traces a query loads stay for its later steps (each query runs
  // in a child process of its own: run_one).
  engine::SqlSweepTraces traces;
  Source src{[&](const std::string& q, const engine::SqlQueryLimits& l) {
               return engine::run_sweep_query(sweep, q, l, &traces);
             },
             [&] { return engine::catalog_text(engine::sweep_catalog(sweep)); }, a.trace};
  return run_source(src, a);
}

int run_sql(SqlArgs a) {
  // TRACE... [QUERY]: a last argument that names no file is the query.
  std::error_code ec;
  if (a.inputs.size() > 1 && !std::filesystem::exists(a.inputs.back(), ec)) {
    a.query = a.inputs.back();
    a.inputs.pop_back();
  }
  a.trace = a.inputs.front();
  if (a.inputs.size() > 1) a.ranks = expand_rank_traces(a.inputs);
  if (!a.export_path.empty() && (!a.query.empty() || a.schema || !a.out.empty()))
    throw UsageError(
        "--export writes the whole database: give it without a query, --schema or --out");
  if (!a.ranks.empty() || is_sweep_dir(a.trace)) return run_sweep_sql(a);
  engine::TraceStore store;
  auto loaded = store.load(a.trace);
  const LoadedTrace& trace = *loaded.entry;
  if (!a.export_path.empty()) return export_file(trace, a);
  Source src{[&](const std::string& q, const engine::SqlQueryLimits& l) {
               return engine::run_query(trace, q, l);
             },
             [&] { return engine::catalog_text(engine::sql_catalog(trace)); }, trace.path()};
  return run_source(src, a);
}

}  // namespace

Runner add_sql(CLI::App& app) {
  auto a = std::make_shared<SqlArgs>();
  CLI::App* cmd = app.add_subcommand(
      "sql", "SQL (SQLite, read-only) over a trace's events, ops, kernels and report sheets");
  cmd->add_option("TRACE... [QUERY]", a->inputs,
                  "a trace (Kineto .json/.json.gz or rocprofv3 output); or a sweep directory "
                  "(the trace tables over every run, led by run and the layout fields, plus "
                  "runs, run_kernels, run_timeline, collective_skew); or several rank traces "
                  "(files or directories of them), queried as the runs of one configuration; "
                  "then one SELECT statement (none: an interactive shell on a terminal, else "
                  "read from stdin)")
      ->required();
  CLI::Option* format = cmd->add_option("--format", a->format,
                                        "table, csv or json (default: table; with --out, "
                                        "from FILE's extension: .csv, .json, else table)")
                            ->check(CLI::IsMember({"table", "csv", "json"}));
  cmd->add_option("-o,--out", a->out, "write the result to FILE instead of stdout");
  cmd->add_option("--export", a->export_path,
                  "write every table, report sheet and view into the SQLite database FILE "
                  "(for sqlite3, DuckDB, ...); no query");
  cmd->add_option("--layout", a->layout,
                  "a sweep directory's layout pattern (as jarvis sweep --layout; default: the "
                  "known layouts)");
  const std::string schema_help = "print the tables and their columns (with the report's sheets)";
  cmd->add_flag("--schema", a->schema, schema_help);
  cmd->add_option("--max-rows", a->max_rows, "rows returned; the rest is cut (said on stderr)")
      ->default_str("100000")
      ->check(CLI::Range(size_t{1}, size_t{100000000}));
  cmd->add_option("--timeout-ms", a->timeout_ms, "time limit of the query")
      ->default_str("60000")
      ->check(CLI::Range(int64_t{1}, int64_t{86400000}));
  cmd->footer(
      "Tables: events, ops, kernels, annotations, gpu_timeline, every report sheet by name\n"
      "(ops_summary, GEMM, ...), memory, collectives, views steps, ops_in_step, kernels_in_step. "
      "Times are ns.\n"
      "Example: jarvis sql trace.json.gz \"SELECT name, sum(dur) FROM kernels GROUP BY 1 ORDER BY "
      "2 DESC LIMIT 5\"\n"
      "Export: jarvis sql trace.json.gz --export trace.sqlite; then sqlite3 trace.sqlite\n"
      "docs/sql.md documents every table and column.");
  return [a, format] {
    // `--out x.csv` means CSV, as the name says, unless --format says otherwise.
    if (format->count() == 0 && !a->out.empty()) {
      std::string ext = std::filesystem::path(a->out).extension().string();
      std::transform(ext.begin(), ext.end(), ext.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      if (ext == ".csv" || ext == ".json") a->format = ext.substr(1);
    }
    return run_sql(*a);
  };
}

}  // namespace jarvis::cli
