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
// Compiled only with JARVIS_MPI (cmake/mpi.cmake): the CLI links this
// header's MPI-free part (ranks.cpp, staged_dir.cpp); the job itself is the
// module libjarvis_mpi.so (job.h).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
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

// One MPI job, as the CLI uses it: the module libjarvis_mpi.so implements it
// (scaleout/job.h), so that Open MPI's libraries are loaded only by a
// process that mpirun / srun started as one of several ranks.
class JobApi {
 public:
  virtual ~JobApi() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  bool root() const { return rank() == 0; }

  // Rank 0: sweep::load_sweep with the runs analysed across the ranks; same
  // Sweep (runs, failures, order) as the single-process load.
  virtual sweep::Sweep load_sweep(const std::string& root, const sweep::LoadOptions& options) = 0;

  // Rank 0: collectives::collective_report with the per-rank stage
  // (analyse_rank) run across the ranks and the merge here; same result as
  // one process, and the same error (the first failing trace in `paths`
  // order) when a trace fails to load.
  virtual collectives::CollectiveReportResult collective_report(
      const std::vector<std::string>& paths,
      const collectives::CollectiveReportOptions& options) = 0;

  // Ranks > 0: run the tasks rank 0 hands out until it ends the job.
  virtual void serve() = 0;

  // Rank 0, after the loads: one entry per rank, rank order.
  virtual std::vector<RankStats> stats() = 0;
};

// Joins the MPI job (MPI_Init_thread) through the module; the job ends
// (MPI_Finalize) when the result is destroyed. Throws std::runtime_error when
// the module cannot be loaded.
std::unique_ptr<JobApi> join_job();

// The module's entry point (extern "C", found by dlsym).
inline constexpr const char* kMpiModuleEntry = "jarvis_mpi_job";
using MpiModuleEntry = JobApi* (*)();

// Writes a directory so that it appears whole: `write(staging)` fills a fresh
// directory beside `out`, which is then renamed to `out` (or, when `out`
// exists, each file is renamed into it). A write that throws, or a process
// killed half-way, leaves no partial `out`.
void write_dir_staged(const std::string& out, const std::function<void(const std::string&)>& write);

}  // namespace jarvis::scaleout
