#include "categories/op_regimes.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "categories/category_analysis.h"
#include "categories/category_analysis_common.h"
#include "categories/category_analysis_internal.h"
#include "report/op_regime.h"

namespace jarvis::analysis {

namespace fs = std::filesystem;

namespace {

constexpr const char* kKernelMean = "Kernel Time (µs)_mean";
constexpr const char* kRooflineTime = "Roofline Time (µs)_first";

std::optional<double> number_at(const Table& t, size_t r, const char* column) {
  double v = cell_number(cell_at(t, r, column));
  if (std::isnan(v)) return std::nullopt;
  return v;
}

double e2e_ms_of(const std::string& output_dir, const std::string& category) {
  std::string path = output_dir + "/metadata/" + category + "_metadata.json";
  if (!fs::exists(path)) return 0;
  ojson meta = read_json_file(path);
  if (meta.contains("gpu_utilization") && meta["gpu_utilization"].contains("total_time_ms") &&
      meta["gpu_utilization"]["total_time_ms"].is_number())
    return meta["gpu_utilization"]["total_time_ms"].get<double>();
  return 0;
}

ojson op_entry(const Table& ops, size_t r, double floor_us) {
  std::string name = cell_text(cell_at(ops, r, "name"));
  std::optional<double> roofline = number_at(ops, r, kRooflineTime);
  double mean = number_at(ops, r, kKernelMean).value_or(NAN);
  double count = number_at(ops, r, "operation_count").value_or(1);
  double time_ms = number_at(ops, r, kKernelSum).value_or(0) / 1000.0;
  OpRegime regime =
      classify_op_regime(roofline, floor_us, cell_text(cell_at(ops, r, "Roofline Bound")));
  auto headroom = tuning_headroom_us(mean, roofline, floor_us, regime);
  ojson e = ojson::object();
  e["name"] = name;
  std::string args = format_args(cell_at(ops, r, "Input Dims"), cell_at(ops, r, "Input type"));
  if (!args.empty()) e["args"] = args;
  e["regime"] = std::string(regime_name(regime));
  e["roofline_us"] = roofline ? ojson(*roofline) : ojson(nullptr);
  e["kernel_mean_us"] = std::isnan(mean) ? ojson(nullptr) : ojson(mean);
  e["count"] = static_cast<int64_t>(count);
  e["time_ms"] = time_ms;
  e["tuning_headroom_ms"] = headroom ? ojson(*headroom * count / 1000.0) : ojson(nullptr);
  return e;
}

}  // namespace

ojson category_regimes(const std::string& output_dir, const std::string& category) {
  std::string csv = output_dir + "/category_data/" + category + "_ops.csv";
  if (!fs::exists(csv)) return nullptr;
  Table ops = read_csv_typed(csv);
  std::string unified = detail::perf_csv_dir(output_dir) + "/unified_perf_summary.csv";
  double floor_us = fs::exists(unified) ? latency_floor_us(read_csv_typed(unified)) : 0;
  double e2e_ms = e2e_ms_of(output_dir, category);

  ojson r = ojson::object();
  r["latency_floor_us"] = floor_us;
  r["floor_basis"] =
      "median of the shortest tenth (at least 3) of the mean per-call kernel times of the "
      "trace's ops (unified_perf_summary): what this GPU's cheapest kernels cost";
  r["e2e_ms"] = e2e_ms;
  ojson list = ojson::array();
  std::map<std::string, std::array<double, 3>> by;  // ops, time, headroom
  double latency_ms = 0, headroom_ms = 0;
  for (size_t row : detail::operation_order(ops)) {
    ojson e = op_entry(ops, row, floor_us);
    std::string regime = e["regime"].get<std::string>();
    double h = e["tuning_headroom_ms"].is_number() ? e["tuning_headroom_ms"].get<double>() : 0;
    auto& acc = by[regime];
    acc[0] += 1;
    acc[1] += e["time_ms"].get<double>();
    acc[2] += h;
    if (regime == "latency-bound") latency_ms += e["time_ms"].get<double>();
    headroom_ms += h;
    list.push_back(std::move(e));
  }
  r["ops"] = std::move(list);
  ojson by_json = ojson::object();
  for (const auto& [regime, acc] : by)
    by_json[regime] = {
        {"ops", static_cast<int64_t>(acc[0])}, {"time_ms", acc[1]}, {"tuning_headroom_ms", acc[2]}};
  r["by_regime"] = std::move(by_json);
  r["latency_bound_time_ms"] = latency_ms;
  r["tuning_headroom_ms"] = headroom_ms;
  r["tuning_headroom_pct"] = e2e_ms > 0 ? ojson(headroom_ms / e2e_ms * 100) : ojson(nullptr);
  return r;
}

const ojson* regime_of_op(const ojson& regimes, const ojson& op) {
  if (!regimes.is_object() || !regimes.contains("ops")) return nullptr;
  std::string name = op.value("name", std::string());
  std::string args = op.value("args", std::string());
  // The metrics round time_ms to 3 decimals; ops of one name and args differ
  // in strides or concrete inputs, so the time tells them apart.
  double time_ms = op.contains("time_ms") && op["time_ms"].is_number() ? op["time_ms"].get<double>()
                                                                       : std::nan("");
  const ojson* by_name = nullptr;
  for (const auto& e : regimes["ops"]) {
    if (e["name"] != name || e.value("args", std::string()) != args) continue;
    if (std::fabs(e["time_ms"].get<double>() - time_ms) < 5e-4) return &e;
    if (!by_name) by_name = &e;
  }
  return by_name;
}

void annotate_operations(ojson& operations, const ojson& regimes) {
  if (!operations.is_array()) return;
  for (auto& op : operations)
    if (const ojson* e = regime_of_op(regimes, op)) {
      op["regime"] = (*e)["regime"];
      const ojson& h = (*e)["tuning_headroom_ms"];
      op["tuning_headroom_ms"] = h.is_number() ? ojson(std::round(h.get<double>() * 1e4) / 1e4) : h;
    }
}

std::string regimes_summary(const ojson& regimes) {
  if (!regimes.is_object() || !(regimes["latency_floor_us"].get<double>() > 0)) return "";
  int64_t latency_ops = 0;
  if (regimes["by_regime"].contains("latency-bound"))
    latency_ops = regimes["by_regime"]["latency-bound"]["ops"].get<int64_t>();
  std::string line = fmt::format(
      "Regimes: {} of {} op shapes latency-bound ({:.3f} ms below a {:.2f} us kernel latency "
      "floor); kernel tuning can save at most {:.3f} ms over the whole trace (a total over "
      "all its steps, kernel time as profiled)",
      latency_ops, regimes["ops"].size(), regimes["latency_bound_time_ms"].get<double>(),
      regimes["latency_floor_us"].get<double>(), regimes["tuning_headroom_ms"].get<double>());
  if (regimes["tuning_headroom_pct"].is_number())
    line +=
        fmt::format(" ({:.2f} % of end-to-end time)", regimes["tuning_headroom_pct"].get<double>());
  return line + ".\n";
}

std::string regimes_markdown(const ojson& regimes) {
  if (!regimes.is_object()) return "";
  double floor_us = regimes["latency_floor_us"].get<double>();
  std::string md = "\n## Regimes (beyond TraceLens)\n\n";
  if (!(floor_us > 0)) return md + "No kernel latency floor: the trace has no timed ops.\n";
  md += fmt::format(
      "Kernel latency floor of this trace: {:.2f} us ({}). An op whose roofline time per call "
      "is below it is latency-bound: kernel tuning cannot take it below the floor; fewer "
      "launches (fusion, CUDA/HIP graphs, torch.compile, a larger batch) can.\n\n",
      floor_us, regimes["floor_basis"].get<std::string>());
  md += "| Regime | Ops | Kernel time (ms) | Tuning headroom (ms) |\n|---|---|---|---|\n";
  for (const auto& [regime, acc] : regimes["by_regime"].items())
    md += fmt::format("| {} | {} | {:.3f} | {:.3f} |\n", regime, acc["ops"].get<int64_t>(),
                      acc["time_ms"].get<double>(), acc["tuning_headroom_ms"].get<double>());
  if (regimes["tuning_headroom_pct"].is_number())
    md += fmt::format(
        "\nKernel tuning can save at most {:.3f} ms over the whole trace, a total over all its "
        "steps ({:.2f} % of end-to-end time).\n",
        regimes["tuning_headroom_ms"].get<double>(), regimes["tuning_headroom_pct"].get<double>());
  return md;
}

}  // namespace jarvis::analysis
