// The rules and the helpers they share. Adding a rule: one rule_<name>.cpp
// defining a function of this signature, and one line in insights.cpp.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "insights/insights.h"
#include "insights/kernel_name.h"

namespace jarvis::insights {

using RuleFn = void (*)(const InsightContext&, std::vector<Insight>&);

void rule_gemm_unaligned_dims(const InsightContext& c, std::vector<Insight>& out);
void rule_old_arch_kernel(const InsightContext& c, std::vector<Insight>& out);
void rule_autocast_dtype(const InsightContext& c, std::vector<Insight>& out);
void rule_tiny_gemm_batching(const InsightContext& c, std::vector<Insight>& out);
void rule_launch_bound(const InsightContext& c, std::vector<Insight>& out);
void rule_conv_layout_transposes(const InsightContext& c, std::vector<Insight>& out);
void rule_unfused_attention(const InsightContext& c, std::vector<Insight>& out);
void rule_elementwise_chain(const InsightContext& c, std::vector<Insight>& out);
void rule_bandwidth_baseline(const InsightContext& c, std::vector<Insight>& out);
void rule_foreach_optimizer(const InsightContext& c, std::vector<Insight>& out);
void rule_epilogue_fusion(const InsightContext& c, std::vector<Insight>& out);
void rule_fp32_cross_entropy(const InsightContext& c, std::vector<Insight>& out);

namespace detail {

// GEMM dims of a modelled row (M, N, K, B), when the model has them.
struct GemmDims {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  std::string precision;  // of the recorded inputs: fp32, bf16, ...
  // The strides the trace records for A (M x K) and B (K x N), last two
  // dimensions; empty when the trace has none or the op's operands are not
  // laid out as M x K and K x N (only aten::mm, addmm, bmm, baddbmm and
  // _scaled_mm are read).
  std::vector<int64_t> stride_a, stride_b;
};
std::optional<GemmDims> gemm_dims(const report::PerfOpRow& row);

// Kernel time above the roofline of a row (its recoverable time if it ran
// at the roof), or nullopt without a roofline.
std::optional<double> time_above_roofline(const report::PerfOpRow& row);

// Distinct kernel names of a row, in first-launch order.
std::vector<std::string> kernel_names(const Trace& trace, const report::PerfOpRow& row);

// "aten::mm (4096, 768) x (768, 50257)"-style label of a GEMM row.
std::string gemm_label(const report::PerfOpRow& row, const GemmDims& d);

double share_of(const InsightContext& c, double time_us);

// The severity of a finding by the share of all kernel time it is about (or
// could save): "high" from 5 %, "medium" from 1 %, else "low". One ladder
// for the rules, so a severity means the same whichever rule wrote it.
std::string severity_by_share(double share);

// An op-scope finding about `time_us` of kernel time spent in the ops `uids`:
// rule, scope, category, uids, time, share and severity_by_share(share)
// filled in; the rule adds the kernel names, its gain bound, words and
// evidence (and sets another severity where its rule ranks otherwise).
Insight op_insight(const InsightContext& c, std::string_view rule, std::string category,
                   std::vector<Uid> uids, double time_us);

}  // namespace detail
}  // namespace jarvis::insights
