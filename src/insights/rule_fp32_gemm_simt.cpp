// fp32 GEMMs on the CUDA cores of a GPU with tensor cores: with TF32 off
// (PyTorch's default for matmuls) and no autocast, cuBLAS runs fp32 GEMMs as
// SIMT kernels (`sgemm`, `*_ffma_*`), at the vector fp32 peak, where TF32
// tensor cores (torch.backends.cuda.matmul.allow_tf32 = True, or
// torch.set_float32_matmul_precision("high")) run the same GEMM at the
// matrix fp32 peak (7.4x on H100/H200) and bf16 autocast at twice that.
// Sized at the same share of the TF32 peak as the SIMT kernel reaches of
// the vector peak.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "insights/rules_internal.h"
#include "insights/trace_facts.h"

namespace jarvis::insights {
namespace {

// Ampere and later have TF32 tensor cores.
constexpr int kFirstTf32Sm = 80;
// matrix_fp32 / vector_fp32 when the arch file gives neither (A100: 156 /
// 19.5; H100 / H200: 494 / 67).
constexpr double kDefaultTf32Speedup = 7.4;

bool is_gemm_kernel(std::string_view lower_name) {
  return lower_name.find("gemm") != std::string_view::npos;
}

}  // namespace

namespace detail {

bool is_fp32_simt_gemm_kernel(std::string_view name) {
  std::string n(name.substr(0, 256));
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char ch) { return std::tolower(ch); });
  if (!is_gemm_kernel(n) || n.find("tf32") != std::string::npos) return false;
  return n.find("sgemm") != std::string::npos || n.find("ffma") != std::string::npos;
}

}  // namespace detail

void rule_fp32_gemm_simt(const InsightContext& c, std::vector<Insight>& out) {
  DeviceArch device = device_arch_from_name(c.gpu_name);
  if (c.arch && !device.sm_arch) device = device_arch_from_name(c.arch->name);
  if (!device.sm_arch || *device.sm_arch < kFirstTf32Sm) return;
  double speedup = kDefaultTf32Speedup;
  if (c.arch) {
    auto matrix = c.arch->peak_tflops("matrix_fp32");
    auto vector = c.arch->peak_tflops("vector_fp32");
    if (matrix && vector && *vector > 0 && *matrix > *vector) speedup = *matrix / *vector;
  }
  std::vector<Uid> uids;
  std::map<std::string, double> kernel_us;
  double time_us = 0;
  std::string category;
  std::set<Uid> counted;  // a kernel under two rows (an op wrapping the same op) counts once
  for (const auto& row : c.rows) {
    double row_us = 0;
    for (Uid k : row.kernels) {
      const Event& e = c.trace.events[k];
      if (!e.has_dur() || !detail::kernel_name_facts(c, k).fp32_simt_gemm) continue;
      if (!counted.insert(k).second) continue;
      row_us += e.dur();
      kernel_us[std::string(c.trace.name(k))] += e.dur();
    }
    if (row_us <= 0) continue;
    uids.push_back(row.uid);
    time_us += row_us;
    if (category.empty()) category = row.category;
  }
  if (time_us <= 0) return;
  Insight i = detail::op_insight(c, "fp32_gemm_simt", category.empty() ? "GEMM" : category,
                                 std::move(uids), time_us);
  std::vector<std::pair<double, std::string>> by_time;
  for (const auto& [name, us] : kernel_us) by_time.emplace_back(us, name);
  std::sort(by_time.rbegin(), by_time.rend());
  for (const auto& entry : by_time) i.kernel_names.push_back(entry.second);
  const double saving = time_us * (1 - 1 / speedup);
  i.gain_upper_bound_us = saving;
  i.gain_method = fmt::format(
      "the SIMT kernels' time at the same share of the TF32 tensor-core peak ({:.1f}x the vector "
      "fp32 peak)",
      speedup);
  i.title = fmt::format(
      "fp32 GEMMs on CUDA cores: {} SIMT kernel(s) take {:.2f} ms ({:.0f}% of kernel time); TF32 "
      "tensor cores run them ~{:.1f}x faster",
      kernel_us.size(), time_us / 1e3, 100 * i.share, speedup);
  i.detail =
      "The GEMM kernels are fp32 SIMT kernels (sgemm / ffma): TF32 is off for matmuls "
      "(PyTorch's default) and nothing runs under autocast, so the tensor cores sit idle. "
      "This is the cause, not the kernels' architecture or the shapes' alignment.";
  i.evidence = {{"simt_kernel_time_us", time_us},
                {"tf32_speedup", speedup},
                {"kernels", by_time.size()},
                {"device_sm", *device.sm_arch}};
  i.action_model =
      "torch.backends.cuda.matmul.allow_tf32 = True (or "
      "torch.set_float32_matmul_precision(\"high\")); better, train under "
      "torch.autocast(\"cuda\", dtype=torch.bfloat16).";
  i.action_kernel = "None needed: cuBLAS picks tensor-core kernels once TF32 or bf16 is allowed.";
  i.verify =
      "Re-profile: the GEMM kernels' names carry tf32 (sm90_xmma_gemm_*tf32*) or bf16 and the "
      "GEMM time drops by about the factor above; check the loss curve matches (TF32 keeps a "
      "10-bit mantissa).";
  out.push_back(std::move(i));
}

}  // namespace jarvis::insights
