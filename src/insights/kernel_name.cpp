#include "insights/kernel_name.h"
#include "base/text_match.h"
#include "pycompat/text.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace jarvis::insights {
namespace {

// Kernel names can be megabytes long in crafted traces; everything past this
// is never a library or arch tag worth reading.
constexpr size_t kMaxScan = 4096;

std::string lower_prefix(std::string_view s) {
  return pycompat::ascii_lower(s.substr(0, std::min(s.size(), kMaxScan)));
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// Digits starting at pos (at most 4), or nullopt.
std::optional<int> digits_at(std::string_view s, size_t pos) {
  int value = 0, n = 0;
  while (pos < s.size() && is_digit(s[pos]) && n < 4) value = value * 10 + (s[pos++] - '0'), ++n;
  if (n == 0 || (pos < s.size() && is_digit(s[pos]))) return std::nullopt;
  return value;
}

// The number after the first occurrence of `prefix` that is followed by
// digits, e.g. "sm" in "nvjet_sm90_tst" -> 90.
std::optional<int> number_after(std::string_view s, std::string_view prefix) {
  for (size_t pos = s.find(prefix); pos != std::string_view::npos; pos = s.find(prefix, pos + 1)) {
    if (pos > 0 && std::isalnum(static_cast<unsigned char>(s[pos - 1]))) continue;
    if (auto v = digits_at(s, pos + prefix.size())) return v;
  }
  return std::nullopt;
}

std::string library_of(std::string_view n) {
  if (contains(n, "nccl")) return "NCCL";
  if (contains(n, "rccl")) return "RCCL";
  if (contains(n, "triton")) return "Triton";  // Inductor's triton_poi_ / triton_red_ and the rest
  if (contains(n, "cudnn")) return "cuDNN";    // before flash: cuDNN's SDPA kernels say "flash"
  // PyTorch's memory-efficient SDPA kernels (xFormers' CUTLASS fmha:
  // fmha_cutlassF_f32_aligned_..._sm80(PyTorchMemEffAttention::...)) are not
  // FlashAttention: they take fp32, and PyTorch builds them up to sm80.
  if (contains(n, "memeffattention") || contains(n, "fmha_cutlass"))
    return std::string(kMemEffAttentionLibrary);
  if (contains(n, "flash") || contains(n, "fmha")) return "FlashAttention";
  if (contains(n, "nvjet") || contains(n, "cublaslt")) return "cuBLASLt";
  if (contains(n, "cutlass")) return "CUTLASS";
  if (contains(n, "xmma") || contains(n, "cublas") || contains(n, "sgemm") ||
      contains(n, "hgemm") || contains(n, "gemv") || n.starts_with("ampere_") ||
      n.starts_with("turing_") || n.starts_with("volta_") || n.starts_with("sm80_") ||
      n.starts_with("sm90_"))
    return "cuBLAS";
  if (n.starts_with("cijk_")) return "Tensile (rocBLAS/hipBLASLt)";
  if (n.starts_with("ck_") || contains(n, "ck::") || contains(n, "devicegemm")) return "CK";
  if (n.starts_with("igemm_") || contains(n, "miopen") || n.starts_with("naive_conv"))
    return "MIOpen";
  if (contains(n, "at::native::") || contains(n, "at::cuda::")) return "ATen";
  return "";
}

std::optional<int> sm_arch_of(std::string_view n) {
  if (auto v = number_after(n, "sm_")) return v;
  if (auto v = number_after(n, "sm")) return v;
  if (auto v = number_after(n, "cutlass_")) return v;  // cutlass_75_tensorop...
  static constexpr std::array<std::pair<std::string_view, int>, 5> kFamilies = {
      {{"volta_", 70}, {"turing_", 75}, {"ampere_", 80}, {"hopper_", 90}, {"blackwell_", 100}}};
  for (const auto& [family, sm] : kFamilies)
    if (contains(n, family)) return sm;
  return std::nullopt;
}

std::string gfx_of(std::string_view n) {
  size_t pos = n.find("gfx");
  if (pos == std::string_view::npos) return "";
  size_t end = pos + 3;
  while (end < n.size() && end < pos + 8 && std::isalnum(static_cast<unsigned char>(n[end]))) ++end;
  return end > pos + 3 ? std::string(n.substr(pos, end - pos)) : "";
}

// First "<digits>x<digits>[x<digits>]" token, as written.
std::string tile_of(std::string_view n) {
  for (size_t i = 0; i < n.size(); ++i) {
    if (!is_digit(n[i]) || (i > 0 && is_digit(n[i - 1]))) continue;
    size_t j = i;
    int groups = 0;
    while (true) {
      size_t start = j;
      while (j < n.size() && is_digit(n[j])) ++j;
      if (j == start) break;
      ++groups;
      if (j < n.size() && n[j] == 'x' && j + 1 < n.size() && is_digit(n[j + 1]) && groups < 3)
        ++j;
      else
        break;
    }
    if (groups >= 2) return std::string(n.substr(i, j - i));
  }
  return "";
}

std::string math_dtype_of(std::string_view n) {
  static constexpr std::array<std::string_view, 6> kTags = {"fp8",  "e4m3", "bf16",
                                                            "tf32", "f16",  "f32"};
  for (std::string_view tag : kTags)
    if (contains(n, tag)) return tag == "e4m3" ? "fp8" : std::string(tag);
  if (contains(n, "hgemm")) return "f16";
  if (contains(n, "sgemm")) return "f32";
  return "";
}

}  // namespace

KernelTraits parse_kernel_name(std::string_view name) {
  std::string n = lower_prefix(name);
  KernelTraits t;
  t.library = library_of(n);
  t.sm_arch = sm_arch_of(n);
  t.gfx_arch = gfx_of(n);
  t.tile = tile_of(n);
  t.split_k = contains(n, "splitk") || contains(n, "split_k");
  t.alignment = number_after(n, "align");
  t.math_dtype = math_dtype_of(n);
  return t;
}

DeviceArch device_arch_from_name(std::string_view gpu_name) {
  std::string n = lower_prefix(gpu_name);
  static constexpr std::array<std::pair<std::string_view, int>, 12> kNvidia = {{{"b200", 100},
                                                                                {"b100", 100},
                                                                                {"gb200", 100},
                                                                                {"h100", 90},
                                                                                {"h200", 90},
                                                                                {"h800", 90},
                                                                                {"gh200", 90},
                                                                                {"l40", 89},
                                                                                {"l4", 89},
                                                                                {"a100", 80},
                                                                                {"a800", 80},
                                                                                {"a10", 86}}};
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 7> kAmd = {
      {{"mi355", "gfx950"},
       {"mi350", "gfx950"},
       {"mi325", "gfx942"},
       {"mi300", "gfx942"},
       {"mi250", "gfx90a"},
       {"mi210", "gfx90a"},
       {"mi100", "gfx908"}}};
  DeviceArch d;
  for (const auto& [tag, sm] : kNvidia)
    if (contains(n, tag)) {
      d.sm_arch = sm;
      return d;
    }
  for (const auto& [tag, gfx] : kAmd)
    if (contains(n, tag)) {
      d.gfx_arch = std::string(gfx);
      return d;
    }
  if (contains(n, "v100")) d.sm_arch = 70;
  if (contains(n, "t4")) d.sm_arch = 75;
  return d;
}

std::string arch_tag(const std::optional<int>& sm_arch, const std::string& gfx_arch) {
  if (sm_arch) return "sm" + std::to_string(*sm_arch);
  return gfx_arch;
}

}  // namespace jarvis::insights
