// kernel_counters: per-kernel hardware counters and derived metrics of a
// rocprofv3 trace (src/rocprof/counters.h).
#include <re2/re2.h>

#include <memory>

#include <fmt/format.h>

#include "engine/engine.h"
#include "mcp/result_shape.h"
#include "mcp/tool.h"
#include "mcp/tools/trace_arg.h"

namespace jarvis::mcp {
namespace {

// RE2 runs in time linear in the name with bounded memory, whatever the
// pattern (std::regex backtracks and recursed off the stack on long names);
// the pattern itself is capped by the schema (256 characters).
constexpr size_t kMaxPatternChars = 256;

std::unique_ptr<RE2> compile_filter(const json& args) {
  std::string pattern = args.value("kernel_regex", std::string());
  if (pattern.empty()) return nullptr;
  if (pattern.size() > kMaxPatternChars)
    throw ToolError(fmt::format("kernel_regex is longer than {} characters", kMaxPatternChars));
  RE2::Options options;
  options.set_log_errors(false);
  auto re = std::make_unique<RE2>(pattern, options);
  if (!re->ok())
    throw ToolError(fmt::format("kernel_regex is not a valid regular expression: {}", re->error()));
  return re;
}

json aggregates_json(const std::map<std::string, engine::CounterAggregate>& m) {
  json out = json::object();
  for (const auto& [name, a] : m)
    out[name] = {{"mean", a.mean}, {"min", a.min}, {"max", a.max}, {"samples", a.samples}};
  return out;
}

json kernel_json(const engine::KernelCounters& k) {
  const auto& l = k.launch;
  return {{"name", k.name},
          {"category", k.category},
          {"dispatches", k.dispatches},
          {"counted_dispatches", k.counted_dispatches},
          {"total_us", static_cast<double>(k.total_ns) / 1000.0},
          {"mean_us", k.mean_ns / 1000.0},
          {"launch",
           {{"grid", {l.grid.x, l.grid.y, l.grid.z}},
            {"workgroup", {l.workgroup.x, l.workgroup.y, l.workgroup.z}},
            {"Grid_Size", l.grid.product()},
            {"Workgroup_Size", l.workgroup.product()},
            {"LDS_Block_Size", l.lds_bytes},
            {"Scratch_Size", l.scratch_bytes},
            {"VGPR_Count", l.arch_vgpr},
            {"Accum_VGPR_Count", l.accum_vgpr},
            {"SGPR_Count", l.sgpr}}},
          {"launch_configs", k.launch_configs},
          {"counters", aggregates_json(k.counters)},
          {"derived", aggregates_json(k.derived)}};
}

json gpu_json(const engine::RocprofAgent* gpu) {
  if (!gpu) return nullptr;
  return {{"name", gpu->name},
          {"product_name", gpu->product_name},
          {"cu_count", gpu->cu_count},
          {"num_xcc", gpu->num_xcc},
          {"wave_front_size", gpu->wave_front_size},
          {"max_clock_mhz", gpu->max_clock_mhz}};
}

std::string text_of(const json& r) {
  std::string text = fmt::format("kernel_counters of {}: {} of {} kernels, counters: {}\n",
                                 r["trace"].get<std::string>(), r["kernels"].size(),
                                 r["matched_kernels"].get<size_t>(), r["counters"].dump());
  size_t listed = 0;
  for (const auto& k : r["kernels"]) {
    if (++listed > 10) break;
    text += fmt::format("  {:>10.1f} us x{:<5} {}", k["total_us"].get<double>(),
                        k["dispatches"].get<size_t>(), k["name"].get<std::string>());
    for (const char* m : {engine::kCuUtilization, engine::kMfmaShare, engine::kWavesPerCu})
      if (k["derived"].contains(m))
        text += fmt::format(" {}={:.3g}", m, k["derived"][m]["mean"].get<double>());
    text += "\n";
  }
  return text;
}

ToolResult kernel_counters_tool(const json& args, ToolContext& ctx) {
  std::string handle = args.at("trace").get<std::string>();
  auto entry = trace_arg(args, ctx);
  auto profile = engine::rocprof_profile(*entry);
  if (!profile)
    throw ToolError(fmt::format(
        "trace {} is a PyTorch profiler trace; kernel_counters needs rocprofv3 output (load the "
        "rocprofv3 CSV directory or its *_results.json)",
        handle));
  auto filter = compile_filter(args);
  size_t top_n = row_limit(args);
  auto kernels = engine::kernel_counters(*profile);
  json rows = json::array();
  size_t matched = 0;
  for (const auto& k : kernels) {
    std::string_view name(k.name);
    if (filter && !RE2::PartialMatch(re2::StringPiece(name.data(), name.size()), *filter)) continue;
    if (++matched <= top_n) rows.push_back(kernel_json(k));
  }
  json result = {{"trace", handle},
                 {"gpu", gpu_json(profile->main_gpu())},
                 {"counters", profile->counter_names},
                 {"total_kernels", kernels.size()},
                 {"matched_kernels", matched},
                 {"kernels", rows}};
  ToolResult out{result, text_of(result)};
  out.rows("/kernels", matched);
  return out;
}

}  // namespace
JARVIS_MCP_TOOL(kernel_counters, kernel_counters_tool);
}  // namespace jarvis::mcp
