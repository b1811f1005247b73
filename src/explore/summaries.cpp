#include "explore/summaries.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "perf/categories.h"
#include "report/gpu_timeline.h"

namespace jarvis::analysis {

nlohmann::json trace_overview(const LoadedTrace& entry) {
  const Trace& trace = entry.trace();
  // Counted by category in an array, named once at the end (a map lookup by
  // name per event was 60 ms of load_trace on a 3.7M-event trace).
  enum Bucket : size_t {
    kCpuOp,
    kPythonFunction,
    kUserAnnotation,
    kGpuUserAnnotation,
    kCudaRuntime,
    kCudaDriver,
    kKernel,
    kGpuMemcpy,
    kGpuMemset,
    kOther,
    kBuckets
  };
  constexpr const char* kBucketNames[kBuckets] = {
      "cpu_op",      "python_function", "user_annotation", "gpu_user_annotation", "cuda_runtime",
      "cuda_driver", "kernel",          "gpu_memcpy",      "gpu_memset",          "other"};
  const auto bucket_of = [](Cat cat) {
    switch (cat) {
      case Cat::CpuOp:
        return kCpuOp;
      case Cat::PythonFunction:
        return kPythonFunction;
      case Cat::UserAnnotation:
        return kUserAnnotation;
      case Cat::GpuUserAnnotation:
        return kGpuUserAnnotation;
      case Cat::CudaRuntime:
        return kCudaRuntime;
      case Cat::CudaDriver:
        return kCudaDriver;
      case Cat::Kernel:
        return kKernel;
      case Cat::GpuMemcpy:
        return kGpuMemcpy;
      case Cat::GpuMemset:
        return kGpuMemset;
      default:
        return kOther;
    }
  };
  int64_t by_bucket[kBuckets] = {};
  for (const Event& e : trace.events) ++by_bucket[bucket_of(e.cat)];
  std::map<std::string, int64_t> counts;
  for (size_t b = 0; b < kBuckets; ++b) counts[kBucketNames[b]] = by_bucket[b];
  nlohmann::json events(counts);
  events["total"] = static_cast<int64_t>(trace.events.size());
  return {{"trace", entry.handle()},
          {"path", entry.path()},
          {"platform", platform_name(trace.platform)},
          {"gpu_name", trace.gpu_name()},
          {"file_bytes", entry.file_size()},
          {"json_bytes", trace.json_bytes},
          {"load_seconds", entry.load_seconds()},
          {"events", events}};
}

}  // namespace jarvis::analysis

namespace jarvis::analysis {

namespace {

double number_or_nan(const Table& t, size_t row, std::string_view column) {
  int c = t.col(column);
  return c < 0 ? std::nan("") : t.rows[row][static_cast<size_t>(c)].number();
}

std::string text_or_empty(const Table& t, size_t row, std::string_view column) {
  int c = t.col(column);
  if (c < 0) return "";
  const Cell& cell = t.rows[row][static_cast<size_t>(c)];
  return cell.is_text() ? cell.text() : "";
}

nlohmann::json finite_or_null(double x) {
  return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json();
}

// The Python list literal of the Categories cell ("['GEMM', 'other']"):
// the quoted items, in order. Category names hold no quotes or commas.
std::vector<std::string> parse_categories(const std::string& cell) {
  std::vector<std::string> out;
  size_t pos = 0;
  while ((pos = cell.find_first_of("'\"", pos)) != std::string::npos) {
    char quote = cell[pos];
    size_t end = cell.find(quote, pos + 1);
    if (end == std::string::npos) break;
    out.push_back(cell.substr(pos + 1, end - pos - 1));
    pos = end + 1;
  }
  if (out.empty() && !cell.empty() && cell != "[]") out.push_back(cell);
  return out;
}

struct PerfAggregate {
  int64_t rows = 0;
  double operation_count = 0, gflops = 0, data_moved_mb = 0, kernel_time_us = 0;
  double weighted_pct = 0, pct_weight = 0;
  double top_time = -1;
  std::string compute_spec, bound;
};

std::map<std::string, PerfAggregate> aggregate_perf(const Report& report) {
  std::map<std::string, PerfAggregate> by_name;
  const Table* unified = report.find("unified_perf_summary");
  if (!unified) return by_name;
  for (size_t r = 0; r < unified->rows.size(); ++r) {
    int has_model = unified->col("has_perf_model");
    if (has_model >= 0) {
      const Cell& cell = unified->rows[r][static_cast<size_t>(has_model)];
      if (!(cell.is_bool() && std::get<bool>(cell.v))) continue;
    }
    PerfAggregate& agg = by_name[text_or_empty(*unified, r, "name")];
    double count = number_or_nan(*unified, r, "operation_count");
    double gflops = number_or_nan(*unified, r, "GFLOPS");
    double mb = number_or_nan(*unified, r, "Data Moved (MB)");
    double time = number_or_nan(*unified, r, "Kernel Time (µs)_sum");
    double pct = number_or_nan(*unified, r, "Pct Roofline_mean");
    agg.rows++;
    if (std::isfinite(count)) agg.operation_count += count;
    if (std::isfinite(gflops) && std::isfinite(count)) agg.gflops += gflops * count;
    if (std::isfinite(mb) && std::isfinite(count)) agg.data_moved_mb += mb * count;
    if (std::isfinite(time)) {
      agg.kernel_time_us += time;
      if (std::isfinite(pct)) {
        agg.weighted_pct += pct * time;
        agg.pct_weight += time;
      }
      if (time > agg.top_time) {
        agg.top_time = time;
        agg.compute_spec = text_or_empty(*unified, r, "Compute Spec");
        agg.bound = text_or_empty(*unified, r, "Roofline Bound");
      }
    }
  }
  return by_name;
}

// Why a roofline share above 100 % is not a measurement error of the trace
// (issue 73 point 9): the perf model's bytes or the arch's peak, not the
// kernels, are off; null at or below 100 %.
nlohmann::json above_roof_reason(const PerfAggregate& a) {
  if (!(a.pct_weight > 0) || !(a.weighted_pct / a.pct_weight > 100)) return nullptr;
  return a.bound == "MEMORY_BOUND"
             ? "above 100 %: the perf model counts every operand read from and written to HBM "
               "once, while the kernels move fewer bytes (an in-place op, L2 reuse, a broadcast "
               "operand): read it as at the bandwidth roof"
             : "above 100 %: the kernels run faster than the arch file's achievable peak for "
               "this precision: read it as at the compute roof, with no tuning headroom";
}

nlohmann::json perf_json(const PerfAggregate& a) {
  double time = a.kernel_time_us;
  return {
      {"pct_roofline_above_roof_reason", above_roof_reason(a)},
      {"unique_arg_rows", a.rows},
      {"operation_count", a.operation_count},
      {"gflops", a.gflops},
      {"data_moved_mb", a.data_moved_mb},
      {"kernel_time_us", time},
      // GFLOP/us = 1e3 TFLOP/s; MB/us = 1 TB/s.
      {"tflops_per_s", time > 0 ? nlohmann::json(a.gflops / time * 1e3) : nlohmann::json()},
      {"tb_per_s", time > 0 ? nlohmann::json(a.data_moved_mb / time) : nlohmann::json()},
      {"compute_spec", a.compute_spec.empty() ? nlohmann::json() : nlohmann::json(a.compute_spec)},
      {"roofline_bound", a.bound.empty() ? nlohmann::json() : nlohmann::json(a.bound)},
      {"pct_roofline",
       a.pct_weight > 0 ? nlohmann::json(a.weighted_pct / a.pct_weight) : nlohmann::json()}};
}

}  // namespace

nlohmann::json gpu_timeline_json(const GpuTimeline& timeline) {
  Table table = gpu_timeline_table(timeline);
  nlohmann::json out = nlohmann::json::object();
  for (size_t r = 0; r < table.rows.size(); ++r)
    out[text_or_empty(table, r, "type")] = {
        {"time_ms", finite_or_null(number_or_nan(table, r, "time ms"))},
        {"percent", finite_or_null(number_or_nan(table, r, "percent"))}};
  return out;
}

nlohmann::json trace_gpu_timeline(const LoadedTrace& entry) {
  std::shared_ptr<const GpuTimeline> timeline = trace_timeline(entry);
  if (!timeline) return nullptr;  // no linked GPU event
  return gpu_timeline_json(*timeline);
}

namespace {

// The category spellings of an ops_summary sheet that a user's category
// names: case-insensitive, and without the direction suffix ("sdpa" names
// SDPA_fwd and SDPA_bwd, "norm" NORM_fwd ...). Empty query: no filter.
// Throws std::invalid_argument listing the trace's categories when nothing
// matches, so a typo is an error and never an empty answer.
// unified_perf_summary's "op category" of each op name (SDPA_fwd for the
// attention op that TraceLens's ops_summary files under "other").
std::map<std::string, std::set<std::string>> perf_categories(const Report& report) {
  std::map<std::string, std::set<std::string>> out;
  if (const Table* unified = report.find("unified_perf_summary"))
    for (size_t r = 0; r < unified->rows.size(); ++r)
      if (auto c = text_or_empty(*unified, r, "op category"); !c.empty())
        out[text_or_empty(*unified, r, "name")].insert(c);
  return out;
}

// Every category an ops_summary row belongs to: its Categories cell and the
// perf categories of its op name.
std::vector<std::string> row_categories(const Table& ops, size_t r,
                                        const std::map<std::string, std::set<std::string>>& perf) {
  auto out = parse_categories(text_or_empty(ops, r, "Categories"));
  if (auto it = perf.find(text_or_empty(ops, r, "name")); it != perf.end())
    for (const auto& c : it->second)
      if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  return out;
}

std::vector<std::string> resolve_category(
    const Table& ops, const std::string& query,
    const std::map<std::string, std::set<std::string>>& perf) {
  if (query.empty()) return {};
  std::set<std::string> present;
  for (size_t r = 0; r < ops.rows.size(); ++r)
    for (auto& c : row_categories(ops, r, perf)) present.insert(c);
  std::vector<std::string> out;
  for (const auto& c : present)
    if (perf::category_named_by(c, query)) out.push_back(c);
  if (out.empty())
    throw std::invalid_argument(fmt::format(
        "unknown category '{}' for this trace; its ops have categories: {} (case-insensitive; "
        "'sdpa' or 'norm' also name their _fwd/_bwd parts)",
        query, fmt::join(present, ", ")));
  return out;
}

}  // namespace

nlohmann::json ops_summary_rows(const Report& report, const OpsSummaryQuery& query) {
  const Table* ops = report.find("ops_summary");
  if (!ops)
    throw std::runtime_error("the report has no ops_summary sheet (trace without cpu_ops?)");
  auto perf = aggregate_perf(report);
  auto perf_cats = perf_categories(report);
  std::vector<std::string> wanted = resolve_category(*ops, query.category, perf_cats);
  std::vector<nlohmann::json> rows;
  double total_ms = 0;
  for (size_t r = 0; r < ops->rows.size(); ++r) {
    double direct = number_or_nan(*ops, r, "total_direct_kernel_time_sum");
    double subtree = number_or_nan(*ops, r, "total_subtree_kernel_time_sum");
    if (std::isfinite(direct)) total_ms += direct / 1e3;
    std::string name = text_or_empty(*ops, r, "name");
    auto categories = parse_categories(text_or_empty(*ops, r, "Categories"));
    double percent = number_or_nan(*ops, r, "Percentage (%)");
    auto all_categories = row_categories(*ops, r, perf_cats);
    if (!wanted.empty() && std::find_first_of(all_categories.begin(), all_categories.end(),
                                              wanted.begin(), wanted.end()) == all_categories.end())
      continue;
    if (query.min_percent > 0 && !(percent >= query.min_percent)) continue;
    auto p = perf.find(name);
    rows.push_back({{"name", name},
                    {"count", static_cast<int64_t>(number_or_nan(*ops, r, "Count"))},
                    {"categories", categories},
                    {"perf_categories", all_categories},
                    {"total_direct_kernel_time_us", finite_or_null(direct)},
                    {"total_subtree_kernel_time_us", finite_or_null(subtree)},
                    {"total_direct_kernel_time_ms", finite_or_null(direct / 1e3)},
                    {"total_subtree_kernel_time_ms", finite_or_null(subtree / 1e3)},
                    {"percent", finite_or_null(percent)},
                    {"cumulative_percent",
                     finite_or_null(number_or_nan(*ops, r, "Cumulative Percentage (%)"))},
                    {"perf", p == perf.end() ? nlohmann::json() : perf_json(p->second)}});
  }
  size_t matched = rows.size();
  auto key = [&](const nlohmann::json& row) -> double {
    if (query.sort_by == "count") return row["count"].get<double>();
    const char* field = query.sort_by == "total_subtree_kernel_time"
                            ? "total_subtree_kernel_time_us"
                            : "total_direct_kernel_time_us";
    return row[field].is_number() ? row[field].get<double>() : -1;
  };
  if (query.sort_by == "name") {
    std::stable_sort(rows.begin(), rows.end(),
                     [](const auto& a, const auto& b) { return a["name"] < b["name"]; });
  } else if (query.sort_by != "total_direct_kernel_time") {  // the sheet's own order otherwise
    std::stable_sort(rows.begin(), rows.end(),
                     [&](const auto& a, const auto& b) { return key(a) > key(b); });
  }
  if (rows.size() > query.top_n) rows.resize(query.top_n);
  return {{"total_rows", ops->rows.size()},
          {"matched_rows", matched},
          {"total_direct_kernel_time_ms", total_ms},
          {"rows", rows}};
}

}  // namespace jarvis::analysis
