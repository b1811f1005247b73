#include "insights/idle_gaps.h"

#include "base/search_near.h"
#include "base/sort_runs.h"
#include "base/text_match.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <queue>
#include <set>
#include <string_view>
#include <unordered_map>

namespace jarvis::insights {

const char* idle_cause_name(IdleCause cause) {
  switch (cause) {
    case IdleCause::Compilation:
      return "compilation";
    case IdleCause::DataLoading:
      return "data_loading";
    case IdleCause::Sync:
      return "sync";
    case IdleCause::LaunchLatency:
      return "launch_latency";
    case IdleCause::HostWork:
      return "host_work";
    case IdleCause::Other:
      return "other";
  }
  return "other";
}

namespace {

bool is_compile_event(std::string_view name) {
  return contains(name, "TorchDynamo Cache Lookup") || contains(name, "compile_inner") ||
         contains(name, "compile_fx") || contains(name, "_inductor") || contains(name, "autotune");
}

// Runtime calls that return only once the GPU (or a stream) has drained:
// synchronisations and the blocking copies. aten::_local_scalar_dense is
// .item() (a blocking device-to-host copy).
bool is_sync_event(const Event& e, std::string_view name) {
  if (e.cat == Cat::CpuOp) return name == "aten::_local_scalar_dense";
  return contains(name, "Synchronize") || name == "cudaMemcpy" || name == "hipMemcpy" ||
         name == "hipMemcpyWithStream" || name == "cudaMemcpy2D" || name == "hipMemcpy2D";
}

// A host event behind a gap: the interval and the cause it explains.
struct Marker {
  double start = 0, end = 0;
  Uid uid = kNoUid;
  IdleCause cause = IdleCause::Other;
};

// What a host event's name makes it, read once per distinct name (a
// tiled trace repeats a few thousand names over a million host events).
enum NameMark : uint8_t {
  kMarkRead = 1,          // the name was read
  kMarkSyncOp = 2,        // a sync as a cpu_op (is_sync_event)
  kMarkSyncRuntime = 4,   // a sync as a runtime call
  kMarkCompilation = 8,   // is_compile_event
  kMarkDataLoading = 16,  // "DataLoader"
};

uint8_t name_marks(std::string_view name) {
  uint8_t m = kMarkRead;
  if (name == "aten::_local_scalar_dense") m |= kMarkSyncOp;
  Event runtime;
  runtime.cat = Cat::CudaRuntime;
  if (is_sync_event(runtime, name)) m |= kMarkSyncRuntime;
  if (is_compile_event(name))
    m |= kMarkCompilation;
  else if (contains(name, "DataLoader"))
    m |= kMarkDataLoading;
  return m;
}

// What idle_gaps reads of the host events, in one pass over the events (a
// tiled trace's 3.7 M events are 150 MB): the user annotations with a
// duration (the places) and the markers, each in UID order.
struct HostEvents {
  std::vector<Uid> annotations;
  std::vector<Marker> markers;
};

HostEvents host_events(const Trace& trace) {
  HostEvents out;
  std::vector<uint8_t> marks(trace.strings.size(), 0);  // by interned name
  for (Uid u = 0; u < trace.events.size(); ++u) {
    const Event& e = trace.events[u];
    if (e.cat == Cat::UserAnnotation && e.has_dur()) out.annotations.push_back(u);
    bool host = e.cat == Cat::CpuOp || e.cat == Cat::PythonFunction ||
                e.cat == Cat::UserAnnotation || e.is_runtime();
    if (!host || !e.has_ts() || !e.has_dur()) continue;
    uint8_t& m = marks[e.name];
    if (!m) m = name_marks(trace.str(e.name));
    std::optional<IdleCause> cause;
    if (e.is_runtime() && (m & kMarkSyncRuntime)) cause = IdleCause::Sync;
    if (e.cat == Cat::CpuOp && (m & kMarkSyncOp)) cause = IdleCause::Sync;
    if (m & kMarkCompilation)
      cause = IdleCause::Compilation;
    else if (m & kMarkDataLoading)
      cause = IdleCause::DataLoading;
    if (cause) out.markers.push_back({e.ts(), e.end(), u, *cause});
  }
  return out;
}

// The innermost user annotation on each query event's thread enclosing its
// start (the call tree does not always hang runtime calls under
// annotations), else kNoUid: of the annotations x on that thread with
// !(x.ts() > ts) and !(x.end() < ts), the shortest, the first in uid order
// among equal ones. One sweep per thread over the annotations and the
// queries by time (O((A + Q) log A), not A per query: a tiled trace has
// thousands of each); an annotation or a query without a timestamp compares
// false both ways, so it is tested against every one of its thread.
std::vector<Uid> enclosing_annotations(const Trace& trace, const std::vector<Uid>& annotations,
                                       const std::vector<Uid>& queries) {
  std::vector<Uid> out(queries.size(), kNoUid);
  if (annotations.empty() || queries.empty()) return out;
  const auto shorter = [&](Uid a, Uid best) {
    return best == kNoUid || trace.events[a].dur() < trace.events[best].dur();
  };
  struct PerThread {
    std::vector<Uid> timed;    // by start, then uid
    std::vector<Uid> untimed;  // no timestamp: a candidate for every query
    std::vector<size_t> queries;
  };
  std::map<uint32_t, PerThread> threads;
  for (Uid a : annotations) {
    auto& th = threads[trace.events[a].thread];
    (trace.events[a].has_ts() ? th.timed : th.untimed).push_back(a);
  }
  for (size_t q = 0; q < queries.size(); ++q) {
    auto it = threads.find(trace.events[queries[q]].thread);
    if (it != threads.end()) it->second.queries.push_back(q);
  }
  for (auto& [thread, th] : threads) {
    if (th.queries.empty()) continue;
    const auto ts_of = [&](Uid u) { return trace.events[u].ts(); };
    std::stable_sort(th.timed.begin(), th.timed.end(),
                     [&](Uid a, Uid b) { return ts_of(a) < ts_of(b); });
    std::vector<size_t> timed_queries;
    for (size_t q : th.queries) {
      if (trace.events[queries[q]].has_ts()) {
        timed_queries.push_back(q);
        continue;
      }
      // No start to compare: every annotation of the thread encloses it.
      Uid best = kNoUid;
      for (Uid a : annotations)
        if (trace.events[a].thread == thread && shorter(a, best)) best = a;
      out[q] = best;
    }
    std::stable_sort(timed_queries.begin(), timed_queries.end(),
                     [&](size_t a, size_t b) { return ts_of(queries[a]) < ts_of(queries[b]); });
    // Open annotations by (dur, uid): the first is the shortest, the first
    // in uid order among equal ones; closed ones leave by their end.
    std::set<std::pair<double, Uid>> open;
    std::priority_queue<std::pair<double, Uid>, std::vector<std::pair<double, Uid>>, std::greater<>>
        ends;
    size_t next = 0;
    for (size_t q : timed_queries) {
      const double ts = ts_of(queries[q]);
      for (; next < th.timed.size() && !(ts_of(th.timed[next]) > ts); ++next) {
        const Event& x = trace.events[th.timed[next]];
        open.emplace(x.dur(), th.timed[next]);
        ends.emplace(x.end(), th.timed[next]);
      }
      while (!ends.empty() && ends.top().first < ts) {
        open.erase({trace.events[ends.top().second].dur(), ends.top().second});
        ends.pop();
      }
      Uid best = open.empty() ? kNoUid : open.begin()->second;
      for (Uid a : th.untimed)
        if (best == kNoUid || trace.events[a].dur() < trace.events[best].dur() ||
            (trace.events[a].dur() == trace.events[best].dur() && a < best))
          best = a;
      out[q] = best;
    }
  }
  return out;
}

// The innermost user annotation above `u` (`found`), else its outermost
// cpu_op (`outer_op`), from the call tree alone.
struct TreePlace {
  Uid annotation = kNoUid, outer_op = kNoUid;
};

TreePlace tree_place(const Trace& trace, const CallTree& tree, Uid u) {
  TreePlace p;
  for (Uid a = tree.parent(u); a != kNoUid; a = tree.parent(a)) {
    if (trace.events[a].cat == Cat::UserAnnotation) {
      p.annotation = a;
      return p;
    }
    if (trace.events[a].cat == Cat::CpuOp) p.outer_op = a;
  }
  return p;
}

// Each event's place: the innermost user annotation above it, else the one
// on its thread enclosing its start, else its outermost cpu_op.
std::vector<Uid> places_of(const Trace& trace, const CallTree& tree,
                           const std::vector<Uid>& annotations, const std::vector<Uid>& events) {
  std::vector<Uid> out(events.size(), kNoUid);
  std::vector<TreePlace> in_tree(events.size());
  std::vector<Uid> queries;
  std::vector<size_t> queried;
  for (size_t k = 0; k < events.size(); ++k) {
    in_tree[k] = tree_place(trace, tree, events[k]);
    if (in_tree[k].annotation != kNoUid) {
      out[k] = in_tree[k].annotation;
    } else {
      queries.push_back(events[k]);
      queried.push_back(k);
    }
  }
  const std::vector<Uid> enclosing = enclosing_annotations(trace, annotations, queries);
  for (size_t q = 0; q < queried.size(); ++q)
    out[queried[q]] = enclosing[q] != kNoUid ? enclosing[q] : in_tree[queried[q]].outer_op;
  return out;
}

// The cause a gap has without a host marker: from its length and from when
// the op after it was launched.
IdleCause launch_cause(const Trace& trace, const CallTree& tree, const IdleGap& g,
                       double threshold) {
  if (g.dur_us <= threshold) return IdleCause::LaunchLatency;
  Uid launch = tree.parent(g.after);
  if (launch == kNoUid || !trace.events[launch].is_runtime()) return IdleCause::Other;
  return trace.events[launch].ts() > g.start_us ? IdleCause::HostWork : IdleCause::Other;
}

// Gaps of one device's busy time (the union of its GPU ops), in time order.
void device_gaps(const Trace& trace, std::vector<Uid> ops, int64_t device, IdleGaps& out) {
  // std::stable_sort's order, fast on GPU ops that are nearly in time order.
  stable_sort_runs(ops, [&](Uid a, Uid b) { return trace.events[a].ts() < trace.events[b].ts(); });
  double first = trace.events[ops[0]].ts(), end = first, busy_from = first;
  Uid last = ops[0];
  for (Uid u : ops) {
    const Event& e = trace.events[u];
    if (e.ts() > end) {
      out.busy_us += end - busy_from;
      out.gaps.push_back({device, end, e.ts() - end, IdleCause::Other, last, u});
      busy_from = e.ts();
    }
    if (e.end() > end) end = e.end(), last = u;
  }
  out.busy_us += end - busy_from;
  out.span_us += end - first;
}

void count_kernels(const Trace& trace, const CallTree& tree, IdleGaps& out) {
  for (Uid u : tree.gpu_event_uids()) {
    const Event& e = trace.events[u];
    if (e.cat != Cat::Kernel) continue;
    ++out.kernels;
    if (e.dur() < out.short_kernel_us) ++out.short_kernels, out.short_kernel_time_us += e.dur();
  }
}

// Gives each gap the highest-priority marker that explains it (compile and
// data events overlapping it, sync calls ending inside it).
void apply_markers(std::vector<IdleGap>& gaps, const std::vector<Marker>& markers) {
  if (gaps.empty()) return;
  // One device's gaps come in strictly increasing starts, which std::sort
  // leaves as they are (it can reorder only equal starts): sorted only when
  // they are not.
  const auto strictly_later = [](const IdleGap& a, const IdleGap& b) {
    return !(a.start_us < b.start_us);
  };
  if (std::adjacent_find(gaps.begin(), gaps.end(), strictly_later) != gaps.end())
    std::sort(gaps.begin(), gaps.end(),
              [](const IdleGap& a, const IdleGap& b) { return a.start_us < b.start_us; });
  double longest = 0;
  for (const auto& g : gaps) longest = std::max(longest, g.dur_us);
  // The latest end of gaps[0..k]: a gap that ends before both of a marker's
  // times explains nothing of it, so its scan starts at the first gap whose
  // reach gets there too (one long gap early in the trace widened every
  // marker's scan by its length: a tiled trace's markers each went over
  // thousands of gaps).
  std::vector<double> reach(gaps.size());
  double latest = -std::numeric_limits<double>::infinity();
  for (size_t k = 0; k < gaps.size(); ++k)
    reach[k] = latest = std::max(latest, gaps[k].start_us + gaps[k].dur_us);
  // The markers come in event order, nearly in time order: each search
  // starts where the last one ended (lower_bound_near: the same positions).
  auto by_start = gaps.begin();
  auto reached = reach.begin();
  for (const Marker& m : markers) {
    by_start = lower_bound_near(gaps.begin(), gaps.end(), by_start, m.start - longest,
                                [](const IdleGap& g, double t) { return g.start_us < t; });
    reached = lower_bound_near(reach.begin(), reach.end(), reached, std::min(m.start, m.end));
    auto it = std::max(by_start, gaps.begin() + (reached - reach.begin()));
    for (; it != gaps.end() && it->start_us < m.end; ++it) {
      double gap_end = it->start_us + it->dur_us;
      bool explains = m.cause == IdleCause::Sync ? m.end > it->start_us && m.end <= gap_end
                                                 : m.end > it->start_us && m.start < gap_end;
      if (explains && m.cause < it->cause) it->cause = m.cause, it->host_event = m.uid;
    }
  }
}

void tally(const Trace& trace, IdleGaps& out) {
  // Places by interned name (one text per id): a tiled trace's half a
  // million gaps compared texts in a map. Consecutive gaps mostly share a
  // place: the last one is checked before the table.
  constexpr uint32_t kNoPlace = UINT32_MAX;
  std::unordered_map<uint32_t, size_t> place_index;
  uint32_t last_name = kNoPlace;
  size_t last_place = 0;
  Uid last_uid = kNoUid;  // the last gap's place event: its name is known (no event read)
  for (const auto& g : out.gaps) {
    auto c = static_cast<size_t>(g.cause);
    out.idle_us_by_cause[c] += g.dur_us;
    ++out.gaps_by_cause[c];
    if (g.dur_us > out.long_gap_us) ++out.long_gaps, out.long_gaps_us += g.dur_us;
    if (g.place == last_uid && !out.places.empty()) {
      out.places[last_place].gaps++;
      out.places[last_place].idle_us += g.dur_us;
      continue;
    }
    last_uid = g.place;
    const uint32_t name_id = g.place == kNoUid ? kNoPlace : trace.events[g.place].name;
    if (name_id != last_name || out.places.empty()) {
      auto [it, added] = place_index.emplace(name_id, out.places.size());
      if (added)
        out.places.push_back({g.place, name_id == kNoPlace ? std::string("(no launching op)")
                                                           : std::string(trace.str(name_id))});
      last_name = name_id;
      last_place = it->second;
    }
    out.places[last_place].gaps++;
    out.places[last_place].idle_us += g.dur_us;
  }
  std::stable_sort(out.places.begin(), out.places.end(),
                   [](const IdlePlace& a, const IdlePlace& b) { return a.idle_us > b.idle_us; });
  // Largest first, equal ones in start order: std::stable_sort's order by
  // size, from a sort in place on the gaps' start ranks (the stable sort's
  // buffer was 24 MB at x256), which also tells where each start-ordered
  // gap went. (A sort of 16-byte (size, rank) keys, then each gap moved once
  // to its place, took twice as long at x256: the moves are random.)
  for (size_t k = 0; k < out.gaps.size(); ++k) out.gaps[k].start_rank = static_cast<uint32_t>(k);
  std::sort(out.gaps.begin(), out.gaps.end(), [](const IdleGap& a, const IdleGap& b) {
    return a.dur_us > b.dur_us || (!(b.dur_us > a.dur_us) && a.start_rank < b.start_rank);
  });
  out.by_start.resize(out.gaps.size());
  for (size_t k = 0; k < out.gaps.size(); ++k)
    out.by_start[out.gaps[k].start_rank] = static_cast<uint32_t>(k);
}

}  // namespace

IdleGaps idle_gaps(const Trace& trace, const CallTree& tree, double latency_threshold_us) {
  IdleGaps out;
  out.latency_threshold_us = latency_threshold_us;
  out.short_kernel_us = kShortKernelUs;
  out.long_gap_us = kLongGapUs;
  count_kernels(trace, tree, out);
  // The GPU ops by device, each list allocated once at its length (counted
  // first: a tiled trace's million ops grew one list by doubling), and room
  // for as many gaps as ops (only the pages the gaps fill are touched).
  const auto measured = [&](const Event& e) {
    return e.has_ts() && e.has_dur() && !std::isnan(e.ts());
  };
  std::map<int64_t, std::vector<Uid>> by_device;
  {
    std::map<int64_t, size_t> counts;
    int64_t last_device = kNoInt;
    size_t* last_count = nullptr;
    for (Uid u : tree.gpu_event_uids()) {
      const Event& e = trace.events[u];
      if (!measured(e)) continue;
      const int64_t device = trace.device(e);
      if (!last_count || device != last_device) last_device = device, last_count = &counts[device];
      ++*last_count;
    }
    for (const auto& [device, count] : counts) by_device[device].reserve(count);
    out.gaps.reserve(tree.gpu_event_uids().size());
  }
  int64_t last_device = kNoInt;
  std::vector<Uid>* last_ops = nullptr;
  for (Uid u : tree.gpu_event_uids()) {
    const Event& e = trace.events[u];
    if (!measured(e)) continue;
    const int64_t device = trace.device(e);
    if (!last_ops || device != last_device) last_device = device, last_ops = &by_device[device];
    last_ops->push_back(u);
    ++out.gpu_events;
    if (!tree.in_tree(u)) ++out.unlinked_gpu_events;
  }
  for (auto& [device, ops] : by_device) device_gaps(trace, std::move(ops), device, out);
  const HostEvents host = host_events(trace);
  const std::vector<Uid>& annotations = host.annotations;
  std::vector<IdleGap*> placed;
  std::vector<Uid> from;
  for (auto& g : out.gaps) {
    g.cause = launch_cause(trace, tree, g, latency_threshold_us);
    Uid launch = tree.parent(g.after);
    if (launch != kNoUid) placed.push_back(&g), from.push_back(launch);
  }
  std::vector<Uid> places = places_of(trace, tree, annotations, from);
  for (size_t k = 0; k < placed.size(); ++k) placed[k]->place = places[k];
  apply_markers(out.gaps, host.markers);
  placed.clear();
  from.clear();
  for (auto& g : out.gaps)
    if (g.place == kNoUid && g.host_event != kNoUid)
      placed.push_back(&g), from.push_back(g.host_event);
  places = places_of(trace, tree, annotations, from);
  for (size_t k = 0; k < placed.size(); ++k) placed[k]->place = places[k];
  tally(trace, out);
  return out;
}

namespace {

nlohmann::json event_ref(const Trace& trace, Uid u) {
  if (u == kNoUid) return nullptr;
  return {{"uid", u}, {"name", trace.name(u)}};
}

}  // namespace

nlohmann::json idle_gaps_json(const Trace& trace, const IdleGaps& idle, size_t max_rows) {
  nlohmann::json by_cause = nlohmann::json::object();
  for (size_t c = 0; c < kIdleCauseCount; ++c)
    by_cause[idle_cause_name(static_cast<IdleCause>(c))] = {{"gaps", idle.gaps_by_cause[c]},
                                                            {"idle_us", idle.idle_us_by_cause[c]}};
  nlohmann::json places = nlohmann::json::array();
  for (size_t k = 0; k < idle.places.size() && k < max_rows; ++k) {
    const IdlePlace& p = idle.places[k];
    places.push_back({{"place", p.name},
                      {"uid", p.uid == kNoUid ? nlohmann::json() : nlohmann::json(p.uid)},
                      {"gaps", p.gaps},
                      {"idle_us", p.idle_us}});
  }
  nlohmann::json largest = nlohmann::json::array();
  for (size_t k = 0; k < idle.gaps.size() && k < max_rows; ++k) {
    const IdleGap& g = idle.gaps[k];
    largest.push_back({{"start_us", g.start_us},
                       {"dur_us", g.dur_us},
                       {"cause", idle_cause_name(g.cause)},
                       {"before", event_ref(trace, g.before)},
                       {"after", event_ref(trace, g.after)},
                       {"place", event_ref(trace, g.place)},
                       {"host_event", event_ref(trace, g.host_event)}});
  }
  return {{"kernels", idle.kernels},
          {"short_kernels", idle.short_kernels},
          {"short_kernel_threshold_us", idle.short_kernel_us},
          {"short_kernel_time_us", idle.short_kernel_time_us},
          {"span_us", idle.span_us},
          {"busy_us", idle.busy_us},
          {"idle_us", idle.idle_us()},
          {"gpu_events", idle.gpu_events},
          {"unlinked_gpu_events", idle.unlinked_gpu_events},
          {"gaps", idle.gaps.size()},
          {"latency_threshold_us", idle.latency_threshold_us},
          {"long_gap_threshold_us", idle.long_gap_us},
          {"long_gaps", idle.long_gaps},
          {"long_gaps_us", idle.long_gaps_us},
          {"by_cause", by_cause},
          {"by_place", places},
          {"largest_gaps", largest}};
}

}  // namespace jarvis::insights
