// GPU timeline breakdown (spec tree-and-timeline.md §7): computation,
// communication and memcpy time of the linked GPU events, with overlaps
// resolved by interval algebra in TraceLens's order of operations.
#pragma once

#include <stdexcept>
#include <utility>
#include <vector>

#include "report/table.h"
#include "trace/trace.h"
#include "tree/call_tree.h"

namespace jarvis {

// All values in microseconds.
struct GpuTimeline {
  double computation_time = 0;
  double exposed_comm_time = 0;
  double exposed_memcpy_time = 0;
  double busy_time = 0;
  double idle_time = 0;
  double total_time = 0;
  double total_comm_time = 0;
  double total_memcpy_time = 0;
  size_t event_count = 0;  // GPU events considered

  double total_time_ms() const { return total_time / 1e3; }
};

using Interval = std::pair<double, double>;

// Union of intervals: stable sort by start, touching intervals merge.
std::vector<Interval> merge_intervals(std::vector<Interval> intervals);
// B minus A, both merged and sorted (TraceLens subtract_intervalsA_from_B).
std::vector<Interval> subtract_intervals(const std::vector<Interval>& a,
                                         const std::vector<Interval>& b);
double intervals_length(const std::vector<Interval>& intervals);

// The breakdown of GPU busy intervals already split by kind (`all` holds
// every one; comp / comm / memcpy the classified ones), in TraceLens's order
// of operations. Throws std::runtime_error when `all` is empty.
GpuTimeline gpu_timeline_of(std::vector<Interval> all, std::vector<Interval> comp,
                            std::vector<Interval> comm, std::vector<Interval> memcpy);

// Linked GPU events only unless include_unlinked. Throws std::runtime_error
// "No GPU events found in the trace" when none is selected.
GpuTimeline compute_gpu_timeline(const Trace& trace, const CallTree& tree,
                                 bool include_unlinked = false);

// The `gpu_timeline` sheet: type, time ms, percent (8 rows, TraceLens order).
Table gpu_timeline_table(const GpuTimeline& timeline);

}  // namespace jarvis
