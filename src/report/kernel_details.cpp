#include "report/kernel_details.h"

#include <algorithm>

#include "base/sort_runs.h"
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
  stable_sort_runs(sorted, [&](Uid a, Uid b) {
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

// _summarize_kernel_stats over rows of any kind: size(row) is a row's kernel
// count (0 for a missing row), dur(row, i) and position(row, i) its i-th
// kernel's duration and (name, stream). The template is the first non-empty
// row; rows of another length are skipped.
template <class Rows, class Size, class Dur, class Position>
std::vector<KernelStat> summarize_rows(const Rows& rows, Size size, Dur dur, Position position) {
  auto templ = std::find_if(rows.begin(), rows.end(), [&](const auto& r) { return size(r) > 0; });
  if (templ == rows.end()) return {};
  const size_t n = size(*templ);
  std::vector<std::vector<double>> durations(n);
  for (const auto& r : rows) {
    if (size(r) != n) continue;
    for (size_t i = 0; i < n; ++i) durations[i].push_back(dur(r, i));
  }
  std::vector<std::pair<std::string_view, int64_t>> positions;
  positions.reserve(n);
  for (size_t i = 0; i < n; ++i) positions.push_back(position(*templ, i));
  return position_stats(positions, durations);
}

}  // namespace

std::vector<KernelStat> summarize_kernel_details(std::span<const KernelDetailList* const> rows) {
  return summarize_rows(
      rows, [](const KernelDetailList* r) { return r ? r->size() : 0; },
      [](const KernelDetailList* r, size_t i) { return (*r)[i].dur; },
      [](const KernelDetailList* r, size_t i) {
        return std::pair<std::string_view, int64_t>((*r)[i].name, (*r)[i].stream);
      });
}

std::vector<KernelStat> summarize_kernels(const Trace& trace,
                                          std::span<const std::span<const Uid>> rows) {
  return summarize_rows(
      rows, [](std::span<const Uid> r) { return r.size(); },
      [&](std::span<const Uid> r, size_t i) { return trace.events[r[i]].dur(); },
      [&](std::span<const Uid> r, size_t i) {
        return std::pair<std::string_view, int64_t>(trace.name(r[i]),
                                                    trace.stream(trace.events[r[i]]));
      });
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
