// The user annotations of one trace, indexed for the query TraceLens's
// apply_annotation answers per op: the earliest-starting annotation (any
// event whose cat is, or contains, "user_annotation") that starts at or
// before the op and ends strictly after it. Inference attention models read
// their iteration's request mix from it.
//
// The index is built on the first query (O(n log n) over the trace's events)
// and answers each query in O(log n): a scan of every event per op made
// reports of long vLLM traces quadratic (30 s for 4.2M events). Not
// thread-safe: one per thread.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "trace/trace.h"

namespace jarvis::perf {

class TraceAnnotations {
 public:
  explicit TraceAnnotations(const Trace& trace) : trace_(trace) {}

  // The name of the annotation enclosing event `op`, or nullopt.
  std::optional<std::string_view> enclosing(Uid op) const;

 private:
  void build() const;

  const Trace& trace_;
  mutable bool built_ = false;
  // Annotations by start time, ties in file order; the running maximum of
  // their end times decides the query by binary search.
  mutable std::vector<Uid> by_start_;
  mutable std::vector<double> start_;
  mutable std::vector<double> max_end_;
};

}  // namespace jarvis::perf
