// Building the dependency graph of one or more ranks (docs/critical-path.md
// lists the rules for each edge kind).
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <queue>
#include <set>
#include <stdexcept>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "base/huge_pages.h"
#include "base/phase_timer.h"
#include "base/sort_runs.h"
#include "base/two_threads.h"
#include "collectives/collectives.h"
#include "critical_path/critical_path.h"
#include "critical_path/internal.h"
#include "perf/categories.h"
#include "pycompat/text.h"
#include "report/gpu_timeline.h"
#include "report/stats.h"

namespace jarvis::critical_path {
namespace {

// A GPU op that ends this close after a synchronising call returned (or a
// kernel that starts this close after a collective ended) is taken as the
// thing waited for: Kineto's host and GPU clocks agree to about a microsecond.
constexpr double kTolUs = 2.0;
// The launch latency of a trace whose streams never idle at a launch (a
// GPU-bound loop: the host queues every kernel behind the last). The medians
// of the H200 traces of ../shared/ab_pairs whose streams do idle lie at 9-13
// us from the call's start to the kernel's.
constexpr double kDefaultLaunchLatencyUs = 10.0;
// A host gap this long in which its own thread's recorded events cost less
// than this share of it is a wait.
constexpr double kWaitGapUs = 100.0;
constexpr double kWaitOwnShare = 0.1;

using StreamKey = std::pair<int64_t, int64_t>;  // device, stream

// A kernel without a recorded launch (launched before the profiler started,
// or its runtime call was dropped) has no op to categorise it by: a GEMM is
// still a GEMM by its library's naming (cuBLAS xmma / cuBLASLt nvjet /
// CUTLASS / hipBLASLt Cijk), a convolution's implicit GEMM excepted.
bool is_gemm_kernel_name(std::string_view kernel) {
  using pycompat::ascii_icontains;
  if (ascii_icontains(kernel, "implicit_gemm")) return false;
  return ascii_icontains(kernel, "gemm") || kernel.starts_with("nvjet") ||
         kernel.starts_with("Cijk_");
}

struct HostItem {
  double time = 0;
  int order = 0;  // ties: step end, step start, calls
  uint32_t first = 0, last = 0;
  Uid uid = kNoUid;  // the runtime call, kNoUid for step markers
};

// A thread's host items in (time, order) order, as std::stable_sort puts
// them. Its runtime calls come in time order as the trace lists them; its
// step markers (two a step) are listed apart, out of order with them (a
// ProfilerStep's end before the calls inside it), and a tiled trace repeats
// that per copy: one sort of all merged 2 x 257 runs at x256, 9 passes
// through a buffer as large as the items. The calls are kept where they
// are, the markers sorted apart and merged in from the back. Calls (order 2)
// never tie with markers (0 and 1); ties among each stay as listed.
void order_host_items(std::vector<HostItem>& items) {
  const auto before = [](const HostItem& a, const HostItem& c) {
    return std::tie(a.time, a.order) < std::tie(c.time, c.order);
  };
  std::vector<HostItem> markers;
  size_t calls = 0;
  for (size_t k = 0; k < items.size(); ++k) {
    if (items[k].uid == kNoUid)
      markers.push_back(items[k]);
    else
      items[calls++] = items[k];
  }
  items.resize(calls);
  stable_sort_runs(items.begin(), items.end(), before);
  stable_sort_runs(markers.begin(), markers.end(), before);
  merge_into_back(items, markers, before);
}

struct Step {
  std::string name;
  uint32_t start = 0, end = 0;
  // Per stream, the end of the last GPU op launched inside the step: the
  // iteration is over only once the host's step ended and these ran.
  std::vector<uint32_t> gpu_ends;
};

class Builder {
 public:
  Graph g;

  // One label per distinct (rank, op, kernel, category), numbered in the
  // order first asked for. An open-addressing table of label indices hashed
  // on the texts: a lookup builds no string (the passes ask once per node
  // and edge; a map keyed on copied strings was a tenth of build_graph).
  uint32_t label(int64_t rank, std::string_view op, std::string_view kernel,
                 std::string_view category) {
    if (2 * (g.labels.size() + 1) > slots_.size()) grow_label_slots();
    const size_t hash = label_hash(rank, op, kernel, category);
    const size_t mask = slots_.size() - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
      const uint32_t s = slots_[i];
      if (s == kNoSlot) {
        slots_[i] = static_cast<uint32_t>(g.labels.size());
        hashes_.push_back(hash);
        g.labels.push_back({rank, std::string(op), std::string(kernel), std::string(category)});
        return slots_[i];
      }
      const Label& l = g.labels[s];
      if (hashes_[s] == hash && l.rank == rank && l.op == op && l.kernel == kernel &&
          l.category == category)
        return s;
    }
  }
  uint32_t node(NodeKind kind, int64_t rank, double start, double dur, Uid uid, uint32_t lbl) {
    g.nodes.push_back(
        {.rank = rank, .start = start, .dur = dur, .uid = uid, .label = lbl, .kind = kind});
    return static_cast<uint32_t>(g.nodes.size() - 1);
  }
  void edge(uint32_t from, uint32_t to, EdgeKind kind, bool from_start, double intrinsic,
            uint32_t lbl) {
    g.edges.push_back({.from = from,
                       .to = to,
                       .intrinsic = intrinsic,
                       .label = lbl,
                       .kind = kind,
                       .from_start = from_start});
  }

 private:
  static constexpr uint32_t kNoSlot = UINT32_MAX;
  static size_t label_hash(int64_t rank, std::string_view op, std::string_view kernel,
                           std::string_view category) {
    size_t h = std::hash<int64_t>{}(rank);
    for (std::string_view s : {op, kernel, category})
      h ^= std::hash<std::string_view>{}(s) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h;
  }
  void grow_label_slots() {
    slots_.assign(std::max<size_t>(64, 2 * slots_.size()), kNoSlot);
    const size_t mask = slots_.size() - 1;
    for (uint32_t k = 0; k < hashes_.size(); ++k) {
      size_t i = hashes_[k] & mask;
      while (slots_[i] != kNoSlot) i = (i + 1) & mask;
      slots_[i] = k;
    }
  }
  std::vector<uint32_t> slots_;  // label index or kNoSlot; a power of two, at most half full
  std::vector<size_t> hashes_;   // per label
};

// A label by the interned names it is made of (Event::name ids, kNoName for
// none): each pass asks its label once per distinct pair of names instead of
// hashing the texts per node and edge. Per rank (a label names its rank).
constexpr uint32_t kNoName = UINT32_MAX;
class LabelMemo {
 public:
  template <class Make>
  uint32_t get(uint32_t a, uint32_t b, Make&& make) {
    auto [it, fresh] = memo_.try_emplace((uint64_t{a} << 32) | b, 0);
    if (fresh) it->second = make();
    return it->second;
  }

 private:
  std::unordered_map<uint64_t, uint32_t> memo_;
};

// Where a rank's GPU ops and runtime calls are in the graph, by Uid: one flat
// vector over the trace's events (4 bytes an event) in place of a hash map
// per kind (a heap node per op). A collective's end node is the one after its
// arrival (add_gpu_ops); each GPU node's launch call is kept beside.
struct UidNodes {
  static constexpr uint32_t kNone = UINT32_MAX;
  const CallTree* tree = nullptr;
  const MappableVector<Node>* nodes = nullptr;
  std::vector<uint32_t> first;  // by Uid: a GPU op's start node, a runtime call's entry node
  uint32_t gpu_begin = 0;       // the rank's GPU nodes are [gpu_begin, gpu_begin + launch.size())
  std::vector<Uid> launch;      // by GPU node - gpu_begin: the runtime call that launched it

  uint32_t gpu_start(Uid u) const {
    return u < first.size() && is_gpu_cat(tree->cat(u)) ? first[u] : kNone;
  }
  uint32_t gpu_end(Uid u) const { return end_of(gpu_start(u)); }
  uint32_t end_of(uint32_t start) const {
    return start != kNone && (*nodes)[start].kind == NodeKind::CollArrive ? start + 1 : start;
  }
  uint32_t call_entry(Uid u) const {
    return u < first.size() && is_runtime_cat(tree->cat(u)) ? first[u] : kNone;
  }
  uint32_t launch_call(Uid u) const {
    const uint32_t n = gpu_start(u);
    return n == kNone || n - gpu_begin >= launch.size() ? kNone : launch[n - gpu_begin];
  }
};

// An event the builder gave no node where a later pass expects one: the
// trace broke an assumption of the builder (a fuzzed collective without a
// time did, 2026-11-29). An error of the input (CriticalPathError: the
// insights fall back to the trace's own times), never std::out_of_range.
CriticalPathError missing_node(Uid u) {
  return CriticalPathError(fmt::format(
      "critical_path: event {} has no node in the dependency graph (an inconsistent trace)", u));
}

// The node of collective kernel `u` in a rank's arrive / done map.
uint32_t collective_node(const std::unordered_map<Uid, uint32_t>& nodes, Uid u) {
  const auto it = nodes.find(u);
  if (it == nodes.end()) throw missing_node(u);
  return it->second;
}

// A lookup of UidNodes shaped like the hash map it replaced (`find(u) !=
// end()`, `->second`, `at`, `count`).
struct UidHit {
  bool found = false;
  Uid first = kNoUid;
  uint32_t second = 0;
  const UidHit* operator->() const { return this; }
  bool operator==(const UidHit& o) const { return found == o.found; }
};
template <uint32_t (UidNodes::*Get)(Uid) const>
class UidMap {
 public:
  explicit UidMap(const UidNodes& nodes) : nodes_(nodes) {}
  UidHit find(Uid u) const {
    const uint32_t v = (nodes_.*Get)(u);
    return v == UidNodes::kNone ? UidHit{} : UidHit{true, u, v};
  }
  UidHit end() const { return {}; }
  size_t count(Uid u) const { return (nodes_.*Get)(u) != UidNodes::kNone; }
  uint32_t at(Uid u) const {
    const uint32_t v = (nodes_.*Get)(u);
    if (v == UidNodes::kNone) throw missing_node(u);
    return v;
  }

 private:
  const UidNodes& nodes_;
};

// One rank's share of the graph while it is built.
class RankBuilder {
 public:
  RankBuilder(Builder& b, const RankInput& in, int64_t rank, double offset,
              const std::vector<collectives::CollectiveInstance>& colls, const StepBounds* bounds,
              const ProfilerCost& cost)
      : b_(b),
        trace_(*in.trace),
        tree_(*in.tree),
        rank_(rank),
        off_(offset),
        bounds_(bounds),
        cost_(cost) {
    by_uid_.tree = &tree_;
    by_uid_.nodes = &b_.g.nodes;
    for (const auto& c : colls) coll_[c.kernel.uid] = &c;
    b_.g.profiler_cost[rank_] = cost_;
  }

  void build() {
    // The index of the profiler's cost on the host threads is read from the
    // host threads on, and reads nothing the GPU ops make: with a second
    // core, made beside them (the graph's serial part at x256: 120 and 80 ms).
    std::optional<PhaseTimer> t(std::in_place, "critical_path/build_graph/gpu_ops+host_cost");
    run_on_two_threads({[&] { host_cost_.emplace(trace_, cost_); }, [&] { add_gpu_ops(); }});
    t.emplace("critical_path/build_graph/host_threads");
    add_host_threads();
    t.emplace("critical_path/build_graph/handovers+launches");
    add_thread_handovers();
    add_launch_edges();
    t.emplace("critical_path/build_graph/step_ends+backlog+syncs");
    add_step_gpu_ends();
    find_gpu_backlog();
    add_sync_edges();
    t.emplace("critical_path/build_graph/waits");
    recorded_waits = add_recorded_waits();
    if (recorded_waits == 0) {  // nothing recorded: infer the waits around collectives
      add_collective_waits();
      add_waits_after_collectives();
    }
    if (open_end_ != kNone)  // the last detected iteration ends with the trace
      for (uint32_t tail : tails)
        b_.edge(tail, open_end_, EdgeKind::IterEnd, false, 0.0,
                b_.label(rank_, "", "", "step_end"));
  }

  std::vector<Step> steps;
  // kFromDecodeStepsInProfilerStep: the ProfilerSteps that hold the steps.
  std::vector<Step> profiler_steps;
  size_t recorded_waits = 0, unresolved_waits = 0;
  std::unordered_map<Uid, uint32_t> arrive, done;  // collective kernel -> nodes
  std::vector<std::pair<double, double>> busy;
  std::vector<uint32_t> tails;  // last node of each host thread and stream
  size_t launch_edges = 0;
  std::vector<uint32_t> backlog;  // GPU op nodes of the backlog (find_gpu_backlog)
  double backlog_us = 0;          // their time inside the first iteration

 private:
  bool holds_iterations() const {
    return bounds_ && bounds_->source == kFromDecodeStepsInProfilerStep;
  }

  std::string_view op_of(Uid uid) const {
    Uid op = uid == kNoUid ? kNoUid : tree_.nearest_cpu_op(uid);
    return op == kNoUid ? std::string_view{} : trace_.name(op);
  }

  // op_of's name id, kNoName for none.
  uint32_t op_name_of(Uid uid) const {
    Uid op = uid == kNoUid ? kNoUid : tree_.nearest_cpu_op(uid);
    return op == kNoUid ? kNoName : trace_.events[op].name;
  }

  uint32_t gpu_label(Uid uid) {
    if (coll_.count(uid)) return make_gpu_label(uid);  // named after its collective
    const Event& e = trace_.events[uid];
    const Uid launcher = tree_.launcher(uid);
    LabelMemo& memo = gpu_labels_[e.cat == Cat::GpuMemcpy ? 1 : e.cat == Cat::GpuMemset ? 2 : 0];
    return memo.get(launcher == kNoUid ? kNoName : trace_.events[launcher].name, e.name,
                    [&] { return make_gpu_label(uid); });
  }

  uint32_t make_gpu_label(Uid uid) {
    const Event& e = trace_.events[uid];
    Uid launcher = tree_.launcher(uid);
    std::string_view op = launcher == kNoUid ? std::string_view{} : trace_.name(launcher);
    std::string_view kernel = trace_.name(uid);
    std::string_view cat = e.cat == Cat::GpuMemcpy   ? "memcpy"
                           : e.cat == Cat::GpuMemset ? "memset"
                                                     : perf::op_category(op, kernel);
    if (launcher == kNoUid && cat == "other" && is_gemm_kernel_name(kernel)) cat = "GEMM";
    if (auto c = coll_.find(uid); c != coll_.end()) {
      cat = "communication";
      if (!c->second->collective.empty()) op = c->second->collective;
    }
    return b_.label(rank_, op, kernel, cat);
  }

  void add_gpu_ops() {
    by_uid_.first.assign(trace_.events.size(), UidNodes::kNone);
    by_uid_.gpu_begin = static_cast<uint32_t>(b_.g.nodes.size());
    const std::vector<Uid>& gpu_ops = tree_.gpu_event_uids();  // every GPU event, UID order
    busy.reserve(gpu_ops.size());
    b_.g.gpu_spans.reserve(b_.g.gpu_spans.size() + gpu_ops.size());
    for (Uid uid : gpu_ops) {
      const Event& e = trace_.events[uid];
      if (!e.has_ts() || !e.has_dur()) continue;
      const double ts = e.ts() + off_;
      uint32_t lbl = gpu_label(uid);
      uint32_t start = 0, end = 0;
      if (coll_.count(uid)) {
        start = arrive[uid] = b_.node(NodeKind::CollArrive, rank_, ts, 0, uid, lbl);
        end = done[uid] = b_.node(NodeKind::CollDone, rank_, ts + e.dur(), 0, uid, lbl);
      } else {
        start = end = b_.node(NodeKind::Gpu, rank_, ts, e.dur(), uid, lbl);
      }
      by_uid_.first[uid] = start;
      streams_[{trace_.device(e), trace_.stream(e)}].push_back(uid);
      b_.g.gpu_spans.emplace_back(start, end);
      busy.emplace_back(ts, ts + e.dur());
    }
    by_uid_.launch.assign(b_.g.nodes.size() - by_uid_.gpu_begin, kNoUid);
    for (auto& [key, ops] : streams_) {
      // In UID order, which is nearly time order (a run per recorded
      // chunk): stable_sort_runs merges the runs, std::stable_sort's order.
      stable_sort_runs(ops.begin(), ops.end(),
                       [&](Uid a, Uid c) { return trace_.events[a].ts() < trace_.events[c].ts(); });
      for (size_t k = 1; k < ops.size(); ++k) {
        const Uid next = ops[k];  // a named copy: clang 14 cannot capture a structured binding
        b_.edge(by_uid_.gpu_end(ops[k - 1]), by_uid_.gpu_start(next), EdgeKind::Stream, false, 0.0,
                stream_labels_.get(trace_.events[next].name, 0, [&] {
                  return b_.label(rank_, "", trace_.name(next), "gpu_idle");
                }));
      }
      if (!ops.empty()) tails.push_back(by_uid_.gpu_end(ops.back()));
    }
    busy = merge_intervals(std::move(busy));
  }

  // The return of a call waits for GPU work: synchronize calls, and copies
  // whose GPU side finished while the call ran (pageable copies block).
  bool is_blocking(Uid uid) {
    // What the call's name says, once per name: 1 a sync, 2 a copy, 3 neither.
    const uint32_t name_id = trace_.events[uid].name;
    if (name_id >= call_kind_.size()) call_kind_.resize(name_id + 1, 0);
    if (call_kind_[name_id] == 0) {
      std::string_view name = trace_.name(uid);
      call_kind_[name_id] = name.find("Synchronize") != std::string_view::npos ? 1
                            : name.find("Memcpy") != std::string_view::npos    ? 2
                                                                               : 3;
    }
    if (call_kind_[name_id] == 1) return true;
    if (call_kind_[name_id] == 3) return false;
    const Event& c = trace_.events[uid];
    for (Uid gpu : tree_.gpu_events(uid)) {
      const Event& e = trace_.events[gpu];
      if (e.end() >= c.ts() && e.end() <= c.end() + kTolUs) return true;
    }
    return false;
  }

  HostItem host_call(Uid uid) {
    const Event& e = trace_.events[uid];
    std::string_view name = trace_.name(uid);
    HostItem item{e.ts() + off_, 2, 0, 0, uid};
    uint32_t lbl = call_labels_.get(
        op_name_of(uid), e.name, [&] { return b_.label(rank_, op_of(uid), name, "host_runtime"); });
    if (!is_blocking(uid)) {
      item.first = item.last = b_.node(NodeKind::HostCall, rank_, e.ts() + off_, e.dur(), uid, lbl);
      b_.g.nodes[item.first].profiler_us = cost_.per_runtime_call_us / 2;
      b_.g.nodes[item.first].thread = e.thread;
      by_uid_.first[uid] = item.first;
      return item;
    }
    item.first = b_.node(NodeKind::HostCall, rank_, e.ts() + off_, 0, uid, lbl);
    item.last = b_.node(NodeKind::SyncReturn, rank_, e.end() + off_, 0, uid, lbl);
    b_.g.nodes[item.first].thread = b_.g.nodes[item.last].thread = e.thread;
    b_.edge(item.first, item.last, EdgeKind::HostSeq, false, 0.0, sync_label(uid));
    by_uid_.first[uid] = item.first;
    returns_.emplace_back(uid, item.last);
    return item;
  }

  uint32_t sync_label(Uid call) {
    return sync_labels_.get(trace_.events[call].name, 0,
                            [&] { return b_.label(rank_, trace_.name(call), "", "sync"); });
  }

  // The label of a host gap charged to the op around the call of `about`
  // (none for a step marker): the op its call's own label names (the op was
  // looked up once, for the call).
  uint32_t gap_label(const HostItem& about) {
    if (about.uid == kNoUid)
      return gap_labels_.get(kNoName, 0, [&] { return b_.label(rank_, "", "", "host_gap"); });
    const uint32_t call = b_.g.nodes[about.first].label;
    return gap_labels_.get(call, 0, [&] {
      const std::string op = b_.g.labels[call].op;  // a copy: label() may grow the labels
      return b_.label(rank_, op, "", "host_gap");
    });
  }

  void add_host_threads() {
    std::map<std::pair<ProcId, ProcId>, std::vector<HostItem>>& threads = threads_;
    for (Uid uid = 0; uid < trace_.events.size(); ++uid) {
      // The tree's one byte per event first: most events are neither.
      if (!is_runtime_cat(tree_.cat(uid)) && tree_.cat(uid) != Cat::UserAnnotation) continue;
      const Event& e = trace_.events[uid];
      if (!e.has_ts() || !e.has_dur()) continue;
      if (e.is_runtime()) {
        threads[{trace_.pid(e), trace_.tid(e)}].push_back(host_call(uid));
      } else if (e.cat == Cat::UserAnnotation && trace_.name(uid).starts_with("ProfilerStep#")) {
        uint32_t lbl = b_.label(rank_, trace_.name(uid), "", "host_gap");
        Step s{std::string(trace_.name(uid)),
               b_.node(NodeKind::StepStart, rank_, e.ts() + off_, 0, uid, lbl),
               b_.node(NodeKind::StepEnd, rank_, e.end() + off_, 0, uid, lbl),
               {}};
        threads[{trace_.pid(e), trace_.tid(e)}].push_back(
            {e.ts() + off_, 1, s.start, s.start, kNoUid});
        threads[{trace_.pid(e), trace_.tid(e)}].push_back(
            {e.end() + off_, 0, s.end, s.end, kNoUid});
        // Decode steps inside each ProfilerStep are the iterations: the
        // ProfilerStep (a generate() call) is kept beside them.
        (holds_iterations() ? profiler_steps : steps).push_back(std::move(s));
      }
    }
    if (bounds_) add_detected_steps();
    for (auto& [key, items] : threads) chain(items);
  }

  // Iterations found without ProfilerStep (optimizer steps, launch repeats):
  // a step marker where each begins, on that thread; each ends where the next
  // begins, the last one at its own end mark or with the trace.
  void add_detected_steps() {
    const StepBounds& r = *bounds_;
    for (size_t k = 0; k < r.starts.size(); ++k) {
      const std::string name = k < r.names.size() ? r.names[k] : fmt::format("iteration#{}", k);
      uint32_t lbl = b_.label(rank_, name, "", "host_gap");
      const StepMark& begin = r.starts[k];
      Step s{name, b_.node(NodeKind::StepStart, rank_, begin.ts + off_, 0, kNoUid, lbl), 0, {}};
      threads_[{begin.pid, begin.tid}].push_back({begin.ts + off_, 1, s.start, s.start, kNoUid});
      if (k < r.ends.size() || k + 1 < r.starts.size() || r.end) {
        const StepMark& next = k < r.ends.size()         ? r.ends[k]
                               : k + 1 < r.starts.size() ? r.starts[k + 1]
                                                         : *r.end;
        s.end = b_.node(NodeKind::StepEnd, rank_, next.ts + off_, 0, kNoUid, lbl);
        threads_[{next.pid, next.tid}].push_back({next.ts + off_, 0, s.end, s.end, kNoUid});
      } else {
        double hi = -1e300;
        for (const Node& n : b_.g.nodes)
          if (n.rank == rank_) hi = std::max(hi, n.end());
        s.end = open_end_ = b_.node(NodeKind::StepEnd, rank_, hi, 0, kNoUid, lbl);
      }
      steps.push_back(std::move(s));
    }
  }

  // The DataLoader __next__ annotation covering most of [from, to) on the
  // thread, "" when none does.
  std::string_view loader_window(uint32_t thread, double from, double to) {
    if (!loader_windows_) {
      loader_windows_.emplace();
      for (Uid u = 0; u < trace_.events.size(); ++u) {
        if (tree_.cat(u) != Cat::UserAnnotation) continue;
        const Event& e = trace_.events[u];
        if (e.cat != Cat::UserAnnotation || !e.has_ts() || !e.has_dur()) continue;
        std::string_view name = trace_.name(u);
        if (name.find("DataLoader") != std::string_view::npos &&
            name.find("__next__") != std::string_view::npos)
          (*loader_windows_)[e.thread].push_back(u);
      }
      for (auto& [t, w] : *loader_windows_)
        std::sort(w.begin(), w.end(),
                  [&](Uid a, Uid c) { return trace_.events[a].ts() < trace_.events[c].ts(); });
    }
    auto it = loader_windows_->find(thread);
    if (it == loader_windows_->end() || !(to > from)) return "";
    // The windows starting before `to`, latest first (the loader's windows
    // do not nest: two suffice).
    const auto& w = it->second;
    auto pos = std::lower_bound(w.begin(), w.end(), to,
                                [&](Uid u, double t) { return trace_.events[u].ts() < t; });
    for (int n = 0; n < 2 && pos != w.begin(); ++n) {
      const Event& e = trace_.events[*--pos];
      const double inside = std::min(to, e.end()) - std::max(from, e.ts());
      if (inside >= 0.5 * (to - from)) return trace_.name(*pos);
    }
    return "";
  }

  void chain(std::vector<HostItem>& items) {
    order_host_items(items);
    // The thread's index, for the profiler's cost of what it recorded.
    std::optional<uint32_t> thread;
    for (const HostItem& it : items)
      if (it.uid != kNoUid) thread = trace_.events[it.uid].thread;
    detail::HostCostIndex::Cursor near;  // the gaps come in time order
    for (size_t k = 1; k < items.size(); ++k) {
      const Node& prev = b_.g.nodes[items[k - 1].last];
      const Node& next = b_.g.nodes[items[k].first];
      // Host items of one thread that overlap without nesting (a crafted or
      // clock-skewed trace) get no negative gap: a path segment is never
      // shorter than zero (found by fuzz_critical_path).
      const double from = prev.end(), to = std::max(next.start, from);
      // The op the host was busy in: the one around the next call (a step
      // end has none, so the previous call's).
      const HostItem& about = items[k].uid != kNoUid ? items[k] : items[k - 1];
      // A gap spent mostly inside a DataLoader's __next__ is input work
      // (host_input): a CUDA graph does not remove it.
      const std::string_view loader = thread ? loader_window(*thread, from - off_, to - off_) : "";
      b_.edge(items[k - 1].last, items[k].first, EdgeKind::HostSeq, false, to - from,
              loader.empty() ? gap_label(about) : b_.label(rank_, loader, "", "host_input"));
      if (thread) {
        // A gap in which the thread recorded (almost) nothing while others of
        // its process did was a wait for them (the main thread in loss.backward(),
        // JAX's transfer thread for the Python thread): it shrinks as much as
        // their recorded time does.
        double cost = host_cost_->between(*thread, from - off_, to - off_, near);
        if (to - from > kWaitGapUs && cost < kWaitOwnShare * (to - from))
          cost = std::max(cost, host_cost_->on_other_threads(*thread, from - off_, to - off_));
        b_.g.edges.back().profiler_us = cost;
        b_.g.edges.back().thread = *thread;
      }
    }
    if (!items.empty()) tails.push_back(items.back().last);
  }

  // Launching moves between host threads without a recorded link: the main
  // thread calls loss.backward() and autograd's engine thread launches the
  // backward pass, then the main thread resumes with the optimizer. Where the
  // merged launch order switches from one thread's run of launches to
  // another's (two or more launches each, the second run starting after the
  // first ended), the second waited for the first: a hand-over edge with the
  // measured gap. Without it a thread's first call would stay where it was
  // and the main thread's wait would read as its own host gap.
  void add_thread_handovers() {
    struct Launch {
      double start, end;
      size_t thread;
    };
    std::vector<Launch> launches;
    std::vector<const std::vector<HostItem>*> items_of;
    for (const auto& [key, items] : threads_) {
      for (const HostItem& it : items)
        if (it.uid != kNoUid && !tree_.gpu_events(it.uid).empty())
          launches.push_back(
              {b_.g.nodes[it.first].start, b_.g.nodes[it.last].end(), items_of.size()});
      items_of.push_back(&items);
    }
    stable_sort_runs(launches.begin(), launches.end(),
                     [](const Launch& a, const Launch& c) { return a.start < c.start; });
    constexpr size_t kMinRun = 2;
    size_t run_start = 0;
    std::optional<std::pair<size_t, size_t>> previous;  // [begin, end) of the previous run
    for (size_t k = 1; k <= launches.size(); ++k) {
      if (k < launches.size() && launches[k].thread == launches[run_start].thread) continue;
      if (previous && previous->second - previous->first >= kMinRun && k - run_start >= kMinRun)
        handover(*items_of[launches[previous->first].thread], launches[previous->second - 1].end,
                 *items_of[launches[run_start].thread], launches[run_start].start);
      previous = std::make_pair(run_start, k);
      run_start = k;
    }
  }

  // The hand-over itself: from the first thread's last call before the
  // second thread's first call (launch or not: the main thread resumes with
  // cudaStreamIsCapturing) after the first thread's last launch.
  void handover(const std::vector<HostItem>& from, double from_launch_end,
                const std::vector<HostItem>& to, double to_launch_start) {
    // A thread's items are in start order (chain): binary searches, not a
    // pass over the thread per hand-over (quadratic in a trace's steps).
    auto start_of = [&](const HostItem& it) { return b_.g.nodes[it.first].start; };
    auto target = std::partition_point(
        to.begin(), to.end(), [&](const HostItem& it) { return start_of(it) < from_launch_end; });
    if (target == to.end() || start_of(*target) > to_launch_start) return;
    const double at = start_of(*target);
    // The last item that ended by `at`: none after the first that starts past it.
    auto past = std::partition_point(from.begin(), from.end(),
                                     [&](const HostItem& it) { return start_of(it) <= at; });
    const HostItem* source = nullptr;
    for (auto it = past; it != from.begin();)
      if (b_.g.nodes[(--it)->last].end() <= at) {
        source = &*it;
        break;
      }
    if (!source) return;
    const HostItem& about = target->uid != kNoUid ? *target : *source;
    b_.edge(source->last, target->first, EdgeKind::HostHandover, false,
            at - b_.g.nodes[source->last].end(), gap_label(about));
  }

  void add_launch_edges() {
    for (Uid rt : tree_.runtime_uids()) {
      const uint32_t host = by_uid_.call_entry(rt);
      if (host == UidNodes::kNone) continue;
      for (Uid gpu : tree_.gpu_events(rt)) {
        const uint32_t start = by_uid_.gpu_start(gpu);
        if (start == UidNodes::kNone) continue;
        by_uid_.launch[start - by_uid_.gpu_begin] = rt;
        const Uid launcher = tree_.launcher(gpu);
        const uint32_t lbl = launch_labels_.get(
            launcher == kNoUid ? kNoName : trace_.events[launcher].name, trace_.events[gpu].name,
            [&] {
              return b_.label(rank_, launcher == kNoUid ? "" : trace_.name(launcher),
                              trace_.name(gpu), "launch_latency");
            });
        b_.edge(host, start, EdgeKind::Launch, true, 0.0, lbl);
        ++launch_edges;
      }
    }
  }

  // A host that runs ahead leaves GPU work running after its step ended: the
  // last op of each stream launched inside a step belongs to that step.
  void add_step_gpu_ends() {
    add_gpu_ends(steps);
    add_gpu_ends(profiler_steps);
  }

  void add_gpu_ends(std::vector<Step>& of) {
    std::vector<std::pair<double, size_t>> starts;  // step start, index
    for (size_t k = 0; k < of.size(); ++k) starts.emplace_back(b_.g.nodes[of[k].start].start, k);
    std::sort(starts.begin(), starts.end());
    for (const auto& [key, ops] : streams_) {
      std::map<size_t, Uid> last;  // step -> last op launched inside it
      for (Uid op : ops) {
        auto call = launch_.find(op);
        if (call == launch_.end()) continue;  // no recorded launch: not tied to a step
        const double t = trace_.events[call->second].ts() + off_;
        auto it = std::upper_bound(starts.begin(), starts.end(),
                                   std::make_pair(t, std::numeric_limits<size_t>::max()));
        if (it == starts.begin()) continue;
        const size_t k = std::prev(it)->second;
        if (t < b_.g.nodes[of[k].end].start) last[k] = op;
      }
      for (const auto& [k, op] : last) of[k].gpu_ends.push_back(end_.at(op));
    }
  }

  // GPU work queued before the first iteration (launched before it, or with
  // no launch in the trace: before the profiler started) that still runs
  // inside it, ahead of the iteration's own work on its stream: the backlog
  // of the steps before profiling. It is not the step's work: the
  // un-profiled schedule gives it no time (profiler_free_times). Only ops
  // before a stream's first op launched in an iteration count: a trace with
  // no launch links (no flows) has no backlog to tell.
  void find_gpu_backlog() {
    if (steps.empty()) return;
    double first = std::numeric_limits<double>::infinity();
    // Decode steps: the first ProfilerStep begins before them (its prefill).
    for (const auto* list : {&steps, &profiler_steps})
      for (const Step& s : *list) first = std::min(first, b_.g.nodes[s.start].start);
    for (const auto& [key, ops] : streams_) {
      auto own = std::find_if(ops.begin(), ops.end(), [&](Uid op) {
        auto call = launch_.find(op);
        return call != launch_.end() && trace_.events[call->second].ts() + off_ >= first;
      });
      if (own == ops.end()) continue;
      for (auto it = ops.begin(); it != own; ++it) {
        const Node& n = b_.g.nodes[start_.at(*it)];
        if (coll_.count(*it) || n.end() <= first) continue;
        backlog.push_back(start_.at(*it));
        backlog_us += n.end() - std::max(n.start, first);
      }
    }
  }

  double launch_ts(Uid gpu) const {
    auto it = launch_.find(gpu);
    return it == launch_.end() ? trace_.events[gpu].ts() : trace_.events[it->second].ts();
  }

  // The last op of `ops` (in start order) whose launch began before `t`.
  Uid last_launched_before(const std::vector<Uid>& ops, double t) const {
    Uid best = kNoUid;
    double best_launch = -1e300;
    for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
      double lt = launch_ts(*it);
      if (lt < t && lt > best_launch) {
        best = *it;
        best_launch = lt;
      }
      // Start order follows launch order on a stream; stop well past t.
      if (trace_.events[*it].end() < t - 1e6) break;
    }
    return best;
  }

  // The last op of a stream a synchronising call can have waited for: it
  // ended before the call returned, and was launched before the call (an op
  // without a recorded launch counts when it started before the return).
  Uid waited_op(const std::vector<Uid>& ops, const Event& c) const {
    // Ops are in start order: those starting at or after the return are
    // skipped by a binary search (a pass from the stream's end per sync was
    // quadratic in a trace's steps).
    const auto returned = std::partition_point(
        ops.begin(), ops.end(), [&](Uid op) { return trace_.events[op].ts() < c.end(); });
    for (auto it = std::make_reverse_iterator(returned); it != ops.rend(); ++it) {
      const Event& e = trace_.events[*it];
      if (e.ts() >= c.end() || e.end() > c.end() + kTolUs) continue;
      if (launch_.count(*it) && launch_ts(*it) >= c.ts()) continue;
      return *it;
    }
    return kNoUid;
  }

  void add_sync_edges() {
    for (const auto& entry : returns_) {
      // Named copies: lambdas may not capture structured bindings (C++20 allows
      // it, clang 14 does not).
      const auto call = entry.first;
      const auto ret = entry.second;
      const Event& c = trace_.events[call];
      std::string_view name = trace_.name(call);
      uint32_t lbl = sync_label(call);
      auto waited = [&](Uid gpu, bool must_overlap) {
        const Event& e = trace_.events[gpu];
        if (e.end() > c.end() + kTolUs || (must_overlap && e.end() < c.ts())) return;
        b_.edge(end_.at(gpu), ret, EdgeKind::Sync, false, 0.0, lbl);
      };
      if (name.find("Memcpy") != std::string_view::npos) {
        for (Uid gpu : tree_.gpu_events(call))
          if (end_.count(gpu)) waited(gpu, true);
        continue;
      }
      const bool device = name.find("DeviceSynchronize") != std::string_view::npos;
      for (const auto& [key, ops] : streams_) {
        Uid last = waited_op(ops, c);
        if (last != kNoUid) waited(last, !device);
      }
    }
  }

  // Recorded stream waits: Kineto's cuda_sync "Stream Wait Event" records name
  // the waiting stream, the recording stream and the correlation id of the
  // cudaEventRecord / hipEventRecord call. The first op launched on the
  // waiting stream after the cudaStreamWaitEvent call cannot start before the
  // last op launched on the recording stream ahead of the record call ended.
  size_t add_recorded_waits() {
    std::unordered_map<int64_t, Uid> calls;         // correlation -> runtime call
    std::unordered_map<int64_t, int64_t> recorded;  // record correlation -> stream (cuda_event)
    std::vector<Uid> waits;
    // The records first (the tree's one byte per event picks them out); the
    // runtime calls by correlation only when there is a wait to match.
    for (Uid uid = 0; uid < trace_.events.size(); ++uid) {
      if (tree_.cat(uid) != Cat::Other) continue;
      const Event& e = trace_.events[uid];
      const int64_t correlation = trace_.correlation(e);
      if (correlation == kNoInt) continue;
      if (trace_.cat_name(uid) == "cuda_event") {
        if (trace_.stream(e) != kNoInt) recorded[correlation] = trace_.stream(e);
      } else if (e.cat == Cat::Other && trace_.cat_name(uid) == "cuda_sync") {
        const PyValue* kind = trace_.arg(uid, "cuda_sync_kind");
        std::string_view what =
            kind && kind->is_string() ? std::string_view(kind->s) : trace_.name(uid);
        if (what == "Stream Wait Event") waits.push_back(uid);
      }
    }
    if (!waits.empty())
      for (Uid uid : tree_.runtime_uids())  // UID order: the first call of a correlation
        if (const int64_t correlation = trace_.correlation(trace_.events[uid]);
            correlation != kNoInt)
          calls.emplace(correlation, uid);
    size_t added = 0;
    for (Uid w : waits) {
      const Event& e = trace_.events[w];
      const PyValue* rec = trace_.arg(w, "wait_on_cuda_event_record_corr_id");
      const PyValue* on = trace_.arg(w, "wait_on_stream");
      const int64_t record_corr = rec && rec->kind == PyValue::Kind::Int ? rec->i : -1;
      int64_t from = on && on->kind == PyValue::Kind::Int ? on->i : -1;
      if (from < 0)
        if (auto it = recorded.find(record_corr); it != recorded.end()) from = it->second;
      const int64_t device = trace_.device(e) != kNoInt ? trace_.device(e)
                             : trace_.pid(e).is_string  ? kNoInt
                                                        : trace_.pid(e).value;
      auto record = calls.find(record_corr);
      auto wait = calls.find(trace_.correlation(e));
      auto producers = streams_.find({device, from});
      auto consumers = streams_.find({device, trace_.stream(e)});
      if (from < 0 || record == calls.end() || wait == calls.end() || producers == streams_.end() ||
          consumers == streams_.end()) {
        ++unresolved_waits;
        continue;
      }
      const std::vector<Uid>& prod = producers->second;
      const std::vector<Uid>& cons = consumers->second;
      // Launches follow start order on a stream: binary searches.
      const double record_ts = trace_.events[record->second].ts();
      const double wait_ts = trace_.events[wait->second].ts();
      auto before = std::partition_point(prod.begin(), prod.end(),
                                         [&](Uid op) { return launch_ts(op) < record_ts; });
      auto after = std::partition_point(cons.begin(), cons.end(),
                                        [&](Uid op) { return launch_ts(op) <= wait_ts; });
      Uid producer = before == prod.begin() ? kNoUid : *(before - 1);
      Uid consumer = after == cons.end() ? kNoUid : *after;
      if (producer == kNoUid || consumer == kNoUid ||
          trace_.events[producer].end() > trace_.events[consumer].ts() + kTolUs) {
        ++unresolved_waits;  // nothing to wait for, or a wait the timestamps contradict
        continue;
      }
      b_.edge(end_.at(producer), start_.at(consumer), EdgeKind::EventWait, false, 0.0,
              b_.label(rank_, op_of(consumer), trace_.name(consumer), "stream_wait"));
      ++added;
    }
    return added;
  }

  // ProcessGroupNCCL makes the collective's stream wait for the work already
  // issued on the others: the collective cannot start before it ends.
  void add_collective_waits() {
    for (const auto& [uid, inst] : coll_) {
      const Event& k = trace_.events[uid];
      for (const auto& [key, ops] : streams_) {
        if (key.first != trace_.device(k) || key.second == trace_.stream(k)) continue;
        Uid last = last_launched_before(ops, launch_ts(uid));
        if (last == kNoUid || coll_.count(last)) continue;
        if (trace_.events[last].end() > k.ts() + kTolUs) continue;  // ran alongside: no wait
        b_.edge(end_.at(last), collective_node(arrive, uid), EdgeKind::CrossStream, false, 0.0,
                b_.label(rank_, inst->collective, trace_.name(uid), "stream_wait"));
      }
    }
  }

  // work.wait(): an op that starts as a collective on another stream of its
  // device ends, launched after that collective, waited for it.
  void add_waits_after_collectives() {
    std::vector<std::pair<double, Uid>> ends;  // collective end, uid
    for (const auto& [uid, inst] : coll_) ends.emplace_back(trace_.events[uid].end(), uid);
    std::sort(ends.begin(), ends.end());
    if (ends.empty()) return;
    for (const auto& [key, ops] : streams_)
      for (Uid op : ops) {
        if (coll_.count(op)) continue;
        const Event& e = trace_.events[op];
        auto lo =
            std::lower_bound(ends.begin(), ends.end(), std::make_pair(e.ts() - kTolUs, Uid{0}));
        for (auto it = lo; it != ends.end() && it->first <= e.ts(); ++it) {
          const Event& c = trace_.events[it->second];
          if (trace_.device(c) != trace_.device(e) || trace_.stream(c) == trace_.stream(e))
            continue;
          if (launch_ts(it->second) >= launch_ts(op)) continue;
          b_.edge(
              collective_node(done, it->second), start_.at(op), EdgeKind::CrossStream, false, 0.0,
              b_.label(rank_, coll_.at(it->second)->collective, trace_.name(op), "stream_wait"));
        }
      }
  }

  static constexpr uint32_t kNone = UINT32_MAX;

  Builder& b_;
  const Trace& trace_;
  const CallTree& tree_;
  int64_t rank_;
  double off_;
  const StepBounds* bounds_;
  ProfilerCost cost_;
  std::optional<detail::HostCostIndex> host_cost_;  // made in build(), beside the GPU ops
  std::optional<std::map<uint32_t, std::vector<Uid>>> loader_windows_;
  uint32_t open_end_ = kNone;
  std::map<std::pair<ProcId, ProcId>, std::vector<HostItem>> threads_;
  std::unordered_map<Uid, const collectives::CollectiveInstance*> coll_;
  UidNodes by_uid_;
  UidMap<&UidNodes::gpu_start> start_{by_uid_};
  UidMap<&UidNodes::gpu_end> end_{by_uid_};
  UidMap<&UidNodes::launch_call> launch_{by_uid_};  // GPU op -> runtime call
  LabelMemo gpu_labels_[3];  // kernels, memcpys, memsets: by (launcher's name, name)
  LabelMemo stream_labels_, call_labels_, sync_labels_, gap_labels_, launch_labels_;
  std::vector<uint8_t> call_kind_;  // by name id (is_blocking)
  std::map<StreamKey, std::vector<Uid>> streams_;
  std::vector<std::pair<Uid, uint32_t>> returns_;
};

}  // namespace

namespace detail {

// Kahn's order, earliest measured start first; a cycle (clock faults) is
// broken by dropping the in-edges of its earliest node.
void order_nodes(Graph& g) {
  const size_t n = g.nodes.size();
  g.in_off.assign(n + 1, 0);
  for (const Edge& e : g.edges) ++g.in_off[e.to + 1];
  for (size_t k = 0; k < n; ++k) g.in_off[k + 1] += g.in_off[k];
  g.in_edges.assign(g.edges.size(), 0);
  // The successors of each node, in edge order: a CSR like the in-edges (one
  // vector per node was a heap allocation each).
  std::vector<uint32_t> out_off(n + 1, 0), out(g.edges.size());
  for (const Edge& e : g.edges) ++out_off[e.from + 1];
  for (size_t k = 0; k < n; ++k) out_off[k + 1] += out_off[k];
  {
    std::vector<uint32_t> fill(g.in_off.begin(), g.in_off.end() - 1);
    std::vector<uint32_t> out_fill(out_off.begin(), out_off.end() - 1);
    for (uint32_t k = 0; k < g.edges.size(); ++k) {
      g.in_edges[fill[g.edges[k].to]++] = k;
      out[out_fill[g.edges[k].from]++] = g.edges[k].to;
    }
  }
  compact_in_edges(g, g.in_from, g.in_kind);
  std::vector<uint32_t> pending(n);
  for (size_t k = 0; k < n; ++k) pending[k] = g.in_off[k + 1] - g.in_off[k];
  using Item = std::pair<double, uint32_t>;
  std::vector<Item> initial;
  for (uint32_t k = 0; k < n; ++k)
    if (pending[k] == 0) initial.push_back({g.nodes[k].start, k});
  std::priority_queue<Item, std::vector<Item>, std::greater<>> ready(std::greater<>{},
                                                                     std::move(initial));
  // The nodes still waiting, earliest first, to break a cycle: made at the
  // first cycle (a consistent trace has none), from every node not done then
  // (each node that was ready at the start is done by then).
  std::priority_queue<Item, std::vector<Item>, std::greater<>> waiting;
  bool waiting_made = false;
  std::vector<char> done(n, 0);
  size_t broken = 0;
  g.order.clear();
  g.order.reserve(n);
  while (g.order.size() < n) {
    if (ready.empty()) {  // a cycle: release the earliest waiting node
      if (!waiting_made) {
        std::vector<Item> left;
        for (uint32_t k = 0; k < n; ++k)
          if (!done[k]) left.push_back({g.nodes[k].start, k});
        waiting = decltype(waiting)(std::greater<>{}, std::move(left));
        waiting_made = true;
      }
      while (done[waiting.top().second]) waiting.pop();
      ready.push(waiting.top());
      waiting.pop();
      ++broken;
    }
    uint32_t k = ready.top().second;
    ready.pop();
    if (done[k]) continue;
    done[k] = 1;
    g.order.push_back(k);
    for (uint32_t j = out_off[k]; j < out_off[k + 1]; ++j)
      if (const uint32_t to = out[j]; --pending[to] == 0 && !done[to])
        ready.push({g.nodes[to].start, to});
  }
  if (broken)
    g.notes.push_back(fmt::format(
        "{} dependency cycle(s) (inconsistent clocks) were broken at their earliest event",
        broken));
}

}  // namespace detail

namespace {

// The launch edges' intrinsic lag per rank: the median time from a launch
// call's start to its op's start over the ops nothing else held back: the
// stream had finished its previous op before the call returned, and no other
// stream was waited for. (An op that merely starts a moment after its
// predecessor ended was queued behind it: in a GPU-bound loop whose host
// runs ahead, that "latency" is the host's lead, tens of ms.) A trace whose
// streams never go idle at a launch gives no measurement: the typical
// latency then (kDefaultLaunchLatencyUs).
void estimate_launch_latency(Graph& g) {
  std::map<int64_t, std::vector<double>> free_runs;
  std::set<int64_t> launching;
  for (uint32_t n = 0; n < g.nodes.size(); ++n) {
    const Edge* launch = nullptr;
    for (uint32_t k = g.in_off[n]; k < g.in_off[n + 1]; ++k)
      if (g.edges[g.in_edges[k]].kind == EdgeKind::Launch) launch = &g.edges[g.in_edges[k]];
    if (!launch) continue;
    const double call = g.nodes[launch->from].start;
    bool held = false;
    for (uint32_t k = g.in_off[n]; k < g.in_off[n + 1]; ++k) {
      const Edge& e = g.edges[g.in_edges[k]];
      if (e.kind == EdgeKind::CrossStream || e.kind == EdgeKind::EventWait) held = true;
      if (e.kind == EdgeKind::Stream && g.nodes[e.from].end() > g.nodes[launch->from].end())
        held = true;
    }
    launching.insert(g.nodes[n].rank);
    if (!held) free_runs[g.nodes[n].rank].push_back(g.nodes[n].start - call);
  }
  for (int64_t rank : launching) {
    auto it = free_runs.find(rank);
    g.launch_latency_us[rank] = it != free_runs.end() && !it->second.empty()
                                    ? std::max(0.0, stats::median(it->second))
                                    : kDefaultLaunchLatencyUs;
  }
  for (Edge& e : g.edges)
    if (e.kind == EdgeKind::Launch) e.intrinsic = g.launch_latency_us[g.nodes[e.to].rank];
}

// Lags that make the replay reproduce the measured starts: the in-edge that
// explains most of a node's start binds with the measured slack; the others
// keep their intrinsic lag, capped by their slack.
void calibrate(Graph& g) {
  for (uint32_t n = 0; n < g.nodes.size(); ++n) {
    if (g.in_off[n] == g.in_off[n + 1]) continue;
    auto anchor = [&](const Edge& e) {
      const Node& p = g.nodes[e.from];
      return e.from_start ? p.start : p.end();
    };
    uint32_t best = g.in_edges[g.in_off[n]];
    for (uint32_t k = g.in_off[n]; k < g.in_off[n + 1]; ++k) {
      const Edge& e = g.edges[g.in_edges[k]];
      const Edge& b = g.edges[best];
      if (detail::binds_instead(e, anchor(e) + e.intrinsic, b, anchor(b) + b.intrinsic))
        best = g.in_edges[k];
    }
    // A thread's own previous call does not hold back a call that another
    // thread handed over to: the thread was blocked (in loss.backward())
    // until the other thread's work was done, so the gap was a wait, not its
    // own work, and a replay where that work ends earlier lets it go on.
    const bool handed_over = g.edges[best].kind == EdgeKind::HostHandover;
    for (uint32_t k = g.in_off[n]; k < g.in_off[n + 1]; ++k) {
      Edge& e = g.edges[g.in_edges[k]];
      // A thread's calls or a stream's ops that overlap (clock skew, a
      // duplicated event, a crafted trace) give no negative gap: on one
      // thread or one stream the next waits for the one before it
      // (fuzz_critical_path). A launch edge keeps its measured slack: a GPU op
      // that starts before its launch call is the host-device clock offset of
      // a multi-rank trace, which the waits between ranks are measured with.
      const double measured = g.nodes[n].start - anchor(e);
      const bool one_resource = e.kind == EdgeKind::HostSeq || e.kind == EdgeKind::Stream;
      const double slack = one_resource ? std::max(0.0, measured) : measured;
      e.lag = g.in_edges[k] == best ? slack : std::min(e.intrinsic, slack);
      if (handed_over && e.kind == EdgeKind::HostSeq && g.in_edges[k] != best)
        e.lag = std::min(e.lag, 0.0);
    }
  }
}

// The backlog is left out of the un-profiled schedule (profiler_free_times);
// the recorded one keeps the trace's own times.
void note_backlog(Graph& g) {
  for (const auto& [rank, us] : g.backlog_us)
    g.notes.push_back(fmt::format(
        "rank {}: {:.2f} ms of GPU work queued before profiling (no launch in the trace, or "
        "launched before the first step) ran inside the first step; the un-profiled step leaves it "
        "out",
        rank, us / 1e3));
}

// Each instance of a collective joins its ranks: one node from the last
// arrival to the first end (the data moving), then each rank's end.
void add_joins(Builder& b, const std::vector<RankBuilder*>& ranks,
               const std::vector<std::vector<collectives::CollectiveInstance>>& colls) {
  std::map<std::pair<std::string, int64_t>, std::vector<std::pair<size_t, Uid>>> instances;
  std::map<std::pair<std::string, int64_t>, std::string> names;
  for (size_t r = 0; r < colls.size(); ++r)
    for (const auto& c : colls[r]) {
      instances[{c.process_group, c.seq}].push_back({r, c.kernel.uid});
      names[{c.process_group, c.seq}] = c.collective.empty() ? c.kernel_name : c.collective;
    }
  for (const auto& [key, members] : instances) {
    Join join;
    double last = -1e300, first_end = 1e300;
    int64_t last_rank = -1;
    for (auto [r, uid] : members) {
      const Node& a = b.g.nodes[collective_node(ranks[r]->arrive, uid)];
      const Node& d = b.g.nodes[collective_node(ranks[r]->done, uid)];
      if (a.start > last) std::tie(last, last_rank) = std::make_pair(a.start, a.rank);
      first_end = std::min(first_end, d.start);
      join.ranks.push_back(a.rank);
      join.arrivals.push_back(collective_node(ranks[r]->arrive, uid));
    }
    // A copy: each b.label below may grow the labels, which a reference into
    // them would not survive.
    const Label any = b.g.labels[b.g.nodes[join.arrivals.front()].label];
    join.collective = names.at(key);
    join.node = b.node(NodeKind::CollJoin, last_rank, last, std::max(0.0, first_end - last), kNoUid,
                       b.label(last_rank, any.op, any.kernel, "communication"));
    for (size_t m = 0; m < members.size(); ++m) {
      auto [r, uid] = members[m];
      const int64_t rank = join.ranks[m];
      b.edge(join.arrivals[m], join.node, EdgeKind::CollArrive, false, 0.0,
             b.label(rank, any.op, any.kernel, "communication"));
      b.edge(join.node, collective_node(ranks[r]->done, uid), EdgeKind::CollDone, false, 0.0,
             b.label(rank, any.op, any.kernel, "communication"));
    }
    b.g.joins.push_back(std::move(join));
  }
}

// The whole trace as one iteration: from the rank's first event to its last.
Step whole_trace_step(Builder& b, RankBuilder& rb, int64_t rank, uint32_t first, uint32_t last) {
  double lo = 1e300, hi = -1e300;
  for (uint32_t n = first; n < last; ++n) {
    lo = std::min(lo, b.g.nodes[n].start);
    hi = std::max(hi, b.g.nodes[n].end());
  }
  uint32_t lbl = b.label(rank, "trace", "", "host_gap");
  Step s{"trace",
         b.node(NodeKind::StepStart, rank, lo, 0, kNoUid, lbl),
         b.node(NodeKind::StepEnd, rank, hi, 0, kNoUid, lbl),
         {}};
  for (uint32_t tail : rb.tails)
    b.edge(tail, s.end, EdgeKind::IterEnd, false, 0.0, b.label(rank, "", "", "step_end"));
  return s;
}

// The iterations of `steps` (one list per rank), into `into` (the graph's
// iterations, or its ProfilerSteps that hold them).
void add_iterations(Builder& b, std::vector<std::vector<Step>>& steps,
                    std::vector<Iteration>& into) {
  // Steps every rank recorded, in the first rank's order.
  std::vector<std::string> names;
  for (const Step& s : steps.front()) {
    bool everywhere = true;
    for (const auto& other : steps)
      everywhere &=
          std::any_of(other.begin(), other.end(), [&](const Step& o) { return o.name == s.name; });
    if (everywhere)
      names.push_back(s.name);
    else
      b.g.notes.push_back(fmt::format("{} is missing on some rank: left out", s.name));
  }
  for (const std::string& name : names) {
    Iteration it;
    it.name = name;
    it.start = 1e300;
    it.end = -1e300;
    for (const auto& rank_steps : steps)
      for (const Step& s : rank_steps)
        if (s.name == name) {
          it.start_nodes.push_back(s.start);
          it.host_ends.push_back(s.end);
          it.gpu_ends.insert(it.gpu_ends.end(), s.gpu_ends.begin(), s.gpu_ends.end());
          it.start = std::min(it.start, b.g.nodes[s.start].start);
          it.end = std::max(it.end, b.g.nodes[s.end].start);
          for (uint32_t g : s.gpu_ends) it.end = std::max(it.end, b.g.nodes[g].end());
          break;
        }
    it.sink = b.node(NodeKind::IterEnd, -1, it.end, 0, kNoUid, b.label(-1, name, "", "step_end"));
    for (uint32_t e : it.host_ends)
      b.edge(e, it.sink, EdgeKind::IterEnd, false, 0.0,
             b.label(b.g.nodes[e].rank, "", "", "step_end"));
    for (uint32_t e : it.gpu_ends)
      b.edge(e, it.sink, EdgeKind::IterEnd, false, 0.0,
             b.label(b.g.nodes[e].rank, "", "", "step_end"));
    into.push_back(std::move(it));
  }
  std::sort(into.begin(), into.end(),
            [](const Iteration& x, const Iteration& y) { return x.start < y.start; });
}

// Rank identities and clock offsets: collectives align the ranks' clocks.
std::vector<collectives::RankTrace> rank_traces(const std::vector<RankInput>& in,
                                                std::map<int64_t, double>& offsets) {
  std::vector<collectives::RankTrace> out;
  for (size_t k = 0; k < in.size(); ++k) {
    collectives::RankTrace r;
    if (in.size() == 1) {
      r.rank = in[k].rank >= 0 ? in[k].rank : 0;
      r.instances = collectives::collective_instances(*in[k].trace);
    } else {
      try {
        r = collectives::rank_trace(*in[k].trace, static_cast<int64_t>(k));
      } catch (const collectives::CollectiveError& e) {
        throw CriticalPathError(fmt::format(
            "ranks are joined through their collectives, and one has none: {}", e.what()));
      }
      if (in[k].rank >= 0) r.rank = in[k].rank;
    }
    out.push_back(std::move(r));
  }
  if (in.size() == 1) {
    offsets[out[0].rank] = 0.0;
    return out;
  }
  auto report = collectives::match_ranks(out);  // validates, throws CollectiveError
  offsets = report.clock_offset_us;
  return out;
}

}  // namespace

namespace {

// The launch sequence of the busiest launching thread, in host order; a
// launch is named after the (first) GPU op it launched.
struct LaunchSequence {
  std::vector<std::pair<double, Uid>> calls;
  std::vector<uint32_t> names;
};

std::optional<LaunchSequence> busiest_launch_sequence(
    const Trace& trace, const CallTree& tree,
    const std::optional<std::pair<double, double>>& window = std::nullopt) {
  std::map<std::pair<ProcId, ProcId>, std::vector<std::pair<double, Uid>>> threads;
  for (Uid rt : tree.runtime_uids()) {
    const Event& e = trace.events[rt];
    auto gpu = tree.gpu_events(rt);
    if (gpu.empty() || !e.has_ts()) continue;
    if (window && (e.ts() < window->first || e.ts() >= window->second)) continue;
    threads[{trace.pid(e), trace.tid(e)}].push_back({e.ts(), rt});
  }
  const std::vector<std::pair<double, Uid>>* busiest = nullptr;
  for (const auto& [key, calls] : threads)
    if (!busiest || calls.size() > busiest->size()) busiest = &calls;
  if (!busiest) return std::nullopt;
  LaunchSequence out;
  out.calls = *busiest;
  stable_sort_runs(out.calls.begin(), out.calls.end());
  out.names.resize(out.calls.size());
  for (size_t k = 0; k < out.calls.size(); ++k)
    out.names[k] = trace.events[tree.gpu_events(out.calls[k].second).front()].name;
  return out;
}

// Candidate periods: gaps between consecutive occurrences of a symbol,
// rarest symbols first (a symbol that occurs once per iteration gives the
// period itself). An iteration has at least two launches.
std::vector<size_t> candidate_periods(const std::vector<uint32_t>& seq,
                                      std::unordered_map<uint32_t, std::vector<uint32_t>>& where) {
  const size_t n = seq.size();
  for (size_t k = 0; k < n; ++k) where[seq[k]].push_back(static_cast<uint32_t>(k));
  std::vector<std::pair<size_t, uint32_t>> by_count;
  for (const auto& [sym, pos] : where)
    if (pos.size() >= 2) by_count.push_back({pos.size(), sym});
  std::sort(by_count.begin(), by_count.end());
  constexpr size_t kMaxCandidates = 256;
  std::vector<size_t> candidates;
  std::unordered_set<size_t> seen;
  for (const auto& [count, sym] : by_count) {
    const auto& pos = where[sym];
    for (size_t k = 1; k < pos.size() && candidates.size() < kMaxCandidates; ++k) {
      const size_t p = pos[k] - pos[k - 1];
      if (p >= 2 && p <= n / 2 && seen.insert(p).second) candidates.push_back(p);
    }
    if (candidates.size() >= kMaxCandidates) break;
  }
  return candidates;
}

Repeats repeats_of(const LaunchSequence& s, size_t period, size_t copies, size_t first,
                   double coverage) {
  Repeats r;
  r.period = period;
  r.count = copies;
  r.coverage = coverage;
  r.launches = s.calls.size();
  r.first = first;
  for (size_t k = 0; k < copies; ++k) r.starts.push_back(s.calls[first + k * period].second);
  const size_t end = first + copies * period;
  if (end < s.calls.size()) r.after = s.calls[end].second;
  return r;
}

}  // namespace

std::optional<Repeats> detect_repeats(const Trace& trace, const CallTree& tree) {
  auto sequence = busiest_launch_sequence(trace, tree);
  if (!sequence) return std::nullopt;
  const std::vector<uint32_t>& seq = sequence->names;
  const size_t n = seq.size();
  std::unordered_map<uint32_t, std::vector<uint32_t>> where;  // symbol -> positions
  const std::vector<size_t> candidates = candidate_periods(seq, where);
  // Each candidate: the longest run of seq[i] == seq[i + p]; the run plus one
  // period is periodic, holding (run + p) / p whole copies from its start.
  struct Best {
    size_t p = 0, copies = 0, first = 0, region = 0;
    double coverage = 0;
  } best;
  for (size_t p : candidates) {
    size_t run = 0, longest = 0, first = 0;
    for (size_t i = 0; i + p < n; ++i) {
      run = seq[i] == seq[i + p] ? run + 1 : 0;
      if (run > longest) {
        longest = run;
        first = i + 1 - run;
      }
    }
    const size_t copies = (longest + p) / p;
    if (copies < 2) continue;
    const double coverage = static_cast<double>(copies * p) / static_cast<double>(n);
    if (coverage > best.coverage + 1e-12 ||
        (std::abs(coverage - best.coverage) <= 1e-12 && p < best.p))
      best = {p, copies, first, longest + p, coverage};
  }
  constexpr double kMinCoverage = 0.9;
  if (best.copies < 2 || best.coverage < kMinCoverage) return std::nullopt;
  // Launches outside the periodic region must be pieces of an iteration: a
  // name never launched inside one (a model's embedding before its repeated
  // layers, its head after them) says the repeats are inside one iteration.
  std::unordered_set<uint32_t> inside(seq.begin() + static_cast<long>(best.first),
                                      seq.begin() + static_cast<long>(best.first + best.p));
  for (size_t k = 0; k < n; ++k)
    if ((k < best.first || k >= best.first + best.region) && !inside.count(seq[k]))
      return std::nullopt;
  return repeats_of(*sequence, best.p, best.copies, best.first, best.coverage);
}

std::optional<Repeats> detect_trailing_repeats(
    const Trace& trace, const CallTree& tree,
    const std::optional<std::pair<double, double>>& window) {
  auto sequence = busiest_launch_sequence(trace, tree, window);
  if (!sequence) return std::nullopt;
  const std::vector<uint32_t>& seq = sequence->names;
  const size_t n = seq.size();
  std::unordered_map<uint32_t, std::vector<uint32_t>> where;
  size_t best_p = 0, best_region = 0;
  for (size_t p : candidate_periods(seq, where)) {
    // The run of seq[i] == seq[i + p] that ends at the sequence's end; it
    // plus one period is periodic to the end.
    size_t run = 0;
    while (run + p < n && seq[n - 1 - p - run] == seq[n - 1 - run]) ++run;
    const size_t region = run + p;
    if (region > best_region || (region == best_region && p < best_p)) {
      best_p = p;
      best_region = region;
    }
  }
  constexpr size_t kMinCopies = 3;
  if (best_p == 0 || best_region / best_p < kMinCopies || 3 * best_region < n || best_region >= n)
    return std::nullopt;
  const size_t first = n - best_region;
  const std::vector<uint32_t> period(seq.begin() + static_cast<long>(first),
                                     seq.begin() + static_cast<long>(first + best_p));
  if (std::find(period.begin(), period.end(), seq.front()) == period.end()) return std::nullopt;
  const size_t copies = best_region / best_p;
  return repeats_of(*sequence, best_p, copies, first,
                    static_cast<double>(copies * best_p) / static_cast<double>(n));
}

StepBounds repeat_bounds(const Trace& trace, const Repeats& repeats) {
  StepBounds out;
  out.source = kFromDetectedRepeats;
  auto mark = [&](Uid uid) {
    const Event& e = trace.events[uid];
    return StepMark{e.ts(), trace.pid(e), trace.tid(e)};
  };
  for (Uid uid : repeats.starts) out.starts.push_back(mark(uid));
  if (repeats.after != kNoUid) out.end = mark(repeats.after);
  return out;
}

namespace {

// The trace's user annotations with a time and a duration whose name starts
// with `prefix` (ProfilerStep#, Optimizer.step#), in time order.
std::vector<Uid> timed_annotations(const Trace& trace, std::string_view prefix) {
  std::vector<Uid> found;
  for (Uid u = 0; u < trace.events.size(); ++u) {
    const Event& e = trace.events[u];
    if (e.cat == Cat::UserAnnotation && e.has_ts() && e.has_dur() &&
        trace.name(u).starts_with(prefix))
      found.push_back(u);
  }
  std::sort(found.begin(), found.end(),
            [&](Uid a, Uid c) { return trace.events[a].ts() < trace.events[c].ts(); });
  return found;
}

}  // namespace

std::optional<StepBounds> optimizer_step_bounds(const Trace& trace) {
  const std::vector<Uid> steps = timed_annotations(trace, "Optimizer.step#");
  if (steps.empty()) return std::nullopt;
  const Event& first_step = trace.events[steps.front()];
  const ProcId pid = trace.pid(first_step), tid = trace.tid(first_step);
  for (Uid u : steps)  // one loop: every step on one thread, none inside another
    if (trace.pid(trace.events[u]) != pid || trace.tid(trace.events[u]) != tid) return std::nullopt;
  for (size_t k = 1; k < steps.size(); ++k)
    if (trace.events[steps[k]].ts() < trace.events[steps[k - 1]].end()) return std::nullopt;
  // The first iteration begins with the thread's first op (a stray runtime
  // call of the profiler's own set-up before it is not the loop's).
  double first_op = trace.events[steps.front()].ts();
  for (Uid u = 0; u < trace.events.size(); ++u) {
    const Event& e = trace.events[u];
    if ((e.cat == Cat::CpuOp || e.cat == Cat::UserAnnotation) && e.has_ts() &&
        trace.pid(e) == pid && trace.tid(e) == tid)
      first_op = std::min(first_op, e.ts());
  }
  StepBounds out;
  out.source = kFromOptimizerStep;
  out.starts.push_back({first_op, pid, tid});
  for (size_t k = 0; k + 1 < steps.size(); ++k)
    out.starts.push_back({trace.events[steps[k]].end(), pid, tid});
  out.end = StepMark{trace.events[steps.back()].end(), pid, tid};
  // A window that opened inside an iteration leaves a first piece much
  // shorter than the steps after it: not an iteration.
  if (out.starts.size() >= 3) {
    std::vector<double> later;
    for (size_t k = 1; k < out.starts.size(); ++k)
      later.push_back((k + 1 < out.starts.size() ? out.starts[k + 1].ts : out.end->ts) -
                      out.starts[k].ts);
    std::nth_element(later.begin(), later.begin() + static_cast<long>(later.size() / 2),
                     later.end());
    const double median = later[later.size() / 2];
    if (out.starts[1].ts - out.starts[0].ts < 0.5 * median) out.starts.erase(out.starts.begin());
  }
  return out;
}

namespace {

bool same_count(const std::vector<std::optional<StepBounds>>& bounds) {
  return std::all_of(bounds.begin(), bounds.end(), [&](const auto& r) {
    return r && r->starts.size() == bounds.front()->starts.size();
  });
}

// Iteration bounds of ranks without ProfilerStep#N: the optimizer's steps
// when every rank has as many, else launch-sequence repeats when every rank
// has as many, else the repeats that end the sequence after a prefix (decode
// steps after a prefill) when every rank has as many, else none (the whole
// trace).
void detect_step_bounds(const std::vector<RankInput>& in,
                        std::vector<std::optional<StepBounds>>& bounds, Graph& g) {
  for (size_t k = 0; k < in.size(); ++k) bounds[k] = optimizer_step_bounds(*in[k].trace);
  if (same_count(bounds)) {
    g.iterations_source = kFromOptimizerStep;
    g.notes.push_back(fmt::format(
        "no ProfilerStep#N annotations: {} iteration(s) from the optimizer's Optimizer.step# "
        "annotations (each ends where a step's host annotation ends)",
        bounds.front()->starts.size()));
    return;
  }
  std::vector<std::optional<Repeats>> repeats(in.size());
  for (size_t k = 0; k < in.size(); ++k) repeats[k] = detect_repeats(*in[k].trace, *in[k].tree);
  for (size_t k = 0; k < in.size(); ++k)
    bounds[k] = repeats[k] ? std::optional(repeat_bounds(*in[k].trace, *repeats[k])) : std::nullopt;
  if (same_count(bounds)) {
    g.iterations_source = kFromDetectedRepeats;
    g.notes.push_back(fmt::format(
        "no ProfilerStep#N annotations: {} iterations detected as repeats of the launch "
        "sequence ({} launches each, covering {:.1f}% of the launches{})",
        repeats.front()->count, repeats.front()->period, 100.0 * repeats.front()->coverage,
        in.size() > 1 ? " on the first rank" : ""));
    return;
  }
  if (std::any_of(repeats.begin(), repeats.end(), [](const auto& r) { return r.has_value(); })) {
    g.notes.push_back("repeats of the launch sequence differ across ranks: not used as iterations");
    for (auto& r : bounds) r.reset();
    return;
  }
  // No step repeats the whole sequence: the steps after a prefix that
  // differs from them (an inference trace's decode steps after its prefill,
  // steps after a warm-up) are the iterations; the prefix stays outside.
  std::vector<std::optional<Repeats>> trailing(in.size());
  for (size_t k = 0; k < in.size(); ++k) {
    trailing[k] = detect_trailing_repeats(*in[k].trace, *in[k].tree);
    bounds[k] =
        trailing[k] ? std::optional(repeat_bounds(*in[k].trace, *trailing[k])) : std::nullopt;
  }
  if (same_count(bounds)) {
    g.iterations_source = kFromDetectedRepeats;
    g.notes.push_back(fmt::format(
        "no ProfilerStep#N annotations: {} iterations detected as the repeats of the launch "
        "sequence that end it ({} launches each) after {} other launches (decode steps after a "
        "prefill, or steps after a warm-up){}; the launches before them are outside the "
        "iterations",
        trailing.front()->count, trailing.front()->period, trailing.front()->first,
        in.size() > 1 ? " on the first rank" : ""));
    return;
  }
  for (auto& r : bounds) r.reset();
}

// Ranks with ProfilerStep#N where each step holds one generate() call (HF
// generate(), a serving loop profiled per request): a prefill, then decode
// steps that repeat one launch sequence to the step's end. When every
// ProfilerStep of every rank holds such repeats (detect_trailing_repeats in
// its window), and every rank as many, the decode steps are the iterations:
// each copy begins at its first launch call and ends where the next begins,
// the step's last one where the launches after it begin (a partial copy: the
// last token) or with the step. Else the bounds stay empty (the ProfilerSteps
// are the iterations).
void decode_step_bounds(const std::vector<RankInput>& in,
                        std::vector<std::optional<StepBounds>>& bounds, Graph& g) {
  size_t steps = 0, copies_min = SIZE_MAX, copies_max = 0, period = 0;
  for (size_t k = 0; k < in.size(); ++k) {
    const Trace& trace = *in[k].trace;
    const std::vector<Uid> marks = timed_annotations(trace, "ProfilerStep#");
    StepBounds out;
    out.source = kFromDecodeStepsInProfilerStep;
    for (Uid m : marks) {
      const Event& step = trace.events[m];
      const auto repeats = detect_trailing_repeats(trace, *in[k].tree, {{step.ts(), step.end()}});
      if (!repeats) {  // a step without decode steps: the ProfilerSteps stay
        for (auto& r : bounds) r.reset();
        return;
      }
      const StepBounds copies = repeat_bounds(trace, *repeats);
      for (size_t j = 0; j < copies.starts.size(); ++j) {
        out.starts.push_back(copies.starts[j]);
        out.names.push_back(fmt::format("{}/decode#{}", trace.name(m), j));
        if (j + 1 < copies.starts.size())
          out.ends.push_back(copies.starts[j + 1]);
        else if (copies.end)
          out.ends.push_back(*copies.end);
        else  // the last copy runs to the step's end, on its own thread
          out.ends.push_back({step.end(), copies.starts[j].pid, copies.starts[j].tid});
      }
      if (k == 0) {
        ++steps;
        copies_min = std::min(copies_min, repeats->count);
        copies_max = std::max(copies_max, repeats->count);
        period = repeats->period;
      }
    }
    if (out.starts.empty()) {
      for (auto& r : bounds) r.reset();
      return;
    }
    bounds[k] = std::move(out);
  }
  if (!same_count(bounds)) {
    for (auto& r : bounds) r.reset();
    return;
  }
  g.iterations_source = kFromDecodeStepsInProfilerStep;
  g.notes.push_back(fmt::format(
      "{} ProfilerStep#N each hold a prefill and {} decode steps (repeats of {} launches{}): the "
      "decode steps are the iterations (a token each); each step's set-up and prefill before "
      "them and its tail after them (a partial decode step, the call's return) lie outside the "
      "iterations, and the per-ProfilerStep figures (one generate() call) stand beside them",
      steps,
      copies_min == copies_max ? fmt::format("{}", copies_min)
                               : fmt::format("{}-{}", copies_min, copies_max),
      period, in.size() > 1 ? ", on the first rank" : ""));
}

}  // namespace

Graph build_graph(const std::vector<RankInput>& in) {
  if (in.empty()) throw CriticalPathError("no traces given");
  Builder b;
  // Room for the nodes and edges of every rank at once (each GPU op and
  // runtime call gives one or two of each), on huge pages: grown by doubling,
  // they were copied and faulted in at up to twice their size, a fault per 4
  // KiB. Room left unused is never touched.
  size_t gpu_and_calls = 0;
  for (const RankInput& r : in)
    gpu_and_calls += r.tree->gpu_event_uids().size() + r.tree->runtime_uids().size();
  b.g.nodes.reserve(2 * gpu_and_calls + 1024);
  b.g.edges.reserve(2 * gpu_and_calls + 1024);
  advise_huge_pages(b.g.nodes.data(), b.g.nodes.capacity() * sizeof(Node));
  advise_huge_pages(b.g.edges.data(), b.g.edges.capacity() * sizeof(Edge));
  std::vector<collectives::RankTrace> ranks;
  // Without ProfilerStep#N on any rank: the optimizer's steps, else repeats of
  // the launch sequence, used when every rank shows the same number of them.
  std::vector<std::optional<StepBounds>> bounds(in.size());
  bool no_steps = false;
  const auto pair_ranks_and_bound_steps = [&] {
    {
      PhaseTimer t("critical_path/build_graph/ranks");
      ranks = rank_traces(in, b.g.clock_offset_us);
    }
    no_steps = std::none_of(in.begin(), in.end(), [](const RankInput& r) {
      for (Uid u = 0; u < r.trace->events.size(); ++u)
        if (r.trace->events[u].cat == Cat::UserAnnotation &&
            r.trace->name(u).starts_with("ProfilerStep#"))
          return true;
      return false;
    });
    if (no_steps) {
      detect_step_bounds(in, bounds, b.g);
    } else {
      PhaseTimer decode_timer("critical_path/build_graph/decode_steps");
      decode_step_bounds(in, bounds, b.g);
    }
  };
  // Each rank's profiler cost reads its trace and tree alone: measured
  // beside the ranks' pairing and their steps, which do not read it (x256:
  // 33 ms, at the start of the graph's one-thread path).
  std::vector<ProfilerCost> costs(in.size());
  run_on_two_threads({[&] {
                        PhaseTimer t("critical_path/build_graph/profiler_cost");
                        for (size_t k = 0; k < in.size(); ++k)
                          costs[k] = measure_profiler_cost(*in[k].trace, *in[k].tree);
                      },
                      pair_ranks_and_bound_steps});
  for (const auto& r : ranks) b.g.input_ranks.push_back(r.rank);
  std::vector<std::unique_ptr<RankBuilder>> builders;
  std::vector<std::vector<collectives::CollectiveInstance>> colls;
  std::vector<std::vector<Step>> steps;
  bool any_missing_steps = false;
  size_t launch_edges = 0, recorded = 0, unresolved = 0;
  const bool decode_steps = b.g.iterations_source == kFromDecodeStepsInProfilerStep;
  std::vector<std::vector<Step>> profiler_steps;  // decode_steps: the ProfilerSteps, per rank
  for (size_t k = 0; k < in.size(); ++k) {
    const int64_t rank = ranks[k].rank;
    b.g.ranks.push_back(rank);
    const auto first = static_cast<uint32_t>(b.g.nodes.size());
    // A collective kernel without a time has no node (add_gpu_ops skips it):
    // it cannot wait, be waited for or join its ranks.
    std::erase_if(ranks[k].instances, [&](const collectives::CollectiveInstance& c) {
      const Event& e = in[k].trace->events[c.kernel.uid];
      return !e.has_ts() || !e.has_dur();
    });
    auto rb = std::make_unique<RankBuilder>(b, in[k], rank, b.g.clock_offset_us.at(rank),
                                            ranks[k].instances, bounds[k] ? &*bounds[k] : nullptr,
                                            costs[k]);
    rb->build();
    recorded += rb->recorded_waits;
    unresolved += rb->unresolved_waits;
    if (rb->busy.empty())
      throw CriticalPathError(
          fmt::format("{} (rank {}) has no GPU operations with timestamps: "
                      "there is no GPU work to put on a path",
                      in[k].trace->path, rank));
    launch_edges += rb->launch_edges;
    if (!rb->backlog.empty()) {
      b.g.backlog_nodes.insert(b.g.backlog_nodes.end(), rb->backlog.begin(), rb->backlog.end());
      b.g.backlog_us[rank] = rb->backlog_us;
    }
    any_missing_steps |= rb->steps.empty();
    steps.push_back(rb->steps);
    if (decode_steps) profiler_steps.push_back(rb->profiler_steps);
    if (rb->steps.empty())
      steps.back() = {
          whole_trace_step(b, *rb, rank, first, static_cast<uint32_t>(b.g.nodes.size()))};
    colls.push_back(std::move(ranks[k].instances));
    builders.push_back(std::move(rb));
  }
  if (!any_missing_steps && !no_steps && !decode_steps) b.g.iterations_source = kFromProfilerStep;
  b.g.recorded_waits = recorded;
  if (recorded > 0)
    b.g.notes.push_back(fmt::format(
        "cross-stream waits from {} recorded stream wait(s) (cuda_sync records){}", recorded,
        unresolved ? fmt::format("; {} could not be matched to their ops", unresolved) : ""));
  else if (unresolved > 0)
    b.g.notes.push_back(fmt::format(
        "{} recorded stream wait(s) could not be matched to their ops: cross-stream waits "
        "inferred around collectives",
        unresolved));
  if (any_missing_steps) {
    b.g.notes.push_back(
        "no ProfilerStep#N annotations on some rank and no repeats detected: the whole trace is "
        "one iteration there");
    if (in.size() > 1)  // iterations must pair up across ranks
      for (size_t k = 0; k < steps.size(); ++k)
        if (steps[k].size() != 1 || steps[k][0].name != "trace")
          throw CriticalPathError(fmt::format(
              "rank {} has ProfilerStep#N annotations but another rank has none: the ranks' "
              "iterations cannot be paired",
              ranks[k].rank));
  }
  if (launch_edges == 0)
    b.g.notes.push_back(
        "no launch links (ac2g flows / correlation ids): GPU work is not tied to the host, so "
        "the path cannot pass from host to GPU");
  std::vector<RankBuilder*> raw;
  for (auto& rb : builders) raw.push_back(rb.get());
  add_joins(b, raw, colls);
  add_iterations(b, steps, b.g.iterations);
  if (decode_steps) add_iterations(b, profiler_steps, b.g.profiler_steps);
  if (b.g.iterations.empty()) throw CriticalPathError("no iteration is recorded on every rank");
  std::optional<PhaseTimer> t(std::in_place, "critical_path/build_graph/order");
  detail::order_nodes(b.g);
  t.emplace("critical_path/build_graph/calibrate");
  estimate_launch_latency(b.g);
  calibrate(b.g);
  t.reset();
  note_backlog(b.g);
  std::sort(b.g.ranks.begin(), b.g.ranks.end());
  return std::move(b.g);
}

}  // namespace jarvis::critical_path
