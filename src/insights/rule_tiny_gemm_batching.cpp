// Many calls of one tiny GEMM shape: each call is latency-bound, so the time
// is launch and ramp-up, not math. Batching them (bmm / grouped GEMM) or
// fusing them into a neighbour recovers most of it. Thresholds are the ones
// gemm_roofline uses (docs/outputs.md): tiny = max(M,N,K) <= 256 or
// min(M,N,K) <= 16; a batching pattern = tiny and >= 1000 calls, or batch >= 64.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "insights/rules_internal.h"

namespace jarvis::insights {
namespace {

struct Group {
  const report::PerfOpRow* first = nullptr;
  detail::GemmDims dims;
  std::vector<Uid> uids;
  double time_us = 0;
};

bool is_tiny(const detail::GemmDims& d) {
  return std::max({d.m, d.n, d.k}) <= 256 || std::min({d.m, d.n, d.k}) <= 16;
}

}  // namespace

void rule_tiny_gemm_batching(const InsightContext& c, std::vector<Insight>& out) {
  std::map<std::string, Group> groups;
  for (const auto& row : c.rows) {
    auto d = detail::gemm_dims(c, row);
    if (!d || !is_tiny(*d)) continue;
    Group& g = groups[detail::gemm_label(row, *d)];
    if (!g.first) g.first = &row, g.dims = *d;
    g.uids.push_back(row.uid);
    g.time_us += row.kernel_time_us;
  }
  for (const auto& [label, g] : groups) {
    size_t calls = g.uids.size();
    if (calls < 1000 && g.dims.batch < 64) continue;
    double mean_us = g.time_us / static_cast<double>(calls);
    Insight i = detail::op_insight(c, "tiny_gemm_batching", "GEMM", g.uids, g.time_us);
    i.kernel_names = detail::kernel_names(c.trace, *g.first);
    // Batched into one call, the launches but one disappear: an upper bound.
    i.gain_upper_bound_us = g.time_us - mean_us;
    i.title = fmt::format("{}: tiny GEMM called {} times, {:.2f} us each ({:.1f}% of kernel time)",
                          label, calls, mean_us, 100 * i.share);
    i.detail = "Each call is too small to fill the GPU; its time is launch and ramp-up.";
    i.evidence = {{"M", g.dims.m},
                  {"N", g.dims.n},
                  {"K", g.dims.k},
                  {"batch", g.dims.batch},
                  {"calls", calls},
                  {"mean_us", mean_us},
                  {"dtype", g.dims.precision}};
    i.action_model =
        "Batch the calls (torch.bmm / grouped GEMM over the independent problems) "
        "or fuse the GEMM into its producer/consumer.";
    i.action_kernel =
        "A grouped/batched GEMM kernel for this shape; or capture the sequence in a "
        "CUDA/HIP graph to remove launch gaps.";
    i.verify =
        "Check the call stack (parent_chain) that the calls are independent (no data "
        "dependency between them) before proposing to batch them.";
    out.push_back(std::move(i));
  }
}

}  // namespace jarvis::insights
