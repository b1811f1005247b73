// Per-op performance metrics (spec perf-models.md §3.4, §4): GFLOPS, data
// moved, arithmetic intensity, achieved TFLOPS/s and TB/s, Compute Spec and
// the roofline columns, from a model's work and the op's kernel busy time.
#pragma once

#include <cmath>
#include <memory>
#include <optional>
#include <string>

#include "perf/gpu_arch.h"
#include "perf/perf_model.h"

namespace jarvis::perf {

struct PerfMetrics {
  double gflops = 0;                 // GFLOPS (work of one op instance)
  double kernel_time_us = 0;         // Kernel Time (µs)
  double tflops_per_s = NAN;         // TFLOPS/s (NaN when kernel time is 0)
  std::optional<double> bytes;       // bytes moved (None when a dtype is unknown)
  double data_moved_mb = NAN;        // Data Moved (MB) = bytes / 2^20
  double flops_per_byte = NAN;       // FLOPS/Byte
  double tb_per_s = NAN;             // TB/s
  std::string compute_spec;          // "" when unknown
  std::optional<Roofline> roofline;  // only with an arch and a known spec
  // The model's params, in order. Shared with the model (and so with every op
  // the model cache serves with it) instead of copied per op: the copies and
  // their frees were a tenth of the perf sheets' time.
  std::shared_ptr<const Params> shared_params;
  const Params& params() const;
};

// Metrics of one op for the given direction (backward uses flops_bwd /
// bytes_bwd). Throws what the model throws (PerfNotImplemented, PerfModelError).
// The overload on a shared model shares its params; the other copies them.
PerfMetrics compute_perf_metrics(const std::shared_ptr<const PerfModel>& model, bool backward,
                                 double kernel_time_us, const GpuArch* arch);
PerfMetrics compute_perf_metrics(const PerfModel& model, bool backward, double kernel_time_us,
                                 const GpuArch* arch);

// Sets the kernel time of `m` and what follows from it (TFLOPS/s, TB/s, the
// roofline percentage), by the same arithmetic: compute_perf_metrics with
// any kernel time, then this, equals compute_perf_metrics with this kernel
// time. Ops that share a model share everything else, so a caller may keep
// one op's metrics per model and only set each op's kernel time.
void set_kernel_time(PerfMetrics& m, double kernel_time_us);

}  // namespace jarvis::perf
