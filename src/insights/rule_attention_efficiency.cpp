// Fused attention running well below what this trace's own GEMMs reach.
// Flash-style attention is two GEMMs per tile with a softmax between them;
// a good kernel reaches most of the device's GEMM rate: FlashAttention-2
// reports up to ~73 % of A100 peak forward and ~63 % backward where cuBLAS
// GEMMs reach ~85 %, i.e. ~0.85x and ~0.75x of the GEMM rate. The trace's
// own large GEMMs (FLOP-weighted rate) stand in for what the device, its
// clocks and its libraries deliver, as bandwidth_baseline does for memory-
// bound ops; a peak from a spec sheet would call every kernel slow.
#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "insights/rules_internal.h"
#include "perf/perf_model.h"

namespace jarvis::insights {
namespace {

constexpr double kForwardShareOfGemmRate = 0.85;
constexpr double kBackwardShareOfGemmRate = 0.75;
constexpr double kMinGemmGflops = 10.0;  // GEMMs large enough to show the device's rate
constexpr double kMinGainShare = 0.10;   // below 10 % of the op's time: tuning noise
// Flash kernels reach their rate on long sequences and full head dims; on
// short ones (decode, a 500-token prefill) tiles run partly empty and causal
// masking wastes a larger share, so the GEMM-rate reference does not hold.
constexpr int64_t kMinSeqLen = 1024;
constexpr int64_t kMinHeadDim = 64;

int64_t int_param(const perf::PerfMetrics& m, std::string_view name) {
  const perf::Param* p = perf::find_param(m.params(), name);
  return p && p->value.kind == PyValue::Kind::Int ? p->value.i : 0;
}

struct AttentionGroup {
  std::vector<Uid> uids;
  std::vector<Uid> kernels;
  detail::FlopRate rate;
  size_t calls = 0;
};

}  // namespace

void rule_attention_efficiency(const InsightContext& c, std::vector<Insight>& out) {
  // The trace's GEMM rate per spec, from GEMMs large enough to show it.
  std::map<std::string, detail::FlopRate> rates;
  auto rate_of = [&](const std::string& spec) {
    auto [it, added] = rates.emplace(spec, detail::FlopRate{});
    if (added)
      it->second = detail::gemm_rate(c, spec, [](const report::PerfOpRow& row) {
        return row.metrics->gflops >= kMinGemmGflops;
      });
    return it->second.tflops_per_s();
  };
  // Attention rows by (op name, direction, spec): one finding per kind.
  std::map<std::tuple<std::string, bool, std::string>, AttentionGroup> groups;
  for (const auto& row : c.rows) {
    if (row.sheet != "SDPA" || !row.metrics || !(row.metrics->gflops > 0)) continue;
    if (!(row.kernel_time_us > 0) || !(rate_of(row.metrics->compute_spec) > 0)) continue;
    if (std::min(int_param(*row.metrics, "N_Q"), int_param(*row.metrics, "N_KV")) < kMinSeqLen ||
        int_param(*row.metrics, "d_h_qk") < kMinHeadDim)
      continue;
    AttentionGroup& g = groups[{row.name, row.backward, row.metrics->compute_spec}];
    g.uids.push_back(row.uid);
    g.kernels.insert(g.kernels.end(), row.kernels.begin(), row.kernels.end());
    g.rate.gflops += row.metrics->gflops;
    g.rate.time_us += row.kernel_time_us;
    ++g.calls;
  }
  for (auto& [key, g] : groups) {
    const auto& [name, backward, spec] = key;
    const detail::FlopRate& gemm = rates.at(spec);
    const double gemm_tflops = gemm.tflops_per_s();
    const double share = backward ? kBackwardShareOfGemmRate : kForwardShareOfGemmRate;
    const double attainable = share * gemm_tflops;
    const double achieved = g.rate.tflops_per_s();
    if (!(attainable > achieved)) continue;
    const double attainable_time_us = g.rate.gflops / attainable * 1e3;  // GFLOP / TFLOP/s = ms
    const double gain_us = g.rate.time_us - attainable_time_us;
    if (gain_us < kMinGainShare * g.rate.time_us) continue;
    Insight i = detail::kernels_insight(
        c, "attention_efficiency", backward ? "SDPA_bwd" : "SDPA_fwd", g.kernels, g.rate.time_us);
    i.uids = g.uids;
    i.gain_upper_bound_us = gain_us;
    i.title = fmt::format(
        "Attention {} at {:.0f} TFLOP/s ({} x {}, {:.2f} ms, {:.1f}% of kernel time): this "
        "trace's GEMMs run at {:.0f} TFLOP/s, good flash-attention kernels reach about "
        "{:.0f}",
        backward ? "backward" : "forward", achieved, g.calls, name, g.rate.time_us / 1e3,
        100 * i.share, gemm_tflops, attainable);
    i.detail = fmt::format(
        "Flash-style attention is two GEMMs per tile with a softmax between them; good kernels "
        "reach ~{:.0f}% of the device's GEMM rate {} (FlashAttention-2: ~73% of peak forward, "
        "~63% backward, where GEMMs reach ~85%). This one reaches {:.0f}% of the rate this "
        "trace's own GEMMs show.",
        100 * share, backward ? "backward" : "forward", 100 * achieved / gemm_tflops);
    i.evidence = {{"op", name},
                  {"calls", g.calls},
                  {"direction", backward ? "backward" : "forward"},
                  {"compute_spec", spec},
                  {"gflops", g.rate.gflops},
                  {"kernel_time_us", g.rate.time_us},
                  {"achieved_tflops_per_s", achieved},
                  {"trace_gemm_tflops_per_s", gemm_tflops},
                  {"trace_gemm_gflops", gemm.gflops},
                  {"attainable_share_of_gemm_rate", share},
                  {"attainable_tflops_per_s", attainable},
                  {"attainable_time_us", attainable_time_us}};
    i.action_model =
        "Use the platform's best attention backend: FlashAttention-3 / cuDNN SDPA on Hopper, "
        "CK or aiter flash attention on MI300 (torch.nn.attention.sdpa_kernel to pick it), "
        "and a head dim / sequence length the kernel is tuned for.";
    i.action_kernel =
        "Tune the attention kernel's tile sizes and pipelining (block M/N, warps, stages) for "
        "this head dim and sequence length; check the kernel is not falling back to a "
        "non-flash path.";
    i.verify =
        "analyze_category(sdpa_fwd / sdpa_bwd) gives the TFLOP/s per shape; gemm_roofline the "
        "GEMMs' rate that the bound is taken from.";
    out.push_back(std::move(i));
  }
}

}  // namespace jarvis::insights
