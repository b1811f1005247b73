// run_query: one connection per query (the tables' data is cached on the
// loaded trace, so a second query binds in microseconds), report sheets
// registered when a statement names one, and errors that name the nearest
// known table, column or function.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>

#include "explore/trace_store.h"
#include "report/report.h"
#include "sql/sql.h"
#include "sql/sqlite_binding.h"
#include "sql/views.h"

namespace jarvis::sql {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (std::tolower(static_cast<unsigned char>(a[i - 1])) !=
                                  std::tolower(static_cast<unsigned char>(b[j - 1])));
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

// The name after `prefix` in SQLite's message, without a qualifier ("o.durr" -> "durr").
std::string named_in(const std::string& message, std::string_view prefix) {
  if (!message.starts_with(prefix)) return "";
  std::string name = message.substr(prefix.size());
  if (auto dot = name.rfind('.'); dot != std::string::npos) name = name.substr(dot + 1);
  return name;
}

std::string nearest(const std::string& name, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = std::max<size_t>(2, name.size() / 3) + 1;
  for (const auto& c : candidates) {
    size_t d = edit_distance(name, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

// The report of the trace if it can be built (a trace without linked GPU
// events has none), else null.
const Report* report_or_null(const QueryContext& ctx) {
  try {
    return &ctx.report();
  } catch (const std::exception&) {
    return nullptr;
  }
}

bool is_builtin(std::string_view name) {
  for (const TableDef* def : builtin_tables())
    if (lower(def->name) == lower(name)) return true;
  return false;
}

const std::vector<std::string> kFunctions = {
    "overlap",      "parent_uid",   "is_ancestor", "ancestors", "abs",     "avg",
    "count",        "max",          "min",         "sum",       "total",   "round",
    "length",       "lower",        "upper",       "substr",    "instr",   "replace",
    "trim",         "coalesce",     "ifnull",      "iif",       "printf",  "format",
    "group_concat", "json_extract", "like",        "glob",      "cast",    "typeof",
    "nullif",       "hex",          "quote",       "random",    "unicode", "char"};

std::string with_suggestion(const std::string& message, const QueryContext& ctx) {
  std::vector<TableInfo> tables = catalog();
  if (!named_in(message, "no such table: ").empty())
    if (const Report* r = report_or_null(ctx))
      for (const Table& t : r->tables) tables.push_back({t.name, "", {}});
  return with_nearest_name(message, tables);
}

}  // namespace

std::string missing_table(const std::string& message) {
  return named_in(message, "no such table: ");
}

std::string with_nearest_name(const std::string& message, const std::vector<TableInfo>& tables) {
  std::vector<std::string> candidates;
  std::string name = named_in(message, "no such column: ");
  if (!name.empty()) {
    for (const TableInfo& t : tables)
      for (const ColumnInfo& c : t.columns) candidates.push_back(c.name);
  } else if (!(name = named_in(message, "no such table: ")).empty()) {
    for (const TableInfo& t : tables) candidates.push_back(t.name);
  } else if (!(name = named_in(message, "no such function: ")).empty()) {
    candidates = kFunctions;
  } else {
    return message;
  }
  std::string best = nearest(name, candidates);
  if (best.empty() || lower(best) == lower(name)) return message;
  return fmt::format("{} — did you mean {}?", message, best);
}

QueryResult run_query(const LoadedTrace& entry, const std::string& sql, const QueryLimits& limits) {
  auto start = std::chrono::steady_clock::now();
  QueryContext ctx(entry);
  Connection conn(ctx);
  for (const TableDef* def : builtin_tables()) conn.add_table(*def);
  conn.add_functions();
  for (const EmbeddedView& v : embedded_views()) conn.exec_trusted(v.sql, v.path);
  conn.lock_down(start + std::chrono::milliseconds(std::max<int64_t>(1, limits.timeout_ms)),
                 limits.max_bytes, limits.cancelled);
  QueryResult r;
  // Each round registers the one report sheet SQLite could not find; a
  // statement naming k sheets prepares k + 1 times.
  for (int round = 0;; ++round) {
    try {
      r = conn.run(sql, limits);
      break;
    } catch (const QueryError& e) {
      std::string table = named_in(conn.last_error(), "no such table: ");
      const Report* report =
          table.empty() || is_builtin(table) || round > 64 ? nullptr : report_or_null(ctx);
      const Table* sheet = nullptr;
      if (report)
        for (const Table& t : report->tables)
          if (lower(t.name) == lower(table)) sheet = &t;
      if (!sheet) throw QueryError(with_suggestion(e.what(), ctx));
      conn.add_sheet(sheet->name, std::shared_ptr<const Table>(ctx.report_ptr(), sheet));
    }
  }
  r.table.name = "query";
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

std::vector<TableInfo> catalog() {
  std::vector<TableInfo> out;
  for (const TableDef* def : builtin_tables()) {
    TableInfo t{def->name, def->doc, {}};
    for (const ColumnDef& c : def->columns)
      t.columns.push_back({c.name, col_type_name(c.type), c.doc});
    out.push_back(std::move(t));
  }
  auto view = [&](std::string name, std::string doc, const std::string& from,
                  std::vector<ColumnInfo> first) {
    TableInfo t{std::move(name), std::move(doc), std::move(first)};
    for (const TableInfo& base : out)
      if (base.name == from)
        for (const ColumnInfo& c : base.columns)
          if (std::none_of(t.columns.begin(), t.columns.end(),
                           [&](const ColumnInfo& x) { return x.name == c.name; }))
            t.columns.push_back(c);
    out.push_back(std::move(t));
  };
  view("steps", "view: host ProfilerStep#N ranges (annotations with a step)", "annotations",
       {{"step", "INTEGER", "N of ProfilerStep#N"}});
  // Only the columns steps keeps.
  auto& steps = out.back().columns;
  steps.erase(std::remove_if(
                  steps.begin(), steps.end(),
                  [](const ColumnInfo& c) { return c.name == "category" || c.name == "on_gpu"; }),
              steps.end());
  view("ops_in_step", "view: ops starting inside a host step range on its thread, with the step",
       "ops", {{"step", "INTEGER", "N of the enclosing ProfilerStep#N"}});
  view("kernels_in_step", "view: GPU events whose launch call starts inside a host step range",
       "kernels", {{"step", "INTEGER", "N of the ProfilerStep#N that launched it"}});
  out.push_back({"ancestors",
                 "table-valued function: SELECT * FROM ancestors(uid) lists the call-tree "
                 "ancestors of an event, nearest first (a GPU event's first is its launch call)",
                 {{"uid", "INTEGER", "ancestor's event uid"},
                  {"name", "TEXT", "its name"},
                  {"category", "TEXT", "its category"},
                  {"ts", "INTEGER", "its start, ns"},
                  {"dur", "INTEGER", "its duration, ns"},
                  {"end", "INTEGER", "ts + dur, ns"},
                  {"distance", "INTEGER", "1 for the parent, 2 for its parent, ..."}}});
  return out;
}

std::vector<TableInfo> catalog(const LoadedTrace& entry) {
  std::vector<TableInfo> out = catalog();
  QueryContext ctx(entry);
  if (const Report* r = report_or_null(ctx))
    for (const Table& t : r->tables) {
      if (is_builtin(t.name)) continue;
      TableInfo info{t.name, fmt::format("report sheet {} ({} rows)", t.name, t.rows.size()), {}};
      for (const ColumnDef& c : sheet_columns(t))
        info.columns.push_back({c.name, col_type_name(c.type), ""});
      out.push_back(std::move(info));
    }
  return out;
}

std::string catalog_text(const std::vector<TableInfo>& tables) {
  std::string out;
  for (const TableInfo& t : tables) {
    out += t.name + "(";
    for (size_t i = 0; i < t.columns.size(); ++i) {
      if (i) out += ", ";
      const std::string& n = t.columns[i].name;
      bool plain = std::all_of(n.begin(), n.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
      });
      out += plain ? n : "\"" + n + "\"";
    }
    out += "): " + t.doc + "\n";
  }
  return out;
}

}  // namespace jarvis::sql
