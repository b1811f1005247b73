// What-if: change node durations or edge lags of the calibrated graph and
// replay it (docs/critical-path.md says what this can and cannot predict).
#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>

#include "base/search_near.h"
#include "base/sort_runs.h"
#include "critical_path/critical_path.h"
#include "critical_path/internal.h"
#include "perf/categories.h"
#include "pycompat/text.h"
#include "report/stats.h"

namespace jarvis::critical_path {
namespace detail {

// f(i) for each i where before[i] != after[i] (a NaN included), in order:
// blocks of eight compared without a branch first, as a replay changes few
// of a graph's durations and lags.
template <class F>
void for_each_changed(const std::vector<double>& before, const std::vector<double>& after, F&& f) {
  const size_t n = std::min(before.size(), after.size());
  constexpr size_t kBlock = 8;
  size_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    bool any = false;
    for (size_t j = 0; j < kBlock; ++j) any |= before[i + j] != after[i + j];
    if (!any) continue;
    for (size_t j = i; j < i + kBlock; ++j)
      if (before[j] != after[j]) f(j);
  }
  for (; i < n; ++i)
    if (before[i] != after[i]) f(i);
}

// A replay's durations and lags: a copy of its base's that the scenario
// writes through set_dur / set_lag, each index written marked in a bitmap.
// What the scenario changed is then read, in index order, from the marks
// (removed_per_iteration), and the copy is put back to the base's values by
// them for the next replay: at x256 a replay copied 15 MB and compared 30 MB
// to find its few changes, beside a 4.5 ms propagation.
class ReplayTimes {
 public:
  // The base's values, nothing marked. `reused`: the copy will serve many
  // replays (put back after each), so whether its marks find every change
  // is worth a pass: a NaN differs from itself, and a comparison of every
  // value visits it, written or not.
  void assign(std::vector<double> dur, std::vector<double> lag, bool reused) {
    dur_ = std::move(dur);
    lag_ = std::move(lag);
    dur_written_.assign((dur_.size() + 63) / 64, 0);
    lag_written_.assign((lag_.size() + 63) / 64, 0);
    const auto any_nan = [](const std::vector<double>& v) {
      return std::any_of(v.begin(), v.end(), [](double x) { return std::isnan(x); });
    };
    marks_find_changes_ = reused && !any_nan(dur_) && !any_nan(lag_);
  }
  const std::vector<double>& dur() const { return dur_; }
  const std::vector<double>& lag() const { return lag_; }
  void set_dur(size_t n, double value) {
    dur_written_[n >> 6] |= uint64_t{1} << (n & 63);
    dur_[n] = value;
  }
  void set_lag(size_t k, double value) {
    lag_written_[k >> 6] |= uint64_t{1} << (k & 63);
    lag_[k] = value;
  }
  // f(n) for each duration that differs from base[n] (the values assigned),
  // in order: from the marks where they find every change, else by
  // comparing every value (for_each_changed).
  template <class F>
  void for_each_changed_dur(const std::vector<double>& base, F&& f) const {
    changed_in(dur_written_, base, dur_, f);
  }
  template <class F>
  void for_each_changed_lag(const std::vector<double>& base, F&& f) const {
    changed_in(lag_written_, base, lag_, f);
  }
  // Back to the base's values (those of assign), nothing marked.
  void restore(const std::vector<double>& base_dur, const std::vector<double>& base_lag) {
    restore_marked(dur_written_, base_dur, dur_);
    restore_marked(lag_written_, base_lag, lag_);
  }

 private:
  template <class F>
  static void for_each_marked(const std::vector<uint64_t>& marks, F&& f) {
    for (size_t w = 0; w < marks.size(); ++w)
      for (uint64_t bits = marks[w]; bits; bits &= bits - 1)
        f(w * 64 + static_cast<size_t>(std::countr_zero(bits)));
  }
  template <class F>
  void changed_in(const std::vector<uint64_t>& marks, const std::vector<double>& base,
                  const std::vector<double>& values, F&& f) const {
    if (!marks_find_changes_) return for_each_changed(base, values, f);
    for_each_marked(marks, [&](size_t i) {
      if (base[i] != values[i]) f(i);
    });
  }
  static void restore_marked(std::vector<uint64_t>& marks, const std::vector<double>& base,
                             std::vector<double>& values) {
    for_each_marked(marks, [&](size_t i) { values[i] = base[i]; });
    std::fill(marks.begin(), marks.end(), 0);
  }
  std::vector<double> dur_, lag_;
  std::vector<uint64_t> dur_written_, lag_written_;
  bool marks_find_changes_ = false;
};

}  // namespace detail

// The replays' copies of an indexed base's times (index_for_replays): one per
// replay running at once, kept for the next.
struct WhatIfBase::ReplayScratch {
  std::mutex mu;
  std::vector<std::unique_ptr<detail::ReplayTimes>> free;
};

namespace {

using detail::ReplayTimes;
using pycompat::ascii_icontains;

bool what_if_same_name(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// How the op and kernel texts of a selector match: a text that is the whole
// name of some GPU op of the graph selects that name only ("Nhwc..." given
// in full does not also take the convolutions whose names contain it);
// otherwise it is a substring.
struct NameMatch {
  bool op_whole = false, kernel_whole = false;
};

NameMatch name_match(const Graph& g, const Selector& sel) {
  NameMatch m;
  if (sel.op.empty() && sel.kernel.empty()) return m;
  for (const Label& l : g.labels) {
    if (!sel.op.empty() && what_if_same_name(l.op, sel.op)) m.op_whole = true;
    if (!sel.kernel.empty() && what_if_same_name(l.kernel, sel.kernel)) m.kernel_whole = true;
  }
  return m;
}

// The selector's GPU events as a set by UID, one byte per UID up to the
// graph's last GPU node: a lookup per GPU node, not a binary search (a third
// of a what-if's time on a 100k-node graph). UIDs past that node select
// nothing and take no byte (a what_if's kernel_uids come from the caller).
std::vector<char> gpu_uid_set(const Graph& g, const Selector& sel) {
  std::vector<char> set;
  if (sel.gpu_uids.empty()) return set;
  size_t size = 0;
  for (const Node& n : g.nodes)
    if (n.kind == NodeKind::Gpu && n.uid != kNoUid)
      size = std::max<size_t>(size, n.uid + size_t{1});
  set.assign(size, 0);
  for (Uid u : sel.gpu_uids)
    if (u < size) set[u] = 1;
  return set;
}

// The selector's category, op and kernel texts against a node's label.
bool matches_label(const Graph& g, const Node& node, const Selector& sel, const NameMatch& how) {
  const Label& l = g.labels[node.label];
  if (!sel.category.empty() && !perf::category_named_by(l.category, sel.category)) return false;
  if (!sel.op.empty() &&
      !(how.op_whole ? what_if_same_name(l.op, sel.op) : ascii_icontains(l.op, sel.op)))
    return false;
  return sel.kernel.empty() || (how.kernel_whole ? what_if_same_name(l.kernel, sel.kernel)
                                                 : ascii_icontains(l.kernel, sel.kernel));
}

// The selector without its rank: GPU ops and collective instances.
// `uid_set`: gpu_uid_set(sel).
bool matches_what(const Graph& g, uint32_t n, const Selector& sel, const NameMatch& how,
                  const std::vector<char>& uid_set) {
  const Node& node = g.nodes[n];
  if (node.kind != NodeKind::Gpu && node.kind != NodeKind::CollJoin) return false;
  if (!sel.gpu_uids.empty() &&
      (node.kind != NodeKind::Gpu || node.uid >= uid_set.size() || !uid_set[node.uid]))
    return false;
  return matches_label(g, node, sel, how);
}

// The distinct kernel names a selection took, most time first (of equal
// time, by name). Each node's name is found through its label (one lookup
// per label, not a comparison of kernel names per node); each name's time is
// summed in node order.
std::vector<MatchedKernel> matched_kernels(const Graph& g, const std::vector<uint32_t>& nodes) {
  constexpr uint32_t kUnseen = UINT32_MAX;
  std::vector<uint32_t> slot_of_label(g.labels.size(), kUnseen);
  std::unordered_map<std::string_view, uint32_t> slot_of_name;
  std::vector<MatchedKernel> slots;
  for (uint32_t n : nodes) {
    const Node& node = g.nodes[n];
    uint32_t& slot = slot_of_label[node.label];
    if (slot == kUnseen) {
      const std::string& name = g.labels[node.label].kernel;
      auto [it, fresh] = slot_of_name.try_emplace(name, static_cast<uint32_t>(slots.size()));
      if (fresh) slots.push_back({name, 0, 0.0});
      slot = it->second;
    }
    MatchedKernel& m = slots[slot];
    ++m.launches;
    m.time_us += node.dur;
  }
  std::sort(slots.begin(), slots.end(),
            [](const MatchedKernel& a, const MatchedKernel& b) { return a.name < b.name; });
  std::vector<MatchedKernel> out = std::move(slots);
  std::stable_sort(out.begin(), out.end(), [](const MatchedKernel& a, const MatchedKernel& b) {
    return a.time_us > b.time_us;
  });
  return out;
}

std::string describe(const Selector& sel) {
  std::vector<std::string> parts;
  if (sel.rank) parts.push_back(fmt::format("rank {}", *sel.rank));
  if (!sel.category.empty()) parts.push_back(fmt::format("category {}", sel.category));
  if (!sel.op.empty()) parts.push_back(fmt::format("op ~ '{}'", sel.op));
  if (!sel.kernel.empty()) parts.push_back(fmt::format("kernel ~ '{}'", sel.kernel));
  if (!sel.gpu_uids.empty())
    parts.push_back(fmt::format("{} given GPU events", sel.gpu_uids.size()));
  return parts.empty() ? "every GPU op" : fmt::format("{}", fmt::join(parts, ", "));
}

// Per rank in scope: the factor that brings its selected time to the median
// rank's (never slower than measured).
std::map<int64_t, double> median_factors(const Graph& g, const std::vector<uint32_t>& what,
                                         const Selector& sel) {
  std::map<int64_t, double> total;
  for (int64_t r : g.ranks) total[r] = 0.0;
  for (uint32_t n : what)
    if (g.nodes[n].kind == NodeKind::Gpu) total[g.nodes[n].rank] += g.nodes[n].dur;
  std::vector<double> values;
  for (const auto& [r, t] : total) values.push_back(t);
  const double median = stats::median(values);
  std::map<int64_t, double> factor;
  for (const auto& [r, t] : total)
    if ((!sel.rank || *sel.rank == r) && t > 0) factor[r] = std::min(1.0, median / t);
  return factor;
}

// The GPU ops and collective instances a selector takes (before its rank's
// factor), in node order. A selector of GPU events by UID looks up only
// their nodes where the base indexes them (gpu_nodes_by_uid): a change plan
// replays several findings' selections at once, and one scan of every node
// per selection was most of such a replay (issue 75).
std::vector<uint32_t> selected_nodes(const Graph& g, const Selector& sel, const NameMatch& how,
                                     const WhatIfBase* base) {
  std::vector<uint32_t> what;
  if (!sel.gpu_uids.empty() && base && !base->gpu_nodes_by_uid.empty()) {
    const auto& index = base->gpu_nodes_by_uid;
    // Each UID searched for from where the last one was found (a finding's
    // are sorted: a 100k-kernel selection is one walk of the index).
    auto at = index.begin();
    for (Uid u : sel.gpu_uids) {
      at = lower_bound_near(index.begin(), index.end(), at, std::make_pair(u, uint32_t{0}));
      for (; at != index.end() && at->first == u; ++at) what.push_back(at->second);
    }
    std::sort(what.begin(), what.end());
    what.erase(std::unique(what.begin(), what.end()), what.end());
    // Every candidate is a GPU node of a given UID: the names decide (a
    // selector of UIDs alone takes them all, without reading their labels).
    if (!sel.category.empty() || !sel.op.empty() || !sel.kernel.empty())
      std::erase_if(what, [&](uint32_t n) { return !matches_label(g, g.nodes[n], sel, how); });
    return what;
  }
  const std::vector<char> uid_set = gpu_uid_set(g, sel);
  for (uint32_t n = 0; n < g.nodes.size(); ++n)
    if (matches_what(g, n, sel, how, uid_set)) what.push_back(n);
  return what;
}

// The selection's new durations, (node, duration) in node order, scaled
// from `dur` (not written: apply merges several selections made from the same
// durations); its words and counts go to `out`.
std::vector<std::pair<uint32_t, double>> scaled_selection(const Graph& g, const Scenario& sc,
                                                          const std::vector<double>& dur,
                                                          const WhatIfBase* base,
                                                          WhatIfResult& out) {
  const Selector& sel = sc.select;
  const NameMatch how = name_match(g, sel);
  const std::vector<uint32_t> what = selected_nodes(g, sel, how, base);
  if (sc.select.rank && !std::count(g.ranks.begin(), g.ranks.end(), *sc.select.rank))
    throw CriticalPathError(fmt::format("rank {} is not among the traces' ranks ({})",
                                        *sc.select.rank, fmt::join(g.ranks, ", ")));
  if (!sc.select.gpu_uids.empty() && !sc.select.rank && g.ranks.size() > 1)
    throw CriticalPathError(
        "kernel uids name events of one trace: give the rank they belong to with the uids");
  std::map<int64_t, double> factor;
  std::vector<uint32_t> changed;
  std::vector<std::pair<uint32_t, double>> scaled;
  if (sc.median_rank) {
    factor = median_factors(g, what, sc.select);
  } else {
    for (int64_t r : g.ranks)
      if (!sc.select.rank || *sc.select.rank == r) factor[r] = sc.factor;
  }
  // The factor of the last node's rank, found again only when the rank
  // changes (a selection is in node order, a rank's nodes together).
  int64_t last_rank = 0;
  auto last_factor = factor.end();
  bool looked_up = false;
  for (uint32_t n : what) {
    const Node& node = g.nodes[n];
    if (!looked_up || node.rank != last_rank) {
      last_factor = factor.find(node.rank);
      last_rank = node.rank;
      looked_up = true;
    }
    auto it = last_factor;
    if (node.kind == NodeKind::CollJoin && sc.select.rank) {
      // An instance belongs to every rank of its group.
      it = factor.find(*sc.select.rank);
      const Join* j = nullptr;
      for (const Join& join : g.joins)
        if (join.node == n) j = &join;
      if (!j || !std::count(j->ranks.begin(), j->ranks.end(), *sc.select.rank)) continue;
    }
    if (it == factor.end()) continue;
    scaled.emplace_back(n, dur[n] * it->second);
    ++out.selected_nodes;
    changed.push_back(n);
  }
  if (out.selected_nodes == 0)
    throw CriticalPathError(
        fmt::format("no GPU operation matches {} (categories are perf categories such as GEMM, "
                    "elementwise, SDPA_fwd, or communication; op and kernel match substrings)",
                    describe(sc.select)));
  out.factor_by_rank = factor;
  for (const auto& [r, f] : factor)
    out.changes.push_back(
        fmt::format("{} on rank {}: durations x {:.4g}", describe(sc.select), r, f));
  // A name text is a substring unless it is a whole name: say what it took
  // (issue 73 point 7: "Nhwc" also took the convolutions).
  out.matched_kernels = matched_kernels(g, changed);
  const bool by_text =
      (!sel.kernel.empty() && !how.kernel_whole) || (!sel.op.empty() && !how.op_whole);
  if (by_text) {
    std::vector<std::string> names;
    for (size_t k = 0; k < out.matched_kernels.size() && k < 5; ++k)
      names.push_back(fmt::format("{} ({} launches, {:.1f} us)",
                                  out.matched_kernels[k].name.substr(0, 100),
                                  out.matched_kernels[k].launches, out.matched_kernels[k].time_us));
    const size_t more = out.matched_kernels.size() - names.size();
    out.changes.push_back(fmt::format(
        "{} matched {} different kernel{} ({} launches; a whole name selects that kernel only): "
        "{}{}",
        describe(sc.select), out.matched_kernels.size(), out.matched_kernels.size() == 1 ? "" : "s",
        out.selected_nodes, fmt::join(names, "; "),
        more ? fmt::format("; and {} more", more) : std::string()));
  }
  return scaled;
}

void overlap_collectives(const Graph& g, const std::string& which, ReplayTimes& times,
                         WhatIfResult& out) {
  size_t n = 0;
  for (const Join& j : g.joins) {
    if (which != "all" && !ascii_icontains(j.collective, which)) continue;
    times.set_dur(j.node, 0.0);
    for (size_t k = 0; k < g.edges.size(); ++k)
      if (g.edges[k].from == j.node) times.set_lag(k, std::min(times.lag()[k], 0.0));
    ++n;
  }
  if (n == 0) throw CriticalPathError(fmt::format("no collective instance matches '{}'", which));
  out.changes.push_back(fmt::format(
      "{} instance(s) of '{}' fully overlapped: no transfer time (ranks still wait for the last "
      "one to arrive)",
      n, which));
}

// A CUDA / HIP graph of each iteration: the host gaps between runtime calls
// and the launch calls themselves take no time inside the iterations (one
// graph launch replaces them; Python that builds the step is not run again),
// while the kernels keep their durations, their streams and the syncs the
// step makes; gaps inside a DataLoader's __next__ (host_input) stay. A
// graph's own per-kernel gap (about a microsecond) is not modelled. Gaps
// before the first iteration's start stay: removing them would only move
// that start earlier.

// f(i) for each i < count that `is` takes, in order: from the list of them an
// indexed base keeps (`listed`, null when the base has none for this graph),
// else by the test of every i (a Sync, launch or GPU edge is most of a
// graph's, and each was read whole to be passed over).
template <class Is, class F>
void for_each_listed(const std::vector<uint32_t>* listed, size_t count, Is&& is, F&& f) {
  if (listed) {
    for (uint32_t i : *listed) f(i);
    return;
  }
  for (size_t i = 0; i < count; ++i)
    if (is(i)) f(i);
}

// f(k) for each host edge (HostSeq, HostHandover) in order.
template <class F>
void for_each_host_edge(const Graph& g, const WhatIfBase* base, F&& f) {
  for_each_listed(
      detail::indexes(base, g) ? &base->host_edges : nullptr, g.edges.size(),
      [&](size_t k) {
        return g.edges[k].kind == EdgeKind::HostSeq || g.edges[k].kind == EdgeKind::HostHandover;
      },
      f);
}

// f(n) for each runtime-call node (HostCall) in order.
template <class F>
void for_each_host_call(const Graph& g, const WhatIfBase* base, F&& f) {
  for_each_listed(
      detail::indexes(base, g) ? &base->host_calls : nullptr, g.nodes.size(),
      [&](size_t n) { return g.nodes[n].kind == NodeKind::HostCall; }, f);
}

void remove_host_gaps(const Graph& g, const WhatIfBase* base, ReplayTimes& times,
                      WhatIfResult& out) {
  double first = std::numeric_limits<double>::infinity();
  for (const Iteration& it : g.iterations) first = std::min(first, it.start);
  size_t gaps = 0, calls = 0;
  for_each_host_edge(g, base, [&](size_t k) {
    const Edge& e = g.edges[k];
    if (g.nodes[e.from].start < first) return;
    if (g.labels[e.label].category == "host_gap" && times.lag()[k] > 0) {
      times.set_lag(k, 0.0);
      ++gaps;
    }
  });
  for_each_host_call(g, base, [&](size_t n) {
    if (g.nodes[n].start >= first && times.dur()[n] > 0) {
      times.set_dur(n, 0.0);
      ++calls;
    }
  });
  out.changes.push_back(fmt::format(
      "CUDA graph of each iteration: {} host gaps and {} runtime calls removed", gaps, calls));
}

// Host work taken out: each host gap of a span's thread loses the part of
// it inside the span (in proportion when the base already shortened the
// gap, as the un-profiled model does), and runtime calls inside take no time.
// The removed spans of each (rank, thread), for the time they cover inside
// an interval: only the spans that reach into it are looked at (one pass over
// every span per gap and call took 6.8 s for 40,000 spans; issue 74 point 7).
class SpanIndex {
  struct Thread {
    std::vector<std::pair<double, double>> spans;  // (from, to), by start
    std::vector<double> reach;                     // the latest end of spans[0..k]
  };

 public:
  SpanIndex(const Graph& g, const std::vector<HostSpan>& spans) {
    for (const HostSpan& s : spans) {
      const double off = g.clock_offset_us.count(s.rank) ? g.clock_offset_us.at(s.rank) : 0.0;
      by_thread_[{s.rank, s.thread}].spans.emplace_back(s.from_us + off, s.to_us + off);
    }
    for (auto& [key, t] : by_thread_) {
      std::sort(t.spans.begin(), t.spans.end());
      double reach = -std::numeric_limits<double>::infinity();
      for (const auto& [from, to] : t.spans) t.reach.push_back(reach = std::max(reach, to));
    }
  }

  // Where the last overlap() looked: the host's edges and calls come thread
  // by thread in time order, so the next one's thread is found without a
  // map lookup and its spans searched from the last position
  // (lower_bound_near: the same position from anywhere).
  struct Cursor {
    std::optional<std::pair<int64_t, uint32_t>> key;
    const Thread* thread = nullptr;  // by_thread_'s entry for key, or none
    size_t at = 0;
  };

  // The time the spans of (rank, thread) cover inside [from, to), a span
  // counted as often as it is listed.
  double overlap(int64_t rank, uint32_t thread, double from, double to, Cursor& near) const {
    if (near.key != std::make_pair(rank, thread)) {
      auto it = by_thread_.find({rank, thread});
      near = {std::make_pair(rank, thread), it == by_thread_.end() ? nullptr : &it->second, 0};
    }
    if (!near.thread) return 0;
    const Thread& t = *near.thread;
    // Spans starting before `to`, latest first, while any before them still
    // reaches past `from`.
    near.at =
        static_cast<size_t>(lower_bound_near(t.spans.begin(), t.spans.end(),
                                             t.spans.begin() + static_cast<std::ptrdiff_t>(near.at),
                                             std::make_pair(to, -1e300)) -
                            t.spans.begin());
    size_t k = near.at;
    double sum = 0;
    while (k > 0 && t.reach[k - 1] > from) {
      --k;
      sum += std::max(0.0, std::min(to, t.spans[k].second) - std::max(from, t.spans[k].first));
    }
    return sum;
  }

  // f(key, spans) for each (rank, thread) with spans, the spans by start.
  template <class F>
  void for_each_thread(F&& f) const {
    for (const auto& [key, t] : by_thread_) f(key, t.spans);
  }

 private:
  std::map<std::pair<int64_t, uint32_t>, Thread> by_thread_;
};

}  // namespace

// Items of a list (host edges, host calls: positions in WhatIfBase's
// host_edges or host_calls) that a span on their (rank, thread) can take
// time from, by the interval [from, to) it takes it from: per thread, the
// positions in runs in which both ends never decrease (a thread's gaps and
// calls come in time order; the hand-overs into a thread make a run of
// their own), so a span's items are a binary search and a walk away.
// `always`: the items a scenario changes whatever its spans (a call that
// lasted no time) or whose times are not ordered (NaN): looked at by every
// one, as the pass over the whole list did.
struct HostRunIndex {
  struct Run {
    uint32_t begin = 0, end = 0;  // into positions
  };
  std::map<std::pair<int64_t, uint32_t>, std::vector<Run>> runs;
  std::vector<uint32_t> positions;
  std::vector<uint32_t> always;
  bool usable = false;  // runs few enough to search (else the whole list)
};

struct WhatIfBase::HostRuns {
  std::once_flag made;
  HostRunIndex unrecorded_edges, host_gap_edges, calls;
};

namespace {

// An item's part in a HostRunIndex: none (no span changes it), always, or
// its (rank, thread) and interval.
struct HostRunItem {
  enum class Kind : uint8_t { None, Always, Span } kind = Kind::None;
  std::pair<int64_t, uint32_t> key{};
  double from = 0, to = 0;
};

// The runs of items 0..count-1 (`item(position)`).
template <class Item>
HostRunIndex make_host_runs(size_t count, Item&& item) {
  HostRunIndex index;
  struct Placed {
    uint32_t position;
    double from, to;
  };
  std::map<std::pair<int64_t, uint32_t>, std::vector<Placed>> by_key;
  for (uint32_t p = 0; p < count; ++p) {
    const HostRunItem it = item(p);
    if (it.kind == HostRunItem::Kind::Always) index.always.push_back(p);
    if (it.kind == HostRunItem::Kind::Span) by_key[it.key].push_back({p, it.from, it.to});
  }
  size_t runs = 0;
  for (auto& [key, list] : by_key) {
    auto& key_runs = index.runs[key];
    double last_from = -std::numeric_limits<double>::infinity(), last_to = last_from;
    for (const Placed& it : list) {
      const auto at = static_cast<uint32_t>(index.positions.size());
      if (key_runs.empty() || it.from < last_from || it.to < last_to) key_runs.push_back({at, at});
      index.positions.push_back(it.position);
      key_runs.back().end = at + 1;
      last_from = it.from;
      last_to = it.to;
    }
    runs += key_runs.size();
  }
  // Past this, a scenario's binary searches would cost what its pass did.
  constexpr size_t kItemsPerRun = 16;
  index.usable = runs * kItemsPerRun <= index.positions.size() + kItemsPerRun;
  return index;
}

// The positions a span of `spans` can take time from (a positive overlap of
// the span and the item's interval), with the index's `always`, in list
// order: what the pass over the whole list changes, and a few it leaves
// alone. `item(position)` as the index was made with.
template <class Item>
std::vector<uint32_t> reached_by_spans(const HostRunIndex& index, const SpanIndex& spans,
                                       Item&& item) {
  std::vector<uint32_t> out = index.always;
  spans.for_each_thread([&](const std::pair<int64_t, uint32_t>& key,
                            const std::vector<std::pair<double, double>>& list) {
    const auto found = index.runs.find(key);
    if (found == index.runs.end()) return;
    for (const HostRunIndex::Run& run : found->second) {
      const auto begin = index.positions.begin() + run.begin;
      const auto end = index.positions.begin() + run.end;
      for (const auto& span : list) {
        // Named copies: clang 14 cannot capture a structured binding.
        const double from = span.first, to = span.second;
        if (!(to > from)) continue;  // covers nothing
        // The first item that ends after the span starts, then each that
        // starts before it ends.
        auto q = std::partition_point(begin, end, [&](uint32_t p) { return item(p).to <= from; });
        for (; q != end && item(*q).from < to; ++q) out.push_back(*q);
      }
    }
  });
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// A host edge as remove_unrecorded_spans reads it: the gap before the
// thread's next item, on that item's thread (a hand-over's too).
HostRunItem unrecorded_edge_item(const Graph& g, uint32_t k) {
  const Edge& e = g.edges[k];
  const Node& from = g.nodes[e.from];
  const Node& to = g.nodes[e.to];
  if (to.thread == UINT32_MAX || !(to.start > from.end())) return {};
  return {HostRunItem::Kind::Span, {to.rank, to.thread}, from.end(), to.start};
}

// A host edge as remove_host_spans reads it: a gap between two items of
// one thread.
HostRunItem host_gap_edge_item(const Graph& g, uint32_t k) {
  const Edge& e = g.edges[k];
  if (e.kind != EdgeKind::HostSeq || e.thread == UINT32_MAX) return {};
  const Node& from = g.nodes[e.from];
  const Node& to = g.nodes[e.to];
  if (!(to.start - from.end() > 0)) return {};
  return {HostRunItem::Kind::Span, {from.rank, e.thread}, from.end(), to.start};
}

// A runtime call as remove_host_spans reads it: taken out when spans cover
// half of it, so one that lasted no time (or has no time) by any scenario.
HostRunItem call_item(const Graph& g, uint32_t n) {
  const Node& node = g.nodes[n];
  if (node.thread == UINT32_MAX) return {};
  if (!(node.dur > 0) || !(node.end() >= node.start)) return {HostRunItem::Kind::Always};
  return {HostRunItem::Kind::Span, {node.rank, node.thread}, node.start, node.end()};
}

// The base's host runs, made by the first caller; none for a base not
// indexed for replays (each scenario passes over the whole list then).
const WhatIfBase::HostRuns* host_runs_of(const Graph& g, const WhatIfBase* base) {
  if (!detail::indexes(base, g) || !base->host_runs) return nullptr;
  WhatIfBase::HostRuns& runs = *base->host_runs;
  std::call_once(runs.made, [&] {
    runs.unrecorded_edges = make_host_runs(base->host_edges.size(), [&](uint32_t p) {
      return unrecorded_edge_item(g, base->host_edges[p]);
    });
    runs.host_gap_edges = make_host_runs(base->host_edges.size(), [&](uint32_t p) {
      return host_gap_edge_item(g, base->host_edges[p]);
    });
    runs.calls = make_host_runs(base->host_calls.size(),
                                [&](uint32_t p) { return call_item(g, base->host_calls[p]); });
  });
  return &runs;
}

// f(id) for each id of `ids` (the base's host edges or calls, in order) a
// span of `spans` can take time from, through `index` (made with
// `item(g, id)`); without a usable index, every(f) visits them all.
template <class Item, class Every, class F>
void for_each_reached(const Graph& g, const HostRunIndex* index, const std::vector<uint32_t>* ids,
                      const SpanIndex& spans, Item&& item, Every&& every, F&& f) {
  if (!index || !index->usable) return every(f);
  for (uint32_t p : reached_by_spans(*index, spans, [&](uint32_t q) { return item(g, (*ids)[q]); }))
    f((*ids)[p]);
}

void remove_host_spans(const Graph& g, const WhatIfBase* base, const std::vector<HostSpan>& spans,
                       ReplayTimes& times, WhatIfResult& out) {
  const std::vector<double>& dur = times.dur();
  const std::vector<double>& lag = times.lag();
  double removed = 0;
  size_t calls = 0;
  const SpanIndex index(g, spans);
  SpanIndex::Cursor near;
  auto overlap = [&](int64_t rank, uint32_t thread, double from, double to) {
    return index.overlap(rank, thread, from, to, near);
  };
  // A host gap loses the part of it the spans cover, in proportion; read as
  // the index of the base's host runs reads it (host_gap_edge_item).
  const auto cut_gap = [&](size_t k) {
    if (!(lag[k] > 0)) return;
    const HostRunItem gap = host_gap_edge_item(g, static_cast<uint32_t>(k));
    if (gap.kind != HostRunItem::Kind::Span) return;
    const double inside = overlap(gap.key.first, gap.key.second, gap.from, gap.to);
    if (inside <= 0) return;
    const double cut = lag[k] * std::min(1.0, inside / (gap.to - gap.from));
    times.set_lag(k, lag[k] - cut);
    removed += cut;
  };
  const auto take_call = [&](size_t n) {
    const Node& node = g.nodes[n];
    if (node.thread == UINT32_MAX || !(dur[n] > 0)) return;
    if (overlap(node.rank, node.thread, node.start, node.end()) >= 0.5 * node.dur) {
      removed += dur[n];
      times.set_dur(n, 0);
      ++calls;
    }
  };
  const WhatIfBase::HostRuns* runs = host_runs_of(g, base);
  for_each_reached(
      g, runs ? &runs->host_gap_edges : nullptr, runs ? &base->host_edges : nullptr, index,
      host_gap_edge_item, [&](const auto& f) { for_each_host_edge(g, base, f); }, cut_gap);
  for_each_reached(
      g, runs ? &runs->calls : nullptr, runs ? &base->host_calls : nullptr, index, call_item,
      [&](const auto& f) { for_each_host_call(g, base, f); }, take_call);
  out.changes.push_back(
      fmt::format("{} host span(s) removed: {:.1f} us of host gaps and {} runtime "
                  "call(s) in them",
                  spans.size(), removed, calls));
}

// Host time no event records taken out (add_host_gap_removal): the host gaps
// of a span's thread, and the hand-overs into it (the main thread resuming
// after autograd's), lose the span's time inside them whole, never more than
// their lag. Nothing was recorded there, so the un-profiled model took none of
// it out: unlike remove_host_spans, no share of the cut is the profiler's.
void remove_unrecorded_spans(const Graph& g, const WhatIfBase* base,
                             const std::vector<HostSpan>& spans, ReplayTimes& times,
                             WhatIfResult& out) {
  const std::vector<double>& lag = times.lag();
  const SpanIndex index(g, spans);
  SpanIndex::Cursor near;
  double removed = 0;
  size_t edges = 0;
  // A gap into the thread's next item (a hand-over's too) loses what the
  // spans cover of it, read as the base's host runs read it
  // (unrecorded_edge_item).
  const auto cut_gap = [&](size_t k) {
    if (!(lag[k] > 0)) return;
    const HostRunItem gap = unrecorded_edge_item(g, static_cast<uint32_t>(k));
    if (gap.kind != HostRunItem::Kind::Span) return;
    const double inside = index.overlap(gap.key.first, gap.key.second, gap.from, gap.to, near);
    if (!(inside > 0)) return;
    const double cut = std::min(lag[k], inside);
    times.set_lag(k, lag[k] - cut);
    removed += cut;
    ++edges;
  };
  const WhatIfBase::HostRuns* runs = host_runs_of(g, base);
  for_each_reached(
      g, runs ? &runs->unrecorded_edges : nullptr, runs ? &base->host_edges : nullptr, index,
      unrecorded_edge_item, [&](const auto& f) { for_each_host_edge(g, base, f); }, cut_gap);
  out.changes.push_back(fmt::format(
      "{} stretch(es) of host time no event records removed: {:.1f} us from {} host gap(s)",
      spans.size(), removed, edges));
}

// Synchronising calls that no longer wait: their return follows their entry.
void remove_sync_waits(const Graph& g, const WhatIfBase* base,
                       const std::vector<std::pair<int64_t, Uid>>& syncs, ReplayTimes& times,
                       WhatIfResult& out) {
  std::vector<std::pair<int64_t, Uid>> sorted = syncs;
  std::sort(sorted.begin(), sorted.end());
  constexpr double kNever = -1e15;  // an edge that can no longer set the start
  size_t n = 0;
  for_each_listed(
      detail::indexes(base, g) ? &base->sync_edges : nullptr, g.edges.size(),
      [&](size_t k) { return g.edges[k].kind == EdgeKind::Sync; },
      [&](size_t k) {
        const Node& ret = g.nodes[g.edges[k].to];
        if (!std::binary_search(sorted.begin(), sorted.end(), std::make_pair(ret.rank, ret.uid)))
          return;
        times.set_lag(k, kNever);
        ++n;
      });
  out.changes.push_back(fmt::format(
      "{} synchronising call(s) no longer wait for the GPU ({} waits)", syncs.size(), n));
}

// GPU work that no longer runs: the ops keep their place on their stream
// and take no time.
void remove_gpu_work(const Graph& g, const std::vector<std::pair<int64_t, Uid>>& gpu,
                     ReplayTimes& times, WhatIfResult& out) {
  std::vector<std::pair<int64_t, Uid>> sorted = gpu;
  std::sort(sorted.begin(), sorted.end());
  size_t n = 0;
  double us = 0;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& node = g.nodes[k];
    if (node.kind != NodeKind::Gpu ||
        !std::binary_search(sorted.begin(), sorted.end(), std::make_pair(node.rank, node.uid)))
      continue;
    us += times.dur()[k];
    times.set_dur(k, 0);
    ++n;
  }
  out.changes.push_back(fmt::format("{} GPU op(s) they launched removed ({:.1f} us)", n, us));
}

// Work the change took out, per iteration, on the schedule it starts from
// (un-profiled, or recorded with recorded_host), where it begins inside an
// iteration (recorded times): the GPU ops' and transfers' lost time (scaled,
// removed), the runtime calls' (removed spans, a CUDA graph), the edges' lost
// lag (host gaps of removed spans, unrecorded stretches, launch gaps; a lag
// begins where its predecessor ends, or starts for a launch) and, for each
// synchronising call that no longer waits, its wait on that schedule (return
// less entry, from the entry; the sync edges into it are that wait, not
// counted again). Work outside the iterations cannot shorten a step and is
// not counted.
// Whether a time falls inside one of the graph's iterations (the windows of
// ranks may overlap).
class IterationWindows {
 public:
  explicit IterationWindows(const Graph& g) {
    for (const Iteration& it : g.iterations) windows_.emplace_back(it.start, it.end);
    std::sort(windows_.begin(), windows_.end());
    for (const auto& w : windows_)
      reach_.push_back(std::max(reach_.empty() ? w.second : reach_.back(), w.second));
  }
  bool inside(double t) const {
    // The windows starting at or before t, latest first, while one before
    // them still reaches past t.
    size_t k = static_cast<size_t>(
        std::upper_bound(windows_.begin(), windows_.end(),
                         std::make_pair(t, std::numeric_limits<double>::infinity())) -
        windows_.begin());
    for (; k > 0 && reach_[k - 1] > t; --k)
      if (t < windows_[k - 1].second) return true;
    return false;
  }

 private:
  std::vector<std::pair<double, double>> windows_;
  std::vector<double> reach_;  // the latest end of windows_[0..k]
};

// Each synchronising call's wait on the schedule of (dur, lag): the start
// of its return node less the start of its call (the first call node of its
// (rank, uid), one inside an iteration), in node order of the returns.
std::vector<WhatIfBase::SyncWait> sync_waits_on(const Graph& g, const std::vector<double>& dur,
                                                const std::vector<double>& lag) {
  std::vector<WhatIfBase::SyncWait> out;
  if (g.iterations.empty()) return out;
  const IterationWindows windows(g);
  std::set<std::pair<int64_t, Uid>> returns;
  for (const Node& node : g.nodes)
    if (node.kind == NodeKind::SyncReturn) returns.emplace(node.rank, node.uid);
  if (returns.empty()) return out;
  const Schedule s = propagate(g, dur, lag);
  std::map<std::pair<int64_t, Uid>, double> entry;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    if (node.kind == NodeKind::HostCall && windows.inside(node.start) &&
        returns.count(std::make_pair(node.rank, node.uid)))
      entry.emplace(std::make_pair(node.rank, node.uid), s.start[n]);
  }
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    if (node.kind != NodeKind::SyncReturn) continue;
    auto it = entry.find({node.rank, node.uid});
    if (it != entry.end()) out.push_back({node.rank, node.uid, s.start[n] - it->second});
  }
  return out;
}

// `times`: the base's values as `times` was assigned them, changed by the
// scenario; its changes read from its marks where they find them all.
double removed_per_iteration(const Graph& g, const std::vector<double>& base_dur,
                             const std::vector<double>& base_lag, const ReplayTimes& times,
                             const std::vector<std::pair<int64_t, Uid>>& syncs,
                             const std::vector<WhatIfBase::SyncWait>* base_waits) {
  if (g.iterations.empty()) return 0.0;
  const std::vector<double>& dur = times.dur();
  const std::vector<double>& lag = times.lag();
  const IterationWindows windows(g);
  auto inside = [&](double t) { return windows.inside(t); };
  double removed = 0;
  times.for_each_changed_dur(base_dur, [&](size_t n) {
    if (inside(g.nodes[n].start)) removed += base_dur[n] - dur[n];
  });
  std::vector<std::pair<int64_t, Uid>> sorted = syncs;
  std::sort(sorted.begin(), sorted.end());
  auto removed_sync = [&](uint32_t n) {
    const Node& node = g.nodes[n];
    return node.kind == NodeKind::SyncReturn &&
           std::binary_search(sorted.begin(), sorted.end(), std::make_pair(node.rank, node.uid));
  };
  times.for_each_changed_lag(base_lag, [&](size_t k) {
    const Edge& e = g.edges[k];
    if (e.kind == EdgeKind::Sync && removed_sync(e.to)) return;
    const Node& from = g.nodes[e.from];
    if (!inside(e.from_start ? from.start : from.end())) return;
    removed += std::max(0.0, base_lag[k] - std::max(lag[k], std::min(base_lag[k], 0.0)));
  });
  if (!sorted.empty()) {
    const std::vector<WhatIfBase::SyncWait> computed =
        base_waits ? std::vector<WhatIfBase::SyncWait>{} : sync_waits_on(g, base_dur, base_lag);
    for (const WhatIfBase::SyncWait& w : base_waits ? *base_waits : computed)
      if (std::binary_search(sorted.begin(), sorted.end(), std::make_pair(w.rank, w.uid)))
        removed += std::max(0.0, w.wait_us);
  }
  return removed / static_cast<double>(g.iterations.size());
}

std::string bounds_of(const Analysis& a) {
  std::map<std::string, size_t> n;
  for (const IterationResult& it : a.iterations) ++n[it.bound_by];
  std::string out;
  for (const auto& [side, count] : n)
    out += fmt::format("{}{}{}", out.empty() ? "" : "/", side,
                       count == a.iterations.size() ? "" : fmt::format(" x{}", count));
  return out;
}

// A saving this far past the removed time (us per step) is more than it
// removes, not rounding.
constexpr double kReachedSlackUs = 0.05;

// One line: the change, the step before and after, how much of the removed
// time reached the step, and what bounds the step before and after.
std::string summary_line(const std::string& measured_bounds, const WhatIfResult& r,
                         bool profiled_prediction) {
  const double saved = r.measured_step_time_us - r.predicted_step_time_us;
  // A share of what was removed never exceeds 100 %: a change that saves
  // more than it removes (a removed sync lets the host run ahead) says so.
  // (Past rounding: a change that saves all it removes reads 100 %.)
  std::string reached;
  if (r.removed_us > 0 && saved > r.removed_us + kReachedSlackUs)
    reached = fmt::format(
        "; it saves more per step than the {:.1f} us it removes (the work after it no longer "
        "waits)",
        r.removed_us);
  else if (r.removed_us > 0)
    reached = fmt::format("; {:.0f}% of the {:.1f} us per step it removes reaches the step time",
                          100 * std::clamp(saved, 0.0, r.removed_us) / r.removed_us, r.removed_us);
  std::string top;
  if (!r.predicted.contributors.empty()) {
    const Contributor& c = r.predicted.contributors.front();
    top = fmt::format("; top of the new path: {} {} ({:.0f}%)", c.category,
                      c.op.empty() ? c.kernel : c.op, 100 * c.share);
  }
  const std::string model =
      r.model == kModelUnprofiled && !profiled_prediction ? " without the profiler"
      : r.model == kModelUnprofiled
          ? fmt::format(
                " without the profiler (recorded step {:.1f} us, profiled prediction "
                "{:.1f} us)",
                r.recorded_step_time_us, r.predicted_profiled_step_time_us)
          : " on the recorded (profiled) host";
  return fmt::format("{}: step {:.1f} -> {:.1f} us{} ({:+.1f}%){}; bound by {} -> {}{}",
                     fmt::join(r.changes, "; "), r.measured_step_time_us, r.predicted_step_time_us,
                     model,
                     r.measured_step_time_us > 0 ? -100 * saved / r.measured_step_time_us : 0.0,
                     reached, measured_bounds, bounds_of(r.predicted), top);
}

}  // namespace

namespace {

// The scenario's changes applied to one base schedule.
void apply(const Graph& g, const Scenario& sc, bool scales, const WhatIfBase* base,
           ReplayTimes& times, WhatIfResult& out) {
  const std::vector<double>& dur = times.dur();
  if (!sc.host_removal.empty()) out.changes.push_back(sc.host_removal);
  // Every selection scales the durations before any selection: all are
  // made before the first is written.
  std::vector<std::pair<uint32_t, double>> scaled;
  if (scales) scaled = scaled_selection(g, sc, dur, base, out);
  struct Rescaled {
    uint32_t node;
    double unscaled, scaled;
  };
  std::vector<std::vector<Rescaled>> also;
  for (const auto& [selector, factor] : sc.also_scale) {
    Scenario one;
    one.select = selector;
    one.factor = factor;
    auto& list = also.emplace_back();
    for (const auto& [n, d] : scaled_selection(g, one, dur, base, out))
      if (d != dur[n]) list.push_back({n, dur[n], d});
  }
  for (const auto& [n, d] : scaled) times.set_dur(n, d);
  // An op two selections take (or `select` and one) keeps the shorter
  // result: the stronger of two fixes of one kernel, not both one after the
  // other.
  for (const auto& list : also)
    for (const Rescaled& r : list)
      times.set_dur(r.node, dur[r.node] != r.unscaled ? std::min(dur[r.node], r.scaled) : r.scaled);
  if (!sc.remove_gpu.empty()) remove_gpu_work(g, sc.remove_gpu, times, out);
  if (!sc.remove_host.empty()) remove_host_spans(g, base, sc.remove_host, times, out);
  if (!sc.remove_unrecorded.empty())
    remove_unrecorded_spans(g, base, sc.remove_unrecorded, times, out);
  if (!sc.remove_syncs.empty()) remove_sync_waits(g, base, sc.remove_syncs, times, out);
  if (sc.remove_launch_gaps) remove_host_gaps(g, base, times, out);
  if (!sc.overlap_collective.empty()) overlap_collectives(g, sc.overlap_collective, times, out);
}

}  // namespace

std::string iteration_bounds(const Analysis& a) {
  return bounds_of(a);
}

WhatIfResult what_if(const Graph& g, const Scenario& sc) {
  if (!sc.recorded_host && g.attached_base) return what_if(g, sc, *g.attached_base);
  return what_if(g, sc, what_if_base(g, !sc.recorded_host));
}

void index_for_replays(const Graph& g, WhatIfBase& base) {
  if (base.dur.size() != g.nodes.size() || base.lag.size() != g.edges.size()) return;
  detail::index_graph_for_replays(g, base);
  detail::index_times_for_replays(g, base);
}

namespace detail {

void index_graph_for_replays(const Graph& g, WhatIfBase& base) {
  base.gpu_nodes_by_uid.clear();
  for (uint32_t n = 0; n < g.nodes.size(); ++n)
    if (g.nodes[n].kind == NodeKind::Gpu && g.nodes[n].uid != kNoUid)
      base.gpu_nodes_by_uid.emplace_back(g.nodes[n].uid, n);
  // Made in UID order but for a few streams' interleaving: one pass.
  stable_sort_runs(base.gpu_nodes_by_uid.begin(), base.gpu_nodes_by_uid.end());
  base.sync_edges.clear();
  base.host_edges.clear();
  for (uint32_t k = 0; k < g.edges.size(); ++k) {
    const EdgeKind kind = g.edges[k].kind;
    if (kind == EdgeKind::Sync) base.sync_edges.push_back(k);
    if (kind == EdgeKind::HostSeq || kind == EdgeKind::HostHandover) base.host_edges.push_back(k);
  }
  base.host_calls.clear();
  for (uint32_t n = 0; n < g.nodes.size(); ++n)
    if (g.nodes[n].kind == NodeKind::HostCall) base.host_calls.push_back(n);
  base.sync_returns = detail::sync_returns_of(g);
  base.host_runs = std::make_shared<WhatIfBase::HostRuns>();  // made by the first span removal
  base.replay_scratch = std::make_shared<WhatIfBase::ReplayScratch>();  // filled by the replays
}

void index_times_for_replays(const Graph& g, WhatIfBase& base) {
  base.sync_waits = sync_waits_on(g, base.dur, base.lag);
  base.indexed_for_replays = true;
}

bool indexes(const WhatIfBase* base, const Graph& g) {
  return base && base->indexed_for_replays && base->dur.size() == g.nodes.size() &&
         base->lag.size() == g.edges.size();
}

std::vector<std::pair<int64_t, Uid>> sync_returns_of(const Graph& g) {
  std::vector<std::pair<int64_t, Uid>> out;
  for (const Node& n : g.nodes)
    if (n.kind == NodeKind::SyncReturn) out.emplace_back(n.rank, n.uid);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace detail

WhatIfBase what_if_base(const Graph& g, bool unprofiled) {
  WhatIfBase base;
  const Analysis recorded = analyse(g);
  base.recorded_step_time_us = recorded.step_time_us;
  base.recorded_bounds = bounds_of(recorded);
  if (!unprofiled) return base;
  unprofiled_times(g, base.dur, base.lag);
  const Analysis measured = analyse(g, base.dur, base.lag);
  base.step_time_us = measured.step_time_us;
  base.bounds = bounds_of(measured);
  return base;
}

namespace {

// The times a replay on `base` writes its scenario into: one of the copies an
// indexed base keeps (put back to the base's values and kept for the next
// replay when the lease ends, a throw included), else a copy of its own.
class ReplayLease {
 public:
  explicit ReplayLease(const WhatIfBase& base) : base_(base), kept_(base.replay_scratch.get()) {
    if (kept_) {
      std::lock_guard lock(kept_->mu);
      if (!kept_->free.empty()) {
        times_ = std::move(kept_->free.back());
        kept_->free.pop_back();
      }
    }
    if (!times_) {
      times_ = std::make_unique<ReplayTimes>();
      times_->assign(base.dur, base.lag, /*reused=*/kept_ != nullptr);
    }
  }
  ReplayLease(const ReplayLease&) = delete;
  ReplayLease& operator=(const ReplayLease&) = delete;
  ~ReplayLease() {
    if (!kept_) return;
    times_->restore(base_.dur, base_.lag);
    std::lock_guard lock(kept_->mu);
    // As many as replay at once (two threads): a third is dropped.
    if (kept_->free.size() < kKept) kept_->free.push_back(std::move(times_));
  }
  ReplayTimes& times() { return *times_; }

 private:
  static constexpr size_t kKept = 2;
  const WhatIfBase& base_;
  WhatIfBase::ReplayScratch* kept_;
  std::unique_ptr<ReplayTimes> times_;
};

// what_if on a base; `steps` set: the steps alone, in that detail (what_if_step).
WhatIfResult what_if_on_base(const Graph& g, const Scenario& sc, const WhatIfBase& base,
                             bool profiled_prediction, std::optional<StepDetail> steps,
                             const BoundsWhen& bounds_when = {},
                             RemovedUs removed = RemovedUs::Sum) {
  const bool path = !steps;
  // A rank alone scopes a host removal; with nothing else it changes nothing.
  const Selector& sel = sc.select;
  const bool selects = !sel.category.empty() || !sel.op.empty() || !sel.kernel.empty() ||
                       !sel.gpu_uids.empty() || (sel.rank && sc.host_removal.empty());
  const bool scales = selects || sc.median_rank || sc.factor != 1.0;
  if (!scales && !sc.remove_launch_gaps && sc.overlap_collective.empty() &&
      sc.remove_host.empty() && sc.remove_unrecorded.empty() && sc.remove_syncs.empty() &&
      sc.remove_gpu.empty() && sc.also_scale.empty())
    throw CriticalPathError(
        "the what-if changes nothing: give a selector (rank, category, op, kernel) with a factor "
        "or median_rank, host ops to remove, remove_launch_gaps, or overlap_collective");
  if (!(sc.factor > 0) || !std::isfinite(sc.factor))
    throw CriticalPathError(fmt::format("factor must be a positive number, got {}", sc.factor));
  for (const auto& also : sc.also_scale)
    if (!(also.second > 0) || !std::isfinite(also.second))
      throw CriticalPathError(fmt::format("factor must be a positive number, got {}", also.second));
  const auto replay = [&](const std::vector<double>& dur, const std::vector<double>& lag) {
    return path ? analyse(g, dur, lag) : analyse_steps(g, dur, lag, *steps, bounds_when);
  };
  const auto recorded_times = [&](std::vector<double>& dur, std::vector<double>& lag) {
    dur.reserve(g.nodes.size());
    lag.reserve(g.edges.size());
    for (const Node& n : g.nodes) dur.push_back(n.dur);
    for (const Edge& e : g.edges) lag.push_back(e.lag);
  };
  WhatIfResult out;
  if (sc.recorded_host) {
    std::vector<double> rec_dur, rec_lag;
    recorded_times(rec_dur, rec_lag);
    ReplayTimes rec;
    rec.assign(rec_dur, rec_lag, /*reused=*/false);
    apply(g, sc, scales, &base, rec, out);
    out.model = kModelRecorded;
    out.removed_us = std::numeric_limits<double>::quiet_NaN();
    if (removed == RemovedUs::Sum)
      out.removed_us = removed_per_iteration(g, rec_dur, rec_lag, rec, sc.remove_syncs, nullptr);
    out.recorded_step_time_us = base.recorded_step_time_us;
    out.measured_step_time_us = base.recorded_step_time_us;
    out.predicted = replay(rec.dur(), rec.lag());
    out.predicted_step_time_us = out.predicted.step_time_us;
    out.predicted_profiled_step_time_us = out.predicted_step_time_us;
    if (path) out.summary = summary_line(base.recorded_bounds, out, true);
    return out;
  }
  if (base.dur.size() != g.nodes.size() || base.lag.size() != g.edges.size())
    throw CriticalPathError("the what-if's base is not of this graph (what_if_base)");
  // The recorded host, changed: the prediction on the profiled host beside
  // the un-profiled one.
  if (profiled_prediction) {
    std::vector<double> rec_dur, rec_lag;
    recorded_times(rec_dur, rec_lag);
    ReplayTimes rec;
    rec.assign(std::move(rec_dur), std::move(rec_lag), /*reused=*/false);
    WhatIfResult recorded_changes;
    apply(g, sc, scales, &base, rec, recorded_changes);
    out.recorded_step_time_us = base.recorded_step_time_us;
    out.predicted_profiled_step_time_us = analyse_steps(g, rec.dur(), rec.lag()).step_time_us;
  }
  // The un-profiled host (the default), changed.
  ReplayLease lease(base);
  ReplayTimes& times = lease.times();
  apply(g, sc, scales, &base, times, out);
  out.model = kModelUnprofiled;
  out.removed_us =
      removed == RemovedUs::Skip
          ? std::numeric_limits<double>::quiet_NaN()
          : removed_per_iteration(g, base.dur, base.lag, times, sc.remove_syncs,
                                  base.indexed_for_replays ? &base.sync_waits : nullptr);
  out.measured_step_time_us = base.step_time_us;
  out.predicted = replay(times.dur(), times.lag());
  out.predicted_step_time_us = out.predicted.step_time_us;
  if (path) out.summary = summary_line(base.bounds, out, profiled_prediction);
  return out;
}

}  // namespace

WhatIfResult what_if(const Graph& g, const Scenario& sc, const WhatIfBase& base,
                     bool profiled_prediction) {
  return what_if_on_base(g, sc, base, profiled_prediction, std::nullopt);
}

WhatIfResult what_if_step(const Graph& g, const Scenario& sc, const WhatIfBase& base,
                          StepDetail detail, const BoundsWhen& bounds_when, RemovedUs removed) {
  return what_if_on_base(g, sc, base, /*profiled_prediction=*/false, detail, bounds_when, removed);
}

}  // namespace jarvis::critical_path
