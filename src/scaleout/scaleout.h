// Scale-out over MPI (docs/scale-out.md): a sweep's runs analysed by the
// ranks of an `mpirun -np N` / `srun` job.
//
// Rank 0 discovers the work, hands out one task at a time on request (largest
// file first, so one slow trace does not hold the job up at the end), analyses
// tasks itself on a second thread, and merges the results in task order, never
// in arrival order, so its outputs are byte-identical to one process's. The
// other ranks only serve tasks (Job::serve) and keep nothing but the task in
// hand. Every message goes through MPI; only rank 0's main thread calls it.
//
// Compiled only with JARVIS_MPI (cmake/mpi.cmake); the CLI links it.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "collectives/collectives.h"
#include "sweep/sweep.h"

namespace jarvis::scaleout {

// Whether mpirun / srun started this process as one of several ranks (Open
// MPI, PMIx or PMI size variables > 1). A plain `jarvis sweep`, or `-np 1`,
// is not: it never initialises MPI and runs the single-process code.
bool started_as_ranks();

// What one rank did, for --stats.
struct RankStats {
  int rank = 0;
  double peak_rss_mb = 0;  // getrusage ru_maxrss of that rank's process
  size_t tasks = 0;        // tasks it ran (cache hits included)
  size_t runs_parsed = 0;  // runs / traces analysed from their files (cache misses, failures too)
  size_t cache_hits = 0;
  size_t failed = 0;  // runs / traces that failed to load
};

// One MPI job: MPI_Init_thread on construction, MPI_Finalize on destruction
// (rank 0 first releases the serving ranks, also when it unwinds from an
// error, so a failed command never leaves them waiting).
class Job {
 public:
  Job();
  ~Job();
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool root() const { return rank_ == 0; }

  // Rank 0: sweep::load_sweep with the runs analysed across the ranks; same
  // Sweep (runs, failures, order) as the single-process load.
  sweep::Sweep load_sweep(const std::string& root, const sweep::LoadOptions& options);

  // Rank 0: collectives::collective_report with the per-rank stage
  // (analyse_rank) run across the ranks and the merge here; same result as
  // one process, and the same error (the first failing trace in `paths`
  // order) when a trace fails to load.
  collectives::CollectiveReportResult collective_report(
      const std::vector<std::string>& paths, const collectives::CollectiveReportOptions& options);

  // Ranks > 0: run the tasks rank 0 hands out until it ends the job.
  void serve();

  // Rank 0, after the loads: one entry per rank, rank order.
  std::vector<RankStats> stats();

  struct Task {
    std::string kind;     // which handler runs it (scaleout.cpp)
    std::string payload;  // its input
    std::string label;    // the trace, for fault messages
    double weight = 0;    // larger first
  };
  // Rank 0: every task run somewhere; results in task order.
  std::vector<std::string> run_tasks(const std::vector<Task>& tasks,
                                     const std::function<void(size_t, size_t)>& progress);

 private:
  void end_serving_ranks();

  int rank_ = 0;
  int size_ = 1;
  std::vector<bool> idle_;               // rank 0: a rank waits for a task (its request is in)
  std::vector<RankStats> remote_stats_;  // rank 0: the latest counters each rank sent
};

// Writes a directory so that it appears whole: `write(staging)` fills a fresh
// directory beside `out`, which is then renamed to `out` (or, when `out`
// exists, each file is renamed into it). A write that throws, or a process
// killed half-way, leaves no partial `out`.
void write_dir_staged(const std::string& out, const std::function<void(const std::string&)>& write);

}  // namespace jarvis::scaleout
