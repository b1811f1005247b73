// Metric arithmetic in TraceLens's order of operations, so values match to
// the last bit where the reference does the same divisions.
#include "perf/metrics.h"

namespace jarvis::perf {

PerfMetrics compute_perf_metrics(const PerfModel& model, bool backward, double kernel_time_us,
                                 const GpuArch* arch) {
  PerfMetrics m;
  m.gflops = (backward ? model.flops_bwd() : model.flops()) / 1e9;
  m.kernel_time_us = kernel_time_us;
  m.tflops_per_s = kernel_time_us > 0 ? (m.gflops / 1e3) / (kernel_time_us / 1e6) : NAN;
  m.bytes = backward ? model.bytes_bwd() : model.bytes();
  if (m.bytes) {
    m.data_moved_mb = *m.bytes / (1024.0 * 1024.0);
    m.flops_per_byte = *m.bytes > 0 ? (m.gflops * 1e9) / *m.bytes : NAN;
    m.tb_per_s = kernel_time_us > 0 ? (*m.bytes / 1e12) / (kernel_time_us / 1e6) : NAN;
  }
  m.compute_spec = model.compute_spec();
  if (arch != nullptr)
    m.roofline = compute_roofline(*arch, m.compute_spec, m.gflops, m.bytes, kernel_time_us);
  m.params = model.params();
  return m;
}

}  // namespace jarvis::perf
