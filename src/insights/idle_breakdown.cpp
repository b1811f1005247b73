#include "insights/idle_breakdown.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

namespace jarvis::insights {

namespace {

// GPU operations grouped by (device, stream), each group in start order.
std::map<std::pair<int64_t, int64_t>, std::vector<Uid>> ops_by_stream(const Trace& trace) {
  std::map<std::pair<int64_t, int64_t>, std::vector<Uid>> out;
  for (Uid u = 0; u < trace.events.size(); ++u) {
    const Event& e = trace.events[u];
    if (!e.is_gpu() || !e.has_dur() || std::isnan(e.ts())) continue;
    out[{trace.device(e), trace.stream(e)}].push_back(u);
  }
  for (auto& [key, uids] : out)
    std::stable_sort(uids.begin(), uids.end(),
                     [&](Uid a, Uid b) { return trace.events[a].ts() < trace.events[b].ts(); });
  return out;
}

// Start of the host call that issued a GPU operation (its runtime launch),
// or NaN when the operation is not linked to one.
double issue_time(const Trace& trace, const CallTree& tree, Uid gpu) {
  Uid launch = tree.parent(gpu);
  if (launch == kNoUid || !trace.events[launch].is_runtime()) return std::nan("");
  return trace.events[launch].ts();
}

void add_gap(IdleCauses& idle, double gap, double host_wait, double threshold) {
  ++idle.gaps;
  idle.host_wait_us += host_wait;
  double rest = gap - host_wait;
  if (rest <= threshold)
    idle.launch_latency_us += rest;
  else
    idle.other_us += rest;
}

StreamIdle stream_idle(const Trace& trace, const CallTree& tree, const std::vector<Uid>& uids,
                       double threshold) {
  StreamIdle s;
  s.ops = uids.size();
  double end = -std::numeric_limits<double>::infinity(), first = trace.events[uids[0]].ts();
  for (Uid u : uids) {
    const Event& e = trace.events[u];
    s.busy_us += e.dur();
    if (u != uids[0] && e.ts() > end) {
      double gap = e.ts() - end;
      double issued = issue_time(trace, tree, u);
      // Issued after the stream went idle: the GPU waited for the host that long.
      double host_wait = std::isnan(issued) ? 0 : std::clamp(issued - end, 0.0, gap);
      add_gap(s.idle, gap, host_wait, threshold);
    }
    end = std::max(end, e.ts() + e.dur());
  }
  s.span_us = end - first;
  return s;
}

}  // namespace

IdleBreakdown idle_breakdown(const Trace& trace, const CallTree& tree,
                             double latency_threshold_us) {
  IdleBreakdown out;
  out.latency_threshold_us = latency_threshold_us;
  for (const auto& [key, uids] : ops_by_stream(trace)) {
    StreamIdle s = stream_idle(trace, tree, uids, latency_threshold_us);
    s.device = key.first;
    s.stream = key.second;
    out.total.host_wait_us += s.idle.host_wait_us;
    out.total.launch_latency_us += s.idle.launch_latency_us;
    out.total.other_us += s.idle.other_us;
    out.total.gaps += s.idle.gaps;
    out.streams.push_back(s);
  }
  std::stable_sort(out.streams.begin(), out.streams.end(),
                   [](const StreamIdle& a, const StreamIdle& b) {
                     return a.idle.total_us() > b.idle.total_us();
                   });
  return out;
}

namespace {

void add_causes(nlohmann::json& j, const IdleCauses& c) {
  j["gaps"] = c.gaps;
  j["idle_us"] = c.total_us();
  j["host_wait_us"] = c.host_wait_us;
  j["launch_latency_us"] = c.launch_latency_us;
  j["other_us"] = c.other_us;
}

}  // namespace

nlohmann::json idle_breakdown_json(const IdleBreakdown& idle, size_t max_streams) {
  nlohmann::json out = {{"latency_threshold_us", idle.latency_threshold_us}};
  add_causes(out, idle.total);
  out["streams"] = nlohmann::json::array();
  for (size_t k = 0; k < idle.streams.size() && k < max_streams; ++k) {
    const StreamIdle& s = idle.streams[k];
    nlohmann::json j = {
        {"device", s.device == kNoInt ? nlohmann::json() : nlohmann::json(s.device)},
        {"stream", s.stream == kNoInt ? nlohmann::json() : nlohmann::json(s.stream)},
        {"ops", s.ops},
        {"busy_us", s.busy_us},
        {"span_us", s.span_us}};
    add_causes(j, s.idle);
    out["streams"].push_back(std::move(j));
  }
  return out;
}

}  // namespace jarvis::insights
