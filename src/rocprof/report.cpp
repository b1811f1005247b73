// Arithmetic notes (why the code computes things the way it does):
//  * gpu_timeline: interval ends are float(ns) / 1000 as Python computes
//    them, summed left to right (Python 3.11 sum), then / 1000 for ms;
//  * groupby order is the sorted names (byte order == Python's code-point
//    order for UTF-8); sums and min/max stay integers (int64 columns);
//  * sorts by one column are NumPy's unstable quicksort (numpy_sort.h).
#include "rocprof/report.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

#include "pycompat/numeric.h"
#include "pycompat/text.h"
#include "report/core_tables.h"
#include "report/numpy_sort.h"
#include "report/stats.h"

namespace jarvis::rocprof {

namespace {

using Interval = std::pair<double, double>;

bool contains_any(std::string_view text, std::initializer_list<std::string_view> needles) {
  for (auto n : needles)
    if (text.find(n) != std::string_view::npos) return true;
  return false;
}

// Dispatch durations grouped by kernel name, names sorted.
std::map<std::string_view, std::vector<int64_t>> durations_by_name(const Profile& p) {
  std::map<std::string_view, std::vector<int64_t>> groups;
  for (const Dispatch& d : p.dispatches) groups[p.kernel_name(d)].push_back(d.duration_ns());
  return groups;
}

std::vector<double> as_doubles(const std::vector<int64_t>& v) {
  return {v.begin(), v.end()};
}

// Python's sum() of (end - start) over merged intervals, each end being
// float(ns) / 1000.
double merged_length_us(std::vector<std::pair<int64_t, int64_t>> spans) {
  std::vector<Interval> intervals;
  intervals.reserve(spans.size());
  for (auto [s, e] : spans)
    intervals.emplace_back(static_cast<double>(s) / 1000.0, static_cast<double>(e) / 1000.0);
  std::stable_sort(intervals.begin(), intervals.end(),
                   [](const Interval& a, const Interval& b) { return a.first < b.first; });
  std::vector<Interval> merged;
  for (const auto& iv : intervals) {
    if (!merged.empty() && iv.first <= merged.back().second)
      merged.back().second = std::max(merged.back().second, iv.second);
    else
      merged.push_back(iv);
  }
  double total = 0;
  for (const auto& [s, e] : merged) total += e - s;
  return total;
}

std::vector<std::pair<int64_t, int64_t>> kernel_spans(const Profile& p) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const Dispatch& d : p.dispatches) out.emplace_back(d.start_ns, d.end_ns);
  return out;
}

std::vector<std::pair<int64_t, int64_t>> copy_spans(const Profile& p) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const MemoryCopy& c : p.copies) out.emplace_back(c.start_ns, c.end_ns);
  return out;
}

// A nanosecond quantity as written: raw (TraceLens) or scaled to the unit
// the header names.
Cell time_cell(int64_t ns, bool fix_units, double scale) {
  return fix_units ? Cell(static_cast<double>(ns) / scale) : Cell(ns);
}

}  // namespace

std::string_view kernel_category(std::string_view name) {
  std::string lower = pycompat::ascii_lower(name);
  if (contains_any(lower, {"gemm", "matmul", "cijk"})) return "GEMM";
  if (contains_any(lower, {"elementwise"})) return "Elementwise";
  if (contains_any(lower, {"reduce", "sum"})) return "Reduction";
  if (contains_any(lower, {"conv"})) return "Convolution";
  if (contains_any(lower, {"norm"})) return "Normalization";
  if (contains_any(lower, {"flash", "attn", "fmha"})) return "Attention";
  if (contains_any(lower, {"copy", "memcpy"})) return "Memory";
  // TraceLens's communication patterns: NCCL / RCCL markers and its default
  // custom collective (cross_device_reduce, already taken by "reduce").
  if (contains_any(lower, {"rccl", "nccl", "cross_device_reduce"})) return "COMM";
  return "Other";
}

std::vector<KernelStats> kernel_stats_by_time(const Profile& p) {
  std::vector<KernelStats> rows;
  for (const auto& [name, durs] : durations_by_name(p)) {
    auto d = as_doubles(durs);
    KernelStats s;
    s.name = std::string(name);
    s.category = kernel_category(name);
    s.count = static_cast<int64_t>(durs.size());
    for (int64_t x : durs) s.total_ns += x;
    s.mean_ns = pycompat::pandas_groupby_mean(d);
    s.median_ns = stats::median(d);
    s.std_ns = pycompat::pandas_groupby_std(d);
    s.min_ns = *std::min_element(durs.begin(), durs.end());
    s.max_ns = *std::max_element(durs.begin(), durs.end());
    rows.push_back(std::move(s));
  }
  std::vector<double> totals;
  for (const auto& r : rows) totals.push_back(static_cast<double>(r.total_ns));
  std::vector<KernelStats> sorted;
  for (size_t i : numpy::argsort_descending(totals)) sorted.push_back(rows[i]);
  return sorted;
}

std::pair<int64_t, int64_t> run_bounds_ns(const Profile& p) {
  if (p.init_ns && p.fini_ns) return {*p.init_ns, *p.fini_ns};
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (const Dispatch& d : p.dispatches) lo = std::min(lo, d.start_ns), hi = std::max(hi, d.end_ns);
  for (const MemoryCopy& c : p.copies) lo = std::min(lo, c.start_ns), hi = std::max(hi, c.end_ns);
  return lo <= hi ? std::pair{lo, hi} : std::pair<int64_t, int64_t>{0, 0};
}

Table gpu_timeline_table(const Profile& p) {
  Table t("gpu_timeline", {"type", "time ms", "percent"});
  if (p.dispatches.empty()) return t;
  auto [init, fini] = run_bounds_ns(p);
  double total_us = static_cast<double>(fini) / 1000.0 - static_cast<double>(init) / 1000.0;
  auto kernels = kernel_spans(p), copies = copy_spans(p);
  double kernel_us = merged_length_us(kernels);
  double memory_us = merged_length_us(copies);
  kernels.insert(kernels.end(), copies.begin(), copies.end());
  double busy_us = merged_length_us(kernels);
  double idle_us = std::max(0.0, total_us - busy_us);
  auto add = [&](const char* type, double us, bool is_total) {
    auto& row = t.add_row();
    row[0] = Cell(type);
    row[1] = Cell(us / 1000.0);
    row[2] = Cell(is_total ? 100.0 : total_us > 0 ? us / total_us * 100.0 : 0.0);
  };
  add("total_time", total_us, true);
  add("kernel", kernel_us, false);
  add("memory", memory_us, false);
  add("busy_time", busy_us, false);
  add("idle", idle_us, false);
  return t;
}

Table kernel_summary_table(const Profile& p, bool fix_units) {
  Table t("kernel_summary",
          {"name", "Count", "Mean Kernel Time (µs)", "Median Kernel Time (µs)",
           "Std Kernel Time (µs)", "Min Kernel Time (µs)", "Max Kernel Time (µs)", "Percentage (%)",
           "Cumulative Percentage (%)", "Total Kernel Time (ms)", "Category"});
  auto rows = kernel_stats_by_time(p);
  int64_t total = 0;
  for (const auto& r : rows) total += r.total_ns;
  auto percent = [&](const KernelStats& r) {
    return total > 0 ? static_cast<double>(r.total_ns) / static_cast<double>(total) * 100.0 : 0.0;
  };
  // TraceLens sums the percentages in name order, before sorting by time.
  std::map<std::string_view, double> cumulative;
  std::vector<const KernelStats*> by_name;
  for (const auto& r : rows) by_name.push_back(&r);
  std::sort(by_name.begin(), by_name.end(),
            [](const KernelStats* a, const KernelStats* b) { return a->name < b->name; });
  double acc = 0;
  for (const KernelStats* r : by_name) cumulative[r->name] = acc += percent(*r);
  double scale = fix_units ? 1000.0 : 1.0;
  double running = 0;
  for (const auto& r : rows) {
    auto& row = t.add_row();
    row[0] = Cell(r.name);
    row[1] = Cell(r.count);
    row[2] = Cell(r.mean_ns / scale);
    row[3] = Cell(r.median_ns / scale);
    row[4] = std::isnan(r.std_ns) ? Cell() : Cell(r.std_ns / scale);
    row[5] = time_cell(r.min_ns, fix_units, 1000.0);
    row[6] = time_cell(r.max_ns, fix_units, 1000.0);
    row[7] = Cell(percent(r));
    running += percent(r);
    row[8] = Cell(fix_units ? running : cumulative[r.name]);
    row[9] = Cell(static_cast<double>(r.total_ns) / (fix_units ? 1e6 : 1000.0));
    row[10] = Cell(std::string(r.category));
  }
  return t;
}

Table kernel_summary_by_category_table(const Profile& p, bool fix_units) {
  Table t("kernel_summary_by_category", {"op category", "Count", "total_direct_kernel_time_ms",
                                         "Percentage (%)", "Cumulative Percentage (%)"});
  std::map<std::string_view, std::pair<int64_t, int64_t>> groups;  // count, total ns
  for (const Dispatch& d : p.dispatches) {
    auto& g = groups[kernel_category(p.kernel_name(d))];
    ++g.first;
    g.second += d.duration_ns();
  }
  if (groups.empty()) return t;
  std::vector<double> ms;
  for (const auto& [cat, g] : groups)
    ms.push_back(static_cast<double>(g.second) / (fix_units ? 1e6 : 1000.0));
  double total = pycompat::numpy_sum(ms);
  std::vector<double> pct;
  for (double v : ms) pct.push_back(total > 0 ? v / total * 100.0 : 0.0);
  auto cumulative = stats::cumsum(pct);  // category order, before the sort
  std::vector<std::string_view> names;
  std::vector<int64_t> counts;
  for (const auto& [cat, g] : groups) names.push_back(cat), counts.push_back(g.first);
  double running = 0;
  for (size_t i : numpy::argsort_descending(ms)) {
    auto& row = t.add_row();
    row[0] = Cell(std::string(names[i]));
    row[1] = Cell(counts[i]);
    row[2] = Cell(ms[i]);
    row[3] = Cell(pct[i]);
    running += pct[i];
    row[4] = Cell(fix_units ? running : cumulative[i]);
  }
  return t;
}

Table kernel_details_table(const Profile& p, std::optional<size_t> topk, bool fix_units) {
  Table t("kernel_details",
          {"name", "Kernel duration (µs)", "stream", "dispatch_id", "grid_x", "grid_y", "grid_z",
           "block_x", "block_y", "block_z", "agent_id", "thread_id"});
  std::vector<double> durations;
  durations.reserve(p.dispatches.size());
  for (const Dispatch& d : p.dispatches) durations.push_back(static_cast<double>(d.duration_ns()));
  auto order = numpy::argsort_descending(durations);
  if (topk && *topk < order.size()) order.resize(*topk);
  t.rows.reserve(order.size());
  for (size_t i : order) {
    const Dispatch& d = p.dispatches[i];
    auto& row = t.add_row();
    row[0] = Cell(std::string(p.kernel_name(d)));
    row[1] = time_cell(d.duration_ns(), fix_units, 1000.0);
    size_t c = 2;
    for (int64_t v : {d.stream, d.dispatch_id, d.grid.x, d.grid.y, d.grid.z, d.workgroup.x,
                      d.workgroup.y, d.workgroup.z, d.agent, d.thread_id})
      row[c++] = Cell(v);
  }
  return t;
}

namespace {

// Durations in the unit the short-kernel threshold is compared with:
// TraceLens compares nanoseconds with a microsecond threshold.
double comparable_duration(const Dispatch& d, bool fix_units) {
  return static_cast<double>(d.duration_ns()) / (fix_units ? 1000.0 : 1.0);
}

}  // namespace

Table short_kernels_summary_table(const Profile& p, double threshold_us, bool fix_units) {
  Table t("short_kernels_summary",
          {"name", "Short Kernel count", "Short Kernel duration (µs) sum",
           "Short Kernel duration (µs) mean", "Short Kernel duration (µs) percent of total time"});
  std::map<std::string_view, std::vector<int64_t>> groups;
  int64_t total_ns = 0;
  for (const Dispatch& d : p.dispatches) {
    total_ns += d.duration_ns();
    if (comparable_duration(d, fix_units) < threshold_us)
      groups[p.kernel_name(d)].push_back(d.duration_ns());
  }
  struct Row {
    std::string_view name;
    int64_t count, sum_ns;
    double mean_ns;
  };
  std::vector<Row> rows;
  for (const auto& [name, durs] : groups) {
    int64_t sum = 0;
    for (int64_t x : durs) sum += x;
    rows.push_back({name, static_cast<int64_t>(durs.size()), sum,
                    pycompat::pandas_groupby_mean(as_doubles(durs))});
  }
  // Sum descending, then the other columns ascending (names are unique).
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    return a.sum_ns != b.sum_ns ? a.sum_ns > b.sum_ns : a.name < b.name;
  });
  double scale = fix_units ? 1000.0 : 1.0;
  for (const Row& r : rows) {
    auto& row = t.add_row();
    row[0] = Cell(std::string(r.name));
    row[1] = Cell(r.count);
    row[2] = time_cell(r.sum_ns, fix_units, scale);
    row[3] = Cell(r.mean_ns / scale);
    row[4] = Cell(
        total_ns > 0 ? static_cast<double>(r.sum_ns) / static_cast<double>(total_ns) * 100.0 : 0.0);
  }
  return t;
}

Table short_kernel_histogram_table(const Profile& p, double threshold_us, int bins,
                                   bool fix_units) {
  std::vector<double> values;
  for (const Dispatch& d : p.dispatches)
    if (double v = comparable_duration(d, fix_units); v < threshold_us) values.push_back(v);
  return report::numpy_histogram_table(values, bins);
}

std::vector<Table> report_tables(const Profile& p, const ReportOptions& o) {
  std::vector<Table> out;
  out.push_back(gpu_timeline_table(p));
  if (o.kernel_summary) {
    out.push_back(kernel_summary_table(p, o.fix_units));
    out.push_back(kernel_summary_by_category_table(p, o.fix_units));
  }
  if (o.kernel_details) out.push_back(kernel_details_table(p, o.topk_kernels, o.fix_units));
  if (o.short_kernel_study) {
    out.push_back(short_kernels_summary_table(p, o.short_kernel_threshold_us, o.fix_units));
    out.push_back(short_kernel_histogram_table(p, o.short_kernel_threshold_us, o.short_kernel_bins,
                                               o.fix_units));
  }
  return out;
}

}  // namespace jarvis::rocprof
