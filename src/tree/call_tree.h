// CallTree: the host call tree of a Kineto trace with GPU work attached, built
// exactly as TraceLens's TraceToTree does (spec tree-and-timeline.md §3-§6).
//
// TraceLens behaviours reproduced on purpose (see docs/deviations.md):
//  * Host events (cpu_op, cuda_runtime, cuda_driver, optionally python frames)
//    are nested per (pid, tid) by a stable sort on `ts` only; ties keep file
//    order, touching intervals are siblings.
//  * "Bleed" rule: an event that ends after the stack top is attached one
//    level up when the overlap is < 1 us and the stack holds >= 2 events;
//    otherwise it is skipped entirely (no parent, not a root, not pushed).
//  * Linking key = `correlation` if the first runtime/driver event whose name
//    contains "launch" has one, else `External id`.
//  * A launch finds its GPU event through the ac2g flow pair and the
//    (pid, tid, link) index of the flow end; later duplicates overwrite
//    earlier ones, so only the last GPU event per key is linkable.
//  * cudaGraphLaunch / hipGraphLaunch take every GPU event with their link value.
//  * gpu_events(x) lists the GPU events of x's subtree in runtime-UID order
//    (then order found), not in kernel start order.
//  * cpu_op_root: a cpu_op with no cpu_op below it on its thread's stack
//    (python frames do not count).
//  * fwd/bwd linking by `Sequence number`: the first
//    "autograd::engine::evaluate_function:" event of a number is the backward
//    op; the latest-starting event of that number on another thread is its
//    forward op.
// Deviations (safety): events without ts/dur are left out of the tree (Python
// would raise); a flow end that resolves to a non-GPU event is ignored
// (Python would attach it and could loop forever).
//
// Memory: a few flat vectors indexed by UID plus CSR arrays for children and
// gpu_events; no per-node heap objects.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "trace/trace.h"

namespace jarvis {

struct TreeOptions {
  bool include_python_frames = false;  // TraceLens add_python_func
};

// One node of a depth-limited subtree walk.
struct SubtreeNode {
  Uid uid;
  int depth;  // 0 = the start node
};

class CallTree {
 public:
  explicit CallTree(const Trace& trace, const TreeOptions& options = {});

  const Trace& trace() const { return *trace_; }
  const TreeOptions& options() const { return options_; }
  // "correlation" or "External id".
  // True when the trace has no launch flow events and launches were linked
  // to GPU events by the link value alone (older Kineto schemas).
  bool links_without_flows() const { return links_without_flows_; }
  std::string_view linking_key() const {
    return link_by_correlation_ ? "correlation" : "External id";
  }
  // The value of the linking key on an event, kNoInt when absent.
  int64_t link_value(Uid uid) const;

  // --- structure -------------------------------------------------------
  Uid parent(Uid uid) const { return parent_[uid]; }
  // Host children in processing order; a runtime call's GPU events follow.
  std::span<const Uid> children(Uid uid) const { return csr(child_off_, child_uids_, uid); }
  // GPU events of the subtree (TraceLens `gpu_events`, propagation order).
  std::span<const Uid> gpu_events(Uid uid) const { return csr(gpu_off_, gpu_uids_, uid); }
  // TraceLens `tree` flag: host event considered for the tree, or GPU event
  // attached to a launch.
  bool in_tree(Uid uid) const { return flags_[uid] & kInTree; }
  // GPU event attached to a launch (TraceLens "linked"; unlinked otherwise).
  bool is_linked(Uid uid) const { return trace_->events[uid].is_gpu() && (flags_[uid] & kInTree); }
  bool is_cpu_op_root(Uid uid) const { return flags_[uid] & kCpuOpRoot; }
  // Host events rejected by the bleed rule (no parent, not pushed).
  bool is_bleed_skipped(Uid uid) const { return flags_[uid] & kBleedSkipped; }
  // cpu_op roots in tree-build order (TraceLens cpu_root_nodes).
  const std::vector<Uid>& cpu_root_nodes() const { return cpu_root_nodes_; }
  // Runtime / driver events, UID order.
  const std::vector<Uid>& runtime_uids() const { return runtime_uids_; }
  // Every GPU event (kernel, memcpy, memset), UID order: a tenth of a
  // training trace's events, so passes over the GPU events walk this list
  // instead of the whole event array.
  const std::vector<Uid>& gpu_event_uids() const { return gpu_event_uids_; }
  // Each event's category, one byte per event: walks of the tree that test
  // categories read this instead of the 40-byte events (a cache miss per
  // node on a large trace).
  Cat cat(Uid uid) const { return cats_[uid]; }

  // Ancestors, leaf-first: parent, grandparent, ..., root (uid itself excluded).
  std::vector<Uid> parent_chain(Uid uid) const;
  // Depth-first pre-order walk of uid's subtree (children order), nodes at
  // depth <= max_depth (negative = unlimited). Includes GPU events.
  std::vector<SubtreeNode> subtree(Uid uid, int max_depth = -1) const;
  // Closest strict ancestor with cat cpu_op (any category is walked through,
  // `execute` included), kNoUid when none. For a kernel this is the
  // "Parent cpu_op" of kernel_summary.
  Uid nearest_cpu_op(Uid uid) const;
  // Names of the nn.Module python frames enclosing uid (outermost first, the
  // `_<digits>` instance suffix removed), or {"root"} when none — TraceLens's
  // nn_module_stack. Only meaningful with python frames in the tree.
  std::vector<std::string_view> nn_module_stack(Uid uid) const;

  // --- kernel launchers (spec §8) ---------------------------------------
  // The launcher of a GPU event: nearest cpu_op above its runtime call
  // (skipping cpu_ops named `execute`, passing through python frames, stopping
  // at any other category), else the runtime call itself. kNoUid for
  // unlinked GPU events and communication kernels.
  Uid launcher(Uid gpu_uid) const { return launcher_[gpu_uid]; }
  // GPU events whose launcher is uid, in UID order (TraceLens direct kernels).
  std::span<const Uid> direct_kernels(Uid uid) const;
  // All launchers ordered by ts (stable; ties in order of first kernel met).
  const std::vector<Uid>& launchers() const { return launchers_; }
  // Subtree kernels of a launcher / any host event (= gpu_events).
  std::span<const Uid> subtree_kernels(Uid uid) const { return gpu_events(uid); }

  // --- forward / backward (spec §6) -------------------------------------
  Uid fwd_event(Uid bwd_uid) const;
  std::span<const Uid> bwd_events(Uid fwd_uid) const;
  // Union of bwd_events over uid and its descendants, ascending UIDs.
  std::vector<Uid> subtree_bwd_events(Uid uid) const;

  // --- GPU time helpers ---------------------------------------------------
  // Busy time: length of the union of [ts, t_end) over the events (spec §7.6),
  // in double, merged in TraceLens order. 0 for an empty span.
  double busy_time(std::span<const Uid> gpu_uids) const;

  size_t size() const { return parent_.size(); }

 private:
  enum Flag : uint8_t { kInTree = 1, kCpuOpRoot = 2, kBleedSkipped = 4 };

  static std::span<const Uid> csr(const std::vector<uint32_t>& off, const std::vector<Uid>& data,
                                  Uid uid) {
    if (off.empty()) return {};
    return {data.data() + off[uid], data.data() + off[uid + 1]};
  }

  void choose_linking_key();
  using TimedUid = std::pair<double, Uid>;
  // Sets parent_ of the host events; returns them in (ts, uid) order.
  std::vector<TimedUid> build_host_tree();
  // (runtime, GPU event) pairs in TraceLens processing order; fills
  // runtime_uids_, gpu_event_uids_, cats_ and links_without_flows_.
  std::vector<std::pair<Uid, Uid>> launch_pairs();
  // The GPU event lists of the launches and their ancestors (the pairs'
  // parents are set first).
  void attach_gpu_events(const std::vector<std::pair<Uid, Uid>>& attached);
  void build_child_lists(const std::vector<TimedUid>& host_order,
                         const std::vector<std::pair<Uid, Uid>>& attached);
  void link_fwd_bwd();
  void find_launchers();

  const Trace* trace_;
  TreeOptions options_;
  bool link_by_correlation_ = false;
  bool links_without_flows_ = false;

  std::vector<Uid> parent_;
  std::vector<uint8_t> flags_;
  std::vector<uint32_t> child_off_;
  std::vector<Uid> child_uids_;
  std::vector<uint32_t> gpu_off_;
  std::vector<Uid> gpu_uids_;
  std::vector<Uid> cpu_root_nodes_;
  std::vector<Uid> runtime_uids_;
  std::vector<Uid> gpu_event_uids_;
  std::vector<Cat> cats_;  // by UID

  std::vector<Uid> launcher_;   // per UID (meaningful for GPU events)
  std::vector<Uid> launchers_;  // ts order
  // Direct kernels as a CSR over launcher slots (launchers numbered in order
  // of first kernel met): per UID its slot or kNoSlot, the slots' offsets
  // into direct_uids_, which holds each launcher's kernels in UID order.
  static constexpr uint32_t kNoSlot = UINT32_MAX;
  std::vector<uint32_t> launcher_slot_;
  std::vector<uint32_t> direct_off_;
  std::vector<Uid> direct_uids_;

  std::unordered_map<Uid, Uid> fwd_of_;
  std::unordered_map<Uid, std::vector<Uid>> bwd_of_;
};

// is_communication_name and the ROCm legacy copy / fill predicates live in
// trace/trace.h (evaluated once per interned name: Trace::is_communication).

// Union length of [ts, t_end) intervals (spec §7.3), TraceLens order.
double busy_time(const Trace& trace, std::span<const Uid> gpu_uids);

}  // namespace jarvis
