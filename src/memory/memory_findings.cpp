// What the memory numbers mean for the model: three rules, each with its
// evidence and the change that addresses it.
#include <fmt/format.h>

#include <cmath>
#include <cstdlib>

#include "memory/memory_internal.h"

namespace jarvis::memory {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;
// A reserved-minus-allocated gap worth acting on: a quarter of what the
// allocator holds and at least 256 MiB (smaller gaps are rounding of blocks).
constexpr double kGapShare = 0.25;
constexpr int64_t kGapMinBytes = 256 * kMiB;
// Activations dominate when the allocations made in the peak's own step
// (freed at its end: activations and temporaries) are half the peak.
constexpr double kActivationShare = 0.5;
// Growth below this per step is allocator noise, not a leak.
constexpr int64_t kGrowthMinBytes = kMiB;

std::string top_group_at_peak(const DeviceMemory& d) {
  if (d.by_op.empty() || d.by_op.front().at_peak_bytes <= 0) return {};
  const OpGroup& g = d.by_op.front();
  return fmt::format("; the largest holder is {} ({})", group_label(g.op, g.module),
                     format_bytes(g.at_peak_bytes));
}

void activations_rule(const DeviceMemory& d, std::vector<MemoryFinding>& out) {
  if (!d.is_gpu() || d.peak_allocated <= 0) return;
  int64_t in_step = 0;
  for (const Allocation& a : d.live_at_peak)
    if (a.step == d.peak_step) in_step += a.bytes;
  double share = static_cast<double>(in_step) / static_cast<double>(d.peak_allocated);
  if (share < kActivationShare) return;
  std::string where = d.peak_step.empty() ? "within the trace" : "in " + d.peak_step;
  out.push_back(
      {"activations_dominate_peak", d.device,
       fmt::format("Activations and temporaries make {:.0f}% of the {} peak", 100 * share,
                   d.device),
       fmt::format("{} of the {} peak were allocated {} and were still live at it{}",
                   format_bytes(in_step), format_bytes(d.peak_allocated), where,
                   top_group_at_peak(d)),
       "Recompute instead of keeping: activation checkpointing (torch.utils.checkpoint) on the "
       "largest modules, a smaller micro-batch or sequence length, or fused kernels "
       "(torch.compile, fused attention) that skip the intermediate tensors."});
}

void reserved_gap_rule(const DeviceMemory& d, std::vector<MemoryFinding>& out) {
  if (!d.is_gpu() || d.reserved_at_peak <= 0) return;
  int64_t gap = d.reserved_at_peak - d.peak_allocated;
  double share = static_cast<double>(gap) / static_cast<double>(d.reserved_at_peak);
  if (gap < kGapMinBytes || share < kGapShare) return;
  out.push_back(
      {"reserved_gap", d.device,
       fmt::format("The caching allocator holds {} more than is allocated at the peak",
                   format_bytes(gap)),
       fmt::format("reserved {} vs allocated {} at the peak ({:.0f}% of reserved unused)",
                   format_bytes(d.reserved_at_peak), format_bytes(d.peak_allocated), 100 * share),
       "Fragmentation of the caching allocator's segments: set "
       "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (PYTORCH_HIP_ALLOC_CONF on ROCm), "
       "or keep tensor sizes steady across steps (pad variable sequence lengths)."});
}

void growth_rule(const DeviceMemory& d, std::vector<MemoryFinding>& out) {
  if (!d.grows_every_step || d.growth_per_step < kGrowthMinBytes) return;
  std::string holder;
  for (const OpGroup& g : d.by_op)
    if (g.never_freed_bytes > 0) {
      holder = fmt::format("; the largest never-freed group is {} ({})",
                           group_label(g.op, g.module), format_bytes(g.never_freed_bytes));
      break;
    }
  out.push_back(
      {"growth_across_steps", d.device,
       fmt::format("Allocated memory on {} grows by {} every step: a leak", d.device,
                   format_bytes(d.growth_per_step)),
       fmt::format("{} steps, each after the first ends with more allocated than it began "
                   "(median growth {}); {} allocated after the first step was never freed{}",
                   d.steps.size(), format_bytes(d.growth_per_step),
                   format_bytes(d.never_freed_after_first_step_bytes), holder),
       "Find what keeps tensors alive across steps: losses or outputs accumulated without "
       ".detach() / .item(), lists or caches appended each step, hooks that store outputs."});
}

}  // namespace

std::vector<MemoryFinding> memory_findings(const MemoryAnalysis& analysis) {
  std::vector<MemoryFinding> out;
  for (const DeviceMemory& d : analysis.devices) {
    growth_rule(d, out);
    activations_rule(d, out);
    reserved_gap_rule(d, out);
  }
  return out;
}

std::string format_bytes(int64_t bytes) {
  double v = std::abs(static_cast<double>(bytes));
  const char* sign = bytes < 0 ? "-" : "";
  if (v >= double(int64_t{1} << 30))
    return fmt::format("{}{:.2f} GiB", sign, v / double(int64_t{1} << 30));
  if (v >= double(kMiB)) return fmt::format("{}{:.1f} MiB", sign, v / double(kMiB));
  if (v >= 1024) return fmt::format("{}{:.1f} KiB", sign, v / 1024);
  return fmt::format("{}{} B", sign, std::llabs(bytes));
}

std::string group_label(const std::string& op, const std::string& module) {
  return module.empty() ? op : op + " in " + module;
}

}  // namespace jarvis::memory
