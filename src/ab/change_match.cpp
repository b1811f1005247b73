// footprint_changes / change_finding (change_match.h).
#include "ab/change_match.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace jarvis::ab {
namespace {

constexpr char kChangeSigSep = '\x1f';

// A host op: "h" name, its Input Dims. The trace's own op at kNoUid: "".
std::string change_host_sig(const Trace& t, Uid u) {
  std::string s = "h";
  s += kChangeSigSep;
  s += t.name(u);
  s += kChangeSigSep;
  if (const PyValue* dims = t.arg(u, "Input Dims")) s += dims->repr();
  return s;
}

// Any event: a GPU event by its name and its launching op, else a host op.
std::string change_event_sig(const Trace& t, const CallTree& tree, Uid u) {
  const Event& e = t.events[u];
  if (!e.is_gpu()) return change_host_sig(t, u);
  std::string s = "g";
  s += kChangeSigSep;
  s += t.name(u);
  s += kChangeSigSep;
  const Uid op = tree.nearest_cpu_op(u);
  if (op != kNoUid) s += change_host_sig(t, op);
  return s;
}

std::string change_name_sig(std::string_view name) {
  std::string s = "n";
  s += kChangeSigSep;
  s += name;
  return s;
}

// The signatures of one finding's work in arm A: the kernels its what-if
// shortens, else the ops its what-if removes, else its evidence uids.
std::vector<std::string> change_footprint(const Trace& t, const CallTree& tree,
                                          const insights::Insight& f) {
  std::unordered_set<std::string> sigs;
  auto add_uids = [&](const nlohmann::json& list) {
    if (!list.is_array()) return;
    for (const auto& v : list)
      if (v.is_number_integer() && v.get<int64_t>() >= 0 && v.get<uint64_t>() < t.events.size())
        sigs.insert(change_event_sig(t, tree, v.get<Uid>()));
  };
  const nlohmann::json none;
  const auto& w = f.what_if.is_object() ? f.what_if : none;
  if (w.contains("kernel_uids")) {
    add_uids(w["kernel_uids"]);
  } else if (w.contains("remove_uids") || w.contains("remove_ops")) {
    if (w.contains("remove_uids")) add_uids(w["remove_uids"]);
    if (w.contains("remove_ops") && w["remove_ops"].is_array())
      for (const auto& v : w["remove_ops"])
        if (v.is_string()) sigs.insert(change_name_sig(v.get<std::string>()));
  } else {
    for (Uid u : f.uids)
      if (u < t.events.size()) sigs.insert(change_event_sig(t, tree, u));
  }
  return {sigs.begin(), sigs.end()};
}

// The summed duration (ns) and the count of the trace's events with each
// wanted signature.
struct ChangeSigTotal {
  double ns = 0, count = 0;
};
std::unordered_map<std::string, ChangeSigTotal> change_sig_time(
    const Trace& t, const CallTree& tree, const std::unordered_set<std::string>& wanted,
    bool any_name_sig) {
  std::unordered_map<std::string, ChangeSigTotal> out;
  auto add = [&](const std::string& s, double d) {
    if (!wanted.count(s)) return;
    out[s].ns += d;
    out[s].count += 1;
  };
  for (Uid u = 0; u < t.events.size(); ++u) {
    const Event& e = t.events[u];
    if (!e.has_dur()) continue;
    const double d = static_cast<double>(std::max<int64_t>(0, e.dur_ns));
    add(change_event_sig(t, tree, u), d);
    if (any_name_sig && !e.is_gpu()) add(change_name_sig(t.name(u)), d);
  }
  return out;
}

}  // namespace

size_t profiler_steps(const Trace& trace) {
  size_t n = 0;
  for (Uid u = 0; u < trace.events.size(); ++u) {
    const Event& e = trace.events[u];
    // The host's annotations (Kineto repeats each on the GPU's timeline).
    if (!e.is_gpu() && e.has_dur() && e.dur_ns > 0 && trace.name(u).starts_with("ProfilerStep#"))
      ++n;
  }
  return std::max<size_t>(n, 1);
}

std::vector<FootprintChange> footprint_changes(const Trace& a, const CallTree& a_tree,
                                               const std::vector<insights::Insight>& findings,
                                               const Trace& b, const CallTree& b_tree) {
  std::vector<std::vector<std::string>> footprints;
  std::unordered_set<std::string> wanted;
  bool any_name_sig = false;
  for (const auto& f : findings) {
    footprints.push_back(change_footprint(a, a_tree, f));
    for (const auto& s : footprints.back()) {
      wanted.insert(s);
      any_name_sig = any_name_sig || s.starts_with('n');
    }
  }
  const auto a_ns = change_sig_time(a, a_tree, wanted, any_name_sig);
  const auto b_ns = change_sig_time(b, b_tree, wanted, any_name_sig);
  const double a_steps = static_cast<double>(profiler_steps(a));
  const double b_steps = static_cast<double>(profiler_steps(b));
  std::vector<FootprintChange> out;
  for (size_t k = 0; k < findings.size(); ++k) {
    if (footprints[k].empty()) continue;
    FootprintChange c;
    c.index = k;
    c.rule = findings[k].rule;
    c.signatures = footprints[k].size();
    ChangeSigTotal a_sum, b_sum;
    c.kernels = false;
    for (const auto& s : footprints[k]) {
      c.kernels = c.kernels || s.starts_with('g');
      if (auto it = a_ns.find(s); it != a_ns.end()) {
        a_sum.ns += it->second.ns;
        a_sum.count += it->second.count;
      }
      if (auto it = b_ns.find(s); it != b_ns.end()) {
        b_sum.ns += it->second.ns;
        b_sum.count += it->second.count;
      }
    }
    c.a_ms_per_step = a_sum.ns / a_steps / 1e6;
    c.b_ms_per_step = b_sum.ns / b_steps / 1e6;
    c.a_events_per_step = a_sum.count / a_steps;
    c.b_events_per_step = b_sum.count / b_steps;
    out.push_back(std::move(c));
  }
  return out;
}

std::optional<FootprintChange> change_finding(const std::vector<FootprintChange>& changes,
                                              double floor_ms) {
  std::optional<FootprintChange> best;
  for (const auto& c : changes) {
    if (c.gone_share() < kGoneShare || c.gone_ms() < floor_ms) continue;
    if (!best || c.gone_ms() > best->gone_ms()) best = c;
  }
  return best;
}

}  // namespace jarvis::ab
