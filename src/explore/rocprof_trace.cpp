#include "explore/rocprof_trace.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "pycompat/text.h"
#include "rocprof/report.h"

namespace jarvis::analysis {

namespace {

constexpr const char* kProfileKey = "rocprof_profile";

}  // namespace

void attach_rocprof_profile(const LoadedTrace& entry, rocprof::Profile profile) {
  entry.cached<rocprof::Profile>(kProfileKey, [&] { return std::move(profile); });
}

std::shared_ptr<const rocprof::Profile> rocprof_profile(const LoadedTrace& entry) {
  if (!rocprof::is_rocprof_trace(entry.trace())) return nullptr;
  // Attached at load time; reading the file again only if that was skipped.
  return entry.cached<rocprof::Profile>(kProfileKey,
                                        [&] { return rocprof::load_profile(entry.path()); });
}

std::string rocprof_no_tree_message(const LoadedTrace& entry) {
  return fmt::format(
      "trace {} ({}) is a rocprofv3 kernel trace: it has no CPU op tree (no PyTorch ops, no "
      "launch links), which this tool needs. On rocprofv3 traces use ops_summary (kernel "
      "summary), kernel_counters (hardware counters), or the CLI `jarvis report` (TraceLens's "
      "rocprof sheets); load a PyTorch profiler trace of the same run for op-level analysis.",
      entry.handle(), entry.path());
}

nlohmann::json rocprof_gpu_timeline_json(const rocprof::Profile& profile) {
  Table t = rocprof::gpu_timeline_table(profile);
  if (t.rows.empty()) return nullptr;
  nlohmann::json out = nlohmann::json::object();
  for (const auto& row : t.rows)
    out[row[0].text()] = {{"time_ms", row[1].number()}, {"percent", row[2].number()}};
  return out;
}

nlohmann::json rocprof_health_json(const rocprof::Profile& profile) {
  std::vector<std::string> warnings = {
      "rocprofv3 kernel trace: no CPU op tree, kernels are not attributed to PyTorch ops "
      "(op-level tools refuse it; ops_summary falls back to the kernel summary)"};
  if (profile.counters.empty())
    warnings.push_back("no hardware counters (rerun rocprofv3 with --pmc for kernel_counters)");
  if (!profile.init_ns)
    warnings.push_back(
        "CSV input has no tool init/fini times: total time is the span of the "
        "first to the last GPU activity");
  return {{"confidence", profile.dispatches.empty() ? "low" : "medium"},
          {"warnings", warnings},
          {"gpu_events", profile.dispatches.size() + profile.copies.size()},
          {"linked_gpu_events", 0}};
}

nlohmann::json rocprof_info_json(const rocprof::Profile& profile) {
  return {{"format", profile.format},
          {"pid", profile.pid},
          {"hostname", profile.hostname},
          {"dispatches", profile.dispatches.size()},
          {"kernels", profile.kernel_names.size()},
          {"memory_copies", profile.copies.size()},
          {"counters", profile.counter_names},
          {"counter_samples", profile.counters.size()}};
}

nlohmann::json rocprof_ops_summary_rows(const rocprof::Profile& profile,
                                        const OpsSummaryQuery& query) {
  auto stats = rocprof::kernel_stats_by_time(profile);
  int64_t total_ns = 0;
  std::set<std::string> categories;
  for (const auto& s : stats) total_ns += s.total_ns, categories.insert(std::string(s.category));
  if (!query.category.empty() && !categories.count(query.category)) {
    bool any = false;
    for (const auto& c : categories)
      any |= pycompat::ascii_lower(c) == pycompat::ascii_lower(query.category);
    if (!any)
      throw std::invalid_argument(fmt::format("no kernel of category '{}'; this trace has: {}",
                                              query.category, fmt::join(categories, ", ")));
  }
  nlohmann::json rows = nlohmann::json::array();
  double cumulative = 0;
  for (const auto& s : stats) {
    double us = static_cast<double>(s.total_ns) / 1000.0;
    double percent = total_ns > 0 ? 100.0 * static_cast<double>(s.total_ns) / total_ns : 0.0;
    cumulative += percent;
    if (!query.category.empty() &&
        pycompat::ascii_lower(std::string(s.category)) != pycompat::ascii_lower(query.category))
      continue;
    if (query.min_percent > 0 && !(percent >= query.min_percent)) continue;
    rows.push_back({{"name", s.name},
                    {"count", s.count},
                    {"categories", {s.category}},
                    {"perf_categories", {s.category}},
                    {"total_direct_kernel_time_us", us},
                    {"total_subtree_kernel_time_us", us},
                    {"total_direct_kernel_time_ms", us / 1000.0},
                    {"total_subtree_kernel_time_ms", us / 1000.0},
                    {"mean_kernel_time_us", s.mean_ns / 1000.0},
                    {"percent", percent},
                    {"cumulative_percent", cumulative},
                    {"perf", nullptr}});
  }
  size_t matched = rows.size();
  std::vector<nlohmann::json> sorted(rows.begin(), rows.end());
  if (query.sort_by == "name")
    std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
      return a["name"].template get<std::string>() < b["name"].template get<std::string>();
    });
  else if (query.sort_by == "count")
    std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
      return a["count"].template get<int64_t>() > b["count"].template get<int64_t>();
    });
  if (sorted.size() > query.top_n) sorted.resize(query.top_n);
  return {{"source", "kernel_summary"},
          {"total_rows", stats.size()},
          {"matched_rows", matched},
          {"total_direct_kernel_time_ms", static_cast<double>(total_ns) / 1e6},
          {"rows", sorted}};
}

}  // namespace jarvis::analysis
