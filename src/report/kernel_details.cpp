#include "report/kernel_details.h"

#include <algorithm>

#include "pycompat/numeric.h"
#include "pycompat/repr.h"
#include "pycompat/value.h"
#include "report/stats.h"

namespace jarvis::report {

namespace {

std::string stream_repr(int64_t stream) {
  return stream == kNoInt ? "None" : std::to_string(stream);
}

// First n code points of a UTF-8 string (Python slicing counts characters).
std::string_view utf8_prefix(std::string_view s, size_t n, bool& cut) {
  size_t chars = 0, k = 0;
  while (k < s.size()) {
    if (chars == n) {
      cut = true;
      return s.substr(0, k);
    }
    unsigned char c = static_cast<unsigned char>(s[k]);
    k += c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    ++chars;
  }
  cut = false;
  return s;
}

}  // namespace

KernelDetailList kernel_details_of(const Trace& trace, std::span<const Uid> gpu_uids) {
  KernelDetailList out;
  out.reserve(gpu_uids.size());
  for (Uid u : gpu_uids) {
    const Event& e = trace.events[u];
    out.push_back({trace.name(u), e.dur(), trace.stream(e)});
  }
  return out;
}

KernelDetailList kernel_details_by_ts(const Trace& trace, std::span<const Uid> gpu_uids) {
  std::vector<Uid> sorted(gpu_uids.begin(), gpu_uids.end());
  std::stable_sort(sorted.begin(), sorted.end(), [&](Uid a, Uid b) {
    double ta = trace.events[a].has_ts() ? trace.events[a].ts() : 0.0;
    double tb = trace.events[b].has_ts() ? trace.events[b].ts() : 0.0;
    return ta < tb;
  });
  return kernel_details_of(trace, sorted);
}

namespace {

// The summary from the template's (name, stream) per position and the
// durations collected at each position.
std::vector<KernelStat> position_stats(
    const std::vector<std::pair<std::string_view, int64_t>>& templ,
    const std::vector<std::vector<double>>& durations) {
  std::vector<KernelStat> out;
  out.reserve(templ.size());
  for (size_t i = 0; i < templ.size(); ++i) {
    KernelStat s;
    s.name = templ[i].first;
    s.stream = templ[i].second;
    const auto& d = durations[i];
    s.count = d.size();
    s.total_duration_us = pycompat::numpy_sum(d);
    if (!d.empty()) {
      s.has_stats = true;
      s.mean = pycompat::numpy_mean(d);
      s.median = stats::median(d);
      s.std_dev = pycompat::numpy_std(d);
      s.min = stats::min(d);
      s.max = stats::max(d);
    }
    out.push_back(s);
  }
  std::stable_sort(out.begin(), out.end(), [](const KernelStat& a, const KernelStat& b) {
    if (a.total_duration_us != b.total_duration_us)
      return a.total_duration_us < b.total_duration_us;
    return a.name < b.name;
  });
  return out;
}

}  // namespace

std::vector<KernelStat> summarize_kernel_details(std::span<const KernelDetailList* const> rows) {
  const KernelDetailList* templ = nullptr;
  for (const KernelDetailList* r : rows)
    if (r && !r->empty()) {
      templ = r;
      break;
    }
  if (!templ) return {};
  std::vector<std::vector<double>> durations(templ->size());
  for (const KernelDetailList* r : rows) {
    if (!r || r->size() != templ->size()) continue;
    for (size_t i = 0; i < r->size(); ++i) durations[i].push_back((*r)[i].dur);
  }
  std::vector<std::pair<std::string_view, int64_t>> positions;
  for (const KernelDetail& k : *templ) positions.emplace_back(k.name, k.stream);
  return position_stats(positions, durations);
}

std::vector<KernelStat> summarize_kernels(const Trace& trace,
                                          std::span<const std::span<const Uid>> rows) {
  const std::span<const Uid>* templ = nullptr;
  for (const std::span<const Uid>& r : rows)
    if (!r.empty()) {
      templ = &r;
      break;
    }
  if (!templ) return {};
  std::vector<std::vector<double>> durations(templ->size());
  for (const std::span<const Uid>& r : rows) {
    if (r.size() != templ->size()) continue;
    for (size_t i = 0; i < r.size(); ++i) durations[i].push_back(trace.events[r[i]].dur());
  }
  std::vector<std::pair<std::string_view, int64_t>> positions;
  for (Uid u : *templ) positions.emplace_back(trace.name(u), trace.stream(trace.events[u]));
  return position_stats(positions, durations);
}

std::string kernel_stats_repr(const std::vector<KernelStat>& stats) {
  std::string out = "[";
  for (size_t k = 0; k < stats.size(); ++k) {
    const KernelStat& s = stats[k];
    if (k) out += ", ";
    out += "{'name': " + pycompat::py_str_repr(s.name) + ", 'stream': " + stream_repr(s.stream) +
           ", 'count': " + std::to_string(s.count) +
           ", 'total_duration_us': " + pycompat::py_float_repr(s.total_duration_us);
    if (s.has_stats) {
      out += ", 'mean_duration_us': " + pycompat::py_float_repr(s.mean) +
             ", 'median_duration_us': " + pycompat::py_float_repr(s.median) +
             ", 'std_dev_duration_us': " + pycompat::py_float_repr(s.std_dev) +
             ", 'min_duration_us': " + pycompat::py_float_repr(s.min) +
             ", 'max_duration_us': " + pycompat::py_float_repr(s.max);
    }
    out += "}";
  }
  return out + "]";
}

Cell trunc_kernel_details_cell(const std::vector<KernelStat>& stats) {
  if (stats.empty()) return Cell();
  std::string out = "[";
  for (size_t k = 0; k < stats.size(); ++k) {
    const KernelStat& s = stats[k];
    bool cut = false;
    std::string name(utf8_prefix(s.name, 64, cut));
    if (cut) name += "...";
    if (k) out += ", ";
    // A summary entry without stats has no mean: TraceLens rounds the int 0.
    std::string mean =
        s.has_stats ? pycompat::py_float_repr(pycompat::numpy_round(s.mean, 2)) : "0";
    out += "{'name': " + pycompat::py_str_repr(name) + ", 'stream': " + stream_repr(s.stream) +
           ", 'mean_duration_us': " + mean + "}";
  }
  return Cell(out + "]");
}

}  // namespace jarvis::report
