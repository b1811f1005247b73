// Rotary position embedding written out with rotate_half (Llama/Qwen/
// Mistral's `q * cos + rotate_half(q) * sin`, rotate_half = cat(-x2, x1)):
// per application (q, then k) a mul, a neg of half the head dimension, a cat
// back to the full one, another mul and an add, five passes over the
// [batch, heads, seq, head_dim] tensor where a fused rotary kernel reads and
// writes it once. Recognised by its anchor, an aten::neg of half a head
// followed by an aten::cat of two such halves, with a mul before them and a
// mul and an add after.
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "insights/rules_internal.h"
#include "insights/shape_split.h"

namespace jarvis::insights {
namespace {

constexpr size_t kMaxRopeOpsBefore = 6;  // x * cos, then rotate_half's slices
constexpr size_t kMaxRopeOpsAfter = 4;   // cat, mul, add

struct Application {
  std::vector<Uid> ops;
  std::vector<int64_t> dims;  // the rotated tensor, full head dimension
  std::string type;
};

// The cat's two inputs are both halves of the same shape (recorded as a
// list of two shapes in its first input).
bool cat_of_halves(const Trace& t, Uid cat, const std::vector<int64_t>& half) {
  const PyValue* dims = t.arg(cat, "Input Dims");
  if (!dims || !dims->is_seq() || dims->size() == 0 || !(*dims)[0].is_seq()) return false;
  const PyValue& parts = (*dims)[0];
  if (parts.size() != 2) return false;
  for (const PyValue& part : parts.list) {
    if (!part.is_seq() || part.size() != half.size()) return false;
    for (size_t k = 0; k < half.size(); ++k)
      if (part[k].kind != PyValue::Kind::Int || part[k].i != half[k]) return false;
  }
  return true;
}

std::optional<Application> application_at(const InsightContext& c, const detail::Siblings& s,
                                          Uid neg) {
  const Trace& t = c.trace;
  auto half = detail::first_input_dims(t, neg);
  if (!half || half->size() < 3 || half->back() < 2) return std::nullopt;
  std::vector<int64_t> full = *half;
  full.back() *= 2;
  std::vector<Uid> scratch;
  const auto level = s.of(neg, scratch);
  if (!level.at) return std::nullopt;
  const auto ops = level.ops;
  const size_t k = *level.at;
  std::optional<size_t> first;  // x * cos: a mul of the full tensor
  for (size_t back = 1; back <= kMaxRopeOpsBefore && back <= k; ++back)
    if (t.name(ops[k - back]) == "aten::mul" &&
        detail::first_input_dims(t, ops[k - back]) == full) {
      first = k - back;
      break;
    }
  if (!first) return std::nullopt;
  bool cat = false, mul = false;
  std::optional<size_t> last;
  for (size_t ahead = 1; ahead <= kMaxRopeOpsAfter && k + ahead < ops.size(); ++ahead) {
    const Uid op = ops[k + ahead];
    const std::string_view name = t.name(op);
    if (name == "aten::cat" && !cat) cat = cat_of_halves(t, op, *half);
    if (name == "aten::mul" && cat) mul = true;
    if (name == "aten::add" && mul && detail::first_input_dims(t, op) == full) {
      last = k + ahead;
      break;
    }
  }
  if (!last) return std::nullopt;
  Application a;
  for (size_t j = *first; j <= *last; ++j) a.ops.push_back(ops[j]);
  a.dims = full;
  a.type = detail::first_input_type(t, ops[*first]);
  return a;
}

}  // namespace

void rule_unfused_rope(const InsightContext& c, std::vector<Insight>& out) {
  const Trace& t = c.trace;
  const detail::Siblings& siblings = detail::siblings(c);
  std::vector<Application> apps;
  for (Uid u : detail::events_named(c, {"aten::neg"})) {
    if (t.events[u].cat != Cat::CpuOp) continue;
    if (auto a = application_at(c, siblings, u)) apps.push_back(std::move(*a));
  }
  if (apps.empty()) return;
  std::vector<Uid> kernels;
  double time_us = 0, fused_bytes = 0;
  detail::ShapeSplit shapes;
  for (const Application& a : apps) {
    double app_us = 0;
    for (Uid op : a.ops)
      for (Uid k : c.tree.gpu_events(op))
        if (t.events[k].has_dur()) {
          kernels.push_back(k);
          app_us += t.events[k].dur();
        }
    time_us += app_us;
    shapes.add(a.dims, a.type, app_us);
    // A fused rotary kernel reads the tensor and writes it once (the cos
    // and sin tables are a head's width per position: left out).
    const double bytes_per_element = detail::is_half_type(a.type) ? 2.0 : 4.0;
    fused_bytes += 2.0 * bytes_per_element * static_cast<double>(detail::elements(a.dims));
  }
  if (!(time_us > 0)) return;
  Insight i = detail::kernels_insight(c, "unfused_rope", "elementwise", kernels, time_us);

  const bool sized = c.arch && c.arch->mem_bw_gbps > 0;
  const double fused_us = sized ? fused_bytes / (c.arch->mem_bw_gbps * 1e3) : 0.0;
  if (sized) i.gain_upper_bound_us = std::max(0.0, time_us - fused_us);
  // The shape named holds most of the time, the split by shape beside it.
  const detail::ShapeSplit::Shape main = shapes.dominant();
  i.title = fmt::format(
      "Unfused RoPE (rotate_half): {} applications of aten::mul, aten::neg, aten::cat, aten::mul, "
      "aten::add on {} run as {} kernels, {:.2f} ms of kernel time{}",
      apps.size(), shapes.text(), kernels.size(), time_us / 1e3,
      sized ? fmt::format("; a fused rotary kernel needs about {:.2f} ms", fused_us / 1e3) : "");
  i.detail =
      "rotate_half builds the rotated copy with a neg and a cat, and the rotation then takes two "
      "multiplies and an add: five passes over q (and five over k) per layer where a fused "
      "rotary kernel makes one.";
  i.evidence = {{"applications", apps.size()}, {"kernels", kernels.size()},
                {"dims", main.dims},           {"input_type", main.type},
                {"by_shape", shapes.json()},   {"fused_bytes", fused_bytes}};
  if (sized) i.evidence["fused_time_us"] = fused_us;
  i.action_model =
      "Apply rotary embeddings with a fused kernel (flash-attn's / Liger's / vLLM's rotary "
      "embedding, or torch.compile the attention block), ideally fused into the QKV projection's "
      "epilogue or the attention kernel.";
  i.action_kernel =
      "One kernel per q/k tensor that reads each pair of elements once, rotates them with the "
      "position's cos/sin, and writes them back.";
  i.verify =
      "The ops are consecutive per layer: a mul by cos, rotate_half's neg and cat of the two "
      "halves of the head dimension, a mul by sin and the add.";
  out.push_back(std::move(i));
}

}  // namespace jarvis::insights
