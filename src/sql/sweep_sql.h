// SQL over a loaded sweep (`jarvis sql SWEEP_DIR`, query_sql sweep=): every
// table has the run and its layout fields (threads, channels, rank, ...) as
// leading columns, so that one query compares configurations.
//
// - runs, run_kernels, run_timeline, collective_skew: from each run's cached
//   analysis (sweep::RunData); a query over them reads no trace.
// - events, ops, kernels, annotations, gpu_timeline, memory, collectives and
//   the views steps / ops_in_step / kernels_in_step: the trace tables of
//   every trace run, concatenated. A run's trace is loaded (from its snapshot
//   when it has one) only when a scan reaches it; a condition on run or a
//   field (=, IN, <>, <, <=, >, >=, BETWEEN, LIKE, GLOB) skips the runs it
//   rules out unloaded. SweepTraces keeps the most recently used.
// - the report sheets (ops_summary, GEMM, ...): each trace run's report and
//   each report directory's <sheet>.csv, the same way.
// - parent_uid / is_ancestor / ancestors take the run first.
#pragma once

#include <cstddef>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "report/table.h"
#include "sql/sql.h"

namespace jarvis::sweep {
struct Sweep;
struct Run;
}  // namespace jarvis::sweep

namespace jarvis::sql {

struct RunTrace;  // a loaded run: its trace and the tables bound on it

// The traces of a sweep's runs as the trace tables read them: loaded on
// first use (Kineto traces from their snapshots when they have one,
// rocprofv3 results through their reader), the `keep` most recently used
// kept for the next scan or query; the others are freed when no scan holds
// them, so memory stays at `keep` traces plus those being read.
class SweepTraces {
 public:
  // The file to read for a run (default: its path); throws to refuse it
  // (the MCP server confines every run to its roots).
  using Resolve = std::function<std::string(const sweep::Run&)>;
  explicit SweepTraces(Resolve resolve = {}, size_t keep = 8);
  ~SweepTraces();
  SweepTraces(const SweepTraces&) = delete;
  SweepTraces& operator=(const SweepTraces&) = delete;

  // Run `index` of `s`, loaded or from the kept ones. Throws std::runtime_error
  // naming the run and how to leave it out.
  std::shared_ptr<RunTrace> open(const sweep::Sweep& s, size_t index);
  size_t loads() const { return loads_; }  // traces loaded so far
  // The file or directory to read for a run (through Resolve).
  std::string path_of(const sweep::Run& run) const;

 private:
  struct Own;
  std::unique_ptr<Own> own_;  // the trace cache and store the runs are loaded through
  Resolve resolve_;
  size_t keep_;
  std::list<std::pair<size_t, std::shared_ptr<RunTrace>>> kept_;  // most recent first
  size_t loads_ = 0;
};

// runs (one row a run), run_kernels (GPU time per kernel name a run),
// run_timeline (the GPU timeline of each run), collective_skew (per rank and
// collective instance matched across the ranks of a configuration);
// docs/sql.md "Sweeps".
std::vector<Table> sweep_tables(const sweep::Sweep& sweep);

// One read-only statement over sweep_tables(sweep), the trace tables of its
// runs and the report sheets of its runs (a trace run's report, a report
// directory's <sheet>.csv), with the same safety and limits as run_query.
// The call-tree functions take the run first: parent_uid(run, uid),
// is_ancestor(run, ancestor, uid), ancestors(run, uid). `traces` null: a
// SweepTraces of this query alone.
QueryResult run_sweep_query(const sweep::Sweep& sweep, const std::string& sql,
                            const QueryLimits& limits, SweepTraces* traces = nullptr);

// The sweep's tables and their columns.
std::vector<TableInfo> sweep_catalog(const sweep::Sweep& sweep);

}  // namespace jarvis::sql
