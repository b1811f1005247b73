// GEMM operands whose contiguous dimension or leading-dimension stride is not
// a multiple of what the tensor cores load in one vector (8 elements for
// 16-bit types, 16 for fp8, 4 for tf32/fp32): the library falls back to
// narrow-alignment kernels (align1/align2), often of an older generation. The
// classic case is a vocabulary of 50257 in an LM head; padding it to 50304 (a
// multiple of 64) restores the fast kernels.
//
// Only leading dimensions count. For row-major A (M x K), B (K x N) and C
// (M x N) those are K and N; M (the token or batch count) is one only when an
// operand is stored transposed so that M is contiguous. Padding M otherwise
// adds work and buys nothing. The layout comes from the trace's Input Strides
// where it has them.
//
// The gain is modelled, not the op's whole time: the op's padded FLOPs at the
// rate aligned GEMMs of the same dtype and similar size reach in the same
// trace, capped by the op's time above its roofline.
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

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

// Reference GEMMs for the gain model: no larger per call than the op (larger
// GEMMs run faster, so the model stays conservative) and no smaller than this
// fraction of it.
constexpr double kSmallestReference = 1.0 / 64;

int64_t round_up(int64_t x, int64_t m) {
  return (x + m - 1) / m * m;
}

// One extent or stride a tensor-core kernel loads along. Its reason is
// put in words only for the dimensions a finding reports (why_text): every
// GEMM row's dimensions are read, a few are reported.
struct LeadingDim {
  std::string_view name;  // "M", "N", "K", "lda", "ldb"
  int64_t value = 0;
  enum class Why { Contiguous, ViewStride, Backward, RowMajorA, RowMajorC } why = Why::RowMajorC;
  const char* op = "";      // the operand (Contiguous, ViewStride)
  bool transposed = false;  // the operand is stored transposed (Contiguous)
};

std::string why_text(const LeadingDim& l) {
  switch (l.why) {
    case LeadingDim::Why::Contiguous:
      return fmt::format("{} is contiguous in {}{}", l.name, l.op,
                         l.transposed ? " (stored transposed)" : "");
    case LeadingDim::Why::ViewStride:
      return fmt::format("{}'s leading-dimension stride (a view)", l.op);
    case LeadingDim::Why::Backward:
      return "a leading dimension of one of the backward GEMMs";
    case LeadingDim::Why::RowMajorA:
      return "contiguous in row-major A (and in B^T of nn.Linear weights)";
    case LeadingDim::Why::RowMajorC:
      return "contiguous in the row-major output C";
  }
  return "";
}

// Which of an operand's two dimensions is contiguous, from its strides.
enum class Contiguous { Rows, Cols };

Contiguous contiguous_of(const std::vector<int64_t>& strides) {
  // A strided view with neither stride 1 is copied row-major before the GEMM.
  return strides[1] != 1 && strides[0] == 1 ? Contiguous::Rows : Contiguous::Cols;
}

void add_dim(std::vector<LeadingDim>& out, LeadingDim d) {
  for (const auto& o : out)
    if (o.name == d.name) return;
  out.push_back(d);
}

// The contiguous dimension of operand `op` (rows x cols, each a name and an
// extent) and its leading-dimension stride when a view makes that differ
// from the contiguous extent.
void operand_dims(std::vector<LeadingDim>& out, const char* op, const char* ld,
                  const std::vector<int64_t>& strides, std::pair<const char*, int64_t> rows,
                  std::pair<const char*, int64_t> cols) {
  bool transposed = contiguous_of(strides) == Contiguous::Rows;
  auto [dim, extent] = transposed ? rows : cols;
  int64_t other_extent = transposed ? cols.second : rows.second;
  add_dim(out, {dim, extent, LeadingDim::Why::Contiguous, op, transposed});
  int64_t stride = transposed ? strides[1] : strides[0];
  if (other_extent > 1 && stride != extent && strides[0] != strides[1])
    add_dim(out, {ld, stride, LeadingDim::Why::ViewStride, op, false});
}

// The dimensions whose alignment decides the kernel, for one GEMM row.
std::vector<LeadingDim> leading_dims(const detail::GemmDims& d, bool backward) {
  std::vector<LeadingDim> out;
  if (backward) {
    // The gradient GEMMs contract over M, N and K in turn: each is some
    // operand's leading dimension.
    for (auto [name, v] : {std::pair{"M", d.m}, {"N", d.n}, {"K", d.k}})
      out.push_back({name, v, LeadingDim::Why::Backward});
    return out;
  }
  if (d.stride_a.size() == 2 && d.stride_b.size() == 2) {
    operand_dims(out, "A", "lda", d.stride_a, {"M", d.m}, {"K", d.k});
    operand_dims(out, "B", "ldb", d.stride_b, {"K", d.k}, {"N", d.n});
  } else {
    add_dim(out, {"K", d.k, LeadingDim::Why::RowMajorA});
  }
  add_dim(out, {"N", d.n, LeadingDim::Why::RowMajorC});
  return out;
}

std::vector<LeadingDim> misaligned_of(const std::vector<LeadingDim>& dims, int64_t need) {
  std::vector<LeadingDim> out;
  // A dimension of 1 is an outer product or a vector (the rotary frequency
  // table's K = 1): by design, and padding it would multiply the work.
  for (const auto& l : dims)
    if (l.value != 1 && l.value % need != 0) out.push_back(l);
  return out;
}

struct Group {
  const report::PerfOpRow* first = nullptr;
  detail::GemmDims dims;
  std::vector<LeadingDim> misaligned;
  std::vector<Uid> uids;
  double time_us = 0;
  double gflops = 0;         // summed over calls
  double padded_gflops = 0;  // the same with the misaligned M/N/K padded
  double above_roofline_us = 0;
  bool has_roofline = true;
};

// A modelled GEMM row: FLOPs, time and whether every leading dimension is aligned.
struct GemmSample {
  std::string precision;
  double gflops = 0, time_us = 0;
  bool aligned = false;
};

// The rate (TFLOP/s) aligned GEMMs of `precision` reach in the trace, counting
// calls of 1/64x to 1x `gflops_per_call`; nullopt when there are none.
struct Reference {
  double tflops = 0;
  size_t calls = 0;
};
std::optional<Reference> aligned_reference(const std::vector<GemmSample>& samples,
                                           const std::string& precision, double gflops_per_call) {
  double flops = 0, time = 0;
  size_t calls = 0;
  for (const auto& s : samples) {
    if (!s.aligned || s.precision != precision || s.time_us <= 0) continue;
    if (s.gflops > gflops_per_call || s.gflops < gflops_per_call * kSmallestReference) continue;
    flops += s.gflops, time += s.time_us, ++calls;
  }
  if (calls == 0 || time <= 0) return std::nullopt;
  return Reference{flops / time * 1e3, calls};  // GFLOP / µs = 1e3 TFLOP/s
}

double padding_factor(const detail::GemmDims& d, const std::vector<LeadingDim>& misaligned,
                      int64_t need) {
  double f = 1;
  for (const auto& l : misaligned) {
    int64_t v = l.name == "M" ? d.m : l.name == "N" ? d.n : l.name == "K" ? d.k : 0;
    if (v > 0) f *= static_cast<double>(round_up(v, v >= kVocabularyLike ? 64 : need)) / v;
  }
  return f;
}

std::string advice_for(const LeadingDim& l, int64_t need) {
  bool stride = l.name.starts_with("ld");
  bool vocabulary = l.value >= kVocabularyLike;
  int64_t padded = round_up(l.value, vocabulary ? 64 : need);
  if (stride)
    return fmt::format(
        "{}={} comes from a sliced view: make the operand contiguous (or allocate "
        "it with a padded row of {}).",
        l.name, l.value, padded);
  if (vocabulary)
    return fmt::format("{}={} looks like a vocabulary: pad it to {} and mask the extra logits.",
                       l.name, l.value, padded);
  if (l.name == "M")
    return fmt::format(
        "M={} is contiguous only because an operand is stored transposed: make "
        "it row-major (.contiguous() before the GEMM) rather than pad M.",
        l.value);
  return fmt::format("Pad {} from {} to {}.", l.name, l.value, padded);
}

// The change padding asks for, named by the values it pads ("pad 32001 to
// 32064"): the LM head's forward and backward GEMMs carry the vocabulary as
// N, K and M, one change. A sliced view's stride is its own change.
std::string padding_change(const std::vector<LeadingDim>& misaligned, int64_t need) {
  std::vector<std::string> parts;
  for (const auto& l : misaligned)
    parts.push_back(l.name.starts_with("ld")
                        ? fmt::format("contiguous {}={}", l.name, l.value)
                        : fmt::format("pad {} to {}", l.value,
                                      round_up(l.value, l.value >= kVocabularyLike ? 64 : need)));
  std::sort(parts.begin(), parts.end());
  parts.erase(std::unique(parts.begin(), parts.end()), parts.end());
  return fmt::format("{}", fmt::join(parts, ", "));
}

nlohmann::json misaligned_json(const std::vector<LeadingDim>& misaligned, int64_t need) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& l : misaligned)
    out[std::string(l.name)] = {
        {"value", l.value},
        {"pad_to", round_up(l.value, l.value >= kVocabularyLike ? 64 : need)},
        {"why", why_text(l)}};
  return out;
}

Insight group_insight(const InsightContext& c, const std::string& label, const Group& g,
                      const std::vector<GemmSample>& samples) {
  const auto& d = g.dims;
  int64_t need = required_multiple(d.precision);
  std::string dims_text, advice;
  for (const auto& l : g.misaligned) {
    dims_text += fmt::format("{}{}={}", dims_text.empty() ? "" : ", ", l.name, l.value);
    if (!advice.empty()) advice += ' ';
    advice += advice_for(l, need);
  }
  Insight i = detail::op_insight(c, "gemm_unaligned_dims", "GEMM", g.uids, g.time_us);
  i.kernel_names = detail::kernel_names(c.trace, *g.first);
  auto ref = aligned_reference(samples, d.precision, g.gflops / g.uids.size());
  nlohmann::json model;
  if (ref) {
    double expected_us = g.padded_gflops / ref->tflops * 1e3;
    double gain = std::max(0.0, g.time_us - expected_us);
    if (g.has_roofline) gain = std::min(gain, g.above_roofline_us);
    i.gain_upper_bound_us = gain;
    model = {{"method",
              fmt::format("the padded FLOPs at the rate of {} aligned {} GEMM calls of 1/64x to "
                          "1x this size in the trace, capped by the time above the roofline",
                          ref->calls, d.precision)},
             {"aligned_reference_tflops", ref->tflops},
             {"aligned_reference_calls", ref->calls},
             {"achieved_tflops", g.time_us > 0 ? g.gflops / g.time_us * 1e3 : 0.0},
             {"expected_us", expected_us}};
  } else {
    model = {{"method", fmt::format("none: no aligned {} GEMM of similar size in the trace to "
                                    "compare with",
                                    d.precision)}};
  }
  i.severity = detail::severity_by_share(detail::share_of(c, i.gain_upper_bound_us.value_or(0)));
  // The time and the count are the trace's (over all its steps), and say so.
  i.title = fmt::format(
      "{}: {} not a multiple of {} for {} ({:.2f} ms, {:.1f}% of kernel time; {} call{} in the "
      "trace)",
      label, dims_text, need, d.precision, i.time_us / 1e3, 100 * i.share, g.uids.size(),
      g.uids.size() == 1 ? "" : "s");
  i.detail = fmt::format(
      "Tensor-core GEMM kernels load the contiguous dimension of each operand in vectors of {} "
      "{} elements; a leading dimension that is not a multiple makes the library fall back to "
      "narrow-alignment kernels.",
      need, d.precision);
  i.evidence = {{"M", d.m},
                {"N", d.n},
                {"K", d.k},
                {"batch", d.batch},
                {"dtype", d.precision},
                {"required_multiple", need},
                {"layout", d.stride_a.empty() ? "assumed row-major (no Input Strides)"
                                              : "from Input Strides"},
                {"misaligned", misaligned_json(g.misaligned, need)},
                {"gain_model", model},
                {"calls", g.uids.size()}};
  i.action_model = advice;
  i.change = padding_change(g.misaligned, need);
  i.action_kernel =
      "Ask for an alignment-tolerant tensor-core kernel (cuBLASLt / hipBLASLt heuristics "
      "with the padded leading dimension), or pad inside the op.";
  i.verify =
      "Check the kernel names: narrow alignment shows as align1/align2 (CUTLASS) and "
      "the kernel may target an older arch; replay the op with the padded shape "
      "(make_replay) and compare times.";
  return i;
}

}  // namespace

void rule_gemm_unaligned_dims(const InsightContext& c, std::vector<Insight>& out) {
  std::map<std::string, Group> groups;  // by label: one insight per shape
  // Every modelled GEMM row, aligned or not: the aligned ones' rate is the
  // gain model's reference (made in the same pass: a row's dimensions are
  // read once).
  std::vector<GemmSample> samples;
  for (const auto& row : c.rows) {
    auto d = detail::gemm_dims(c, row);
    int64_t need = d ? required_multiple(d->precision) : 0;
    if (need == 0) continue;
    auto misaligned = misaligned_of(leading_dims(*d, row.backward), need);
    samples.push_back({d->precision, row.metrics->gflops, row.kernel_time_us, misaligned.empty()});
    if (misaligned.empty()) continue;
    Group& g = groups[detail::gemm_label(row, *d)];
    if (!g.first) g.first = &row, g.dims = *d, g.misaligned = misaligned;
    g.uids.push_back(row.uid);
    g.time_us += row.kernel_time_us;
    g.gflops += row.metrics->gflops;
    g.padded_gflops += row.metrics->gflops * padding_factor(*d, misaligned, need);
    auto above = detail::time_above_roofline(row);
    g.has_roofline = g.has_roofline && above.has_value();
    g.above_roofline_us += above.value_or(0);
  }
  if (groups.empty()) return;
  for (const auto& [label, g] : groups) out.push_back(group_insight(c, label, g, samples));
}

}  // namespace jarvis::insights
