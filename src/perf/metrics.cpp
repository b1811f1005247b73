// Metric arithmetic in TraceLens's order of operations, so values match to
// the last bit where the reference does the same divisions.
#include "perf/metrics.h"

namespace jarvis::perf {

namespace {

// Every metric but the params.
PerfMetrics metrics_of(const PerfModel& model, bool backward, double kernel_time_us,
                       const GpuArch* arch) {
  PerfMetrics m;
  m.gflops = (backward ? model.flops_bwd() : model.flops()) / 1e9;
  m.bytes = backward ? model.bytes_bwd() : model.bytes();
  if (m.bytes) {
    m.data_moved_mb = *m.bytes / (1024.0 * 1024.0);
    m.flops_per_byte = *m.bytes > 0 ? (m.gflops * 1e9) / *m.bytes : NAN;
  }
  m.compute_spec = model.compute_spec();
  if (arch != nullptr)
    m.roofline = compute_roofline(*arch, m.compute_spec, m.gflops, m.bytes, kernel_time_us);
  set_kernel_time(m, kernel_time_us);
  return m;
}

}  // namespace

void set_kernel_time(PerfMetrics& m, double kernel_time_us) {
  m.kernel_time_us = kernel_time_us;
  m.tflops_per_s = kernel_time_us > 0 ? (m.gflops / 1e3) / (kernel_time_us / 1e6) : NAN;
  if (m.bytes) m.tb_per_s = kernel_time_us > 0 ? (*m.bytes / 1e12) / (kernel_time_us / 1e6) : NAN;
  // compute_roofline's percentage, by its arithmetic.
  if (m.roofline)
    m.roofline->pct = kernel_time_us > 0 ? (m.roofline->time_us / kernel_time_us) * 100 : NAN;
}

const Params& PerfMetrics::params() const {
  static const Params kNone;
  return shared_params ? *shared_params : kNone;
}

PerfMetrics compute_perf_metrics(const std::shared_ptr<const PerfModel>& model, bool backward,
                                 double kernel_time_us, const GpuArch* arch) {
  PerfMetrics m = metrics_of(*model, backward, kernel_time_us, arch);
  m.shared_params = std::shared_ptr<const Params>(model, &model->params());  // aliases the model
  return m;
}

PerfMetrics compute_perf_metrics(const PerfModel& model, bool backward, double kernel_time_us,
                                 const GpuArch* arch) {
  PerfMetrics m = metrics_of(model, backward, kernel_time_us, arch);
  m.shared_params = std::make_shared<const Params>(model.params());
  return m;
}

}  // namespace jarvis::perf
