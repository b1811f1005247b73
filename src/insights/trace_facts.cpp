#include "insights/trace_facts.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "base/phase_timer.h"
#include "base/sort_runs.h"
#include "insights/idle_gaps.h"
#include "insights/rules_internal.h"

namespace jarvis::insights::detail {

// The rules run on two threads (run_insights): the names of the GPU events
// are read before they start and then only looked up; every other fact is
// computed by the first rule that asks, under its own lock (one fact reads
// another: host_work_idle reads idle), so a second rule waits for it.
struct TraceFacts {
  // A loaded trace's facts of the trace alone, made before this context
  // (make_shared_trace_facts): what it holds is read from it, not made again.
  std::shared_ptr<const TraceFacts> base;
  std::unordered_map<uint32_t, KernelNameFacts> gpu_names;  // by interned name
  std::mutex other_names_mu;
  std::map<uint32_t, KernelNameFacts> other_names;  // any other event a rule asks about
  std::mutex idle_mu, host_work_idle_mu, capture_calls_mu, host_gaps_mu, siblings_mu;
  std::optional<IdleGaps> idle;
  std::optional<std::map<std::string, double>> host_work_idle;
  std::optional<size_t> capture_calls;
  std::optional<std::vector<critical_path::HostGap>> host_gaps;
  std::optional<Siblings> siblings;
  // for_each_launching_sibling_list's lists: list k is uids[from[k],
  // from[k + 1]), names beside them.
  struct LaunchingSiblings {
    std::vector<Uid> uids;
    std::vector<uint32_t> names;  // of uids, one for one
    std::vector<size_t> from{0};
  };
  std::mutex launching_mu;
  std::optional<LaunchingSiblings> launching;
  // The events by name (events_named): the events of name id n are
  // uids[from[n], from[n + 1]), in UID order.
  struct EventsByName {
    std::vector<size_t> from;
    std::vector<Uid> uids;
  };
  std::mutex events_by_name_mu;
  std::optional<EventsByName> events_by_name;
  // GEMM dims of c.rows (gemm_dims(c, row)): the slot of each row's in
  // `dims`, kNoDims where it has none.
  struct RowGemmDims {
    static constexpr uint32_t kNoDims = UINT32_MAX;
    std::vector<uint32_t> slot;
    std::vector<GemmDims> dims;
  };
  std::mutex gemm_dims_mu;
  std::optional<RowGemmDims> gemm_dims;
  // What unrecorded_host_gaps reads of the trace alone, made ahead of the
  // graph (make_host_gap_events) and handed over to it (then released).
  std::mutex host_gap_events_mu;
  std::optional<critical_path::HostGapEvents> host_gap_events;
  bool host_gap_events_taken = false;
  // The host what-ifs replayed so far, by scenario_key.
  std::mutex replays_mu;
  std::map<std::string, critical_path::WhatIfResult> replays;
  // What critical_path::add_host_removal adds to a scenario, by removal_key
  // (a plan re-adds each listed change's removal in every later round).
  std::mutex removals_mu;
  std::map<std::string, critical_path::Scenario> removals;
};

namespace {

TraceFacts& facts_of(const InsightContext& c) {
  prepare_trace_facts(c);
  return *c.facts;
}

KernelNameFacts read_kernel_name(std::string_view name) {
  KernelNameFacts f;
  f.traits = parse_kernel_name(name);
  f.fp32_simt_gemm = is_fp32_simt_gemm_kernel(name);
  f.layout_conversion = is_layout_conversion_kernel(name);
  return f;
}

// The fact in `slot`, made by `make` on the first call (a failure leaves it
// unset: the next call tries again and throws the same).
template <class T, class Make>
const T& computed_once(std::mutex& mu, std::optional<T>& slot, Make&& make) {
  std::lock_guard lock(mu);
  if (!slot) slot = make();
  return *slot;
}

// The fact in `slot` of the loaded trace's facts (TraceFacts::base) where
// they hold it, else computed_once in this context's.
template <class T, class Make>
const T& shared_or_once(TraceFacts& f, std::mutex TraceFacts::*mu,
                        std::optional<T> TraceFacts::*slot, Make&& make) {
  if (f.base && (*f.base).*slot) return *((*f.base).*slot);
  return computed_once(f.*mu, f.*slot, std::forward<Make>(make));
}

}  // namespace

void prepare_trace_facts(const InsightContext& c, std::shared_ptr<const TraceFacts> base) {
  if (c.facts) return;
  auto facts = std::make_shared<TraceFacts>();
  if (base) {
    // The kernel names were read for the loaded trace: a few hundred entries.
    facts->gpu_names = base->gpu_names;
    facts->base = std::move(base);
    c.facts = std::move(facts);
    return;
  }
  // Each GPU event's name read once: a byte per name id marks those seen (a
  // tiled trace's million kernels have a few hundred names; a hash lookup
  // each over every event was 20 ms at x256, before any rule could start).
  std::vector<char> seen(c.trace.strings.size(), 0);
  for (Uid u : c.tree.gpu_event_uids()) {
    const uint32_t id = c.trace.events[u].name;  // an interned string's id
    if (seen[id]) continue;
    seen[id] = 1;
    facts->gpu_names.emplace(id, read_kernel_name(c.trace.str(id)));
  }
  c.facts = std::move(facts);
}

const KernelNameFacts& kernel_name_facts(const InsightContext& c, Uid event) {
  const uint32_t id = c.trace.events[event].name;
  TraceFacts& f = facts_of(c);
  if (auto it = f.gpu_names.find(id); it != f.gpu_names.end()) return it->second;
  std::lock_guard lock(f.other_names_mu);  // a std::map's elements stay where they are
  auto it = f.other_names.find(id);
  if (it == f.other_names.end())
    it = f.other_names.emplace(id, read_kernel_name(c.trace.str(id))).first;
  return it->second;
}

const GemmDims* gemm_dims(const InsightContext& c, const report::PerfOpRow& row) {
  const auto* first = c.rows.data();
  if (&row < first || &row >= first + c.rows.size()) {
    throw std::logic_error("gemm_dims(c, row): the row is not one of the context's");
  }
  auto& f = facts_of(c);
  const auto& memo = computed_once(f.gemm_dims_mu, f.gemm_dims, [&] {
    TraceFacts::RowGemmDims m;
    m.slot.assign(c.rows.size(), TraceFacts::RowGemmDims::kNoDims);
    for (size_t r = 0; r < c.rows.size(); ++r)
      if (auto d = gemm_dims(c.rows[r])) {
        m.slot[r] = static_cast<uint32_t>(m.dims.size());
        m.dims.push_back(std::move(*d));
      }
    return m;
  });
  const uint32_t slot = memo.slot[static_cast<size_t>(&row - first)];
  return slot == TraceFacts::RowGemmDims::kNoDims ? nullptr : &memo.dims[slot];
}

void release_rule_scratch(const InsightContext& c) {
  if (!c.facts) return;
  std::lock_guard lock(c.facts->gemm_dims_mu);
  c.facts->gemm_dims.reset();
}

size_t graph_capture_calls(const InsightContext& c) {
  auto& f = facts_of(c);
  return shared_or_once(f, &TraceFacts::capture_calls_mu, &TraceFacts::capture_calls,
                        [&] { return graph_capture_calls(c.trace); });
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
  const IdleGaps& idle = idle_gaps(c);
  // Each gap's idle and place name, read in start order (the events a gap
  // reads are then near the last one's: in size order each was a cache
  // miss), summed below in idle_gaps' order.
  std::vector<std::pair<uint32_t, double>> of_gap(idle.gaps.size(), {kNoPlace, 0.0});
  const bool by_start = idle.by_start.size() == idle.gaps.size();
  for (size_t s = 0; s < idle.gaps.size(); ++s) {
    const size_t k = by_start ? idle.by_start[s] : s;
    const IdleGap& g = idle.gaps[k];
    const double us = host_opened_idle_us(c, g);
    if (us > 0) of_gap[k] = {g.place == kNoUid ? kNoPlace : c.trace.events[g.place].name, us};
  }
  std::unordered_map<uint32_t, size_t> slot_of;
  std::vector<std::pair<uint32_t, double>> sums;
  for (const auto& [name, us] : of_gap) {
    if (!(us > 0)) continue;
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
  for (const IdleGap& g : idle_gaps(c).gaps)
    if (const double us = host_opened_idle_us(c, g); us > 0)
      out[std::string(g.place == kNoUid ? kNoPlaceName : c.trace.name(g.place))] += us;
  return out;
}

}  // namespace

std::map<std::string, double> host_work_idle_by_place(const InsightContext& c) {
  auto& f = facts_of(c);
  return shared_or_once(f, &TraceFacts::host_work_idle_mu, &TraceFacts::host_work_idle,
                        [&] { return sum_host_opened_idle(c); });
}

namespace {

const TraceFacts::LaunchingSiblings& launching_siblings(const InsightContext& c) {
  auto& f = facts_of(c);
  return shared_or_once(f, &TraceFacts::launching_mu, &TraceFacts::launching, [&] {
    TraceFacts::LaunchingSiblings out;
    for_each_sibling_list(c, [&](std::span<const Uid> siblings) {
      const size_t from = out.uids.size();
      for (Uid u : siblings)
        if (const Event& e = c.trace.events[u];
            e.cat == Cat::CpuOp && !c.tree.gpu_events(u).empty()) {
          out.uids.push_back(u);
          out.names.push_back(e.name);
        }
      if (out.uids.size() - from < 2) {
        out.uids.resize(from);
        out.names.resize(from);
      } else {
        out.from.push_back(out.uids.size());
      }
    });
    out.uids.shrink_to_fit();
    out.names.shrink_to_fit();
    return out;
  });
}

const TraceFacts::EventsByName& events_by_name(const InsightContext& c) {
  auto& f = facts_of(c);
  return shared_or_once(f, &TraceFacts::events_by_name_mu, &TraceFacts::events_by_name, [&] {
    // A counting sort by name id: two passes over the events' names, each
    // name's events in UID order.
    TraceFacts::EventsByName out;
    const size_t names = c.trace.strings.size();
    out.from.assign(names + 1, 0);
    for (const Event& e : c.trace.events) ++out.from[e.name + 1];
    for (size_t n = 0; n < names; ++n) out.from[n + 1] += out.from[n];
    out.uids.resize(c.trace.events.size());
    std::vector<size_t> at(out.from.begin(), out.from.end() - 1);
    for (Uid u = 0; u < c.trace.events.size(); ++u) out.uids[at[c.trace.events[u].name]++] = u;
    return out;
  });
}

// The events of the name ids given, in UID order.
std::vector<Uid> events_of_names(const TraceFacts::EventsByName& index,
                                 const std::vector<uint32_t>& ids) {
  std::vector<Uid> out;
  for (uint32_t id : ids)
    out.insert(out.end(), index.uids.begin() + static_cast<std::ptrdiff_t>(index.from[id]),
               index.uids.begin() + static_cast<std::ptrdiff_t>(index.from[id + 1]));
  // One sorted run per name: merged where they overlap (std::sort of the
  // whole, as before, ordered runs of a tiled trace's 300k events anew).
  if (ids.size() > 1) stable_sort_runs(out);
  return out;
}

}  // namespace

void make_events_by_name(const InsightContext& c) {
  PhaseTimer t("insights/facts/events_by_name");
  (void)events_by_name(c);
}

std::vector<Uid> events_named(const InsightContext& c,
                              const std::function<bool(std::string_view)>& keep) {
  const TraceFacts::EventsByName& index = events_by_name(c);
  std::vector<uint32_t> ids;
  for (uint32_t id = 0; id + 1 < index.from.size(); ++id)
    if (index.from[id + 1] > index.from[id] && keep(c.trace.str(id))) ids.push_back(id);
  return events_of_names(index, ids);
}

std::vector<Uid> events_named(const InsightContext& c, std::span<const std::string_view> names) {
  const TraceFacts::EventsByName& index = events_by_name(c);
  std::vector<uint32_t> ids;
  for (std::string_view name : names)
    if (uint32_t id = 0;
        c.trace.strings.find(name, id) && std::find(ids.begin(), ids.end(), id) == ids.end())
      ids.push_back(id);
  return events_of_names(index, ids);
}

void make_launching_siblings(const InsightContext& c) {
  PhaseTimer t("insights/facts/launching_siblings");
  (void)launching_siblings(c);
}

void for_each_launching_sibling_list(
    const InsightContext& c,
    const std::function<void(std::span<const Uid> uids, std::span<const uint32_t> names)>& visit) {
  const TraceFacts::LaunchingSiblings& lists = launching_siblings(c);
  for (size_t k = 0; k + 1 < lists.from.size(); ++k) {
    const size_t from = lists.from[k], n = lists.from[k + 1] - from;
    visit(std::span<const Uid>(lists.uids).subspan(from, n),
          std::span<const uint32_t>(lists.names).subspan(from, n));
  }
}

const Siblings& siblings(const InsightContext& c) {
  auto& f = facts_of(c);
  if (f.base && f.base->siblings) return *f.base->siblings;
  std::lock_guard lock(f.siblings_mu);
  if (!f.siblings) f.siblings.emplace(c);
  return *f.siblings;
}

void make_host_gap_events(const InsightContext& c) {
  auto& f = facts_of(c);
  if (graph_capture_calls(c) > 0) return;         // rule_unrecorded_host_time reads none
  if (f.base && f.base->host_gap_events) return;  // read from there (unrecorded_host_gaps)
  std::lock_guard lock(f.host_gap_events_mu);
  if (!f.host_gap_events && !f.host_gap_events_taken)
    f.host_gap_events = critical_path::host_gap_events(c.trace);
}

const std::vector<critical_path::HostGap>& unrecorded_host_gaps(const InsightContext& c) {
  auto& f = facts_of(c);
  return computed_once(f.host_gaps_mu, f.host_gaps, [&] {
    critical_path::HostGapSelector any;
    any.min_us = kUnrecordedMinGapUs;
    if (f.base && f.base->host_gap_events)  // the loaded trace's, read in place
      return critical_path::unrecorded_host_gaps({{&c.trace, &c.tree, -1}}, c.step->graph, any,
                                                 {&*f.base->host_gap_events});
    std::optional<critical_path::HostGapEvents> recorded;
    {
      std::lock_guard lock(f.host_gap_events_mu);
      recorded.swap(f.host_gap_events);
      f.host_gap_events_taken = true;
    }
    if (!recorded) recorded = critical_path::host_gap_events(c.trace);
    return critical_path::unrecorded_host_gaps({{&c.trace, &c.tree, -1}}, c.step->graph, any,
                                               {&*recorded});
  });
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

namespace {

template <class T>
void append_bytes(std::string& key, const T& value) {
  static_assert(std::is_trivially_copyable_v<T>);
  key.append(reinterpret_cast<const char*>(&value), sizeof value);
}
void append_text(std::string& key, const std::string& text) {
  append_bytes(key, text.size());
  key += text;
}
void append_spans(std::string& key, const std::vector<critical_path::HostSpan>& spans) {
  append_bytes(key, spans.size());
  for (const auto& s : spans) {
    append_bytes(key, s.rank);
    append_bytes(key, s.thread);
    append_bytes(key, s.from_us);
    append_bytes(key, s.to_us);
  }
}
void append_events(std::string& key, const std::vector<std::pair<int64_t, Uid>>& events) {
  append_bytes(key, events.size());
  for (const auto& [rank, uid] : events) {
    append_bytes(key, rank);
    append_bytes(key, uid);
  }
}

void append_selector(std::string& key, const critical_path::Selector& sel) {
  append_bytes(key, sel.rank.has_value());
  append_bytes(key, sel.rank.value_or(0));
  append_text(key, sel.category);
  append_text(key, sel.op);
  append_text(key, sel.kernel);
  append_bytes(key, sel.gpu_uids.size());
  for (Uid u : sel.gpu_uids) append_bytes(key, u);
}

std::string removal_key(const critical_path::HostRemoval& rm) {
  std::string key;
  append_bytes(key, rm.ops.size());
  for (const std::string& op : rm.ops) append_text(key, op);
  append_bytes(key, rm.uids.size());
  for (Uid u : rm.uids) append_bytes(key, u);
  append_text(key, rm.python_frame);
  append_bytes(key, rm.rank.has_value());
  append_bytes(key, rm.rank.value_or(0));
  append_bytes(key, rm.waits_only);
  return key;
}

}  // namespace

void add_host_removal(const InsightContext& c, const critical_path::HostRemoval& removal,
                      critical_path::Scenario& scenario) {
  TraceFacts& f = facts_of(c);
  const std::string key = removal_key(removal);
  critical_path::Scenario added;
  bool known = false;
  {
    std::lock_guard lock(f.removals_mu);
    if (auto it = f.removals.find(key); it != f.removals.end()) added = it->second, known = true;
  }
  if (!known) {
    // Made on an empty scenario: all add_host_removal writes (a throw keeps nothing).
    const std::vector<critical_path::RankInput> inputs{{&c.trace, &c.tree, -1}};
    critical_path::add_host_removal(inputs, c.step->graph, removal, added);
    std::lock_guard lock(f.removals_mu);
    f.removals.emplace(key, added);
  }
  const auto append = [](auto& to, const auto& from) {
    to.insert(to.end(), from.begin(), from.end());
  };
  append(scenario.remove_host, added.remove_host);
  append(scenario.remove_syncs, added.remove_syncs);
  append(scenario.remove_gpu, added.remove_gpu);
  scenario.host_removal = added.host_removal;
}

std::string scenario_key(const critical_path::Scenario& change, critical_path::StepDetail detail,
                         critical_path::RemovedUs removed) {
  // Doubles by their bytes: a key equal only where every value is.
  std::string key;
  append_selector(key, change.select);
  append_spans(key, change.remove_host);
  append_spans(key, change.remove_unrecorded);
  append_events(key, change.remove_syncs);
  append_events(key, change.remove_gpu);
  append_text(key, change.host_removal);
  append_bytes(key, change.factor);
  append_bytes(key, change.also_scale.size());
  for (const auto& [also, factor] : change.also_scale) {
    append_selector(key, also);
    append_bytes(key, factor);
  }
  append_bytes(key, change.median_rank);
  append_bytes(key, change.remove_launch_gaps);
  append_text(key, change.overlap_collective);
  append_bytes(key, change.recorded_host);
  append_bytes(key, detail);
  append_bytes(key, removed);
  return key;
}

critical_path::WhatIfResult replayed_once(
    const InsightContext& c, const std::string& key,
    const std::function<critical_path::WhatIfResult()>& replay) {
  TraceFacts& f = facts_of(c);
  {
    std::lock_guard lock(f.replays_mu);
    if (auto it = f.replays.find(key); it != f.replays.end()) return it->second;
  }
  critical_path::WhatIfResult result = replay();  // a throw keeps nothing
  std::lock_guard lock(f.replays_mu);
  f.replays.emplace(key, result);
  return result;
}

void make_facts_before_rows(const InsightContext& c) {
  prepare_trace_facts(c);
  make_idle_facts(c);
  make_unrecorded_facts(c);
}

TraceFactsInParts shared_trace_facts_in_parts(const Trace& trace, const CallTree& tree) {
  auto c = std::make_shared<InsightContext>(
      InsightContext{trace, tree, nullptr, {}, 0, {}, trace.gpu_name(), nullptr, {}});
  prepare_trace_facts(*c);
  TraceFactsInParts out;
  out.facts = c->facts;
  // The longest first (x256: the idle gaps and places ~150-250 ms, the
  // host-gap events ~100 ms), so that two threads end together.
  out.parts = {[c] { make_idle_facts(*c); },
               // kept: a context reading them leaves them in place
               [c] { make_host_gap_events(*c); }, [c] { make_launching_siblings(*c); },
               [c] {
                 PhaseTimer t("insights/facts/siblings");
                 (void)siblings(*c);
               },
               [c] { make_events_by_name(*c); }, [c] { (void)graph_capture_calls(*c); }};
  return out;
}

std::shared_ptr<const TraceFacts> make_shared_trace_facts(const Trace& trace,
                                                          const CallTree& tree) {
  PhaseTimer t("insights/facts/shared");
  TraceFactsInParts made = shared_trace_facts_in_parts(trace, tree);
  for (const auto& part : made.parts) part();
  return made.facts;
}

void make_idle_facts(const InsightContext& c) {
  PhaseTimer t("insights/facts/idle");
  (void)host_work_idle_by_place(c);  // reads idle_gaps(c)
}

void make_unrecorded_facts(const InsightContext& c) {
  // rule_unrecorded_host_time reads the stretches of a trace with no graph
  // capture only.
  if (graph_capture_calls(c) > 0 || !c.step || c.step->graph.ranks.empty()) return;
  PhaseTimer t("insights/facts/unrecorded");
  try {
    (void)unrecorded_host_gaps(c);
  } catch (const std::runtime_error&) {
    // A graph of other traces: the rule meets the same error and says nothing.
  }
}

}  // namespace jarvis::insights::detail

namespace jarvis::insights {

const IdleGaps& idle_gaps(const InsightContext& c) {
  auto& f = detail::facts_of(c);
  return detail::shared_or_once(f, &detail::TraceFacts::idle_mu, &detail::TraceFacts::idle,
                                [&] { return idle_gaps(c.trace, c.tree); });
}

}  // namespace jarvis::insights
