// Pieces shared by the critical-path sources.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "critical_path/critical_path.h"

namespace jarvis::critical_path::detail {

// Topological order of the nodes (Graph::order, in_off, in_edges).
void order_nodes(Graph& g);

const char* node_kind_name(NodeKind kind);
const char* edge_kind_name(EdgeKind kind);

// Host-side time: runtime calls, the gaps between them, launch latency, and
// the return from a synchronisation after the GPU finished.
bool is_host_category(std::string_view category);

// Whether edge `e`, reaching a node at `here`, binds instead of the edge
// `current` reaching it at `there`: the later one binds; a hand-over explains
// a thread's call as well as the thread's own previous call with the
// measured gap does, and then the other thread's work it waited for binds.
inline bool binds_instead(const Edge& e, double here, const Edge& current, double there) {
  constexpr double kTieUs = 1e-6;
  return here > there || (e.kind == EdgeKind::HostHandover && current.kind == EdgeKind::HostSeq &&
                          here >= there - kTieUs);
}

// The profiler's estimated cost of the events recorded on each host thread,
// summed over a time interval (ProfilerCost gives each event's cost).
class HostCostIndex {
 public:
  HostCostIndex(const Trace& trace, const ProfilerCost& cost);
  // Cost of the events on `thread` (Event::thread) recorded in [from, to).
  double between(uint32_t thread, double from, double to) const;
  // The same on the other threads of `thread`'s process (the most of any one
  // of them): what a thread that recorded nothing was waiting through.
  double on_other_threads(uint32_t thread, double from, double to) const;

 private:
  std::map<uint32_t, std::vector<std::pair<double, double>>> marks_;  // (time, running total)
  std::map<uint32_t, int64_t> pid_;  // thread -> its process (ProcId value)
};

}  // namespace jarvis::critical_path::detail
