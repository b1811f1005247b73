// Chains of elementwise ops launched one after another by the same parent
// (x * a + b -> tanh -> * 0.5 ...): each op reads and writes the whole tensor,
// where one fused kernel (torch.compile / a hand-fused kernel) reads the
// inputs once and writes the result once.
#include <algorithm>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include "insights/rules_internal.h"

namespace jarvis::insights {
namespace {

constexpr size_t kMinChain = 3;

// Pointwise ops TraceLens files under "other" (no elementwise perf model).
bool is_pointwise_name(std::string_view n) {
  for (std::string_view p : {"aten::tanh", "aten::sigmoid", "aten::exp", "aten::gelu", "aten::silu",
                             "aten::relu", "aten::sqrt", "aten::rsqrt", "aten::neg", "aten::abs",
                             "aten::where", "aten::clamp", "aten::erf", "aten::log"})
    if (n == p) return true;
  return false;
}

struct Chain {
  std::vector<Uid> ops;
  double time_us = 0, max_op_us = 0;
};

struct ChainPattern {
  size_t count = 0;
  std::vector<Uid> ops;
  double time_us = 0, gain_us = 0;
};

}  // namespace

void rule_elementwise_chain(const InsightContext& c, std::vector<Insight>& out) {
  std::unordered_map<Uid, const report::PerfOpRow*> elementwise;
  for (const auto& row : c.rows)
    // A synthetic unified row (an annotation-driven model) has a UID past the
    // trace: it has no place among the tree's siblings (found by fuzz_trace:
    // the tree lookups read out of bounds).
    if ((row.category == "elementwise" || is_pointwise_name(row.name)) && row.kernel_time_us > 0 &&
        row.uid < c.trace.events.size())
      elementwise[row.uid] = &row;
  if (elementwise.size() < kMinChain) return;
  std::map<std::string, ChainPattern> patterns;  // by the chain's op names
  auto flush = [&](Chain& ch) {
    if (ch.ops.size() >= kMinChain) {
      std::string key;
      for (Uid u : ch.ops) key += (key.empty() ? "" : " -> ") + std::string(c.trace.name(u));
      ChainPattern& p = patterns[key];
      ++p.count;
      p.ops.insert(p.ops.end(), ch.ops.begin(), ch.ops.end());
      p.time_us += ch.time_us;
      p.gain_us += ch.time_us - ch.max_op_us;
    }
    ch = Chain{};
  };
  std::vector<bool> seen_parent(c.trace.events.size(), false);
  for (const auto& [uid, row] : elementwise) {
    Uid parent = c.tree.parent(uid);
    if (parent == kNoUid || seen_parent[parent]) continue;
    seen_parent[parent] = true;
    Chain ch;
    for (Uid child : c.tree.children(parent)) {
      auto it = elementwise.find(child);
      if (it == elementwise.end()) {
        // Host-only ops (views, reshapes) launch nothing and do not break a chain.
        if (c.trace.events[child].cat == Cat::CpuOp && c.tree.gpu_events(child).empty()) continue;
        flush(ch);
        continue;
      }
      ch.ops.push_back(child);
      ch.time_us += it->second->kernel_time_us;
      ch.max_op_us = std::max(ch.max_op_us, it->second->kernel_time_us);
    }
    flush(ch);
  }
  for (auto& [key, p] : patterns) {
    Insight i = detail::op_insight(c, "elementwise_chain", "elementwise", p.ops, p.time_us);
    i.gain_upper_bound_us = p.gain_us;
    // The time is the chain's, all its ops together: say so, or it reads as
    // the first op's (which ops_summary gives on its own row).
    const size_t links = static_cast<size_t>(std::count(key.begin(), key.end(), '>')) + 1;
    i.title = fmt::format(
        "Unfused elementwise chain x{}: {} ({:.1f} us of kernels, the {} ops of the {} chains "
        "together; {:.1f}% of kernel time)",
        p.count, key, p.time_us, links, p.count, 100 * i.share);
    i.detail =
        "Consecutive elementwise kernels each read and write the full tensor; a fused "
        "kernel does one pass.";
    i.evidence = {{"chain", key}, {"occurrences", p.count}, {"ops", p.ops.size()}};
    i.action_model =
        "torch.compile the module (Inductor fuses pointwise chains), or use the "
        "fused PyTorch op when one exists (e.g. F.gelu(approximate='tanh')).";
    i.action_kernel = "One fused kernel for the chain (Triton or a hand-written CUDA/HIP kernel).";
    i.verify =
        "parent_chain on the first UID shows the module; check that the intermediate "
        "tensors are not needed elsewhere (saved for backward forces them to memory).";
    out.push_back(std::move(i));
  }
}

}  // namespace jarvis::insights
