// Hardware counters of a rocprofv3 profile (counter_collection): one row per
// dispatch and counter joined to the dispatch's launch properties, and per
// unique kernel name the counters' mean / min / max plus derived metrics.
// Formulas: docs/rocprof.md.
//
// This is also the API for joining counters across runs (e.g. the sweep
// configurations' rocprof_traces/): kernel_counters_from_file() gives the
// per-kernel aggregates of one rocprofv3 output.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "report/table.h"
#include "rocprof/profile.h"

namespace jarvis::rocprof {

// mean / min / max of one quantity over the dispatches that have it.
struct Aggregate {
  double mean = 0;
  double min = 0;
  double max = 0;
  size_t samples = 0;
  void add(double v);  // running min / max and sum (mean set by finish())
  void finish();

 private:
  double sum_ = 0;
};

struct LaunchProperties {
  Dim3 grid, workgroup;
  int64_t lds_bytes = 0, scratch_bytes = 0, arch_vgpr = 0, accum_vgpr = 0, sgpr = 0;
  friend bool operator==(const LaunchProperties& a, const LaunchProperties& b) {
    return a.grid.x == b.grid.x && a.grid.y == b.grid.y && a.grid.z == b.grid.z &&
           a.workgroup.x == b.workgroup.x && a.workgroup.y == b.workgroup.y &&
           a.workgroup.z == b.workgroup.z && a.lds_bytes == b.lds_bytes &&
           a.scratch_bytes == b.scratch_bytes && a.arch_vgpr == b.arch_vgpr &&
           a.accum_vgpr == b.accum_vgpr && a.sgpr == b.sgpr;
  }
};
LaunchProperties launch_properties(const Dispatch& d);

// Names of the derived metrics.
inline constexpr const char* kLaunchedWaves = "launched_waves";
inline constexpr const char* kWavesPerCu = "waves_per_cu";
inline constexpr const char* kElapsedCycles = "elapsed_cycles";
inline constexpr const char* kCuUtilization = "cu_utilization_pct";
inline constexpr const char* kMfmaShare = "mfma_share_pct";
inline constexpr const char* kValuShare = "valu_share_pct";

// Derived metrics of one dispatch from its counters (name -> value), launch
// properties, duration and GPU; a metric whose inputs are absent is left out.
std::map<std::string, double> derived_metrics(const std::map<std::string, double>& counters,
                                              const Dispatch& dispatch, const Agent* gpu);

struct KernelCounters {
  std::string name;
  std::string category;
  size_t dispatches = 0;          // of this kernel in the kernel trace
  size_t counted_dispatches = 0;  // with at least one counter value
  int64_t total_ns = 0;
  double mean_ns = 0;
  LaunchProperties launch;    // of the first dispatch
  size_t launch_configs = 0;  // distinct launch properties
  std::map<std::string, Aggregate> counters;
  std::map<std::string, Aggregate> derived;
};

// Per kernel name, by total kernel time descending (ties by name).
std::vector<KernelCounters> kernel_counters(const Profile& profile);
// Same, from a rocprofv3 output (CSV set or JSON results file).
std::vector<KernelCounters> kernel_counters_from_file(const std::string& path);

// One row per dispatch and counter: Dispatch_Id, Kernel_Name, Start_Timestamp,
// Duration_ns, launch properties, Counter_Name, Counter_Value.
Table dispatch_counters_table(const Profile& profile);
// One row per kernel (kernel_counters order): launch properties, then
// <counter>_mean/_min/_max and <metric>_mean/_min/_max columns.
Table kernel_counters_table(const std::vector<KernelCounters>& kernels);

}  // namespace jarvis::rocprof
