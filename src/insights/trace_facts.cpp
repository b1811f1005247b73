#include "insights/trace_facts.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
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

namespace {

// The GPU idle the host opened in gap `g` (host_work_idle_by_place).
double host_opened_idle_us(const InsightContext& c, const IdleGap& g) {
  if (g.cause == IdleCause::HostWork) return g.dur_us;
  if (g.cause == IdleCause::LaunchLatency && g.after != kNoUid) {
    // A short gap the host opened (a decode step's tiny kernels, each
    // launched after the one before ended): the wait before the launch
    // call; the launch's own latency after it stays.
    const Uid launch = c.tree.parent(g.after);
    if (launch != kNoUid && c.trace.events[launch].is_runtime())
      return std::clamp(c.trace.events[launch].ts() - g.start_us, 0.0, g.dur_us);
  }
  return 0;
}

constexpr std::string_view kNoPlaceName = "(no launching op)";

// Summed by place name, each name's gaps in idle_gaps' order. By interned
// name (one id per distinct name), named once per place at the end; by
// name string when a place is named like kNoPlaceName (it shares that sum).
std::map<std::string, double> sum_host_opened_idle(const InsightContext& c) {
  constexpr uint32_t kNoPlace = UINT32_MAX;
  std::unordered_map<uint32_t, size_t> slot_of;
  std::vector<std::pair<uint32_t, double>> sums;
  for (const IdleGap& g : trace_idle_gaps(c).gaps) {
    const double us = host_opened_idle_us(c, g);
    if (!(us > 0)) continue;
    const uint32_t name = g.place == kNoUid ? kNoPlace : c.trace.events[g.place].name;
    auto [it, added] = slot_of.try_emplace(name, sums.size());
    if (added) sums.emplace_back(name, 0.0);
    sums[it->second].second += us;
  }
  std::map<std::string, double> out;
  bool clash = false;
  for (const auto& [name, us] : sums)
    clash |= !out.emplace(name == kNoPlace ? kNoPlaceName : c.trace.str(name), us).second;
  if (!clash) return out;
  out.clear();
  for (const IdleGap& g : trace_idle_gaps(c).gaps)
    if (const double us = host_opened_idle_us(c, g); us > 0)
      out[std::string(g.place == kNoUid ? kNoPlaceName : c.trace.name(g.place))] += us;
  return out;
}

}  // namespace

std::map<std::string, double> host_work_idle_by_place(const InsightContext& c) {
  auto& f = facts_of(c);
  if (!f.host_work_idle) f.host_work_idle = sum_host_opened_idle(c);
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
