// Attention written out by hand: a matmul, a softmax and another matmul in
// one module (scores = q @ k^T; p = softmax(scores); out = p @ v). The score
// matrix of size seq x seq goes to memory and back between the kernels;
// torch.nn.functional.scaled_dot_product_attention computes it on chip.
#include <algorithm>
#include <iterator>
#include <optional>
#include <set>
#include <string>
#include <vector>

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

// The kernels of an op's subtree and of its backward ops (autograd's
// nodes linked to it and its descendants), into `out`.
void kernels_fwd_bwd(const InsightContext& c, Uid op, std::vector<Uid>& out) {
  for (Uid k : c.tree.gpu_events(op)) out.push_back(k);
  for (Uid b : c.tree.subtree_bwd_events(op))
    for (Uid k : c.tree.gpu_events(b)) out.push_back(k);
}

double time_of(const InsightContext& c, std::vector<Uid>& kernels) {
  std::sort(kernels.begin(), kernels.end());
  kernels.erase(std::unique(kernels.begin(), kernels.end()), kernels.end());
  double t = 0;
  for (Uid k : kernels)
    if (c.trace.events[k].has_dur()) t += c.trace.events[k].dur();
  return t;
}

// Ops searched on each side of the softmax (scale, mask, dropout and casts
// sit between the matmuls).
constexpr size_t kWindow = 6;

}  // namespace

void rule_unfused_attention(const InsightContext& c, std::vector<Insight>& out) {
  // A fused kernel keeps the score matrix on chip: the softmax, the scale,
  // mask, dropout and casts between the two matmuls and their backward
  // kernels disappear; the matmuls' FLOPs remain (the fused kernel does them
  // at about the rate the GEMMs run here).
  const detail::Siblings& siblings = detail::siblings(c);
  std::vector<Uid> scratch, chains, chain_ops, matmul_kernels, other_kernels;
  for (const Uid uid : detail::events_named(c, is_softmax)) {
    if (c.trace.events[uid].cat != Cat::CpuOp) continue;
    const auto level = siblings.of(uid, scratch);
    if (!level.at) continue;
    const size_t at = *level.at;
    std::optional<size_t> before, after;
    for (size_t k = at; k > 0 && at - k < kWindow; --k)
      if (is_matmul(c.trace.name(level.ops[k - 1]))) {
        before = k - 1;
        break;
      }
    for (size_t k = at + 1; k < level.ops.size() && k - at <= kWindow; ++k)
      if (is_matmul(c.trace.name(level.ops[k]))) {
        after = k;
        break;
      }
    if (!before || !after) continue;
    chains.push_back(uid);
    for (size_t k = *before; k <= *after; ++k) {
      const Uid op = level.ops[k];
      chain_ops.push_back(op);
      kernels_fwd_bwd(c, op, k == *before || k == *after ? matmul_kernels : other_kernels);
    }
  }
  if (chains.empty()) return;
  const double matmul_us = time_of(c, matmul_kernels);
  // A kernel under both lists (a matmul nested in a sibling) counts as a matmul.
  std::sort(other_kernels.begin(), other_kernels.end());
  std::vector<Uid> others;
  std::set_difference(other_kernels.begin(), other_kernels.end(), matmul_kernels.begin(),
                      matmul_kernels.end(), std::back_inserter(others));
  const double other_us = time_of(c, others);
  const double chain_us = matmul_us + other_us;
  // The finding's claim pools are the rows of every kernel of the blocks,
  // forward and backward, so what it may recover is the kernels' own time
  // (not only the forward ops' rows'); the step saving scales the kernels
  // between the matmuls by what that leaves them (size_step_savings), and
  // the what-if an agent replays is the same (issue 73 point 4: it was the
  // removal of all of them, 14.0 ms against 7.3 recoverable, with no what_if).
  std::vector<Uid> all_kernels = matmul_kernels;
  all_kernels.insert(all_kernels.end(), others.begin(), others.end());
  std::sort(all_kernels.begin(), all_kernels.end());
  // The blocks' own ops first (evidence.where names them: aten::softmax,
  // aten::matmul), then the other rows holding their kernels (backward).
  std::vector<Uid> pools = chain_ops;
  std::vector<Uid> sorted_ops = chain_ops;
  std::sort(sorted_ops.begin(), sorted_ops.end());
  for (Uid row : detail::rows_holding(c, all_kernels))
    if (!std::binary_search(sorted_ops.begin(), sorted_ops.end(), row)) pools.push_back(row);
  Insight i = detail::op_insight(c, "unfused_attention", "SDPA", pools, chain_us);
  // The kernels it is about, by name (the matmuls' and those between them,
  // forward and backward): what kernel_count counts.
  std::set<std::string> kernel_names;
  for (Uid k : all_kernels) kernel_names.emplace(c.trace.name(k));
  i.kernel_names.assign(kernel_names.begin(), kernel_names.end());
  i.gain_upper_bound_us = other_us;
  i.what_if = {{"kernel_uids", others}};
  i.title = fmt::format(
      "{} hand-written attention blocks (matmul -> softmax -> matmul): {:.1f} us of kernels "
      "forward and backward ({:.1f}% of kernel time), {:.1f} us of it outside the matmuls",
      chains.size(), chain_us, 100 * i.share, other_us);
  i.detail =
      "The seq x seq score matrix is written to memory and read back between the kernels "
      "(scale, mask, softmax, dropout, and their backward); a fused attention kernel keeps it "
      "on chip and leaves only the matmuls' work.";
  i.evidence = {{"blocks", chains.size()},
                {"chain_kernel_time_us", chain_us},
                {"matmul_kernel_time_us", matmul_us},
                {"between_matmuls_kernel_time_us", other_us},
                {"softmax_ops", chains}};
  i.action_model =
      "Replace the block with torch.nn.functional.scaled_dot_product_attention "
      "(flash / memory-efficient backends; HF: attn_implementation=\"sdpa\").";
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
