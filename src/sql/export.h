// The SQL tables of a trace written into a real SQLite database file
// (`jarvis sql TRACE --export FILE`, docs/sql.md "Export to an SQLite file").
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace jarvis {
class LoadedTrace;
}

namespace jarvis::sql {

// What export_sqlite wrote: each table with its row count, then each view.
struct ExportedTable {
  std::string name;
  size_t rows = 0;  // 0 for a view
  bool view = false;
  std::string skipped;  // why the table was left empty ("" when filled)
};
struct ExportResult {
  std::vector<ExportedTable> tables;
  double seconds = 0;
};

// Writes every table (the built-in ones and the report's sheets, with their
// declared column types) and every view into a new SQLite database file at
// `path`, for sqlite3, DuckDB and other clients. Tables whose rows are events
// get an index on uid. The file appears whole or not at all (temp file +
// rename beside it) and follows the overwrite rule of base/output_guard.h
// (OutputRefused). A table whose data cannot be built (gpu_timeline of a
// trace without linked GPU events) is left empty and says why.
ExportResult export_sqlite(const LoadedTrace& trace, const std::string& path);

}  // namespace jarvis::sql
