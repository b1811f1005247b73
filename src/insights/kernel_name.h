// One parser of GPU kernel names: which library built a kernel and what its
// name says about it (target architecture, tile, split-K, alignment). Used by
// the insight rules and by every result that shows kernel evidence.
//
// Kernel names are trace-controlled text of any length, so the parser is a
// single linear pass of substring checks: no regex, no recursion.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace jarvis::insights {

// The library name of PyTorch's memory-efficient attention kernels (SDPA's
// EFFICIENT_ATTENTION backend, xFormers' CUTLASS fmha).
inline constexpr std::string_view kMemEffAttentionLibrary =
    "PyTorch memory-efficient attention (CUTLASS fmha)";

struct KernelTraits {
  // cuBLAS, cuBLASLt, CUTLASS, cuDNN, FlashAttention, kMemEffAttentionLibrary,
  // rocBLAS/hipBLASLt (Tensile), CK, MIOpen, Triton, NCCL, RCCL, ATen, or ""
  // when unknown.
  std::string library;
  // NVIDIA SM version the kernel was built for (75 for sm75 / cutlass_75 /
  // turing_), when the name says so.
  std::optional<int> sm_arch;
  std::string gfx_arch;  // AMD target when the name says so (gfx942, ...)
  std::string tile;      // first MxN[xK] tile in the name ("128x128", "256x128x64")
  bool split_k = false;
  std::optional<int> alignment;  // elements, from "alignN"
  // Precision tag of the math when the name has one (bf16, f16, tf32, f32,
  // fp8, s (fp32 SIMT), h (fp16)), "" otherwise.
  std::string math_dtype;
};

KernelTraits parse_kernel_name(std::string_view name);

// The SM version (90 for H100) or gfx target of the GPU a trace ran on, from
// its device or arch name ("NVIDIA H100 80GB HBM3", "MI300X", "H200").
struct DeviceArch {
  std::optional<int> sm_arch;
  std::string gfx_arch;
};
DeviceArch device_arch_from_name(std::string_view gpu_name);

// "sm75" / "gfx942" text of a KernelTraits' or a DeviceArch's target ("" when unknown).
std::string arch_tag(const std::optional<int>& sm_arch, const std::string& gfx_arch);

}  // namespace jarvis::insights
