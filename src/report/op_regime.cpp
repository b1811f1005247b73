#include "report/op_regime.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace jarvis {

std::string_view regime_name(OpRegime regime) {
  switch (regime) {
    case OpRegime::LatencyBound:
      return "latency-bound";
    case OpRegime::MemoryBound:
      return "memory-bound";
    case OpRegime::ComputeBound:
      return "compute-bound";
    case OpRegime::Unknown:
      break;
  }
  return "unknown";
}

double latency_floor_us(const Table& unified_perf_summary) {
  int c = unified_perf_summary.col("Kernel Time (µs)_mean");
  if (c < 0) return 0;
  std::vector<double> means;
  for (const auto& row : unified_perf_summary.rows) {
    const Cell& cell = row[static_cast<size_t>(c)];
    if (cell.is_number() && cell.number() > 0) means.push_back(cell.number());
  }
  if (means.empty()) return 0;
  std::sort(means.begin(), means.end());
  size_t n = std::min(means.size(), std::max<size_t>(3, means.size() / 10));
  return n % 2 ? means[n / 2] : 0.5 * (means[n / 2 - 1] + means[n / 2]);
}

OpRegime classify_op_regime(std::optional<double> roofline_us, double latency_floor_us,
                            std::string_view roofline_bound) {
  if (!roofline_us || !std::isfinite(*roofline_us)) return OpRegime::Unknown;
  if (latency_floor_us > 0 && *roofline_us < latency_floor_us) return OpRegime::LatencyBound;
  if (roofline_bound == "MEMORY_BOUND") return OpRegime::MemoryBound;
  if (roofline_bound == "COMPUTE_BOUND") return OpRegime::ComputeBound;
  return OpRegime::Unknown;
}

std::optional<double> tuning_headroom_us(double kernel_mean_us, std::optional<double> roofline_us,
                                         double latency_floor_us, OpRegime regime) {
  if (!roofline_us || !std::isfinite(*roofline_us) || !std::isfinite(kernel_mean_us))
    return std::nullopt;
  double bound =
      regime == OpRegime::LatencyBound ? std::max(latency_floor_us, *roofline_us) : *roofline_us;
  return std::max(0.0, kernel_mean_us - bound);
}

}  // namespace jarvis
