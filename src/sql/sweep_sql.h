// SQL over a loaded sweep (`jarvis sql SWEEP_DIR`): per-run tables with the
// run's layout fields (threads, channels, rank, ...) as columns, so that one
// query compares configurations. The rows come from each run's cached
// analysis (sweep::RunData): a query over hundreds of runs reads no trace.
#pragma once

#include <string>
#include <vector>

#include "report/table.h"
#include "sql/sql.h"

namespace jarvis::sweep {
struct Sweep;
}

namespace jarvis::sql {

// runs (one row a run), run_kernels (GPU time per kernel name a run),
// run_timeline (the GPU timeline of each run); docs/sql.md "Sweeps".
std::vector<Table> sweep_tables(const sweep::Sweep& sweep);

// One read-only statement over sweep_tables(sweep), with the same safety and
// limits as run_query (the trace functions parent_uid / is_ancestor do not
// exist here; overlap does).
QueryResult run_sweep_query(const sweep::Sweep& sweep, const std::string& sql,
                            const QueryLimits& limits);

// The sweep's tables and their columns.
std::vector<TableInfo> sweep_catalog(const sweep::Sweep& sweep);

}  // namespace jarvis::sql
