// The tanh approximation of GELU written out in eager PyTorch (GPT-2's
// `0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x**3)))`, HF's
// NewGELUActivation): seven pointwise ops, each a kernel and a pass over the
// MLP's widest activation, in fp32 when autocast casts x up for the pow,
// and as many autograd nodes again in the backward pass. F.gelu(x,
// approximate="tanh") is one kernel forward (read x, write y) and one
// backward (read x and dy, write dx).
//
// Recognised by its anchor, an aten::tanh, with an aten::pow of the same
// shape a few pointwise ops before it at its level. The backward nodes are
// the autograd nodes whose `Sequence number` is one of the forward ops'
// (how autograd records which forward op a node differentiates).
#include <algorithm>
#include <map>
#include <set>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "insights/rules_internal.h"
#include "insights/shape_split.h"

namespace jarvis::insights {
namespace {

constexpr size_t kMaxPowToTanh = 4;     // pow -> mul -> add -> mul -> tanh
constexpr size_t kMaxOpsBeforePow = 3;  // 0.5 * x, a cast up
constexpr size_t kMaxGeluOpsAfter = 4;  // 1 + tanh, the product, a cast down

bool is_pointwise(std::string_view name) {
  for (std::string_view n :
       {"aten::mul", "aten::mul_", "aten::add", "aten::add_", "aten::pow", "aten::tanh", "aten::to",
        "aten::_to_copy", "aten::copy_", "aten::type_as"})
    if (name == n) return true;
  return false;
}

bool same_shape(const Trace& t, Uid op, const std::vector<int64_t>& dims) {
  return detail::first_input_dims(t, op) == dims;
}

struct GeluCall {
  std::vector<Uid> ops;  // the forward ops at the tanh's level
  std::vector<int64_t> dims;
  std::string input_type;  // of x entering the GELU
};

std::optional<GeluCall> gelu_call(const InsightContext& c, const detail::Siblings& s, Uid tanh) {
  const Trace& t = c.trace;
  auto dims = detail::first_input_dims(t, tanh);
  if (!dims || dims->size() < 2) return std::nullopt;
  std::vector<Uid> scratch;
  const auto level = s.of(tanh, scratch);
  if (!level.at) return std::nullopt;
  const std::span<const Uid> ops = level.ops;
  const size_t k = *level.at;
  std::optional<size_t> pow;
  for (size_t back = 1; back <= kMaxPowToTanh && back <= k; ++back) {
    const Uid u = ops[k - back];
    if (!is_pointwise(t.name(u)) || !same_shape(t, u, *dims)) break;
    if (t.name(u) == "aten::pow") {
      pow = k - back;
      break;
    }
  }
  if (!pow) return std::nullopt;
  size_t first = *pow, last = k;
  for (size_t back = 1; back <= kMaxOpsBeforePow && back <= *pow; ++back) {
    const Uid u = ops[*pow - back];
    if (!is_pointwise(t.name(u)) || !same_shape(t, u, *dims)) break;
    first = *pow - back;
  }
  for (size_t ahead = 1; ahead <= kMaxGeluOpsAfter && k + ahead < ops.size(); ++ahead) {
    const Uid u = ops[k + ahead];
    if (!is_pointwise(t.name(u)) || !same_shape(t, u, *dims)) break;
    last = k + ahead;
  }
  GeluCall call;
  call.dims = *dims;
  call.input_type = detail::first_input_type(t, ops[first]);
  for (size_t j = first; j <= last; ++j) call.ops.push_back(ops[j]);
  return call;
}

std::optional<int64_t> sequence_number(const Trace& t, Uid u) {
  const int64_t seq = t.sequence_number(u);
  if (seq == kNoInt) return std::nullopt;
  return seq;
}

// The sequence numbers of the forward ops and of the cpu_ops under them.
void add_sequence_numbers(const InsightContext& c, Uid op, std::set<int64_t>& out) {
  if (auto seq = sequence_number(c.trace, op)) out.insert(*seq);
  for (Uid child : c.tree.children(op))
    if (c.trace.events[child].cat == Cat::CpuOp) add_sequence_numbers(c, child, out);
}

bool is_backward_node(std::string_view name) {
  return !name.starts_with("autograd::") &&
         (name.ends_with("Backward0") || name.ends_with("Backward1"));
}

}  // namespace

void rule_unfused_gelu(const InsightContext& c, std::vector<Insight>& out) {
  const Trace& t = c.trace;
  const detail::Siblings& siblings = detail::siblings(c);
  std::vector<GeluCall> calls;
  std::set<Uid> seen;
  for (Uid u : detail::events_named(c, {"aten::tanh"})) {
    if (t.events[u].cat != Cat::CpuOp) continue;
    auto call = gelu_call(c, siblings, u);
    if (!call || !seen.insert(call->ops.front()).second) continue;
    calls.push_back(std::move(*call));
  }
  if (calls.empty()) return;
  std::set<int64_t> forward_seqs;
  std::map<int64_t, size_t> call_of_seq;  // the call a backward node differentiates
  std::vector<double> call_us(calls.size(), 0.0);
  std::vector<Uid> kernels;
  size_t forward_kernels = 0, backward_kernels = 0;
  double time_us = 0;
  for (size_t n = 0; n < calls.size(); ++n)
    for (Uid op : calls[n].ops) {
      std::set<int64_t> seqs;
      add_sequence_numbers(c, op, seqs);
      for (int64_t seq : seqs) call_of_seq.emplace(seq, n);
      forward_seqs.insert(seqs.begin(), seqs.end());
      for (Uid k : c.tree.gpu_events(op))
        if (t.events[k].has_dur()) {
          kernels.push_back(k), ++forward_kernels;
          call_us[n] += t.events[k].dur();
        }
    }
  // The autograd nodes of those ops: their kernels are the GELU's backward.
  size_t backward_nodes = 0;
  for (Uid u :
       forward_seqs.empty() ? std::vector<Uid>() : detail::events_named(c, is_backward_node)) {
    if (t.events[u].cat != Cat::CpuOp) continue;
    auto seq = sequence_number(t, u);
    if (!seq || !forward_seqs.count(*seq)) continue;
    ++backward_nodes;
    for (Uid k : c.tree.gpu_events(u))
      if (t.events[k].has_dur()) {
        kernels.push_back(k), ++backward_kernels;
        call_us[call_of_seq.at(*seq)] += t.events[k].dur();
      }
  }
  // The shape named holds most of the time (forward and backward kernels of
  // its calls), the split by shape beside it.
  detail::ShapeSplit shapes;
  for (size_t n = 0; n < calls.size(); ++n)
    shapes.add(calls[n].dims, calls[n].input_type, call_us[n]);
  const detail::ShapeSplit::Shape main = shapes.dominant();
  std::sort(kernels.begin(), kernels.end());
  kernels.erase(std::unique(kernels.begin(), kernels.end()), kernels.end());
  for (Uid k : kernels) time_us += t.events[k].dur();
  if (!(time_us > 0)) return;
  // F.gelu(approximate="tanh"): read x and write y forward; read x and dy,
  // write dx backward; in x's own precision.
  double fused_bytes = 0;
  const bool backward = backward_nodes > 0;
  for (const GeluCall& call : calls) {
    const double element = detail::is_half_type(call.input_type) ? 2.0 : 4.0;
    fused_bytes +=
        (backward ? 5.0 : 2.0) * element * static_cast<double>(detail::elements(call.dims));
  }
  Insight i = detail::kernels_insight(c, "unfused_gelu", "elementwise", kernels, time_us);
  const bool sized = c.arch && c.arch->mem_bw_gbps > 0;
  const double fused_us = sized ? fused_bytes / (c.arch->mem_bw_gbps * 1e3) : 0.0;
  if (sized) i.gain_upper_bound_us = std::max(0.0, time_us - fused_us);
  const GeluCall& first = calls.front();
  i.title = fmt::format(
      "Unfused tanh-GELU: {} calls of {} pointwise ops on {} run as {} kernels forward "
      "and {} backward, {:.2f} ms of kernel time{}",
      calls.size(), first.ops.size(), shapes.text(), forward_kernels, backward_kernels,
      time_us / 1e3,
      sized ? fmt::format("; F.gelu(approximate='tanh') needs about {:.2f} ms", fused_us / 1e3)
            : "");
  i.detail =
      "The GELU formula written out runs one kernel per pointwise op over the MLP's widest "
      "activation (in fp32 when x is cast up for the pow), and its autograd nodes as many "
      "again; the fused activation reads and writes the tensor once per direction.";
  std::vector<std::string> names;
  for (Uid op : first.ops) names.emplace_back(t.name(op));
  i.evidence = {{"calls", calls.size()},
                {"forward_ops", names},
                {"dims", main.dims},
                {"input_type", main.type},
                {"by_shape", shapes.json()},
                {"forward_kernels", forward_kernels},
                {"backward_nodes", backward_nodes},
                {"backward_kernels", backward_kernels},
                {"fused_bytes", fused_bytes}};
  if (sized) i.evidence["fused_time_us"] = fused_us;
  i.action_model =
      "Replace the hand-written formula with torch.nn.functional.gelu(x, approximate=\"tanh\") "
      "(nn.GELU(approximate=\"tanh\"); HF: activation_function=\"gelu_pytorch_tanh\"), or "
      "torch.compile the MLP.";
  i.action_kernel =
      "One fused GELU kernel per direction (ATen's GeluCUDAKernel, or an epilogue "
      "of the preceding GEMM).";
  i.verify =
      "The forward ops share the tanh's input shape; their autograd nodes (MulBackward0, "
      "PowBackward0, TanhBackward0, ...) carry the forward ops' Sequence number.";
  out.push_back(std::move(i));
}

}  // namespace jarvis::insights
