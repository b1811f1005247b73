// Host work an agent proposes to take out of the step, as a what-if change:
// the events named, given by uid or under a python frame go whole (their host
// time, the syncs they make, the GPU work they launch).
#include <algorithm>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "critical_path/critical_path.h"
#include "critical_path/internal.h"
#include "pycompat/text.h"
#include "report/gpu_timeline.h"
#include "trace/name_ids.h"

namespace jarvis::critical_path {
namespace {

bool is_host_event_cat(Cat c) {
  return c == Cat::CpuOp || c == Cat::UserAnnotation || c == Cat::PythonFunction ||
         is_runtime_cat(c);
}

// The events of one trace the removal names (not yet merged: a named op may
// sit inside another named one).
std::vector<Uid> matched_events(const Trace& t, const HostRemoval& rm, bool uids_apply) {
  // The names by interned id (one id per text): a what-if replayed for
  // every change of a plan matched every host event's name as text.
  const NameIds names(t, rm.ops);
  std::vector<Uid> out;
  // Events given by UID alone (a finding's what_if) need no scan by name.
  const bool by_name = !rm.ops.empty() || !rm.python_frame.empty();
  for (Uid u = 0; by_name && u < t.events.size(); ++u) {
    const Event& e = t.events[u];
    if (!is_host_event_cat(e.cat) || !e.has_ts() || !e.has_dur()) continue;
    if (names.contains(e.name) || (!rm.python_frame.empty() && e.cat == Cat::PythonFunction &&
                                   pycompat::ascii_icontains(t.name(u), rm.python_frame)))
      out.push_back(u);
  }
  if (uids_apply)
    for (Uid u : rm.uids) {
      if (u >= t.events.size() || !is_host_event_cat(t.events[u].cat) || !t.events[u].has_ts() ||
          !t.events[u].has_dur())
        throw CriticalPathError(fmt::format(
            "uid {} is not a host event (cpu_op, user annotation, python frame or runtime call) "
            "of the trace",
            u));
      out.push_back(u);
    }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// Per host thread, the union of the events' spans: nested matches count once.
std::map<uint32_t, std::vector<Interval>> merged_spans(const Trace& t,
                                                       const std::vector<Uid>& events) {
  std::map<uint32_t, std::vector<Interval>> by_thread;
  for (Uid u : events)
    by_thread[t.events[u].thread].emplace_back(t.events[u].ts(), t.events[u].end());
  for (auto& [thread, spans] : by_thread) spans = merge_intervals(std::move(spans));
  return by_thread;
}

bool has_python_frames(const Trace& t) {
  return std::any_of(t.events.begin(), t.events.end(),
                     [](const Event& e) { return e.cat == Cat::PythonFunction; });
}

bool inside(const std::vector<Interval>& spans, double from, double to) {
  auto it = std::upper_bound(spans.begin(), spans.end(), std::make_pair(from, 1e300));
  if (it == spans.begin()) return false;
  --it;
  return from >= it->first && to <= it->second;
}

std::string describe(const HostRemoval& rm) {
  std::vector<std::string> parts;
  for (const std::string& op : rm.ops) parts.push_back(fmt::format("'{}'", op));
  if (!rm.uids.empty()) parts.push_back(fmt::format("{} given uid(s)", rm.uids.size()));
  if (!rm.python_frame.empty())
    parts.push_back(fmt::format("python frames ~ '{}'", rm.python_frame));
  return fmt::format("{}", fmt::join(parts, ", "));
}

}  // namespace

HostRemovalMatch add_host_removal(const std::vector<RankInput>& inputs, const Graph& graph,
                                  const HostRemoval& rm, Scenario& scenario) {
  if (rm.empty()) return {};
  if (inputs.size() != graph.input_ranks.size())
    throw CriticalPathError("the graph was not built from these traces");
  if (!rm.uids.empty() && !rm.rank && inputs.size() > 1)
    throw CriticalPathError(
        "uids name events of one trace: give the rank they belong to with the uids");
  if (rm.rank && !std::count(graph.input_ranks.begin(), graph.input_ranks.end(), *rm.rank))
    throw CriticalPathError(fmt::format("rank {} is not among the traces' ranks ({})", *rm.rank,
                                        fmt::join(graph.input_ranks, ", ")));
  // The synchronising calls the graph split (their return waits for the
  // GPU): the attached base's sorted list when it has one (a plan's replays
  // each add their changes' removals), else read off the graph's nodes.
  const WhatIfBase* base = graph.attached_base.get();
  const bool listed = detail::indexes(base, graph);
  const std::vector<std::pair<int64_t, Uid>> own_sync_calls =
      listed ? std::vector<std::pair<int64_t, Uid>>{} : detail::sync_returns_of(graph);
  const auto& sync_calls = listed ? base->sync_returns : own_sync_calls;
  const auto is_sync_call = [&](int64_t rank, Uid call) {
    return std::binary_search(sync_calls.begin(), sync_calls.end(), std::make_pair(rank, call));
  };
  HostRemovalMatch match;
  bool python_frames = false;  // in the traces searched (said when nothing matched)
  for (size_t k = 0; k < inputs.size(); ++k) {
    const int64_t rank = graph.input_ranks[k];
    if (rm.rank && *rm.rank != rank) continue;
    const Trace& t = *inputs[k].trace;
    const CallTree& tree = *inputs[k].tree;
    const std::vector<Uid> events = matched_events(t, rm, !rm.uids.empty());
    if (events.empty() && !rm.python_frame.empty()) python_frames |= has_python_frames(t);
    match.events += events.size();
    const auto spans = merged_spans(t, events);
    for (const auto& [thread, list] : spans)
      for (const auto& [from, to] : list) {
        if (!rm.waits_only) scenario.remove_host.push_back({rank, thread, from, to});
        match.host_us += to - from;
      }
    // Runtime calls inside the spans: their waits end and their GPU work goes.
    for (Uid call : tree.runtime_uids()) {
      const Event& e = t.events[call];
      auto it = spans.find(e.thread);
      if (it == spans.end() || !e.has_ts() || !e.has_dur() || !inside(it->second, e.ts(), e.end()))
        continue;
      if (is_sync_call(rank, call)) {
        scenario.remove_syncs.emplace_back(rank, call);
        ++match.syncs;
      }
      if (rm.waits_only) continue;
      for (Uid g : tree.gpu_events(call)) {
        scenario.remove_gpu.emplace_back(rank, g);
        match.gpu_us += t.events[g].has_dur() ? t.events[g].dur() : 0.0;
        ++match.gpu_ops;
      }
    }
  }
  if (match.events == 0)
    throw CriticalPathError(fmt::format(
        "no host event matches {}: op names match exactly (as ops_summary prints them){}",
        describe(rm),
        !rm.python_frame.empty() && !python_frames
            ? "; the trace has no python frames (profile with with_stack=True)"
            : ""));
  scenario.host_removal =
      rm.waits_only ? fmt::format(
                          "{} host event(s) matching {} keep their time; the {} synchronising "
                          "call(s) inside no longer wait for the GPU",
                          match.events, describe(rm), match.syncs)
                    : fmt::format(
                          "{} host event(s) matching {} removed: {:.1f} us of host time, {} "
                          "synchronising call(s), {} GPU op(s) ({:.1f} us), over the whole trace",
                          match.events, describe(rm), match.host_us, match.syncs, match.gpu_ops,
                          match.gpu_us);
  return match;
}

HostRemovalMatch add_host_removal(const Loaded& loaded, const HostRemoval& removal,
                                  Scenario& scenario) {
  std::vector<RankInput> inputs;
  for (size_t k = 0; k < loaded.traces.size(); ++k)
    inputs.push_back({loaded.traces[k].get(), loaded.trees[k].get(), -1});
  return add_host_removal(inputs, loaded.graph, removal, scenario);
}

}  // namespace jarvis::critical_path
