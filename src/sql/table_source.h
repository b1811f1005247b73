// What a virtual table is to the SQLite binding, without SQLite: typed
// columns declared when a query first names the table (the bind step), and
// cells read on demand by row (the scan). Rows are addressed by index; a
// table whose rows are events declares a key column (the uid) so that
// `uid = ?` and joins on uids are lookups instead of scans.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "report/table.h"
#include "trace/trace.h"

namespace jarvis {
class LoadedTrace;
class CallTree;
struct Report;
}  // namespace jarvis

namespace jarvis::sql {

enum class ColType { Integer, Real, Text };
const char* col_type_name(ColType t);

struct ColumnDef {
  std::string name;
  ColType type = ColType::Integer;
  std::string doc;
};

// Receives one cell. Text handed with stable = true outlives the query (the
// trace's string pool), so it is not copied.
class CellSink {
 public:
  virtual ~CellSink() = default;
  virtual void null() = 0;
  virtual void integer(int64_t v) = 0;
  virtual void real(double v) = 0;
  virtual void text(std::string_view v, bool stable) = 0;
  // kNoInt / kNoTime / kNoUid as NULL.
  void maybe_int(int64_t v) {
    if (v == kNoInt)
      null();
    else
      integer(v);
  }
  void maybe_uid(Uid u) {
    if (u == kNoUid)
      null();
    else
      integer(u);
  }
  void maybe_real(double v);                          // NaN as NULL
  void cell(const Cell& c);                           // a report cell
  void proc_id(const Trace& trace, const ProcId& p);  // int, text, or NULL
};

// A bound table: its row count and cells. Cells are read from any row in
// any order (SQLite reads the columns a query uses, row by row).
struct TableSource {
  size_t rows = 0;
  std::function<void(size_t row, int column, CellSink&)> cell;
  // Key column: when >= 0, its values are unique, ascending with the row,
  // and find_key gives the row of a value (or nullopt).
  int key_column = -1;
  std::function<std::optional<size_t>(int64_t)> find_key;
};

// What a table reads from: the loaded trace and the artefacts derived from
// it (built on first use and cached on the trace, so a second query reuses
// them).
class QueryContext {
 public:
  explicit QueryContext(const LoadedTrace& entry) : entry_(entry) {}
  const LoadedTrace& entry() const { return entry_; }
  const Trace& trace() const;
  const CallTree& tree() const;
  // The trace's report (built once per trace); throws when the trace has no
  // GPU event linked to a launch.
  const Report& report() const;
  std::shared_ptr<const Report> report_ptr() const {
    report();
    return report_;
  }

 private:
  const LoadedTrace& entry_;
  mutable std::shared_ptr<const CallTree> tree_;
  mutable std::shared_ptr<const Report> report_;
};

// A table whose rows are the rows of several bound tables, one per
// partition (a sweep's runs), each row led by its partition's fixed cells
// (run, layout fields). A partition is bound only when a scan reaches it, so
// a condition on a fixed column (`WHERE run = 3`, `threads < 512`, `mode LIKE
// 'e%'`, a join on run) skips the partitions it surely rules out unread; the
// key column (uid) is a lookup inside each partition scanned.
struct PartitionedTable {
  std::string name;
  std::vector<ColumnDef> columns;             // the fixed columns, then the table's
  size_t fixed = 0;                           // leading columns held by `partitions`
  std::vector<std::vector<Cell>> partitions;  // each partition's fixed cells
  int key_column = -1;                        // among all columns, -1 when none
  // The partition's rows; throws (the message names the partition).
  std::function<std::shared_ptr<const TableSource>(size_t partition)> bind;
};

// A table of the catalog: static columns, bound on first use by a query.
struct TableDef {
  std::string name;
  std::string doc;
  std::vector<ColumnDef> columns;
  std::function<TableSource(const QueryContext&)> bind;
};

// The columns that read straight off one event, shared by events, ops,
// kernels and annotations so that a column means the same (and is NULL in
// the same cases) in every table. A table whose leading columns are these
// lists them in order and hands those columns to event_cell.
enum class EventField {
  Uid,
  Name,
  Category,
  Phase,
  Ts,
  Dur,
  End,
  Pid,
  Tid,
  Stream,
  Device,
  Correlation,
  ExternalId,
  FlowId
};
void event_cell(const Trace& trace, Uid uid, EventField field, CellSink& out);

// Tables over a sorted list of event uids: rows are the uids, the key
// column `key_column` holds the uid.
TableSource uid_rows(std::shared_ptr<const std::vector<Uid>> uids, int key_column,
                     std::function<void(size_t row, Uid uid, int column, CellSink&)> cell);

// A report Table as a table (every sheet, gpu_timeline): columns typed from
// their cells (REAL when any cell is a double, INTEGER when all are ints,
// TEXT otherwise).
std::vector<ColumnDef> sheet_columns(const Table& t);
TableSource sheet_source(std::shared_ptr<const Table> t);

// The built-in tables, one per file (table_*.cpp).
const TableDef& events_table();
const TableDef& ops_table();
const TableDef& kernels_table();
const TableDef& annotations_table();
const TableDef& gpu_timeline_table_def();
const TableDef& memory_table();
const TableDef& collectives_table();
std::vector<const TableDef*> builtin_tables();

// `message` (SQLite's) with " — did you mean X?" when it names an unknown
// column, table or function and one of `tables` (or a function) is close.
struct TableInfo;
std::string with_nearest_name(const std::string& message, const std::vector<TableInfo>& tables);
// The table SQLite's message says it cannot find ("no such table: main.x"
// gives "x"), "" for another message.
std::string missing_table(const std::string& message);

}  // namespace jarvis::sql
