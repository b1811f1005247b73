// Pieces shared by the critical-path sources.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "critical_path/critical_path.h"

namespace jarvis::critical_path::detail {

// Topological order of the nodes (Graph::order, in_off, in_edges, in_from,
// in_kind).
void order_nodes(Graph& g);
// Graph::in_from and in_kind of the graph's in_edges, into `from` and `kind`.
// (std::vector or MappableVector: the graph's own, or a propagation's.)
template <class From, class Kind>
void compact_in_edges(const Graph& g, From& from, Kind& kind) {
  from.resize(g.in_edges.size());
  kind.resize(g.in_edges.size());
  for (size_t k = 0; k < g.in_edges.size(); ++k) {
    const Edge& e = g.edges[g.in_edges[k]];
    from[k] = e.from;
    kind[k] = static_cast<uint8_t>(static_cast<uint8_t>(e.kind) |
                                   (e.from_start ? Graph::kInFromStart : 0));
  }
}

// Whether `base` holds the replay index (index_for_replays) of this graph:
// its lists are read only then (a base of another graph is refused by the
// what-if, past the recorded-host path).
bool indexes(const WhatIfBase* base, const Graph& g);
// index_for_replays in its two parts: the lists of the graph's nodes and
// edges (reads the graph alone), then the syncs' waits on the base's times
// (base.dur and base.lag, which must be the graph's), which marks the base
// indexed. analyse_and_index runs each beside an analysis.
void index_graph_for_replays(const Graph& g, WhatIfBase& base);
void index_times_for_replays(const Graph& g, WhatIfBase& base);
// (rank, UID) of every synchronising call the graph split (a SyncReturn
// node), sorted, each once: WhatIfBase::sync_returns.
std::vector<std::pair<int64_t, Uid>> sync_returns_of(const Graph& g);

const char* node_kind_name(NodeKind kind);
const char* edge_kind_name(EdgeKind kind);

// Host-side time: runtime calls, the gaps between them, launch latency, and
// the return from a synchronisation after the GPU finished.
bool is_host_category(std::string_view category);

// Whether edge `e`, reaching a node at `here`, binds instead of the edge
// `current` reaching it at `there`: the later one binds; a hand-over explains
// a thread's call as well as the thread's own previous call with the
// measured gap does, and then the other thread's work it waited for binds.
inline bool binds_instead(EdgeKind e, double here, EdgeKind current, double there) {
  constexpr double kTieUs = 1e-6;
  return here > there ||
         (e == EdgeKind::HostHandover && current == EdgeKind::HostSeq && here >= there - kTieUs);
}
inline bool binds_instead(const Edge& e, double here, const Edge& current, double there) {
  return binds_instead(e.kind, here, current.kind, there);
}

// A thread's exit marks (time, cost), listed in their ops' enter order, put
// in ascending order: std::sort's result (equal marks are alike) in one pass
// where the ops nest (host_cost.cpp).
void order_exit_marks(std::vector<std::pair<double, double>>& exits);

// The profiler's estimated cost of the events recorded on each host thread,
// summed over a time interval (ProfilerCost gives each event's cost).
// host_cost.cpp; built once per rank by build_graph, in a few passes over the
// events and an ordering of each thread's exit marks.
class HostCostIndex {
 public:
  HostCostIndex(const Trace& trace, const ProfilerCost& cost);
  // Cost of the events on `thread` (Event::thread) recorded in [from, to).
  double between(uint32_t thread, double from, double to) const;
  // Where the last between() on one thread found its ends: a caller asking
  // for one thread's intervals in time order (a host thread's gaps) finds
  // each next to the one before, not by a search of all the thread's marks.
  struct Cursor {
    size_t from = 0, to = 0;
  };
  // between(), searched from `near` (one cursor per thread); the same figure.
  double between(uint32_t thread, double from, double to, Cursor& near) const;
  // The same on the other threads of `thread`'s process (the most of any one
  // of them): what a thread that recorded nothing was waiting through.
  // Exact when the interval holds at most kMaxScannedMarks records of its
  // process or the process has at most kMaxCostliestThreads recording
  // threads; else the most of its costliest threads (a lower bound). Its
  // work is bounded by both, whatever the number of threads (issue 74 point 7:
  // a loop over every thread per gap took 22.7 s on 60,000 threads).
  double on_other_threads(uint32_t thread, double from, double to) const;
  // Calls of between() the on_other_threads calls so far made: their work.
  size_t threads_evaluated() const { return threads_evaluated_; }

  static constexpr size_t kMaxScannedMarks = 1024;
  static constexpr size_t kMaxCostliestThreads = 64;
  // A process with at most this many recording threads counts an interval's
  // records thread by thread (binary searches); one with more keeps all its
  // records in one list by time (by_time: 16 bytes a record more).
  static constexpr size_t kMaxCountedThreads = 64;

 private:
  // One process's records: its threads by the cost they recorded, most
  // first, and, past kMaxCountedThreads threads, every mark in time order.
  struct ProcessMarks {
    std::vector<std::pair<double, uint32_t>> by_time;  // (time, thread)
    std::vector<uint32_t> by_cost;
  };
  double most_in(const ProcessMarks& p, uint32_t thread, double from, double to) const;
  double total(uint32_t thread) const;

  // Per thread (Event::thread, an index into Trace::threads): its marks as
  // (time, running total), in time order; a thread without marks recorded
  // nothing the profiler pays for.
  std::vector<std::vector<std::pair<double, double>>> marks_;
  std::vector<int64_t> pid_;  // per thread: its process (ProcId value)
  const std::vector<std::pair<double, double>>* marks_of(uint32_t thread) const {
    return thread < marks_.size() && !marks_[thread].empty() ? &marks_[thread] : nullptr;
  }
  std::map<int64_t, ProcessMarks> processes_;
  mutable size_t threads_evaluated_ = 0;
};

// The CSV text of the segments' kinds and labels (",kind" and
// ",category,op,kernel", quoted as the table quotes them), made once for
// all the iterations written: a label is one of a few thousand, met in
// every iteration.
struct PathCsvFields {
  std::unordered_map<const char*, std::string> kinds;
  std::unordered_map<const Label*, std::string> labels;
  void add(const IterationResult& it);
};
// An iteration's path as the CSV critical-path writes (path_iterationN.csv),
// written directly: the text a Table of the same rows gives (to_csv), which
// with a Cell per field cost four times as much on a 222 MB x256 tile.
// `fields` holds the iteration's (fields.add(it) done).
std::string path_csv(const IterationResult& it, const PathCsvFields& fields);
std::string path_csv(const IterationResult& it);

}  // namespace jarvis::critical_path::detail
