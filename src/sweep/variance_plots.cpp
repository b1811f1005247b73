// The seed's variance plots of gemm_variance (box and violin of the time
// difference by every layout field, and the interaction of the first two
// config fields) as SVG files, drawn by the chart layer.
#include <algorithm>

#include "charts/report_page.h"
#include "charts/variance_charts.h"
#include "sweep/sweep.h"

namespace jarvis::sweep {

std::vector<charts::NamedChart> variance_charts(const Sweep& sweep, const Table& gemm_variance) {
  if (gemm_variance.rows.empty()) return {};
  charts::VarianceSpec spec;
  spec.value_column = "time_diff_us";
  spec.value_label = "GEMM kernel time max - min";
  spec.unit = charts::Unit::Microseconds;
  for (const auto& f : sweep.layout.fields) spec.fields.push_back(f);
  if (gemm_variance.col("rank") >= 0 &&
      std::find(spec.fields.begin(), spec.fields.end(), "rank") == spec.fields.end())
    spec.fields.push_back("rank");
  auto config = sweep.config_fields();
  if (config.size() >= 2) {
    spec.interaction_x = config[1];
    spec.interaction_line = config[0];
  }
  return charts::variance_charts(gemm_variance, spec);
}

std::vector<std::string> write_variance_svgs(const Sweep& sweep, const Table& gemm_variance,
                                             const std::string& dir) {
  return charts::write_chart_svgs(variance_charts(sweep, gemm_variance), dir);
}

}  // namespace jarvis::sweep
