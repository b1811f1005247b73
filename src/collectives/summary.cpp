// The short collective summary that the MCP trace summaries include.
#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <tuple>

#include "collectives/collectives.h"
#include "report/gpu_timeline.h"

namespace jarvis::collectives {

TraceCollectiveSummary summarize_trace(const Trace& trace, const CallTree& tree, size_t top_n,
                                       const GpuTimeline* known_timeline) {
  TraceCollectiveSummary s;
  auto instances = collective_instances(trace);
  s.count = instances.size();
  if (instances.empty()) return s;
  try {
    GpuTimeline timeline = known_timeline ? *known_timeline : compute_gpu_timeline(trace, tree);
    s.total_us = timeline.total_comm_time;
    s.exposed_us = timeline.exposed_comm_time;
  } catch (const std::runtime_error&) {
    // No GPU event linked to a launch: nothing is known to hide the
    // collectives, so all of their busy time counts as exposed.
    std::vector<Interval> busy;
    for (const auto& inst : instances)
      busy.emplace_back(inst.kernel.ts, inst.kernel.ts + inst.kernel.dur);
    s.total_us = s.exposed_us = intervals_length(merge_intervals(std::move(busy)));
  }

  using Key = std::tuple<std::string, std::string, int64_t>;  // collective, dtype, nelems
  std::map<Key, TopCollective> groups;
  std::map<Key, size_t> busbw_samples;
  for (const auto& inst : instances) {
    Key key{inst.collective, inst.dtype, inst.in_msg_nelems};
    TopCollective& t = groups[key];
    t.collective = inst.collective.empty() ? inst.kernel_name : inst.collective;
    t.dtype = inst.dtype;
    t.msg_size_mb = inst.msg_size_mb;
    ++t.count;
    t.total_us += inst.kernel.dur;
    if (!std::isnan(inst.bw.busbw_gbps)) {
      t.mean_busbw_gbps += inst.bw.busbw_gbps;
      ++busbw_samples[key];
    }
  }
  for (auto& [key, t] : groups) {
    const size_t n = busbw_samples[key];
    t.mean_busbw_gbps = n ? t.mean_busbw_gbps / static_cast<double>(n) : std::nan("");
    s.top.push_back(t);
  }
  std::stable_sort(s.top.begin(), s.top.end(),
                   [](const auto& a, const auto& b) { return a.total_us > b.total_us; });
  if (s.top.size() > top_n) s.top.resize(top_n);
  return s;
}

}  // namespace jarvis::collectives
