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
  size_t from = 0, to = 0;  // its ops: [from, to) of the chains' one list of ops
  double time_us = 0, max_op_us = 0;
};

struct ChainPattern {
  size_t count = 0;
  std::vector<Uid> ops;
  double time_us = 0, gain_us = 0;
};

// The chains by their ops' names joined with " -> ", in the order the chains
// were found (each pattern's ops in that order). A pattern's text is joined
// once per distinct sequence of interned names, not once per chain (x256:
// tens of thousands of chains over a few patterns); chains are added up by
// that text as before, so two sequences of one text (a name holding " -> ")
// still make one pattern.
std::map<std::string, ChainPattern> patterns_of(const Trace& trace, const std::vector<Uid>& ops,
                                                const std::vector<Chain>& chains) {
  std::map<std::string, ChainPattern> patterns;
  std::map<std::vector<uint32_t>, ChainPattern*> by_names;
  std::vector<uint32_t> names;
  for (const Chain& ch : chains) {
    names.clear();
    for (size_t k = ch.from; k < ch.to; ++k) names.push_back(trace.events[ops[k]].name);
    auto it = by_names.find(names);
    if (it == by_names.end()) {
      std::string key;
      for (uint32_t n : names) key += (key.empty() ? "" : " -> ") + std::string(trace.str(n));
      it = by_names.emplace(names, &patterns[key]).first;
    }
    ChainPattern& p = *it->second;
    ++p.count;
    p.ops.insert(p.ops.end(), ops.begin() + static_cast<std::ptrdiff_t>(ch.from),
                 ops.begin() + static_cast<std::ptrdiff_t>(ch.to));
    p.time_us += ch.time_us;
    p.gain_us += ch.time_us - ch.max_op_us;
  }
  return patterns;
}

}  // namespace

void rule_elementwise_chain(const InsightContext& c, std::vector<Insight>& out) {
  // The elementwise rows' kernel time by UID: the map's order is the order
  // the parents are visited in, which the findings' op lists keep; a bitmap
  // beside it answers the many lookups of siblings that are not elementwise
  // without probing the map.
  std::unordered_map<Uid, double> elementwise;
  std::vector<bool> is_elementwise(c.trace.events.size(), false);
  for (const auto& row : c.rows)
    // A synthetic unified row (an annotation-driven model) has a UID past the
    // trace: it has no place among the tree's siblings (found by fuzz_trace:
    // the tree lookups read out of bounds).
    if ((row.category == "elementwise" || is_pointwise_name(row.name)) && row.kernel_time_us > 0 &&
        row.uid < c.trace.events.size()) {
      elementwise[row.uid] = row.kernel_time_us;
      is_elementwise[row.uid] = true;
    }
  if (elementwise.size() < kMinChain) return;
  std::vector<Uid> chain_ops;
  std::vector<Chain> chains;
  Chain ch;
  auto flush = [&] {
    if (chain_ops.size() - ch.from >= kMinChain) {
      ch.to = chain_ops.size();
      chains.push_back(ch);
    } else {
      chain_ops.resize(ch.from);
    }
    ch = Chain{};
    ch.from = chain_ops.size();
  };
  std::vector<bool> seen_parent(c.trace.events.size(), false);
  for (const auto& [uid, kernel_us] : elementwise) {
    Uid parent = c.tree.parent(uid);
    if (parent == kNoUid || seen_parent[parent]) continue;
    seen_parent[parent] = true;
    for (Uid child : c.tree.children(parent)) {
      if (!is_elementwise[child]) {
        // Host-only ops (views, reshapes) launch nothing and do not break a chain.
        if (c.trace.events[child].cat == Cat::CpuOp && c.tree.gpu_events(child).empty()) continue;
        flush();
        continue;
      }
      const double child_us = elementwise.find(child)->second;
      chain_ops.push_back(child);
      ch.time_us += child_us;
      ch.max_op_us = std::max(ch.max_op_us, child_us);
    }
    flush();
  }
  std::map<std::string, ChainPattern> patterns = patterns_of(c.trace, chain_ops, chains);
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
