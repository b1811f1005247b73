// SQL over a loaded trace: SQLite in memory, read-only for the caller, with
// one virtual table per kind of row (events, ops, kernels, annotations, the
// report's sheets) that reads the trace's own event store instead of copying
// it. docs/sql.md documents every table and column.
//
// Safety: only a single read-only statement runs (an authorizer denies
// writes, ATTACH, PRAGMA and every function outside SQLite's core set; the
// prepared statement must be read-only); a progress handler stops a query
// past QueryLimits::timeout_ms; rows and bytes past their limits are cut and
// the result says so. Errors name the problem and, for an unknown column or
// table, the nearest known name.
#pragma once

#include <atomic>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/error.h"
#include "report/table.h"

namespace jarvis {
class LoadedTrace;
}

namespace jarvis::sql {

struct QueryLimits {
  size_t max_rows = 10000;      // rows returned; the rest is cut
  size_t max_bytes = 8u << 20;  // text + numbers returned (8 bytes a number)
  int64_t timeout_ms = 10000;   // wall time of preparing and stepping
  // The caller's cancellation (an MCP client's notifications/cancelled),
  // checked with the deadline: a cancelled query stops within ~1000 steps.
  const std::atomic<bool>* cancelled = nullptr;
};

struct QueryResult {
  Table table;             // column names as SQLite names them; cells int, double, text or missing
  bool truncated = false;  // rows or bytes hit their limit
  std::string truncation;  // why ("row limit 100", "byte limit 8388608"), "" when whole
  double seconds = 0;      // preparing, binding the tables used and stepping
  // Columns holding a BLOB in some row kept: each such value is its SQL hex
  // literal, x'ff00' (two lowercase hex digits a byte), as text.
  std::vector<std::string> blob_columns;
};

// A query SQLite refused or that failed: the message names the problem.
class QueryError : public ErrorOf<ErrorKind::InvalidInput> {
 public:
  using ErrorOf::ErrorOf;
};
// The query ran past QueryLimits::timeout_ms.
class QueryTimeout : public ErrorOf<ErrorKind::Cancelled> {
 public:
  using ErrorOf::ErrorOf;
};

// One statement over the trace's tables. `sql` must be one SELECT (or WITH
// ... SELECT, or VALUES); a trailing ';' is allowed, a second statement is not.
QueryResult run_query(const LoadedTrace& trace, const std::string& sql, const QueryLimits& limits);

struct ColumnInfo {
  std::string name;
  std::string type;  // INTEGER, REAL, TEXT
  std::string doc;   // one line
};
struct TableInfo {
  std::string name;
  std::string doc;  // one line
  std::vector<ColumnInfo> columns;
};

// The built-in tables and views with their columns. The report sheets
// (ops_summary, GEMM, ...) are tables too; their columns are the sheet's and
// are listed by catalog(trace).
std::vector<TableInfo> catalog();
// catalog() plus every sheet of the trace's report, with its columns (builds
// the report when not built yet).
std::vector<TableInfo> catalog(const LoadedTrace& trace);
// A compact text of a catalog: one line a table "name(col, col, ...): doc".
std::string catalog_text(const std::vector<TableInfo>& tables);

}  // namespace jarvis::sql
