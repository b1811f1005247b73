// A normalization or a GEMM/convolution immediately followed by its
// activation (batch_norm -> relu_, layer_norm -> gelu, linear -> gelu,
// conv2d -> relu): the activation is a separate kernel that reads and writes
// the whole output again, where a fused epilogue applies it while the
// producer's result is still in registers (cuBLASLt / hipBLASLt bias+GELU
// epilogues, cuDNN / MIOpen conv-bias-activation, Inductor's norm+act
// fusion, Conv-BN-ReLU folding for inference).
//
// Two ops are a pair when they are consecutive GPU-launching siblings (same
// parent, host-only ops such as views in between are skipped; top-level ops
// of one thread count as siblings). The gain upper bound is the activation's
// kernel time: what disappears when it runs in the producer's epilogue.
#include <algorithm>
#include <map>
#include <span>
#include <string_view>

#include <fmt/format.h>

#include "insights/rules_internal.h"

namespace jarvis::insights {
namespace {

// The producers ("norm", "GEMM", "CONV") and activations this trace names,
// by interned id.
struct EpilogueNames {
  explicit EpilogueNames(const Trace& t)
      : norm(t, {"aten::batch_norm", "aten::layer_norm", "aten::group_norm", "aten::instance_norm",
                 "aten::rms_norm", "aten::native_layer_norm", "aten::native_batch_norm",
                 "aten::cudnn_batch_norm", "aten::miopen_batch_norm"}),
        gemm(t, {"aten::linear", "aten::addmm", "aten::baddbmm"}),
        conv(t, {"aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::convolution",
                 "aten::cudnn_convolution", "aten::miopen_convolution"}),
        activation(t,
                   {"aten::relu",       "aten::relu_",       "aten::gelu",      "aten::gelu_",
                    "aten::silu",       "aten::silu_",       "aten::sigmoid",   "aten::sigmoid_",
                    "aten::tanh",       "aten::tanh_",       "aten::hardswish", "aten::hardswish_",
                    "aten::leaky_relu", "aten::leaky_relu_", "aten::mish",      "aten::mish_",
                    "aten::elu",        "aten::elu_",        "aten::hardtanh",  "aten::hardtanh_",
                    "aten::relu6"}) {}
  // The producer's kind, or "" when the name is none.
  std::string_view producer_kind(uint32_t name) const {
    if (norm.contains(name)) return "norm";
    if (gemm.contains(name)) return "GEMM";
    if (conv.contains(name)) return "CONV";
    return "";
  }
  NameIds norm, gemm, conv, activation;
};

struct EpiloguePattern {
  std::string_view kind;
  size_t count = 0;
  std::vector<Uid> uids;
  double time_us = 0, activation_us = 0;
};

double kernel_time_us(const InsightContext& c, Uid uid) {
  double t = 0;
  for (Uid k : c.tree.gpu_events(uid)) {
    const Event& e = c.trace.events[k];
    if (e.has_dur() && e.dur() > 0) t += e.dur();
  }
  return t;
}

// Pairs among one ordered list of GPU-launching siblings.
void scan_siblings(const InsightContext& c, const EpilogueNames& names,
                   std::span<const Uid> siblings, std::span<const uint32_t> sibling_names,
                   std::map<std::string, EpiloguePattern>& patterns) {
  Uid previous = kNoUid;
  uint32_t previous_name = 0;
  for (size_t k = 0; k < siblings.size(); ++k) {
    const Uid u = siblings[k];
    if (previous != kNoUid && names.activation.contains(sibling_names[k])) {
      std::string_view kind = names.producer_kind(previous_name);
      if (!kind.empty()) {
        std::string key = fmt::format("{} -> {}", c.trace.name(previous), c.trace.name(u));
        EpiloguePattern& p = patterns[key];
        p.kind = kind;
        ++p.count;
        p.uids.push_back(previous);
        p.uids.push_back(u);
        double act = kernel_time_us(c, u);
        p.time_us += kernel_time_us(c, previous) + act;
        p.activation_us += act;
      }
    }
    previous = u;
    previous_name = sibling_names[k];
  }
}

std::string action_model(std::string_view kind) {
  if (kind == "norm")
    return "torch.compile the block (Inductor fuses the activation into the normalization); for "
           "inference fold BatchNorm into the preceding convolution and fuse the ReLU "
           "(torch.ao.quantization.fuse_modules / torch.fx).";
  if (kind == "CONV")
    return "torch.compile, or fuse Conv-(BN)-ReLU for inference (fuse_modules); channels_last "
           "lets cuDNN/MIOpen pick fused conv-bias-activation kernels.";
  return "torch.compile the layer (Inductor emits the GEMM with a fused epilogue), or use a "
         "fused linear+activation module (e.g. Transformer Engine's LayerNormMLP).";
}

std::string action_kernel(std::string_view kind) {
  if (kind == "norm")
    return "A fused norm+activation kernel (Triton, Apex, or a hand-written one).";
  if (kind == "CONV")
    return "cuDNN / MIOpen fused convolution-bias-activation (runtime fusion engine).";
  return "cuBLASLt / hipBLASLt epilogue (CUBLASLT_EPILOGUE_GELU_BIAS / RELU_BIAS, "
         "HIPBLASLT_EPILOGUE_GELU_BIAS) applies bias and activation in the GEMM's epilogue.";
}

}  // namespace

void rule_epilogue_fusion(const InsightContext& c, std::vector<Insight>& out) {
  std::map<std::string, EpiloguePattern> patterns;
  const EpilogueNames names(c.trace);
  detail::for_each_launching_sibling_list(
      c, [&](std::span<const Uid> siblings, std::span<const uint32_t> sibling_names) {
        scan_siblings(c, names, siblings, sibling_names, patterns);
      });
  for (auto& [key, p] : patterns) {
    Insight i = detail::op_insight(c, "epilogue_fusion", std::string(p.kind), p.uids, p.time_us);
    // Ranked by what the fix saves, not by the time the pair covers.
    double gain_share = detail::share_of(c, p.activation_us);
    i.severity = detail::severity_by_share(gain_share);
    i.gain_upper_bound_us = p.activation_us;
    i.title = fmt::format(
        "Activation not fused into its producer x{}: {} (activation kernels {:.1f} us, {:.1f}% "
        "of kernel time)",
        p.count, key, p.activation_us, 100 * gain_share);
    i.detail =
        "The activation runs as its own kernel, reading and writing the producer's whole output "
        "again; in a fused epilogue it costs almost nothing.";
    i.evidence = {{"pair", key},
                  {"producer_kind", p.kind},
                  {"occurrences", p.count},
                  {"activation_kernel_time_us", p.activation_us}};
    i.action_model = action_model(p.kind);
    i.action_kernel = action_kernel(p.kind);
    i.verify =
        "parent_chain on the first UID pair shows the module; check the activation's input is "
        "not needed on its own (an in-place relu_ after BatchNorm in training still saves its "
        "output for backward, which a fused kernel must keep).";
    out.push_back(std::move(i));
  }
}

}  // namespace jarvis::insights
