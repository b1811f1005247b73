#include "perf/annotations.h"

#include <algorithm>
#include <numeric>

namespace jarvis::perf {

void TraceAnnotations::build() const {
  built_ = true;
  for (Uid u = 0; u < trace_.events.size(); ++u) {
    const Event& a = trace_.events[u];
    if (a.cat == Cat::UserAnnotation || a.cat == Cat::GpuUserAnnotation ||
        trace_.str(a.cat_name).find("user_annotation") != std::string_view::npos)
      by_start_.push_back(u);
  }
  // Stable by start time: among equal starts the first in file order wins,
  // as after TraceLens's stable sort.
  std::stable_sort(by_start_.begin(), by_start_.end(),
                   [&](Uid x, Uid y) { return trace_.events[x].ts() < trace_.events[y].ts(); });
  start_.reserve(by_start_.size());
  max_end_.reserve(by_start_.size());
  double running = 0;
  for (Uid u : by_start_) {
    const Event& a = trace_.events[u];
    double end = a.ts() + a.dur();  // in doubles, as the scan it replaces compared
    running = max_end_.empty() ? end : std::max(running, end);
    start_.push_back(a.ts());
    max_end_.push_back(running);
  }
}

std::optional<std::string_view> TraceAnnotations::enclosing(Uid op) const {
  if (!built_) build();
  const Event& e = trace_.events[op];
  double end = e.ts() + e.dur();
  // The first annotation (in start order) ending after the op is where the
  // running maximum first exceeds the op's end; it encloses the op when it
  // also starts at or before it, and if it does not, no later one does.
  auto it = std::upper_bound(max_end_.begin(), max_end_.end(), end);
  if (it == max_end_.end()) return std::nullopt;
  size_t k = static_cast<size_t>(it - max_end_.begin());
  if (!(start_[k] <= e.ts())) return std::nullopt;
  return trace_.str(trace_.events[by_start_[k]].name);
}

}  // namespace jarvis::perf
