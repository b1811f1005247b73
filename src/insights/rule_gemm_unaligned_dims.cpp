// GEMM dimensions that are not multiples of what the tensor cores need for
// the dtype (8 elements for 16-bit types, 16 for fp8, 4 for tf32/fp32): the
// library falls back to narrow-alignment kernels (align1/align2), often of an
// older generation. The classic case is a vocabulary of 50257 in an LM head;
// padding it to 50304 (a multiple of 64) restores the fast kernels.
#include <map>

#include <fmt/format.h>

#include "insights/rules_internal.h"

namespace jarvis::insights {
namespace {

int64_t required_multiple(const std::string& precision) {
  if (precision == "fp8" || precision == "fp4") return 16;
  if (precision == "bf16" || precision == "fp16") return 8;
  if (precision == "fp32" || precision == "tf32") return 4;
  return 0;
}

// Dimensions this large are vocabularies (LM heads, embeddings), not hidden sizes.
constexpr int64_t kVocabularyLike = 30000;

int64_t round_up(int64_t x, int64_t m) {
  return (x + m - 1) / m * m;
}

struct Group {
  const report::PerfOpRow* first = nullptr;
  detail::GemmDims dims;
  std::vector<Uid> uids;
  double time_us = 0;
  double above_roofline_us = 0;
  bool has_roofline = true;
};

}  // namespace

void rule_gemm_unaligned_dims(const InsightContext& c, std::vector<Insight>& out) {
  std::map<std::string, Group> groups;  // by label: one insight per shape
  for (const auto& row : c.rows) {
    auto d = detail::gemm_dims(row);
    if (!d) continue;
    int64_t need = required_multiple(d->precision);
    if (need == 0 || (d->m % need == 0 && d->n % need == 0 && d->k % need == 0)) continue;
    Group& g = groups[detail::gemm_label(row, *d)];
    if (!g.first) g.first = &row, g.dims = *d;
    g.uids.push_back(row.uid);
    g.time_us += row.kernel_time_us;
    auto above = detail::time_above_roofline(row);
    g.has_roofline = g.has_roofline && above.has_value();
    g.above_roofline_us += above.value_or(0);
  }
  for (const auto& [label, g] : groups) {
    const auto& d = g.dims;
    int64_t need = required_multiple(d.precision);
    nlohmann::json misaligned = nlohmann::json::object();
    std::string pads, advice;
    for (auto [name, v] : {std::pair{"M", d.m}, {"N", d.n}, {"K", d.k}}) {
      if (v % need == 0) continue;
      std::string dim = name;
      // A vocabulary (LM head) pads to 64 like Megatron/nanoGPT do; the token
      // dimension M only to the tensor-core multiple.
      bool vocabulary = v >= kVocabularyLike;
      int64_t padded = round_up(v, vocabulary ? 64 : need);
      misaligned[dim] = {{"value", v}, {"pad_to", padded}};
      pads += fmt::format("{}{}={} -> {}", pads.empty() ? "" : ", ", dim, v, padded);
      if (!advice.empty()) advice += " ";
      if (vocabulary)
        advice += fmt::format(
            "{}={} looks like a vocabulary: pad it to {} and mask the extra "
            "logits.",
            dim, v, padded);
      else if (dim == "M")
        advice += fmt::format(
            "M={} is the token count (batch x sequence): pad the sequences to "
            "a multiple of {} (e.g. the tokenizer's pad_to_multiple_of).",
            v, need);
      else
        advice += fmt::format("Pad the {} dimension {} to {}.", dim, v, padded);
    }
    Insight i = detail::op_insight(c, "gemm_unaligned_dims", "GEMM", g.uids, g.time_us);
    i.kernel_names = detail::kernel_names(c.trace, *g.first);
    if (g.has_roofline) i.gain_upper_bound_us = g.above_roofline_us;
    i.title = fmt::format("{}: {} not a multiple of {} for {} ({:.1f}% of kernel time, x{})", label,
                          pads.substr(0, pads.find(" ->")), need, d.precision, 100 * i.share,
                          g.uids.size());
    i.detail = fmt::format(
        "Tensor-core GEMM kernels need every dimension to be a multiple of {} elements for {}; "
        "otherwise the library falls back to narrow-alignment kernels.",
        need, d.precision);
    i.evidence = {{"M", d.m},
                  {"N", d.n},
                  {"K", d.k},
                  {"batch", d.batch},
                  {"dtype", d.precision},
                  {"required_multiple", need},
                  {"misaligned", misaligned},
                  {"calls", g.uids.size()}};
    i.action_model = advice;
    i.action_kernel =
        "Ask for an alignment-tolerant tensor-core kernel (cuBLASLt / hipBLASLt heuristics "
        "with the padded leading dimension), or pad inside the op.";
    i.verify =
        "Check the kernel names: narrow alignment shows as align1/align2 (CUTLASS) and "
        "the kernel may target an older arch; replay the op with the padded shape "
        "(make_replay) and compare times.";
    out.push_back(std::move(i));
  }
}

}  // namespace jarvis::insights
