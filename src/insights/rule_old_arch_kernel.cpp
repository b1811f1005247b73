// A kernel built for an older GPU architecture than the device it ran on
// (sm75 CUTLASS on a Hopper H100): it cannot use the newer tensor-core
// instructions (wgmma, TMA), so it runs far below the device's peak. One
// generation back (sm80 kernels on sm90) is common for small shapes and is
// reported low; two or more generations back is a real finding.
#include <map>

#include <fmt/format.h>

#include "insights/rules_internal.h"

namespace jarvis::insights {
namespace {

struct KernelGroup {
  std::vector<Uid> op_uids;
  std::string category;
  double time_us = 0;
  double above_roofline_us = 0;
  bool has_roofline = true;
  int sm = 0;
};

}  // namespace

void rule_old_arch_kernel(const InsightContext& c, std::vector<Insight>& out) {
  DeviceArch device = device_arch_from_name(c.gpu_name);
  if (c.arch && !device.sm_arch && device.gfx_arch.empty())
    device = device_arch_from_name(c.arch->name);
  if (!device.sm_arch) return;                // AMD names carry no target in practice
  std::map<std::string, KernelGroup> groups;  // by kernel name
  for (const auto& row : c.rows) {
    // The time of each old-arch kernel of the op (the op may launch others).
    std::map<std::string_view, double> old_kernel_us;
    for (Uid k : row.kernels) {
      std::string_view name = c.trace.name(k);
      KernelTraits t = parse_kernel_name(name);
      if (t.sm_arch && *t.sm_arch < *device.sm_arch && c.trace.events[k].has_dur())
        old_kernel_us[name] += c.trace.events[k].dur();
    }
    auto above = detail::time_above_roofline(row);
    for (const auto& [name, us] : old_kernel_us) {
      KernelGroup& g = groups[std::string(name)];
      g.sm = *parse_kernel_name(name).sm_arch;
      g.category = row.category;
      g.op_uids.push_back(row.uid);
      g.time_us += us;
      // The op's time above its roofline, in proportion to this kernel's share.
      g.has_roofline = g.has_roofline && above.has_value();
      if (above && row.kernel_time_us > 0) g.above_roofline_us += *above * us / row.kernel_time_us;
    }
  }
  for (const auto& [name, g] : groups) {
    int generations = (*device.sm_arch - g.sm) / 10 + ((*device.sm_arch - g.sm) % 10 ? 1 : 0);
    KernelTraits t = parse_kernel_name(name);
    Insight i;
    i.rule = "old_arch_kernel";
    i.scope = "kernel";
    i.category = g.category;
    i.uids = g.op_uids;
    i.kernel_names = {name};
    i.time_us = g.time_us;
    i.share = detail::share_of(c, g.time_us);
    i.severity = generations >= 2 && i.share >= 0.01 ? "high" : generations >= 2 ? "medium" : "low";
    if (g.has_roofline) i.gain_upper_bound_us = g.above_roofline_us;
    i.title = fmt::format("{} kernel (sm{}) on an sm{} device: {:.1f}% of kernel time, {} op calls",
                          t.library.empty() ? "GPU" : t.library, g.sm, *device.sm_arch,
                          100 * i.share, g.op_uids.size());
    i.detail = fmt::format(
        "The kernel targets sm{}, {} generation(s) older than the device, so it cannot use the "
        "device's newer tensor-core instructions.{}",
        g.sm, generations,
        t.alignment && *t.alignment < 8
            ? fmt::format(" Its name says align{}: a narrow-alignment fallback, usually picked "
                          "because a dimension is not a multiple of 8.",
                          *t.alignment)
            : "");
    i.evidence = {{"kernel_sm", g.sm},
                  {"device_sm", *device.sm_arch},
                  {"device", c.gpu_name},
                  {"library", t.library},
                  {"tile", t.tile},
                  {"alignment", t.alignment ? nlohmann::json(*t.alignment) : nlohmann::json()},
                  {"split_k", t.split_k}};
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
    out.push_back(std::move(i));
  }
}

}  // namespace jarvis::insights
