#include "insights/trace_facts.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>

#include "insights/idle_gaps.h"
#include "insights/rules_internal.h"

namespace jarvis::insights::detail {

struct TraceFacts {
  std::unordered_map<uint32_t, KernelNameFacts> names;  // by interned name
  std::optional<IdleGaps> idle;
  std::optional<std::map<std::string, double>> host_work_idle;
  std::optional<size_t> capture_calls;
  std::optional<std::vector<critical_path::HostGap>> host_gaps;
};

namespace {

TraceFacts& facts_of(const InsightContext& c) {
  if (!c.facts) c.facts = std::make_shared<TraceFacts>();
  return *c.facts;
}

}  // namespace

const KernelNameFacts& kernel_name_facts(const InsightContext& c, Uid event) {
  const uint32_t id = c.trace.events[event].name;
  auto& names = facts_of(c).names;
  auto it = names.find(id);
  if (it != names.end()) return it->second;
  const std::string_view name = c.trace.str(id);
  KernelNameFacts f;
  f.traits = parse_kernel_name(name);
  f.fp32_simt_gemm = is_fp32_simt_gemm_kernel(name);
  f.layout_conversion = is_layout_conversion_kernel(name);
  return names.emplace(id, std::move(f)).first->second;
}

const IdleGaps& trace_idle_gaps(const InsightContext& c) {
  auto& f = facts_of(c);
  if (!f.idle) f.idle = idle_gaps(c.trace, c.tree);
  return *f.idle;
}

size_t graph_capture_calls(const InsightContext& c) {
  auto& f = facts_of(c);
  if (!f.capture_calls) f.capture_calls = graph_capture_calls(c.trace);
  return *f.capture_calls;
}

std::map<std::string, double> host_work_idle_by_place(const InsightContext& c) {
  auto& f = facts_of(c);
  if (f.host_work_idle) return *f.host_work_idle;
  std::map<std::string, double> out;
  for (const IdleGap& g : trace_idle_gaps(c).gaps) {
    double us = 0;
    if (g.cause == IdleCause::HostWork) {
      us = g.dur_us;
    } else if (g.cause == IdleCause::LaunchLatency && g.after != kNoUid) {
      // A short gap the host opened (a decode step's tiny kernels, each
      // launched after the one before ended): the wait before the launch
      // call; the launch's own latency after it stays.
      const Uid launch = c.tree.parent(g.after);
      if (launch != kNoUid && c.trace.events[launch].is_runtime())
        us = std::clamp(c.trace.events[launch].ts() - g.start_us, 0.0, g.dur_us);
    }
    if (us > 0)
      out[g.place == kNoUid ? std::string("(no launching op)")
                            : std::string(c.trace.name(g.place))] += us;
  }
  f.host_work_idle = std::move(out);
  return *f.host_work_idle;
}

const std::vector<critical_path::HostGap>& unrecorded_host_gaps(const InsightContext& c) {
  auto& f = facts_of(c);
  if (!f.host_gaps) {
    critical_path::HostGapSelector any;
    any.min_us = kUnrecordedMinGapUs;
    f.host_gaps =
        critical_path::unrecorded_host_gaps({{&c.trace, &c.tree, -1}}, c.step->graph, any);
  }
  return *f.host_gaps;
}

std::vector<critical_path::HostGap> add_host_gap_removal(const InsightContext& c,
                                                         const critical_path::HostGapSelector& sel,
                                                         critical_path::Scenario& scenario) {
  const std::vector<critical_path::RankInput> inputs{{&c.trace, &c.tree, -1}};
  if (sel.rank || !(sel.min_us >= kUnrecordedMinGapUs))
    return critical_path::add_host_gap_removal(inputs, c.step->graph, sel, scenario);
  std::vector<critical_path::HostGap> picked;
  for (const auto& gap : unrecorded_host_gaps(c))
    if (critical_path::host_gap_selected(c.trace, sel, gap)) picked.push_back(gap);
  if (picked.empty())  // the scan's own error, naming what the trace has
    return critical_path::add_host_gap_removal(inputs, c.step->graph, sel, scenario);
  critical_path::add_host_gaps(picked, scenario);
  return picked;
}

}  // namespace jarvis::insights::detail
