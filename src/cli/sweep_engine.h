// Where a sweep command analyses its runs (and `jarvis collectives` its rank
// traces): in this process (threads), or, when mpirun / srun started it as
// one of several ranks and the build has JARVIS_MPI, across the ranks of the
// MPI job (src/scaleout). The commands are written once against this; only
// rank 0 runs them, the other ranks serve it.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"

namespace jarvis::cli {

class SweepEngine {
 public:
  SweepEngine();  // joins the MPI job when there is one
  ~SweepEngine();
  SweepEngine(const SweepEngine&) = delete;
  SweepEngine& operator=(const SweepEngine&) = delete;

  // A rank other than 0: call serve() and nothing else.
  bool serving_rank() const;
  void serve();

  engine::Sweep load(const std::string& dir, const engine::SweepLoadOptions& options);

  // engine::collective_report, the per-rank stage spread over the ranks.
  engine::CollectiveReportResult collective_report(const std::vector<std::string>& paths,
                                                   const engine::CollectiveReportOptions& options);

  // Fills the output directory `out` through `write(dir)`; under MPI the
  // directory appears whole (written beside it, then renamed). Returns the
  // paths written, under `out`.
  std::vector<std::string> write_dir(
      const std::string& out,
      const std::function<std::vector<std::string>(const std::string&)>& write);

  // --stats: peak RSS and counters per process (per rank under MPI) on
  // stderr, from the sweeps this engine loaded.
  void print_stats(const std::vector<const engine::Sweep*>& sweeps);
  // --stats of `jarvis collectives`: peak RSS and traces parsed per process
  // (per rank under MPI); `traces` is what one process parsed.
  void print_trace_stats(size_t traces);

 private:
  struct Mpi;
  std::unique_ptr<Mpi> mpi_;
};

}  // namespace jarvis::cli
