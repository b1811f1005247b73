// The thin layer over SQLite's C API (no sqlite3.h here): one in-memory
// connection per query, the virtual-table module that serves a TableSource,
// the helper functions, and the lock-down (authorizer, progress deadline,
// limits) applied before the caller's statement is prepared.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "sql/sql.h"
#include "sql/table_source.h"

struct sqlite3;

namespace jarvis::sql {

class Connection {
 public:
  explicit Connection(const QueryContext& ctx);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // A table bound on its first use by a statement (eponymous: its name is
  // the module's). `def` must outlive the connection.
  void add_table(const TableDef& def);
  // A table with the given columns over an already built report Table.
  void add_sheet(const std::string& name, std::shared_ptr<const Table> table);
  // The helper functions (overlap, is_ancestor, parent_uid).
  void add_functions();
  // Runs trusted setup SQL (the embedded views); throws QueryError.
  void exec_trusted(const std::string& sql, const std::string& what);
  // From here on only reads run: the authorizer is installed and the
  // connection's limits set. The deadline is enforced by a progress handler.
  void lock_down(std::chrono::steady_clock::time_point deadline);

  // Prepares and steps one read-only statement. Throws QueryError (with
  // SQLite's message) or QueryTimeout.
  QueryResult run(const std::string& sql, const QueryLimits& limits);

  // The message of the last prepare failure run() saw ("" when none).
  const std::string& last_error() const { return last_error_; }

  struct Module;  // defined in the .cpp (holds SQLite's module struct)

 private:
  sqlite3* db_ = nullptr;
  const QueryContext& ctx_;
  std::vector<std::unique_ptr<Module>> modules_;
  std::chrono::steady_clock::time_point deadline_{std::chrono::steady_clock::time_point::max()};
  bool timed_out_ = false;
  std::string last_error_;
  std::string denied_;
  bool declaring_ = false;  // inside a virtual table's declaration  // what the authorizer refused
                            // last, for the message

  static int progress(void* self);
  static int authorize(void* self, int action, const char* a, const char* b, const char* db,
                       const char* trigger);
};

}  // namespace jarvis::sql
