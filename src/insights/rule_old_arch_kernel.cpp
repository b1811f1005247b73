// A kernel built for an older GPU architecture than the device it ran on
// (sm75 CUTLASS on a Hopper H100): it cannot use the newer tensor-core
// instructions (wgmma, TMA), so it runs far below the device's peak. One
// generation back (sm80 kernels on sm90) is common for small shapes and is
// reported low; two or more generations back is a real finding.
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "insights/rules_internal.h"
#include "insights/trace_facts.h"

namespace jarvis::insights {
namespace {

// The old-arch kernels of one library and arch tag: one cause (the library
// picked a fallback for these shapes), one finding, however many tile
// variants it chose (the LM head's forward and two backward GEMMs).
struct KernelGroup {
  std::string library;
  std::map<std::string, double> kernel_us;  // by full name
  std::vector<Uid> op_uids;
  std::string category;
  double time_us = 0;
  double above_roofline_us = 0;
  bool has_roofline = true;
  int sm = 0;
};

bool has_old_arch_kernel(const InsightContext& c, const report::PerfOpRow& row, int device_sm) {
  for (Uid k : row.kernels) {
    const KernelTraits& t = detail::kernel_name_facts(c, k).traits;
    if (t.sm_arch && *t.sm_arch < device_sm) return true;
  }
  return false;
}

// What a native kernel reaches here: the FLOP-weighted TFLOP/s of this
// trace's GEMMs of the spec that run no old-arch kernel (>= 10 GFLOP a
// call, so launch-bound shapes do not drag it down). 0 when there is none.
std::map<std::string, double> native_gemm_rates(const InsightContext& c, int device_sm) {
  std::map<std::string, double> out;  // spec -> TFLOP/s (0: no native GEMM of the spec)
  // Each row's kernels read once, not once per spec.
  std::vector<char> old_arch(c.rows.size(), -1);
  const auto native = [&](const report::PerfOpRow& r) {
    char& old = old_arch[static_cast<size_t>(&r - c.rows.data())];
    if (old < 0) old = has_old_arch_kernel(c, r, device_sm) ? 1 : 0;
    return r.metrics->gflops >= 10.0 && !old;
  };
  for (const auto& row : c.rows) {
    if (row.sheet != "GEMM" || !row.metrics || out.count(row.metrics->compute_spec)) continue;
    out[row.metrics->compute_spec] =
        detail::gemm_rate(c, row.metrics->compute_spec, native).tflops_per_s();
  }
  return out;
}

// The op's time above what it would take at the native rate (else above its
// roofline): what a native kernel recovers.
std::optional<double> time_above_native(const report::PerfOpRow& row,
                                        const std::map<std::string, double>& native) {
  if (row.metrics) {
    auto it = native.find(row.metrics->compute_spec);
    if (it != native.end() && it->second > 0 && row.metrics->gflops > 0)
      return std::max(0.0, row.kernel_time_us - row.metrics->gflops / it->second * 1e3);
  }
  return detail::time_above_roofline(row);
}

}  // namespace

void rule_old_arch_kernel(const InsightContext& c, std::vector<Insight>& out) {
  DeviceArch device = device_arch_from_name(c.gpu_name);
  if (c.arch && !device.sm_arch && device.gfx_arch.empty())
    device = device_arch_from_name(c.arch->name);
  if (!device.sm_arch) return;                // AMD names carry no target in practice
  std::map<std::string, KernelGroup> groups;  // by library and arch tag
  const auto native = native_gemm_rates(c, *device.sm_arch);
  for (const auto& row : c.rows) {
    // The time of each old-arch kernel of the op (the op may launch others),
    // and one kernel of that name (its traits).
    std::map<std::string_view, std::pair<double, Uid>> old_kernel_us;
    for (Uid k : row.kernels) {
      const detail::KernelNameFacts& f = detail::kernel_name_facts(c, k);
      const KernelTraits& t = f.traits;
      // An fp32 SIMT GEMM's cause is fp32 without TF32 (fp32_gemm_simt), not
      // the shapes: cuBLAS has no sm90 SIMT kernel to pick.
      if (t.sm_arch && *t.sm_arch < *device.sm_arch && c.trace.events[k].has_dur() &&
          !f.fp32_simt_gemm) {
        auto& entry = old_kernel_us.try_emplace(c.trace.name(k), 0.0, k).first->second;
        entry.first += c.trace.events[k].dur();
      }
    }
    if (old_kernel_us.empty()) continue;
    auto above = time_above_native(row, native);
    for (const auto& [name, entry] : old_kernel_us) {
      const auto& [us, kernel] = entry;
      const KernelTraits& traits = detail::kernel_name_facts(c, kernel).traits;
      KernelGroup& g = groups[fmt::format("{}|{}", traits.library, *traits.sm_arch)];
      g.sm = *traits.sm_arch;
      g.library = traits.library;
      g.kernel_us[std::string(name)] += us;
      g.category = row.category;
      if (g.op_uids.empty() || g.op_uids.back() != row.uid) g.op_uids.push_back(row.uid);
      g.time_us += us;
      // The op's time above the native rate, in proportion to this kernel's share.
      g.has_roofline = g.has_roofline && above.has_value();
      if (above && row.kernel_time_us > 0) g.above_roofline_us += *above * us / row.kernel_time_us;
    }
  }
  for (const auto& [key, g] : groups) {
    int generations = (*device.sm_arch - g.sm) / 10 + ((*device.sm_arch - g.sm) % 10 ? 1 : 0);
    std::vector<std::pair<double, std::string>> by_time;
    for (const auto& [name, us] : g.kernel_us) by_time.emplace_back(us, name);
    std::sort(by_time.rbegin(), by_time.rend());
    const KernelTraits t = parse_kernel_name(by_time.front().second);  // the largest
    std::optional<int> narrowest;                                      // alignment
    nlohmann::json kernels = nlohmann::json::array();
    Insight i;
    for (const auto& [us, name] : by_time) {
      const KernelTraits k = parse_kernel_name(name);
      if (k.alignment && (!narrowest || *k.alignment < *narrowest)) narrowest = *k.alignment;
      i.kernel_names.push_back(name);
      kernels.push_back(
          {{"kernel", name},
           {"time_us", us},
           {"tile", k.tile},
           {"alignment", k.alignment ? nlohmann::json(*k.alignment) : nlohmann::json()},
           {"split_k", k.split_k}});
    }
    i.rule = "old_arch_kernel";
    i.scope = "kernel";
    i.category = g.category;
    i.uids = g.op_uids;
    i.time_us = g.time_us;
    i.share = detail::share_of(c, g.time_us);
    i.severity = generations >= 2 && i.share >= 0.01 ? "high" : generations >= 2 ? "medium" : "low";
    if (g.has_roofline) i.gain_upper_bound_us = g.above_roofline_us;
    // Attention kernels (the family read from the names) are chosen by the
    // SDPA backend and the dtype, not by a GEMM library's heuristics: an
    // fp32 attention can only run PyTorch's memory-efficient kernels, built
    // up to sm80, so padding a shape changes nothing there.
    const bool attention = g.library == kMemEffAttentionLibrary || g.library == "FlashAttention";
    const bool fp32_attention = attention && t.math_dtype == "f32";
    i.title = fmt::format(
        "{} kernels (sm{}{}) on an sm{} device: {} kernel{}, {:.1f}% of kernel time, {} op calls",
        g.library.empty() ? "GPU" : g.library, g.sm, fp32_attention ? ", fp32" : "",
        *device.sm_arch, by_time.size(), by_time.size() == 1 ? "" : "s", 100 * i.share,
        g.op_uids.size());
    i.detail = fmt::format(
        "The kernels target sm{}, {} generation(s) older than the device, so they cannot use the "
        "device's newer tensor-core instructions.{}",
        g.sm, generations,
        narrowest && *narrowest < 8
            ? fmt::format(" A name says align{}: a narrow-alignment fallback, usually picked "
                          "because a dimension is not a multiple of 8.",
                          *narrowest)
            : "");
    i.evidence = {{"kernel_sm", g.sm},
                  {"device_sm", *device.sm_arch},
                  {"device", c.gpu_name},
                  {"library", g.library},
                  {"tile", t.tile},
                  {"alignment", t.alignment ? nlohmann::json(*t.alignment) : nlohmann::json()},
                  {"split_k", t.split_k},
                  {"kernels", kernels}};
    i.action_model =
        "Make the shape tensor-core friendly (dimensions multiples of 64, contiguous "
        "operands) so the library's heuristics pick a native kernel.";
    i.action_kernel = fmt::format(
        "Check why the library selected an sm{} kernel (cuBLASLt heuristics, CUBLASLT_LOG_LEVEL=5 "
        "or hipBLASLt logging) and provide a native sm{} kernel for this shape.",
        g.sm, *device.sm_arch);
    i.verify =
        "The arch tag is in the kernel name (cutlass_75_*, sm80_*, turing_*); confirm with "
        "the replay of the op on the same GPU, which shows the kernel name it launches.";
    if (attention) {
      i.evidence["kernel_family"] = g.library;
      i.evidence["math_dtype"] = t.math_dtype;
      i.detail = fmt::format(
          "The attention runs {}'s kernels built for sm{}, {} generation(s) older than the "
          "device. {}",
          g.library, g.sm, generations,
          fp32_attention
              ? "They compute in fp32: of SDPA's backends only the memory-efficient one takes "
                "fp32, and PyTorch builds its kernels up to sm80, so no shape or padding gives "
                "a native kernel here; bf16/fp16 inputs let SDPA pick FlashAttention or cuDNN "
                "attention."
              : "The SDPA backend decides the kernel: a backend with native kernels for this "
                "device (cuDNN attention, FlashAttention 3 on Hopper) replaces them.");
      i.action_model =
          fp32_attention
              ? "Run the attention in bf16 (torch.autocast(\"cuda\", dtype=torch.bfloat16) "
                "around the forward, or the model in bf16): SDPA then picks FlashAttention or "
                "cuDNN attention; TF32 (torch.backends.cuda.matmul.allow_tf32) speeds the fp32 "
                "GEMMs around it but not this kernel. Padding the shapes does not change it."
              : "Pick an SDPA backend with native kernels for this device "
                "(torch.nn.attention.sdpa_kernel(SDPBackend.CUDNN_ATTENTION) or "
                "FLASH_ATTENTION), with a head dim the backend supports.";
      i.action_kernel = fmt::format(
          "A native sm{} attention kernel (FlashAttention 3, cuDNN fused attention); the "
          "library ships none of this family for sm{}.",
          *device.sm_arch, *device.sm_arch);
      i.verify =
          "The kernel names give the family (fmha_cutlassF/B_* with PyTorchMemEffAttention: the "
          "memory-efficient backend; flash_fwd/bwd: FlashAttention; cudnn: cuDNN) and the dtype "
          "(f32 / bf16); re-profile after the change: the names change.";
    }
    out.push_back(std::move(i));
  }
}

}  // namespace jarvis::insights
