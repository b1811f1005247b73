// Host syncs inside the step: a synchronising runtime call (stream / device
// / event synchronise, a copy whose GPU side the call waited for) stops the
// host until the GPU has drained its queue, and the GPU then idles while the
// host launches the next work. `.item()`, `.cpu()`, `.tolist()`, `print` of
// a tensor, boolean indexing and `nonzero` (a data-dependent shape) all make
// one. Sized by the what-if on the un-profiled step: the same step with
// these calls no longer waiting.
#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "insights/rules_internal.h"

namespace jarvis::insights {
namespace {

// A call the host blocks in until the GPU catches up (as critical_path's
// graph splits it into entry and return).
bool is_sync_call(const InsightContext& c, Uid uid) {
  std::string_view name = c.trace.name(uid);
  if (name.find("Synchronize") != std::string_view::npos) return true;
  if (name.find("Memcpy") == std::string_view::npos) return false;
  const Event& call = c.trace.events[uid];
  constexpr double kTolUs = 2.0;
  for (Uid g : c.tree.gpu_events(uid)) {
    const Event& e = c.trace.events[g];
    if (e.end() >= call.ts() && e.end() <= call.end() + kTolUs) return true;
  }
  return false;
}

// The op a user wrote that made the sync: the outermost cpu_op above the
// call (aten::item above aten::_local_scalar_dense, aten::index above
// aten::nonzero), and the innermost one for the evidence.
struct CallSite {
  std::string outer, inner;
};

CallSite call_site(const InsightContext& c, Uid call) {
  CallSite site;
  Uid inner = c.tree.nearest_cpu_op(call);
  if (inner == kNoUid) return {"(no op: a runtime call of the script)", ""};
  site.inner = std::string(c.trace.name(inner));
  Uid outer = inner;
  for (Uid p = c.tree.parent(inner); p != kNoUid; p = c.tree.parent(p))
    if (c.trace.events[p].cat == Cat::CpuOp) outer = p;
  site.outer = std::string(c.trace.name(outer));
  return site;
}

struct SiteGroup {
  std::vector<std::pair<int64_t, Uid>> calls;  // (rank, uid) for the what-if
  std::vector<Uid> ops;
  std::string inner;
  double wait_us = 0;
  size_t count = 0;
};

// A sync that copies data the host needs (a blocking .to() / copy_): its fix
// keeps the copy (pinned memory, non_blocking, read after an event) and
// drops only the wait.
bool is_copy_site(const SiteGroup& g) {
  return g.inner == "aten::to" || g.inner == "aten::_to_copy" || g.inner == "aten::copy_";
}

// The what_if tool's arguments for these syncs: exactly the finding's ops
// (the op around each sync of the steps, the call itself outside any op)
// by uid. A name would take every op of that name in the trace (706
// aten::to in a generate() trace, 17 of them syncing; issue 73 point 7);
// the call sites by name are in the evidence. The fix removes a sync's op
// whole (issue 73 point 4: no .item(), a mask instead of nonzero): its host
// time, its wait, the GPU work it launched, and so the GPU idle behind it
// while the host launched the next work. Blocking copies keep their time
// and work and stop waiting (remove_waits_only); when every site is one.
nlohmann::json what_if_args(const std::map<std::string, SiteGroup>& groups) {
  bool copies_only = true;
  for (const auto& [site, g] : groups) copies_only &= is_copy_site(g);
  std::vector<Uid> uids;
  for (const auto& [site, g] : groups) {
    if (!copies_only && is_copy_site(g)) continue;
    uids.insert(uids.end(), g.ops.begin(), g.ops.end());
    if (g.ops.empty())
      for (const auto& [rank, call] : g.calls) uids.push_back(call);
  }
  std::sort(uids.begin(), uids.end());
  uids.erase(std::unique(uids.begin(), uids.end()), uids.end());
  if (copies_only) return {{"remove_waits_only", true}, {"remove_uids", uids}};
  return {{"remove_uids", uids}};
}

}  // namespace

namespace detail {

std::vector<HostSyncSite> step_host_sync_sites(const InsightContext& c) {
  std::vector<HostSyncSite> sites;
  if (!c.step || c.step->graph.ranks.empty()) return sites;
  const StepWindow window = step_window(c);
  // The iterations in trace time, and every call that launched GPU work.
  const auto& graph = c.step->graph;
  const double offset =
      graph.clock_offset_us.count(window.rank) ? graph.clock_offset_us.at(window.rank) : 0.0;
  std::vector<double> launches;
  for (Uid u : c.tree.runtime_uids())
    if (c.trace.events[u].has_ts() && !c.tree.gpu_events(u).empty())
      launches.push_back(c.trace.events[u].ts());
  std::sort(launches.begin(), launches.end());
  const auto launched_in = [&](double from, double to) {  // a launch in [from, to)
    auto it = std::lower_bound(launches.begin(), launches.end(), from);
    return it != launches.end() && *it < to;
  };
  std::map<std::string, size_t> at;  // outer op -> index in sites
  for (Uid u : c.tree.runtime_uids()) {
    const Event& e = c.trace.events[u];
    if (!e.has_ts() || !e.has_dur() || !window.contains(e.ts()) || !is_sync_call(c, u)) continue;
    const CallSite site = call_site(c, u);
    auto [it, added] = at.try_emplace(site.outer, sites.size());
    if (added) sites.push_back({site.outer, site.inner, 0, 0});
    HostSyncSite& s = sites[it->second];
    ++s.calls;
    // A synchronise or a copy to the host (a copy to or within the device
    // is capturable) ...
    bool blocks = c.trace.name(u).find("Synchronize") != std::string_view::npos;
    for (Uid g : c.tree.gpu_events(u)) {
      const std::string_view name = c.trace.name(g);
      blocks = blocks || name.find("DtoH") != std::string_view::npos ||
               name.find("DeviceToHost") != std::string_view::npos;
    }
    // ... between GPU work its step launched before it and after it.
    bool mid_step = false;
    for (const auto& iteration : graph.iterations) {
      const double from = iteration.start - offset, to = iteration.end - offset;
      if (e.ts() < from || e.ts() >= to) continue;
      mid_step = launched_in(from, e.ts()) && launched_in(e.end(), to);
      break;
    }
    if (blocks && mid_step) ++s.capture_blocking;
  }
  std::sort(sites.begin(), sites.end(), [](const HostSyncSite& a, const HostSyncSite& b) {
    return a.calls != b.calls ? a.calls > b.calls : a.op < b.op;
  });
  return sites;
}

}  // namespace detail

void rule_host_sync(const InsightContext& c, std::vector<Insight>& out) {
  if (!c.step || c.step->graph.ranks.empty()) return;
  // Only syncs inside the iterations: set-up and tear-down are not steps.
  const detail::StepWindow window = detail::step_window(c);
  std::map<std::string, SiteGroup> groups;
  for (Uid u : c.tree.runtime_uids()) {
    const Event& e = c.trace.events[u];
    if (!e.has_ts() || !e.has_dur() || !window.contains(e.ts())) continue;
    if (!is_sync_call(c, u)) continue;
    const CallSite site = call_site(c, u);
    SiteGroup& g = groups[site.outer];
    g.calls.emplace_back(window.rank, u);
    if (Uid op = c.tree.nearest_cpu_op(u); op != kNoUid) g.ops.push_back(op);
    g.inner = site.inner;
    g.wait_us += e.dur();
    ++g.count;
  }
  if (groups.empty()) return;
  critical_path::Scenario all;
  for (const auto& [site, g] : groups)
    all.remove_syncs.insert(all.remove_syncs.end(), g.calls.begin(), g.calls.end());
  // The saving is what the finding's what_if replays (one figure); the
  // waits alone where it matches nothing.
  const nlohmann::json args = what_if_args(groups);
  const double saving =
      detail::what_if_replay_total_us(c, args).value_or(detail::step_saving_total_us(c, all));
  const double steps = static_cast<double>(std::max<size_t>(1, c.step->measured.iterations.size()));
  Insight i;
  i.rule = "host_sync";
  i.scope = "trace";
  i.category = "cpu_idle";
  size_t count = 0;
  double wait_us = 0;
  nlohmann::json sites = nlohmann::json::array();
  // The ops go in the evidence, not in uids: the finding claims GPU idle
  // time, not the kernel time of the ops (uids name claim pools).
  constexpr size_t kMaxUids = 64;
  std::vector<Uid> op_uids;
  std::vector<std::pair<double, std::string>> by_wait;
  for (const auto& [site, g] : groups) by_wait.emplace_back(g.wait_us, site);
  std::sort(by_wait.rbegin(), by_wait.rend());
  for (const auto& [us, site] : by_wait) {
    const SiteGroup& g = groups.at(site);
    critical_path::Scenario one;
    one.remove_syncs = g.calls;
    sites.push_back({{"op", site},
                     {"inner_op", g.inner},
                     {"syncs_per_step", static_cast<double>(g.count) / steps},
                     {"wait_us_per_step_recorded", g.wait_us / steps},
                     {"step_saving_us_per_step", detail::step_saving_total_us(c, one) / steps}});
    count += g.count;
    wait_us += g.wait_us;
    for (Uid op : g.ops)
      if (op_uids.size() < kMaxUids) op_uids.push_back(op);
  }
  i.time_us = wait_us;
  i.share = c.timeline && c.timeline->total_time > 0 ? wait_us / c.timeline->total_time : 0;
  i.severity = detail::severity_by_step_saving(c, saving);
  i.gain_upper_bound_us = saving;
  i.step_saving_us = saving;
  i.what_if = args;
  // Nothing to save: the host ran ahead and the syncs wait for the work it
  // had queued (a blocking wait that holds a step's end is this backlog).
  if (saving <= 0)
    i.step_saving_note = fmt::format(
        "the host ran ahead of the GPU: these syncs wait {:.2f} ms per step for work already "
        "queued (the GPU's backlog); the GPU sets the step, so the host waits but the step does "
        "not",
        wait_us / steps / 1e3);
  i.title = fmt::format(
      "Host syncs in the step: {:.1f} per step at {} ({:.2f} ms per step waiting, recorded); "
      "without them the step is {:.2f} ms shorter",
      static_cast<double>(count) / steps, by_wait.front().second, wait_us / steps / 1e3,
      saving / steps / 1e3);
  if (groups.size() > 1)
    i.title = fmt::format(
        "Host syncs in the step: {:.1f} per step at {} call sites (top: {}); {:.2f} ms per step "
        "waiting (recorded); without them the step is {:.2f} ms shorter",
        static_cast<double>(count) / steps, groups.size(), by_wait.front().second,
        wait_us / steps / 1e3, saving / steps / 1e3);
  i.detail =
      "A synchronising call stops the host until the GPU drains its queue; the GPU then idles "
      "while the host launches the next work, and the host can no longer run ahead.";
  i.evidence = {{"syncs", count},
                {"steps", steps},
                {"call_sites", sites},
                {"wait_us_recorded", wait_us},
                {"op_uids", op_uids}};
  i.action_model =
      "Keep values on the GPU: no .item() / .cpu() / .tolist() / print of a tensor inside the "
      "step (log every N steps, or accumulate on the GPU); replace boolean indexing and nonzero "
      "with masks ((x * mask).sum() / mask.sum()); copies to the host with non_blocking=True "
      "into pinned memory, read after an event.";
  i.action_kernel = "None: the kernels are not the cause.";
  i.verify =
      "Re-profile: the cudaStreamSynchronize / cudaDeviceSynchronize / blocking cudaMemcpy "
      "calls at these call sites are gone and the GPU has no gap after where they were.";
  out.push_back(std::move(i));
}

}  // namespace jarvis::insights
