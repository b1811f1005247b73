// The thin layer over SQLite's C API (no sqlite3.h here): one in-memory
// connection per query, the virtual-table module that serves a TableSource,
// the helper functions, and the lock-down (authorizer, progress deadline,
// limits) applied before the caller's statement is prepared.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sql/sql.h"
#include "sql/table_source.h"

struct sqlite3;

namespace jarvis::sql {

// The call trees of a sweep's runs for the helper functions, which then take
// the run first: parent_uid(run, uid), is_ancestor(run, ancestor, uid) and
// ancestors(run, uid), whose rows lead with `fixed` (run, layout fields).
struct TreeRuns {
  std::vector<ColumnDef> fixed;
  // Run `run`'s trace and tables (held by the pointer), with its fixed cells
  // into `cells` when given; null for no such trace run. Throws when the run
  // cannot be loaded (the message names it).
  std::function<std::shared_ptr<const QueryContext>(int64_t run, std::vector<Cell>* cells)> open;
};

// SQLite's heap in this process (every connection: queries and the Nsight
// reader alike): an allocation past it fails with SQLITE_NOMEM, so a query's
// sorts, temp b-trees and values (the temp store is memory, never files)
// cannot grow past it (issue 63 point 2: 80 x printf('%.*c', 60e6) took
// 5.2 GB; ORDER BY random() over generated rows held 2.8 GB of temp files).
inline constexpr int64_t kDefaultHeapLimitBytes = int64_t{1} << 30;
// Sets the limit for connections made from now on (tests lower it).
void set_heap_limit_bytes(int64_t bytes);
int64_t heap_limit_bytes();

class Connection {
 public:
  // `attachable`: database files attached later are real files (the
  // export); otherwise everything the connection opens stays in memory.
  explicit Connection(const QueryContext& ctx, bool attachable = false);
  // A connection without a trace (a sweep's tables): add_sheet only.
  explicit Connection(bool attachable = false);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // A table bound on its first use by a statement (eponymous: its name is
  // the module's). `def` must outlive the connection. Needs a trace.
  void add_table(const TableDef& def);
  // A table with the given columns over an already built report Table.
  void add_sheet(const std::string& name, std::shared_ptr<const Table> table);
  // A table over partitions bound on demand (a sweep's runs).
  void add_partitioned(std::shared_ptr<const PartitionedTable> table);
  // The helper functions (overlap, is_ancestor, parent_uid and the
  // table-valued ancestors(uid)) over the connection's trace, or with `runs`
  // over a sweep's runs (each taking the run first); only overlap without
  // either.
  void add_functions(std::shared_ptr<const TreeRuns> runs = nullptr);
  // Runs trusted setup SQL (the embedded views); throws QueryError.
  void exec_trusted(const std::string& sql, const std::string& what);
  // Attaches the database file `path` as `schema` (the export writes its
  // tables there); only before lock_down, which forbids ATTACH.
  void attach(const std::string& path, const std::string& schema);
  // From here on only reads run: the authorizer is installed and the
  // connection's limits set. The deadline is enforced by a progress handler.
  // `max_value_bytes`: the longest text or blob any expression may make (a
  // value longer than the whole reply may hold is refused as it is made, not
  // after: zeroblob(60e6), printf('%.*c', 60e6, 'x')).
  // `cancelled`: stops the query as the deadline does, once it reads true.
  void lock_down(std::chrono::steady_clock::time_point deadline, size_t max_value_bytes,
                 const std::atomic<bool>* cancelled = nullptr);

  // Prepares and steps one read-only statement. Throws QueryError (with
  // SQLite's message) or QueryTimeout.
  QueryResult run(const std::string& sql, const QueryLimits& limits);

  // The message of the last prepare failure run() saw ("" when none).
  const std::string& last_error() const { return last_error_; }

  struct Module;  // defined in the .cpp (holds SQLite's module struct)

 private:
  sqlite3* db_ = nullptr;
  const QueryContext* ctx_ = nullptr;  // null without a trace
  std::vector<std::unique_ptr<Module>> modules_;
  std::chrono::steady_clock::time_point deadline_{std::chrono::steady_clock::time_point::max()};
  bool timed_out_ = false;
  const std::atomic<bool>* cancel_ = nullptr;
  bool cancelled_ = false;  // the progress handler stopped it for cancel_
  std::string last_error_;
  std::string denied_;
  bool declaring_ = false;  // inside a virtual table's declaration  // what the authorizer refused
                            // last, for the message

  static int progress(void* self);
  static int authorize(void* self, int action, const char* a, const char* b, const char* db,
                       const char* trigger);
};

// Runs trusted SQL on the database file `path` in a connection of its own
// (the export creates its views there, so that they name the file's tables).
void exec_on_file(const std::string& path, const std::string& sql, const std::string& what);

// `s` as an SQL identifier in double quotes.
std::string quote_ident(const std::string& s);

}  // namespace jarvis::sql
