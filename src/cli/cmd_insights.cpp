// jarvis insights TRACE [--arch NAME|FILE|none] [--json FILE] [--top N]:
// the insight rules over one trace, ranked by recoverable time.
#include <fmt/format.h>

#include <cstdio>

#include "analysis/trace_store.h"
#include "cli/commands.h"
#include "insights/insights.h"
#include "perf/gpu_arch.h"
#include "report/table.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

namespace jarvis::cli {
namespace {

constexpr const char* kUsage =
    "usage: jarvis insights TRACE [--arch NAME|FILE|none] [--json FILE] [--top N]\n"
    "Expert insights (beyond TraceLens), ranked by the time a fix could recover:\n"
    "unaligned GEMM dims, kernels built for an older GPU arch, autocast dtype mismatches,\n"
    "tiny GEMMs to batch, launch-bound traces. Each with evidence (UIDs, kernel names),\n"
    "impact and the action on both paths (model change / kernel tuning).\n"
    "  --arch   GPU arch for rooflines (default: detected from the trace; 'none')\n"
    "  --json   also write every insight as JSON to FILE\n"
    "  --top    insights printed (default 20)\n";

}  // namespace

int cmd_insights(const Args& args) {
  if (has_flag(args, "--help") || has_flag(args, "-h")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  auto pos = positionals(args, {"--arch", "--json", "--top"});
  if (pos.size() != 1) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  size_t top = 20;
  if (has_flag(args, "--top")) {
    try {
      top = std::stoul(flag_value(args, "--top"));
    } catch (const std::exception&) {
      std::fprintf(stderr, "jarvis insights: --top needs a non-negative integer\n%s", kUsage);
      return 2;
    }
  }
  Trace trace = load_trace(pos[0]);
  CallTree tree(trace);
  std::string arch_name = flag_value(args, "--arch");
  if (arch_name.empty()) arch_name = detect_arch_name(trace);
  std::optional<GpuArch> arch;
  if (!arch_name.empty() && arch_name != "none") arch = perf::load_gpu_arch(arch_name);
  auto context = insights::make_context(trace, tree, arch ? &*arch : nullptr);
  auto found = insights::run_insights(context);
  fmt::print("{} insights ({}; {})\n", found.size(), trace.gpu_name(),
             arch ? arch->name : std::string("no arch: rules needing peaks skipped"));
  for (size_t k = 0; k < found.size() && k < top; ++k) {
    const auto& i = found[k];
    fmt::print("[{}] {} — {}\n", i.severity, i.rule, i.title);
    if (i.gain_upper_bound_us) {
      double base = i.scope == "trace" && context.timeline ? context.timeline->total_time
                                                           : context.total_kernel_time_us;
      fmt::print("    recoverable: up to {:.1f} us ({:.1f}% of {})\n", *i.gain_upper_bound_us,
                 base > 0 ? 100 * *i.gain_upper_bound_us / base : 0.0,
                 i.scope == "trace" ? "the trace's GPU time" : "kernel time");
    }
    fmt::print("    model: {}\n    kernel: {}\n", i.action_model, i.action_kernel);
  }
  if (has_flag(args, "--json")) {
    nlohmann::json all = nlohmann::json::array();
    for (const auto& i : found) all.push_back(insights::to_json(i));
    write_file_atomic(flag_value(args, "--json"), all.dump(1) + "\n");
  }
  return 0;
}

}  // namespace jarvis::cli
