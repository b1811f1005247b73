// Host time no event records (docs/critical-path.md, "Host time no op
// records"): Python work inside a step with no op in it (a batch built in
// numpy, logging, a metric computed on the host, an optimizer's bookkeeping)
// shows in a trace only as a stretch of the loop's thread where no host
// thread of the process records anything. The un-profiled job still pays it,
// and when the GPU has nothing queued it idles for it.
//
// A stretch counts when it lies inside an iteration's host part, between two
// recorded events (a cpu_op or a runtime call, on any thread; a DataLoader's
// `__next__` annotation counts as recorded: its time is the loader's), and
// lasts at least `min_us`. The stretches at a step's two ends are left out:
// that is where the loop calls `prof.step()`, the profiler's own work. Python
// frames (with_stack) and `[memory]` events inside a stretch are the
// profiler's cost, not the program's: each stretch says that cost, and the
// what-if leaves it in.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "critical_path/critical_path.h"

namespace jarvis::critical_path {

struct HostGap {
  int64_t rank = -1;
  uint32_t thread = 0;            // Event::thread of the event after it (the thread that resumes)
  double from_us = 0, to_us = 0;  // trace time
  size_t iteration = 0;           // index into Graph::iterations
  double offset_us = 0;           // from the iteration's start
  // The last event recorded before it and the first after (cpu_op or runtime
  // call), and how they are named: the outermost cpu_op above each, else the
  // event itself.
  Uid after = kNoUid, before = kNoUid;
  std::string after_name, before_name;
  // The innermost user annotation around it that is not a step's own
  // (Optimizer.step#AdamW.step), "" when none.
  std::string annotation;
  // The profiler's estimated cost recorded inside it (python frames, memory
  // events), at the rank's measured per-event costs.
  double profiler_us = 0;
  double dur() const { return to_us - from_us; }
};

// Which stretches: at least `min_us` long, after / before the events named
// exactly (their outermost op's name or their own; "" any), on `rank`.
struct HostGapSelector {
  std::optional<int64_t> rank;
  double min_us = 100;
  std::string after, before;
};

// The stretches of every rank's trace, in time order.
std::vector<HostGap> unrecorded_host_gaps(const std::vector<RankInput>& inputs, const Graph& graph,
                                          const HostGapSelector& sel);

// What a trace records of its host that the stretches lie between, read
// from the trace alone (no graph): the events that record host work in
// (ts, end, uid) order, and the python frames' starts and ends and the
// [memory] events' times (the profiler's cost inside a stretch), sorted. A
// caller that has the trace before its graph (insights) makes them then.
struct HostGapEvents {
  std::vector<Uid> events;
  std::vector<double> frame_marks, memory;
};
HostGapEvents host_gap_events(const Trace& trace);
// The same stretches from each input's host_gap_events (one per input, in
// order; empty: made here).
std::vector<HostGap> unrecorded_host_gaps(const std::vector<RankInput>& inputs, const Graph& graph,
                                          const HostGapSelector& sel,
                                          const std::vector<const HostGapEvents*>& recorded);

// Whether `sel` selects `gap`, a stretch unrecorded_host_gaps found with a
// selector of the same rank (or none) and a min_us no larger than sel's: the
// same test that search makes, so that a caller holding the stretches of any
// place (insights: once per trace) picks each place's without a rescan.
bool host_gap_selected(const Trace& trace, const HostGapSelector& sel, const HostGap& gap);
// Adds these stretches, less their profiler cost, to scenario.remove_unrecorded.
void add_host_gaps(const std::vector<HostGap>& gaps, Scenario& scenario);

// Adds the selected stretches, less their profiler cost, to
// scenario.remove_unrecorded; returns them. Throws CriticalPathError when
// none matches (saying which stretches the trace has).
std::vector<HostGap> add_host_gap_removal(const std::vector<RankInput>& inputs, const Graph& graph,
                                          const HostGapSelector& sel, Scenario& scenario);
std::vector<HostGap> add_host_gap_removal(const Loaded& loaded, const HostGapSelector& sel,
                                          Scenario& scenario);

}  // namespace jarvis::critical_path
