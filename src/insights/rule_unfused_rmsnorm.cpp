// RMSNorm written out in eager PyTorch (Llama/Qwen/Mistral's
// `x.float(); x * rsqrt(x.pow(2).mean(-1, keepdim=True) + eps); w * x.to(dtype)`):
// each call launches a kernel per step (cast up, pow, mean, add, rsqrt,
// mul, cast down, weight mul), each a pass over the hidden states in fp32,
// where a fused RMSNorm reads the half-precision input once and writes the
// output once. Recognised by its anchor, an aten::rsqrt of a per-row
// statistic (last dim 1), with aten::pow and aten::mean of the same rows
// before it: the norm call is the enclosing nn.Module when the trace has
// module frames (its whole subtree), else the sibling ops around the rsqrt.
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "insights/rules_internal.h"
#include "insights/shape_split.h"

namespace jarvis::insights {
namespace {

constexpr size_t kMaxNormOpsBefore = 8;  // cast, pow, result_type, to, mean, add
constexpr size_t kMaxNormOpsAfter = 6;   // mul, to, copy, weight mul

bool is_cast(std::string_view name) {
  return name == "aten::to" || name == "aten::_to_copy" || name == "aten::copy_" ||
         name == "aten::type_as";
}

// One norm call: the ops whose subtrees' kernels are the call's.
struct NormCall {
  std::vector<Uid> ops;
  std::vector<int64_t> dims;  // the hidden states normalised (the pow's input)
  std::string input_type;     // of the tensor entering the norm
  std::string where;          // the module's name, or "(no module frame)"
};

// The norm modules (nn.Module frames named *RMSNorm*) per thread, when the
// trace has module frames: the call is every op inside the frame.
using ModuleFrames = std::map<std::pair<ProcId, ProcId>, std::vector<Uid>>;

ModuleFrames norm_modules(const InsightContext& c, const detail::Siblings& s) {
  ModuleFrames out;
  const Trace& t = c.trace;
  const auto norm_module = [](std::string_view name) {
    return name.starts_with("nn.Module: ") && (name.find("RMSNorm") != std::string_view::npos ||
                                               name.find("RmsNorm") != std::string_view::npos);
  };
  for (Uid u : detail::events_named(c, norm_module)) {
    const Event& e = t.events[u];
    if (e.cat == Cat::PythonFunction && e.has_dur()) out[s.thread_of(u)].push_back(u);
  }
  return out;
}

std::optional<Uid> enclosing(const Trace& t, const std::vector<Uid>& frames, Uid op) {
  const Event& e = t.events[op];
  for (Uid f : frames)
    if (t.events[f].ts() <= e.ts() && e.end() <= t.events[f].end()) return f;
  return std::nullopt;
}

// The call around an rsqrt: inside its norm module frame when there is one,
// else back to the pow (and a cast up before it) and forward through the
// multiplies and casts that finish the norm.
std::optional<NormCall> norm_call(const InsightContext& c, const detail::Siblings& s,
                                  const ModuleFrames& modules, Uid rsqrt) {
  const Trace& t = c.trace;
  std::vector<Uid> scratch;
  const auto level = s.of(rsqrt, scratch);
  if (!level.at) return std::nullopt;
  const std::span<const Uid> kids = level.ops;
  const size_t k = *level.at;
  std::optional<Uid> frame;
  if (auto it = modules.find(s.thread_of(rsqrt)); it != modules.end())
    frame = enclosing(t, it->second, rsqrt);
  size_t first = k, last = k;
  std::optional<size_t> pow, mean;
  for (size_t back = 1; back <= kMaxNormOpsBefore && back <= k; ++back) {
    const std::string_view name = t.name(kids[k - back]);
    if (name == "aten::mean" && !mean) mean = k - back;
    if (name == "aten::pow") {
      pow = k - back;
      break;
    }
  }
  if (!pow || !mean) return std::nullopt;
  NormCall call;
  call.dims = detail::first_input_dims(t, kids[*pow]).value_or(std::vector<int64_t>{});
  call.input_type = detail::first_input_type(t, kids[*pow]);
  first = *pow;
  if (first > 0 && is_cast(t.name(kids[first - 1])) &&
      detail::first_input_dims(t, kids[first - 1]) == call.dims) {
    --first;
    call.input_type = detail::first_input_type(t, kids[first]);
  }
  size_t muls = 0;
  for (size_t ahead = 1; ahead <= kMaxNormOpsAfter && k + ahead < kids.size() && muls < 2;
       ++ahead) {
    const std::string_view name = t.name(kids[k + ahead]);
    if (name != "aten::mul" && !is_cast(name)) break;
    muls += name == "aten::mul";
    last = k + ahead;
  }
  if (frame) {  // the frame holds the whole call, whatever the window found
    const Event& f = t.events[*frame];
    auto from = std::lower_bound(kids.begin(), kids.end(), f.ts(),
                                 [&](Uid u, double ts) { return t.events[u].ts() < ts; });
    for (auto it = from; it != kids.end() && t.events[*it].ts() < f.end(); ++it)
      if (t.events[*it].end() <= f.end()) call.ops.push_back(*it);
    const std::string_view base = t.name(*frame).substr(11);
    call.where = std::string(base.substr(0, base.rfind('_')));
  } else {
    for (size_t j = first; j <= last; ++j) call.ops.push_back(kids[j]);
    call.where = "(no module frame)";
  }
  return call;
}

}  // namespace

void rule_unfused_rmsnorm(const InsightContext& c, std::vector<Insight>& out) {
  const Trace& t = c.trace;
  std::vector<NormCall> calls;
  std::set<Uid> seen;  // an op belongs to one call
  const detail::Siblings& siblings = detail::siblings(c);
  const ModuleFrames frames = norm_modules(c, siblings);
  for (Uid u : detail::events_named(c, {"aten::rsqrt"})) {
    if (t.events[u].cat != Cat::CpuOp) continue;
    auto dims = detail::first_input_dims(t, u);
    if (!dims || dims->size() < 2 || dims->back() != 1) continue;
    auto call = norm_call(c, siblings, frames, u);
    if (!call || call->dims.size() != dims->size() || call->dims.back() <= 1) continue;
    if (!seen.insert(call->ops.front()).second) continue;
    calls.push_back(std::move(*call));
  }
  if (calls.empty()) return;
  std::vector<Uid> kernels;
  size_t kernel_count = 0;
  double time_us = 0, fused_bytes = 0;
  std::map<std::string, size_t> where;
  detail::ShapeSplit shapes;
  for (const NormCall& call : calls) {
    double call_us = 0;
    for (Uid op : call.ops)
      for (Uid k : c.tree.gpu_events(op)) {
        if (!t.events[k].has_dur()) continue;
        kernels.push_back(k);
        call_us += t.events[k].dur();
        ++kernel_count;
      }
    time_us += call_us;
    shapes.add(call.dims, call.input_type, call_us);
    // A fused norm reads its input and writes its output once, in the
    // input's own precision.
    const double bytes_per_element = detail::is_half_type(call.input_type) ? 2.0 : 4.0;
    fused_bytes += 2.0 * bytes_per_element * static_cast<double>(detail::elements(call.dims));
    ++where[call.where];
  }
  if (!(time_us > 0)) return;
  Insight i = detail::kernels_insight(c, "unfused_rmsnorm", "NORM", kernels, time_us);

  // At the device's HBM bandwidth: a floor the fused kernel approaches.
  const bool sized = c.arch && c.arch->mem_bw_gbps > 0;
  const double fused_us = sized ? fused_bytes / (c.arch->mem_bw_gbps * 1e3) : 0.0;
  if (sized) i.gain_upper_bound_us = std::max(0.0, time_us - fused_us);
  // The shape named is the one holding most of the time (decode calls
  // outnumber a prefill's), the split by shape beside it.
  const detail::ShapeSplit::Shape main = shapes.dominant();
  i.title = fmt::format(
      "Unfused RMSNorm: {} calls of aten::pow -> aten::mean -> aten::rsqrt -> aten::mul on {} "
      "run as {} kernels, {:.2f} ms of kernel time{}",
      calls.size(), shapes.text(), kernel_count, time_us / 1e3,
      sized ? fmt::format("; a fused norm needs about {:.2f} ms", fused_us / 1e3) : "");
  i.detail =
      "Each step of the norm is its own kernel and a pass over the hidden states, in fp32 when "
      "the input is cast up first; a fused RMSNorm reads the input once and writes the output "
      "once.";
  nlohmann::json modules = nlohmann::json::object();
  for (const auto& [name, n] : where) modules[name] = n;
  i.evidence = {{"calls", calls.size()},     {"kernels", kernel_count},   {"dims", main.dims},
                {"input_type", main.type},   {"by_shape", shapes.json()}, {"where", modules},
                {"fused_bytes", fused_bytes}};
  if (sized) i.evidence["fused_time_us"] = fused_us;
  i.action_model =
      "Use a fused RMSNorm (torch.nn.functional.rms_norm / torch.nn.RMSNorm on PyTorch >= 2.4 "
      "under torch.compile, or the model library's fused norm such as apex/Liger/vLLM "
      "rms_norm), and fuse the residual add into it where the model adds one.";
  i.action_kernel =
      "One kernel per call: a row reduction of x^2 in fp32 registers and the scaled write, "
      "reading and writing the half-precision tensor once.";
  i.verify =
      "parent_chain on a UID shows the norm module; the rows' kernels are elementwise and "
      "reduce kernels of the same shape, one per step of the formula.";
  out.push_back(std::move(i));
}

}  // namespace jarvis::insights
