#include "rocprof/counters.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <unordered_map>

#include "rocprof/report.h"

namespace jarvis::rocprof {

namespace {

const double* find(const std::map<std::string, double>& m, const char* key) {
  auto it = m.find(key);
  return it == m.end() ? nullptr : &it->second;
}

int64_t ceil_div(int64_t a, int64_t b) {
  return b > 0 ? (a + b - 1) / b : 0;
}

}  // namespace

void Aggregate::add(double v) {
  if (samples == 0 || v < min) min = v;
  if (samples == 0 || v > max) max = v;
  sum_ += v;
  ++samples;
}

void Aggregate::finish() {
  mean = samples ? sum_ / static_cast<double>(samples) : std::numeric_limits<double>::quiet_NaN();
}

LaunchProperties launch_properties(const Dispatch& d) {
  return {d.grid, d.workgroup, d.lds_bytes, d.scratch_bytes, d.arch_vgpr, d.accum_vgpr, d.sgpr};
}

std::map<std::string, double> derived_metrics(const std::map<std::string, double>& c,
                                              const Dispatch& d, const Agent* gpu) {
  std::map<std::string, double> out;
  // Waves the launch creates: workgroups x waves per workgroup.
  int64_t wave = gpu && gpu->wave_front_size > 0 ? gpu->wave_front_size : 64;
  int64_t workgroups = ceil_div(d.grid.x, d.workgroup.x) * ceil_div(d.grid.y, d.workgroup.y) *
                       ceil_div(d.grid.z, d.workgroup.z);
  double launched = static_cast<double>(workgroups * ceil_div(d.workgroup.product(), wave));
  out[kLaunchedWaves] = launched;
  const double* sq_waves = find(c, "SQ_WAVES");
  if (gpu && gpu->cu_count > 0)
    out[kWavesPerCu] = (sq_waves ? *sq_waves : launched) / static_cast<double>(gpu->cu_count);
  // Cycles the kernel ran: GRBM_GUI_ACTIVE counts once per XCC.
  double cycles = 0;
  if (const double* grbm = find(c, "GRBM_GUI_ACTIVE"))
    cycles = *grbm / static_cast<double>(gpu ? gpu->num_xcc : 1);
  else if (gpu && gpu->max_clock_mhz > 0)
    cycles =
        static_cast<double>(d.duration_ns()) * static_cast<double>(gpu->max_clock_mhz) / 1000.0;
  if (cycles > 0) out[kElapsedCycles] = cycles;
  // SQ_BUSY_CU_CYCLES: quad-cycles (4 cycles) each CU was busy, summed over CUs.
  if (const double* busy = find(c, "SQ_BUSY_CU_CYCLES");
      busy && cycles > 0 && gpu && gpu->cu_count > 0)
    out[kCuUtilization] = 100.0 * 4.0 * *busy / (static_cast<double>(gpu->cu_count) * cycles);
  // SQ_INSTS_VALU counts MFMA instructions too.
  const double* valu = find(c, "SQ_INSTS_VALU");
  const double* mfma = find(c, "SQ_INSTS_MFMA");
  if (valu && mfma && *valu > 0) {
    out[kMfmaShare] = 100.0 * *mfma / *valu;
    out[kValuShare] = 100.0 - out[kMfmaShare];
  }
  return out;
}

std::vector<KernelCounters> kernel_counters(const Profile& p) {
  // Counter values per dispatch.
  std::vector<std::map<std::string, double>> per_dispatch(p.dispatches.size());
  for (const CounterSample& s : p.counters)
    per_dispatch[s.dispatch][p.counter_names[s.counter]] += s.value;
  const Agent* default_gpu = p.main_gpu();
  std::unordered_map<uint32_t, size_t> index;  // kernel name -> row
  std::vector<KernelCounters> rows;
  std::vector<std::vector<LaunchProperties>> configs;
  for (size_t k = 0; k < p.dispatches.size(); ++k) {
    const Dispatch& d = p.dispatches[k];
    auto [it, added] = index.try_emplace(d.kernel, rows.size());
    if (added) {
      KernelCounters kc;
      kc.name = std::string(p.kernel_name(d));
      kc.category = std::string(kernel_category(kc.name));
      kc.launch = launch_properties(d);
      rows.push_back(std::move(kc));
      configs.emplace_back();
    }
    KernelCounters& kc = rows[it->second];
    ++kc.dispatches;
    kc.total_ns += d.duration_ns();
    auto lp = launch_properties(d);
    auto& seen = configs[it->second];
    if (std::find(seen.begin(), seen.end(), lp) == seen.end()) seen.push_back(lp);
    const auto& values = per_dispatch[k];
    if (values.empty()) continue;
    ++kc.counted_dispatches;
    for (const auto& [name, v] : values) kc.counters[name].add(v);
    const Agent* gpu = p.agent(d.agent);
    if (!gpu || !gpu->gpu) gpu = default_gpu;
    for (const auto& [name, v] : derived_metrics(values, d, gpu)) kc.derived[name].add(v);
  }
  for (size_t r = 0; r < rows.size(); ++r) {
    auto& kc = rows[r];
    kc.launch_configs = configs[r].size();
    kc.mean_ns = static_cast<double>(kc.total_ns) / static_cast<double>(kc.dispatches);
    for (auto& [_, a] : kc.counters) a.finish();
    for (auto& [_, a] : kc.derived) a.finish();
  }
  std::sort(rows.begin(), rows.end(), [](const KernelCounters& a, const KernelCounters& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
  });
  return rows;
}

std::vector<KernelCounters> kernel_counters_from_file(const std::string& path) {
  return kernel_counters(load_profile(path));
}

namespace {

// Writes the launch properties into row[first ..], returns the next column.
size_t set_launch_cells(std::vector<Cell>& row, size_t first, const LaunchProperties& l) {
  for (int64_t v : {l.grid.product(), l.workgroup.product(), l.lds_bytes, l.scratch_bytes,
                    l.arch_vgpr, l.accum_vgpr, l.sgpr})
    row[first++] = Cell(v);
  return first;
}

const std::vector<std::string> kLaunchColumns = {
    "Grid_Size",  "Workgroup_Size",   "LDS_Block_Size", "Scratch_Size",
    "VGPR_Count", "Accum_VGPR_Count", "SGPR_Count"};

}  // namespace

Table dispatch_counters_table(const Profile& p) {
  std::vector<std::string> cols = {"Dispatch_Id", "Kernel_Name", "Start_Timestamp", "Duration_ns"};
  cols.insert(cols.end(), kLaunchColumns.begin(), kLaunchColumns.end());
  cols.insert(cols.end(), {"Counter_Name", "Counter_Value"});
  Table t("dispatch_counters", cols);
  for (const CounterSample& s : p.counters) {
    const Dispatch& d = p.dispatches[s.dispatch];
    auto& row = t.add_row();
    row[0] = Cell(d.dispatch_id);
    row[1] = Cell(std::string(p.kernel_name(d)));
    row[2] = Cell(d.start_ns);
    row[3] = Cell(d.duration_ns());
    size_t c = set_launch_cells(row, 4, launch_properties(d));
    row[c] = Cell(p.counter_names[s.counter]);
    row[c + 1] = Cell(s.value);
  }
  return t;
}

Table kernel_counters_table(const std::vector<KernelCounters>& kernels) {
  std::set<std::string> counter_names, metric_names;
  for (const auto& k : kernels) {
    for (const auto& [n, _] : k.counters) counter_names.insert(n);
    for (const auto& [n, _] : k.derived) metric_names.insert(n);
  }
  std::vector<std::string> cols = {"Kernel_Name", "Category", "Dispatches",    "Counted_Dispatches",
                                   "Total_ns",    "Mean_ns",  "Launch_Configs"};
  cols.insert(cols.end(), kLaunchColumns.begin(), kLaunchColumns.end());
  for (const auto* names : {&counter_names, &metric_names})
    for (const auto& n : *names)
      for (const char* s : {"_mean", "_min", "_max"}) cols.push_back(n + s);
  Table t("kernel_counters", cols);
  for (const auto& k : kernels) {
    auto& row = t.add_row();
    row[0] = Cell(k.name);
    row[1] = Cell(k.category);
    row[2] = Cell(k.dispatches);
    row[3] = Cell(k.counted_dispatches);
    row[4] = Cell(k.total_ns);
    row[5] = Cell(k.mean_ns);
    row[6] = Cell(k.launch_configs);
    size_t c = set_launch_cells(row, 7, k.launch);
    for (const auto& [names, values] :
         {std::pair{&counter_names, &k.counters}, std::pair{&metric_names, &k.derived}})
      for (const auto& n : *names) {
        auto it = values->find(n);
        if (it != values->end()) {  // absent: the cells stay missing
          row[c] = Cell(it->second.mean);
          row[c + 1] = Cell(it->second.min);
          row[c + 2] = Cell(it->second.max);
        }
        c += 3;
      }
  }
  return t;
}

}  // namespace jarvis::rocprof
