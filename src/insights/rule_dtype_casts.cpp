// Dtype casts as a share of the GPU's work. Under autocast every op on its
// fp32 list casts its bf16/fp16 inputs up and its outputs down, every
// matmul casts its fp32 weights down on each forward, and model code adds
// .float() / .to() round trips: each cast is a bandwidth-bound pass of its
// own. A few percent is the price of mixed precision; more is a pattern
// to remove (bf16 weights, fp32 islands fused by torch.compile, no
// explicit round trips). The kernels are those launched under the
// outermost aten::to / aten::_to_copy ops (ToCopyBackward0's included).
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "insights/rules_internal.h"
#include "trace/name_ids.h"

namespace jarvis::insights {
namespace {

constexpr double kMinCastShare = 0.05;  // of all kernel time
constexpr size_t kTopShapes = 5;
constexpr double kFusedSaving = 0.5;

constexpr std::string_view kCastOps[] = {"aten::to", "aten::_to_copy"};

struct ShapeGroup {
  size_t calls = 0;
  double time_us = 0;
};

}  // namespace

void rule_dtype_casts(const InsightContext& c, std::vector<Insight>& out) {
  const Trace& t = c.trace;
  const bool half_gemms = std::any_of(c.rows.begin(), c.rows.end(), [&](const auto& row) {
    const detail::GemmDims* d = detail::gemm_dims(c, row);
    return d && (d->precision == "bf16" || d->precision == "fp16");
  });
  if (!half_gemms || !(c.total_kernel_time_us > 0)) return;
  std::vector<Uid> kernels;
  double time_us = 0;
  size_t calls = 0;
  std::map<std::pair<std::vector<int64_t>, std::string>, ShapeGroup> groups;
  const NameIds cast_ops(t, kCastOps);  // a cast's parent, compared as an interned id
  for (Uid u : detail::events_named(c, kCastOps)) {
    if (t.events[u].cat != Cat::CpuOp) continue;
    const Uid parent = c.tree.parent(u);
    if (parent != kNoUid && cast_ops.contains(t.events[parent].name)) continue;  // outermost only
    double us = 0;
    for (Uid k : c.tree.gpu_events(u))
      if (t.events[k].cat == Cat::Kernel && t.events[k].has_dur()) {  // copies across devices
        kernels.push_back(k);                                         // are memcpy, not casts
        us += t.events[k].dur();
      }
    if (!(us > 0)) continue;
    ++calls;
    time_us += us;
    auto& g = groups[{detail::first_input_dims(t, u).value_or(std::vector<int64_t>{}),
                      detail::first_input_type(t, u)}];
    ++g.calls;
    g.time_us += us;
  }
  const double share = time_us / c.total_kernel_time_us;
  if (share < kMinCastShare) return;
  Insight i = detail::kernels_insight(c, "dtype_casts", "elementwise", kernels, time_us);
  std::vector<std::pair<double, std::pair<std::vector<int64_t>, std::string>>> ranked;
  for (const auto& [key, g] : groups) ranked.push_back({g.time_us, key});
  std::sort(ranked.begin(), ranked.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  nlohmann::json top = nlohmann::json::array();
  std::vector<std::string> labels;
  for (size_t k = 0; k < ranked.size() && k < kTopShapes; ++k) {
    const auto& [dims, type] = ranked[k].second;
    const ShapeGroup& g = groups.at(ranked[k].second);
    top.push_back(
        {{"dims", dims}, {"input_type", type}, {"calls", g.calls}, {"time_us", g.time_us}});
    labels.push_back(fmt::format("[{}] from {} x{} {:.2f} ms", fmt::join(dims, ", "), type, g.calls,
                                 g.time_us / 1e3));
  }

  // Fused into its neighbour, a cast costs no launch and no pass of its
  // own, but the neighbour then reads or writes the other precision: half
  // of the cast's time is the saving (the pass it removes, not the bytes
  // the model still moves).
  i.gain_upper_bound_us = kFusedSaving * time_us;
  i.title = fmt::format(
      "Dtype casts take {:.1f}% of kernel time in a mixed-precision model: {} aten::to / "
      "aten::_to_copy calls, {:.2f} ms; largest: {}",
      100 * share, calls, time_us / 1e3, fmt::join(labels, "; "));
  i.detail =
      "Each cast is a bandwidth-bound pass of its own: autocast casts the inputs of its fp32 "
      "ops up and the weights of every matmul down on each forward, and model code adds "
      "explicit round trips.";
  i.evidence = {{"calls", calls},
                {"kernels", kernels.size()},
                {"cast_time_us", time_us},
                {"share_of_kernel_time", share},
                {"top_shapes", top}};
  i.action_model =
      "Keep the weights in bf16 (model.to(torch.bfloat16) with fp32 master weights in the "
      "optimizer), drop explicit .float() / .to() round trips, and torch.compile the fp32 "
      "islands (norms, softmax, loss) so their casts fuse into the neighbouring kernels.";
  i.action_kernel =
      "Kernels that read the half-precision input and compute in fp32 registers (fused norm, "
      "softmax, loss) need no separate cast pass.";
  i.verify =
      "parent_chain on a cast's UID names the op that asked for it (autocast wraps the fp32 "
      "op; an explicit .float() shows as a Python frame).";
  out.push_back(std::move(i));
}

}  // namespace jarvis::insights
