// The MPI-free part of the scale-out that the CLI links: whether this
// process is one of several ranks, and joining the job through the module.
#include <cstdlib>

#include "base/module_loader.h"
#include "scaleout/scaleout.h"

namespace jarvis::scaleout {
namespace {

long env_long(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::strtol(v, nullptr, 10) : 0;
}

}  // namespace

bool started_as_ranks() {
  if (env_long("OMPI_COMM_WORLD_SIZE") > 1 || env_long("PMI_SIZE") > 1) return true;
  // srun --mpi=pmix sets PMIX_RANK; the step's task count says how many.
  return std::getenv("PMIX_RANK") && env_long("SLURM_STEP_NUM_TASKS") > 1;
}

std::unique_ptr<JobApi> join_job() {
  auto entry =
      reinterpret_cast<MpiModuleEntry>(load_module_entry("libjarvis_mpi.so", kMpiModuleEntry));
  return std::unique_ptr<JobApi>(entry());
}

}  // namespace jarvis::scaleout
