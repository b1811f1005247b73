// The MPI job inside the module libjarvis_mpi.so (cmake/mpi.cmake): only
// the module's sources include this header and mpi.h.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "scaleout/scaleout.h"

namespace jarvis::scaleout {

// One MPI job: MPI_Init_thread on construction, MPI_Finalize on destruction
// (rank 0 first releases the serving ranks, also when it unwinds from an
// error, so a failed command never leaves them waiting).
class Job final : public JobApi {
 public:
  Job();
  ~Job() override;
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  // JobApi (scaleout.h).
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  sweep::Sweep load_sweep(const std::string& root, const sweep::LoadOptions& options) override;
  collectives::CollectiveReportResult collective_report(
      const std::vector<std::string>& paths,
      const collectives::CollectiveReportOptions& options) override;
  void serve() override;
  std::vector<RankStats> stats() override;

  struct Task {
    std::string kind;     // which handler runs it (tasks.cpp)
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

}  // namespace jarvis::scaleout
