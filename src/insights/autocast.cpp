#include "insights/autocast.h"

#include "insights/kernel_name.h"
#include "perf/perf_model.h"

namespace jarvis::insights {
namespace {

std::string narrow(std::string precision) {
  if (precision == "f16") precision = "fp16";  // kernel names spell it f16
  return precision == "bf16" || precision == "fp16" || precision == "fp8" ? precision : "";
}

std::string nested_call_precision(const Trace& trace, const CallTree& tree, Uid op) {
  const pycompat::PyValue* outer_dims = trace.arg(op, "Input Dims");
  if (!outer_dims) return "";
  const std::string dims = outer_dims->repr();
  constexpr int kMaxDepth = 4;
  for (const SubtreeNode& node : tree.subtree(op, kMaxDepth)) {
    if (node.depth == 0 || trace.name(node.uid) != trace.name(op)) continue;
    const pycompat::PyValue* inner_dims = trace.arg(node.uid, "Input Dims");
    const pycompat::PyValue* types = trace.arg(node.uid, "Input type");
    if (!inner_dims || inner_dims->repr() != dims || !types || !types->is_seq()) continue;
    // The first narrow floating-point input (addmm's bias comes first).
    for (const auto& t : types->list)
      if (t.is_string())
        if (std::string p = narrow(perf::precision_of(t.s)); !p.empty()) return p;
  }
  return "";
}

}  // namespace

std::string gemm_compute_precision(const Trace& trace, const CallTree& tree, Uid op) {
  if (op >= trace.events.size()) return "";
  if (std::string p = nested_call_precision(trace, tree, op); !p.empty()) return p;
  std::string found;
  for (Uid k : tree.gpu_events(op))
    if (std::string p = narrow(parse_kernel_name(trace.name(k)).math_dtype); !p.empty()) found = p;
  return found;
}

}  // namespace jarvis::insights
