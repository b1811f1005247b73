// export_sqlite: the query connection's virtual tables copied into a real
// database file. The copy is SQL run by jarvis itself (CREATE TABLE, INSERT
// ... SELECT from the virtual table) on a connection that is never locked
// down and never runs a caller's statement.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>

#include "base/atomic_file.h"
#include "explore/trace_store.h"
#include "report/report.h"
#include "sql/export.h"
#include "sql/sql.h"
#include "sql/sqlite_binding.h"
#include "sql/views.h"

namespace jarvis::sql {
namespace {

constexpr const char* kOut = "out";  // the attached file's schema name

struct ExportTable {
  std::string name;
  std::vector<ColumnDef> columns;
};

std::string create_table_sql(const ExportTable& t) {
  std::string sql = fmt::format("CREATE TABLE {}.{}(", kOut, quote_ident(t.name));
  for (size_t i = 0; i < t.columns.size(); ++i) {
    if (i) sql += ", ";
    sql += quote_ident(t.columns[i].name);
    sql += ' ';
    sql += col_type_name(t.columns[i].type);
  }
  return sql + ")";
}

bool has_uid(const ExportTable& t) {
  for (const ColumnDef& c : t.columns)
    if (c.name == "uid") return true;
  return false;
}

// Creates the table in the file and fills it; a table whose data cannot be
// built stays empty with the reason.
ExportedTable copy_table(Connection& conn, const ExportTable& t) {
  ExportedTable out{t.name, 0, false, ""};
  std::string name = quote_ident(t.name);
  conn.exec_trusted(create_table_sql(t), "export " + t.name);
  try {
    conn.exec_trusted(fmt::format("INSERT INTO {0}.{1} SELECT * FROM main.{1}", kOut, name),
                      "export " + t.name);
  } catch (const std::exception& e) {
    out.skipped = e.what();
    return out;
  }
  // uid joins and lookups stay cheap in the file, as they are over the trace.
  if (has_uid(t))
    conn.exec_trusted(
        fmt::format("CREATE INDEX {}.{} ON {}(uid)", kOut, quote_ident(t.name + "_uid"), name),
        "export " + t.name);
  QueryLimits one;
  one.max_rows = 1;
  QueryResult n = conn.run(fmt::format("SELECT count(*) FROM {}.{}", kOut, name), one);
  out.rows = static_cast<size_t>(std::get<int64_t>(n.table.rows.at(0).at(0).v));
  return out;
}

// SQLite's table names are case-insensitive (ASCII).
bool is_builtin_name(const std::string& name) {
  auto same = [](const std::string& a, const std::string& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
      return std::tolower(static_cast<unsigned char>(x)) ==
             std::tolower(static_cast<unsigned char>(y));
    });
  };
  for (const TableDef* def : builtin_tables())
    if (same(def->name, name)) return true;
  return false;
}

// The built-in tables, then every report sheet registered on the connection.
std::vector<ExportTable> register_tables(Connection& conn, const QueryContext& ctx) {
  std::vector<ExportTable> tables;
  for (const TableDef* def : builtin_tables()) {
    conn.add_table(*def);
    tables.push_back({def->name, def->columns});
  }
  std::shared_ptr<const Report> report;
  try {
    report = ctx.report_ptr();
  } catch (const std::exception&) {
    return tables;  // no report (no GPU event linked to a launch): no sheets
  }
  for (const Table& sheet : report->tables) {
    if (is_builtin_name(sheet.name)) continue;
    conn.add_sheet(sheet.name, std::shared_ptr<const Table>(report, &sheet));
    tables.push_back({sheet.name, sheet_columns(sheet)});
  }
  return tables;
}

}  // namespace

ExportResult export_sqlite(const LoadedTrace& entry, const std::string& path) {
  auto start = std::chrono::steady_clock::now();
  AtomicFile file(path);  // refuses a target the overwrite rule forbids, before any work
  QueryContext ctx(entry);
  Connection conn(ctx, /*attachable=*/true);
  conn.add_functions();
  std::vector<ExportTable> tables = register_tables(conn, ctx);
  conn.attach(file.temp_path(), kOut);
  // No journal and no syncs while filling: the file is a temp until commit(),
  // which fsyncs it whole.
  conn.exec_trusted(
      fmt::format("PRAGMA {0}.journal_mode = OFF; PRAGMA {0}.synchronous = OFF", kOut),
      "export setup");
  ExportResult result;
  for (const ExportTable& t : tables) result.tables.push_back(copy_table(conn, t));
  conn.exec_trusted(fmt::format("DETACH {}", kOut), "export");
  for (const EmbeddedView& v : embedded_views()) {
    exec_on_file(file.temp_path(), v.sql, fmt::format("view {}", v.path));
    std::string name = v.path;
    result.tables.push_back({name.substr(0, name.rfind('.')), 0, true, ""});
  }
  file.commit();
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace jarvis::sql
