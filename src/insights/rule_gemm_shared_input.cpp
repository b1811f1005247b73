// GEMMs on inputs of the same shape issued back to back: the Q, K and V
// projections of an attention block, or the gate and up projections of a
// SwiGLU MLP, each read the same activation and run as separate GEMMs of a
// third (or half) the width. One GEMM over the concatenated weights reads the
// activation once and, being larger, runs at the rate the trace's larger
// GEMMs reach. The trace records shapes, not tensor identities, so "same
// input" is read from the same first-input shape of consecutive GPU-launching
// siblings (the pattern the projections make in eager and compiled code).
//
// Sized against this trace's own GEMMs: the run's FLOPs at the FLOP-weighted
// rate of the GEMMs of the same compute spec that are at least as large as
// the fused one would be. Without such GEMMs there is no reference and no
// finding: a fused GEMM larger than anything measured here cannot be timed.
#include <algorithm>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "insights/rules_internal.h"

namespace jarvis::insights {
namespace {

constexpr double kMinGainShare = 0.05;  // below 5 % of the run's time: noise

// The GEMM ops whose runs are read, by interned id.
NameIds gemm_op_names(const Trace& trace) {
  return NameIds(trace, {"aten::mm", "aten::addmm", "aten::linear", "aten::matmul"});
}

struct Run {
  std::vector<Uid> ops;
  double gflops = 0, time_us = 0;
  std::string spec;
};

struct SharedInputPattern {
  std::vector<int64_t> input;
  size_t width = 0;  // GEMMs per run
  std::string name, spec;
  std::vector<Run> runs;
};

// Runs among one ordered list of GPU-launching siblings: consecutive GEMM
// ops with a perf row and the same first-input shape and spec.
void scan(const InsightContext& c, const std::map<Uid, const report::PerfOpRow*>& gemm_rows,
          const NameIds& gemm_ops, std::span<const Uid> siblings,
          std::span<const uint32_t> sibling_names,
          std::map<std::string, SharedInputPattern>& patterns) {
  Run run;
  std::vector<int64_t> run_input;
  auto close = [&] {
    if (run.ops.size() >= 2) {
      std::string name(c.trace.name(run.ops.front()));
      std::string key =
          fmt::format("{}|{}|{}|{}", name, fmt::join(run_input, ","), run.ops.size(), run.spec);
      SharedInputPattern& p = patterns[key];
      p.input = run_input;
      p.width = run.ops.size();
      p.name = name;
      p.spec = run.spec;
      p.runs.push_back(run);
    }
    run = Run{};
    run_input.clear();
  };
  uint32_t run_name = 0;  // the name of the run's first op
  for (size_t k = 0; k < siblings.size(); ++k) {
    const Uid u = siblings[k];
    // The recorded shape of GEMM rows only: reading every op's args was most
    // of this rule's time (the name first: a row lookup per op was next).
    const bool gemm_op = gemm_ops.contains(sibling_names[k]);
    auto row = gemm_op ? gemm_rows.find(u) : gemm_rows.end();
    std::optional<std::vector<int64_t>> dims;
    if (row != gemm_rows.end()) dims = detail::first_input_dims(c.trace, u);
    if (!dims || dims->size() < 2) {
      close();
      continue;
    }
    const auto& m = *row->second->metrics;
    if (!run.ops.empty() &&
        (*dims != run_input || m.compute_spec != run.spec || sibling_names[k] != run_name))
      close();
    if (run.ops.empty()) run_input = *dims, run.spec = m.compute_spec, run_name = sibling_names[k];
    run.ops.push_back(u);
    run.gflops += m.gflops;
    run.time_us += row->second->kernel_time_us;
  }
  close();
}

}  // namespace

void rule_gemm_shared_input(const InsightContext& c, std::vector<Insight>& out) {
  std::map<Uid, const report::PerfOpRow*> gemm_rows;
  for (const auto& row : c.rows)
    if (row.sheet == "GEMM" && row.metrics && row.metrics->gflops > 0 && row.kernel_time_us > 0)
      gemm_rows[row.uid] = &row;
  if (gemm_rows.size() < 2) return;
  std::map<std::string, SharedInputPattern> patterns;
  const NameIds gemm_ops = gemm_op_names(c.trace);
  detail::for_each_launching_sibling_list(
      c, [&](std::span<const Uid> siblings, std::span<const uint32_t> sibling_names) {
        scan(c, gemm_rows, gemm_ops, siblings, sibling_names, patterns);
      });
  for (const auto& [key, p] : patterns) {
    double gflops = 0, time_us = 0;
    std::vector<Uid> uids;
    for (const Run& r : p.runs) {
      gflops += r.gflops;
      time_us += r.time_us;
      uids.insert(uids.end(), r.ops.begin(), r.ops.end());
    }
    const double fused_gflops = gflops / static_cast<double>(p.runs.size());
    const double reference = detail::gemm_rate(c, p.spec, [&](const report::PerfOpRow& row) {
                               return row.metrics->gflops >= fused_gflops;
                             }).tflops_per_s();
    if (!(reference > 0)) continue;
    const double fused_time_us = gflops / reference * 1e3;
    const double gain_us = time_us - fused_time_us;
    if (gain_us < kMinGainShare * time_us) continue;
    Insight i = detail::op_insight(c, "gemm_shared_input", "GEMM", uids, time_us);
    i.gain_upper_bound_us = gain_us;
    // The runs' kernel names, first seen first (a name's interned id stands
    // for its text: a tiled trace's runs hold 50k ops, each row's names were
    // copied and looked for in the list).
    std::unordered_set<uint32_t> named;
    for (Uid u : uids)
      for (Uid k : gemm_rows.at(u)->kernels)
        if (named.insert(c.trace.events[k].name).second)
          i.kernel_names.emplace_back(c.trace.name(k));
    const double achieved = gflops / time_us * 1e3;
    i.title = fmt::format(
        "{} x {} on inputs of the same shape ({}) issued back to back, x{}: {:.2f} ms at {:.0f} "
        "TFLOP/s; one GEMM over the concatenated weights would run at the {:.0f} TFLOP/s this "
        "trace's larger GEMMs reach",
        p.width, p.name, fmt::join(p.input, " x "), p.runs.size(), time_us / 1e3, achieved,
        reference);
    i.detail =
        "Projections that read the same activation (Q/K/V, gate/up) each read it again and run "
        "as narrower GEMMs; one GEMM with the weights concatenated along N reads it once and "
        "reaches the rate of larger GEMMs. The trace records shapes, not tensor identities: "
        "check the inputs are the same tensor.";
    nlohmann::json runs = nlohmann::json::array();
    for (size_t k = 0; k < p.runs.size() && k < 4; ++k) runs.push_back(p.runs[k].ops);
    i.evidence = {{"op", p.name},
                  {"input_dims", p.input},
                  {"gemms_per_run", p.width},
                  {"runs", p.runs.size()},
                  {"first_runs_uids", runs},
                  {"gflops", gflops},
                  {"kernel_time_us", time_us},
                  {"achieved_tflops_per_s", achieved},
                  {"reference_tflops_per_s", reference},
                  {"reference",
                   "FLOP-weighted rate of this trace's GEMMs (same compute spec) at "
                   "least as large as the fused GEMM"},
                  {"fused_time_us", fused_time_us}};
    i.action_model =
        "Concatenate the projection weights (one nn.Linear with out_features = the sum, split "
        "the output: the fused QKV / gate_up layout of vLLM and HF's fused modules), or let "
        "torch.compile's GEMM fusion pass do it.";
    i.action_kernel =
        "One GEMM with N = the sum of the widths; a grouped GEMM when the shapes must stay "
        "separate.";
    i.verify =
        "parent_chain on the first uid of a run shows the module; gemm_roofline gives each "
        "GEMM's TFLOP/s.";
    out.push_back(std::move(i));
  }
}

}  // namespace jarvis::insights
