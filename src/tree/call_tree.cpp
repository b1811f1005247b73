#include "tree/call_tree.h"

#include <algorithm>
#include <cctype>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/huge_pages.h"
#include "base/sort_runs.h"
#include "base/two_threads.h"
#include "pycompat/text.h"
#include "tree/last_uid_by_key.h"

namespace jarvis {

namespace {

// Key of the (thread, link) index: Event::thread stands for the (pid, tid)
// pair.
struct LinkKey {
  uint32_t thread;
  int64_t link;
  auto operator<=>(const LinkKey&) const = default;
};

}  // namespace

double busy_time(const Trace& trace, std::span<const Uid> gpu_uids) {
  std::vector<std::pair<double, double>> iv;
  iv.reserve(gpu_uids.size());
  for (Uid u : gpu_uids) {
    const Event& e = trace.events[u];
    if (e.has_ts() && e.has_dur()) iv.emplace_back(e.ts(), e.end());
  }
  if (iv.empty()) return 0.0;
  // Usually in order already (an op's kernels in launch order).
  stable_sort_runs(iv, [](const auto& a, const auto& b) { return a.first < b.first; });
  double total = 0.0;
  double start = iv[0].first, end = iv[0].second;
  for (size_t k = 1; k < iv.size(); ++k) {
    if (iv[k].first <= end) {
      end = std::max(end, iv[k].second);
    } else {
      total += end - start;
      start = iv[k].first;
      end = iv[k].second;
    }
  }
  total += end - start;
  return total;
}

CallTree::CallTree(const Trace& trace, const TreeOptions& options)
    : trace_(&trace), options_(options) {
  const size_t n = trace.events.size();
  assign_on_huge_pages(parent_, n, kNoUid);
  assign_on_huge_pages(flags_, n, uint8_t{0});
  choose_linking_key();
  // The launch -> GPU event pairs, the host tree and the fwd/bwd links read
  // the trace and write members the others do not; with a second core they
  // are taken in turn by two threads (the pairs and the host tree cost about
  // the same, the links less). The passes after them wait for the pairs and
  // the host tree: finding the GPU events' launchers (after setting each GPU
  // event's parent), attaching the GPU events to their launches' ancestors
  // and building the child lists (host children from the host tree, GPU
  // children from the pairs). They read the parents and each writes members
  // of its own, so they too run side by side, on the same two threads (a
  // second call would start its helper thread anew).
  std::vector<std::pair<Uid, Uid>> attached;
  std::vector<TimedUid> host_order;
  TaskLatch pairs_done, host_done;
  auto after_both = [&](auto&& pass) {
    return [&, pass] {
      pairs_done.wait();
      host_done.wait();
      pass();
    };
  };
  run_on_two_threads({[&] { pairs_done.run([&] { attached = launch_pairs(); }); },
                      [&] { host_done.run([&] { host_order = build_host_tree(); }); },
                      [&] { link_fwd_bwd(); }, after_both([&] {
                        // Each GPU event's parent is its launch (the last pair naming it
                        // wins). The host tree wrote the host events' parents and flags.
                        for (auto [r, g] : attached) {
                          parent_[g] = r;
                          flags_[g] |= kInTree;
                        }
                        find_launchers();
                      }),
                      after_both([&] { attach_gpu_events(attached); }),
                      after_both([&] { build_child_lists(host_order, attached); })});
}

namespace {

// The CSR arrays are built without a second per-event array (fresh memory is
// what a large tree costs most): counts go to off[u + 1], a prefix sum makes
// off[u] the start of u's range, the fill advances off[u] as its cursor, and
// offsets_from_cursors shifts the ends back into starts.
void offsets_from_counts(std::vector<uint32_t>& off) {
  for (size_t u = 1; u < off.size(); ++u) off[u] += off[u - 1];
}

void offsets_from_cursors(std::vector<uint32_t>& off) {
  for (size_t u = off.size() - 1; u > 0; --u) off[u] = off[u - 1];
  off[0] = 0;
}

}  // namespace

void CallTree::build_child_lists(const std::vector<TimedUid>& host_order,
                                 const std::vector<std::pair<Uid, Uid>>& attached) {
  // Each node's host children in the order the host tree met them, then its
  // attached GPU events in launch order. A host event left without a parent
  // (a root, or one skipped for bleeding out of its parent) is no one's child.
  const size_t n = trace_->events.size();
  assign_on_huge_pages(child_off_, n + 1, uint32_t{0});
  for (const auto& [ts, u] : host_order)
    if (parent_[u] != kNoUid) ++child_off_[parent_[u] + 1];
  for (auto [r, g] : attached) ++child_off_[r + 1];
  offsets_from_counts(child_off_);
  assign_on_huge_pages(child_uids_, child_off_[n], kNoUid);
  for (const auto& [ts, u] : host_order)
    if (parent_[u] != kNoUid) child_uids_[child_off_[parent_[u]]++] = u;
  for (auto [r, g] : attached) child_uids_[child_off_[r]++] = g;
  offsets_from_cursors(child_off_);
}

int64_t CallTree::link_value(Uid uid) const {
  const Event& e = trace_->events[uid];
  return link_by_correlation_ ? trace_->correlation(e) : trace_->external_id(e);
}

void CallTree::choose_linking_key() {
  for (size_t u = 0; u < trace_->events.size(); ++u) {
    const Event& e = trace_->events[u];
    if (!e.is_runtime()) continue;
    if (!pycompat::ascii_icontains(trace_->name(static_cast<Uid>(u)), "launch")) continue;
    link_by_correlation_ = trace_->correlation(e) != kNoInt;
    return;
  }
  link_by_correlation_ = false;
}

std::vector<CallTree::TimedUid> CallTree::build_host_tree() {
  const Trace& t = *trace_;
  std::vector<TimedUid> order;
  order.reserve(t.events.size());  // address space only: pages are touched as they fill
  advise_huge_pages(order.data(), order.capacity() * sizeof(TimedUid));
  for (size_t u = 0; u < t.events.size(); ++u) {
    const Event& e = t.events[u];
    bool host = e.cat == Cat::CpuOp || e.is_runtime() ||
                (options_.include_python_frames && e.cat == Cat::PythonFunction);
    if (!host || !e.has_ts() || !e.has_dur()) continue;
    order.emplace_back(e.ts(), static_cast<Uid>(u));
  }
  // Sorting (ts, uid) pairs == a stable sort on ts. The host events come
  // nearly in ts order (a run per thread switch), so the runs are merged.
  stable_sort_runs(order);

  // An open event keeps its end time: computed once (ns to µs, a division)
  // instead of at every comparison with a later event.
  struct Open {
    Uid uid;
    double end;
    bool cpu_op;
  };
  struct ThreadState {
    std::vector<Open> stack;
    int cpu_ops = 0;
  };
  std::vector<ThreadState> threads(t.threads.size());  // by Event::thread, the (pid, tid) pair
  auto pop = [](ThreadState& s) {
    if (s.stack.back().cpu_op) --s.cpu_ops;
    s.stack.pop_back();
  };

  for (const auto& [ts, uid] : order) {  // ts == the event's ts()
    const Event& e = t.events[uid];
    flags_[uid] |= kInTree;
    ThreadState& s = threads[e.thread];
    while (!s.stack.empty() && ts >= s.stack.back().end) pop(s);
    const double end = e.end();
    if (!s.stack.empty() && end > s.stack.back().end) {
      double overlap = s.stack.back().end - ts;
      if (overlap < 1.0 && s.stack.size() >= 2) {
        pop(s);
      } else {
        flags_[uid] |= kBleedSkipped;
        continue;
      }
    }
    if (!s.stack.empty()) parent_[uid] = s.stack.back().uid;
    const bool cpu_op = e.cat == Cat::CpuOp;
    s.stack.push_back({uid, end, cpu_op});
    if (cpu_op) {
      if (s.cpu_ops == 0) {
        flags_[uid] |= kCpuOpRoot;
        cpu_root_nodes_.push_back(uid);
      }
      ++s.cpu_ops;
    }
  }
  return order;
}

std::vector<std::pair<Uid, Uid>> CallTree::launch_pairs() {
  const Trace& t = *trace_;
  const size_t n = t.events.size();
  LastUidByKey<int64_t> flow_start, flow_end;  // by flow id
  bool any_graph_launch = false;
  // Flow ends name the thread (GPU stream) of the event they point at; only
  // events on those threads can be found through them.
  std::vector<uint8_t> flow_end_thread(t.threads.size(), 0);
  cats_.resize(n);
  for (size_t u = 0; u < n; ++u) {
    const Event& e = t.events[u];
    cats_[u] = e.cat;
    if (e.is_gpu()) gpu_event_uids_.push_back(static_cast<Uid>(u));
    if (e.is_runtime()) {
      runtime_uids_.push_back(static_cast<Uid>(u));
      std::string_view name = t.name(static_cast<Uid>(u));
      if (name == "cudaGraphLaunch" || name == "hipGraphLaunch") any_graph_launch = true;
    }
    if (e.cat != Cat::Ac2g) continue;
    if (e.ph == Phase::FlowStart) flow_start.add(t.flow_id(e), static_cast<Uid>(u));
    if (e.ph == Phase::FlowEnd) {
      flow_end.add(t.flow_id(e), static_cast<Uid>(u));
      flow_end_thread[e.thread] = 1;
    }
  }
  // The last event with args per (thread, link), on the flow-end threads
  // with both a pid and a tid.
  flow_start.seal();
  flow_end.seal();
  LastUidByKey<LinkKey> by_link;
  for (size_t u = 0; u < n; ++u) {
    const Event& e = t.events[u];
    if (!flow_end_thread[e.thread] || e.cat == Cat::Ac2g || !e.has_args) continue;
    int64_t link = link_value(static_cast<Uid>(u));
    if (link == kNoInt) continue;
    if (t.pid(e).present() && t.tid(e).present())
      by_link.add({e.thread, link}, static_cast<Uid>(u));
  }
  by_link.seal_by_bucket(t.threads.size(), [](const LinkKey& k) { return k.thread; });
  std::unordered_map<int64_t, std::vector<Uid>> gpu_by_link;
  // Older traces carry no launch flows at all: the runtime call and its GPU
  // event then share only the link value (correlation). Link by it, last
  // GPU event per value, as HTA does (TraceLens finds no GPU events there).
  links_without_flows_ = flow_start.empty() && flow_end.empty();
  std::unordered_map<int64_t, Uid> gpu_by_link_value;
  if (links_without_flows_) {
    for (size_t u = 0; u < n; ++u) {
      const Event& e = t.events[u];
      if (!e.is_gpu() || !e.has_args) continue;
      int64_t link = link_value(static_cast<Uid>(u));
      if (link != kNoInt) gpu_by_link_value[link] = static_cast<Uid>(u);
    }
  }
  if (any_graph_launch) {
    for (size_t u = 0; u < n; ++u) {
      const Event& e = t.events[u];
      int64_t link = link_value(static_cast<Uid>(u));
      if (e.is_gpu() && e.has_args && link != kNoInt)
        gpu_by_link[link].push_back(static_cast<Uid>(u));
    }
  }

  // (runtime, gpu event) pairs in TraceLens processing order.
  std::vector<std::pair<Uid, Uid>> attached;
  size_t flow_start_hint = 0, flow_end_hint = 0, by_link_hint = 0;
  for (Uid r : runtime_uids_) {
    std::string_view name = t.name(r);
    int64_t link = link_value(r);
    if (name == "cudaGraphLaunch" || name == "hipGraphLaunch") {
      if (link == kNoInt) continue;
      auto it = gpu_by_link.find(link);
      if (it == gpu_by_link.end()) continue;
      for (Uid g : it->second) attached.emplace_back(r, g);
      continue;
    }
    if (link == kNoInt) continue;
    if (links_without_flows_) {
      auto g = gpu_by_link_value.find(link);
      if (g != gpu_by_link_value.end()) attached.emplace_back(r, g->second);
      continue;
    }
    Uid f = flow_end.find(link, flow_end_hint);
    if (flow_start.find(link, flow_start_hint) == kNoUid || f == kNoUid) continue;
    const Event& fe = t.events[f];
    Uid g = by_link.find({fe.thread, t.flow_id(fe)}, by_link_hint);
    if (g == kNoUid || !t.events[g].is_gpu()) continue;
    attached.emplace_back(r, g);
  }
  return attached;
}

void CallTree::attach_gpu_events(const std::vector<std::pair<Uid, Uid>>& attached) {
  // gpu_events CSR: count per node (runtime and its ancestors), then fill.
  assign_on_huge_pages(gpu_off_, trace_->events.size() + 1, uint32_t{0});
  for (auto [r, g] : attached)
    for (Uid p = r; p != kNoUid; p = parent_[p]) ++gpu_off_[p + 1];
  offsets_from_counts(gpu_off_);
  assign_on_huge_pages(gpu_uids_, gpu_off_.back(), kNoUid);
  for (auto [r, g] : attached)
    for (Uid p = r; p != kNoUid; p = parent_[p]) gpu_uids_[gpu_off_[p]++] = g;
  offsets_from_cursors(gpu_off_);
}

void CallTree::link_fwd_bwd() {
  const Trace& t = *trace_;
  std::unordered_map<int64_t, size_t> index;
  std::vector<std::vector<Uid>> groups;
  for (size_t u = 0; u < t.events.size(); ++u) {
    const Event& e = t.events[u];
    if (e.cat == Cat::Ac2g || !e.has_args || t.sequence_number(e) == kNoInt) continue;
    auto [it, fresh] = index.emplace(t.sequence_number(e), groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].push_back(static_cast<Uid>(u));
  }
  for (const auto& uids : groups) {
    Uid bwd = kNoUid;
    for (Uid u : uids)
      if (t.name(u).starts_with("autograd::engine::evaluate_function:")) {
        bwd = u;
        break;
      }
    if (bwd == kNoUid) continue;
    const Event& b = t.events[bwd];
    Uid fwd = kNoUid;
    double best = -1;
    for (Uid u : uids) {
      const Event& e = t.events[u];
      if (t.pid(e) == t.pid(b) && t.tid(e) == t.tid(b)) continue;
      double ts = e.has_ts() ? e.ts() : 0.0;
      if (ts > best) {
        best = ts;
        fwd = u;
      }
    }
    if (fwd == kNoUid) continue;
    fwd_of_[bwd] = fwd;
    bwd_of_[fwd].push_back(bwd);
  }
}

void CallTree::find_launchers() {
  const Trace& t = *trace_;
  const size_t n = t.events.size();
  assign_on_huge_pages(launcher_, n, kNoUid);
  assign_on_huge_pages(launcher_slot_, n, kNoSlot);
  std::vector<Uid> first_met;          // launchers in order of first kernel met
  std::vector<uint32_t> kernel_count;  // per launcher slot
  for (Uid u : gpu_event_uids_) {
    if (t.is_communication(u)) continue;
    Uid r = parent_[u];
    if (r == kNoUid) continue;
    Uid found = kNoUid;
    for (Uid cur = parent_[r]; cur != kNoUid;) {
      const Cat c = cats_[cur];
      if (c == Cat::CpuOp) {
        if (t.name(cur) == "execute") {
          cur = parent_[cur];
          continue;
        }
        found = cur;
        break;
      }
      if (c != Cat::PythonFunction) break;
      cur = parent_[cur];
    }
    Uid l = found != kNoUid ? found : r;
    launcher_[u] = l;
    uint32_t& slot = launcher_slot_[l];
    if (slot == kNoSlot) {
      slot = static_cast<uint32_t>(first_met.size());
      first_met.push_back(l);
      kernel_count.push_back(0);
    }
    ++kernel_count[slot];
  }
  // Direct kernels: contiguous ranges in launcher first-met order.
  direct_off_.assign(first_met.size() + 1, 0);
  for (size_t s = 0; s < first_met.size(); ++s)
    direct_off_[s + 1] = direct_off_[s] + kernel_count[s];
  direct_uids_.resize(direct_off_.back());
  std::vector<uint32_t>& cursor = kernel_count;  // reused: each slot's next free position
  std::copy(direct_off_.begin(), direct_off_.end() - 1, cursor.begin());
  for (Uid u : gpu_event_uids_) {  // only GPU events have launchers
    Uid l = launcher_[u];
    if (l == kNoUid) continue;
    direct_uids_[cursor[launcher_slot_[l]]++] = u;
  }
  launchers_ = first_met;
  stable_sort_runs(launchers_, [&](Uid a, Uid b) {
    double ta = t.events[a].has_ts() ? t.events[a].ts() : 0.0;
    double tb = t.events[b].has_ts() ? t.events[b].ts() : 0.0;
    return ta < tb;
  });
}

std::span<const Uid> CallTree::direct_kernels(Uid uid) const {
  uint32_t slot = uid < launcher_slot_.size() ? launcher_slot_[uid] : kNoSlot;
  if (slot == kNoSlot) return {};
  return {direct_uids_.data() + direct_off_[slot], direct_uids_.data() + direct_off_[slot + 1]};
}

std::vector<Uid> CallTree::parent_chain(Uid uid) const {
  std::vector<Uid> out;
  for (Uid p = parent_[uid]; p != kNoUid; p = parent_[p]) out.push_back(p);
  return out;
}

std::vector<SubtreeNode> CallTree::subtree(Uid uid, int max_depth) const {
  std::vector<SubtreeNode> out;
  std::vector<SubtreeNode> stack{{uid, 0}};
  while (!stack.empty()) {
    SubtreeNode node = stack.back();
    stack.pop_back();
    out.push_back(node);
    if (max_depth >= 0 && node.depth >= max_depth) continue;
    auto kids = children(node.uid);
    for (size_t k = kids.size(); k-- > 0;) stack.push_back({kids[k], node.depth + 1});
  }
  return out;
}

Uid CallTree::nearest_cpu_op(Uid uid) const {
  for (Uid p = parent_[uid]; p != kNoUid; p = parent_[p])
    if (trace_->events[p].cat == Cat::CpuOp) return p;
  return kNoUid;
}

std::vector<std::string_view> CallTree::nn_module_stack(Uid uid) const {
  std::vector<std::string_view> out;
  for (Uid p = parent_[uid]; p != kNoUid; p = parent_[p]) {
    if (trace_->events[p].cat != Cat::PythonFunction) continue;
    std::string_view name = trace_->name(p);
    if (!name.starts_with("nn.Module:")) continue;
    // Remove a trailing _<digits>.
    size_t end = name.size();
    while (end > 0 && std::isdigit(static_cast<unsigned char>(name[end - 1]))) --end;
    if (end < name.size() && end > 0 && name[end - 1] == '_') name = name.substr(0, end - 1);
    out.push_back(name);
  }
  std::reverse(out.begin(), out.end());
  if (out.empty()) out.push_back("root");
  return out;
}

Uid CallTree::fwd_event(Uid bwd_uid) const {
  auto it = fwd_of_.find(bwd_uid);
  return it == fwd_of_.end() ? kNoUid : it->second;
}

std::span<const Uid> CallTree::bwd_events(Uid fwd_uid) const {
  auto it = bwd_of_.find(fwd_uid);
  if (it == bwd_of_.end()) return {};
  return it->second;
}

std::vector<Uid> CallTree::subtree_bwd_events(Uid uid) const {
  std::unordered_set<Uid> seen;
  for (const SubtreeNode& node : subtree(uid))
    for (Uid b : bwd_events(node.uid)) seen.insert(b);
  std::vector<Uid> out(seen.begin(), seen.end());
  std::sort(out.begin(), out.end());
  return out;
}

double CallTree::busy_time(std::span<const Uid> gpu_uids) const {
  return jarvis::busy_time(*trace_, gpu_uids);
}

}  // namespace jarvis
