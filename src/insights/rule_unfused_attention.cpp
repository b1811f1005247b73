// Attention written out by hand: a matmul, a softmax and another matmul in
// one module (scores = q @ k^T; p = softmax(scores); out = p @ v). The score
// matrix of size seq x seq goes to memory and back between the kernels;
// torch.nn.functional.scaled_dot_product_attention computes it on chip.
#include <algorithm>

#include <fmt/format.h>

#include "insights/rules_internal.h"

namespace jarvis::insights {
namespace {

bool is_matmul(std::string_view n) {
  return n == "aten::bmm" || n == "aten::matmul" || n == "aten::baddbmm" || n == "aten::einsum";
}
bool is_softmax(std::string_view n) {
  return n == "aten::softmax" || n == "aten::_softmax" || n == "aten::safe_softmax" ||
         n == "aten::_safe_softmax";
}

// Kernel time of an op's subtree.
double subtree_kernel_us(const InsightContext& c, Uid op) {
  double t = 0;
  for (Uid k : c.tree.gpu_events(op))
    if (c.trace.events[k].has_dur()) t += c.trace.events[k].dur();
  return t;
}

constexpr size_t kWindow = 4;  // siblings searched on each side of the softmax

}  // namespace

void rule_unfused_attention(const InsightContext& c, std::vector<Insight>& out) {
  std::vector<Uid> chains;  // softmax ops with a matmul before and after
  double chain_us = 0, softmax_us = 0;
  for (size_t u = 0; u < c.trace.events.size(); ++u) {
    Uid uid = static_cast<Uid>(u);
    if (c.trace.events[u].cat != Cat::CpuOp || !is_softmax(c.trace.name(uid))) continue;
    Uid parent = c.tree.parent(uid);
    if (parent == kNoUid) continue;
    auto siblings = c.tree.children(parent);
    size_t at = std::find(siblings.begin(), siblings.end(), uid) - siblings.begin();
    Uid before = kNoUid, after = kNoUid;
    for (size_t k = at; k > 0 && at - k < kWindow; --k)
      if (is_matmul(c.trace.name(siblings[k - 1]))) {
        before = siblings[k - 1];
        break;
      }
    for (size_t k = at + 1; k < siblings.size() && k - at <= kWindow; ++k)
      if (is_matmul(c.trace.name(siblings[k]))) {
        after = siblings[k];
        break;
      }
    if (before == kNoUid || after == kNoUid) continue;
    chains.push_back(uid);
    double s = subtree_kernel_us(c, uid);
    softmax_us += s;
    chain_us += s + subtree_kernel_us(c, before) + subtree_kernel_us(c, after);
  }
  if (chains.empty()) return;
  Insight i = detail::op_insight(c, "unfused_attention", "SDPA", chains, chain_us);
  // The softmax and its score-matrix round trip disappear in a fused kernel.
  i.gain_upper_bound_us = softmax_us;
  i.title = fmt::format(
      "{} hand-written attention blocks (matmul -> softmax -> matmul): {:.1f} us "
      "({:.1f}% of kernel time)",
      chains.size(), chain_us, 100 * i.share);
  i.detail =
      "The seq x seq score matrix is written to memory and read back between three "
      "kernels; a fused attention kernel keeps it on chip.";
  i.evidence = {{"blocks", chains.size()},
                {"chain_kernel_time_us", chain_us},
                {"softmax_kernel_time_us", softmax_us}};
  i.action_model =
      "Replace the block with torch.nn.functional.scaled_dot_product_attention "
      "(flash / memory-efficient backends).";
  i.action_kernel =
      "A fused attention kernel (FlashAttention, CK / AITER on ROCm) for these "
      "head and sequence sizes.";
  i.verify =
      "parent_chain on a softmax UID shows the module; check the softmax runs over the "
      "last dim of a (batch, heads, seq, seq) tensor, and that masking/dropout are "
      "supported by SDPA.";
  out.push_back(std::move(i));
}

}  // namespace jarvis::insights
