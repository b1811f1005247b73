#include "mcp/tool_profiles.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "mcp/embedded.h"

namespace jarvis::mcp {

std::vector<std::string> builtin_tool_names() {
  std::vector<std::string> names;
  for (const EmbeddedFile& file : embedded_tool_schemas())
    if (file.path.ends_with(".json")) names.emplace_back(file.path.substr(0, file.path.size() - 5));
  std::sort(names.begin(), names.end());
  return names;
}

const std::vector<ToolProfile>& tool_profiles() {
  // Each profile keeps the trace handles (load / list / unload) so its
  // tools can be called on their own, and tool_schema, which brings back
  // the output schemas tools/list leaves out.
  static const std::vector<ToolProfile> profiles = {
      {"single-trace",
       "one trace: ops, insights, rooflines, SQL, memory, the category workflow, reports, replay",
       {"load_trace",       "list_traces",    "unload_trace", "ops_summary",     "insights",
        "parent_chain",     "gemm_roofline",  "query_sql",    "memory_summary",  "category_filter",
        "analyze_category", "write_findings", "final_report", "render_report",   "render_findings",
        "critical_path",    "what_if",        "make_replay",  "kernel_counters", "memory_diff",
        "tool_schema"}},
      {"multi-rank",
       "one trace per rank: collectives, stragglers, the cross-rank critical path and what-if",
       {"load_trace", "list_traces", "unload_trace", "collective_report", "critical_path",
        "what_if", "ops_summary", "insights", "parent_chain", "query_sql", "tool_schema"}},
      {"sweep",
       "a sweep of runs: variance, timelines, NCCL per configuration, comparisons, the gate",
       {"load_sweep", "sweep_gemm_variance", "sweep_gpu_timeline", "sweep_nccl", "sweep_plots",
        "compare_sweeps", "regression_gate", "rocprof_config", "load_trace", "list_traces",
        "unload_trace", "compare", "tool_schema"}},
  };
  return profiles;
}

std::vector<std::string> select_tools(const std::vector<std::string>& profiles,
                                      const std::vector<std::string>& tools,
                                      const std::vector<std::string>& known_tools) {
  std::vector<std::string> out;
  for (const std::string& name : profiles) {
    auto it = std::find_if(tool_profiles().begin(), tool_profiles().end(),
                           [&](const ToolProfile& p) { return p.name == name; });
    if (it == tool_profiles().end()) {
      std::vector<std::string> names;
      for (const auto& p : tool_profiles()) names.push_back(p.name);
      throw std::invalid_argument(
          fmt::format("unknown tool profile '{}' (profiles: {})", name, fmt::join(names, ", ")));
    }
    out.insert(out.end(), it->tools.begin(), it->tools.end());
  }
  out.insert(out.end(), tools.begin(), tools.end());
  for (const std::string& name : out)
    if (std::find(known_tools.begin(), known_tools.end(), name) == known_tools.end())
      throw std::invalid_argument(
          fmt::format("unknown tool '{}' (tools: {})", name, fmt::join(known_tools, ", ")));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace jarvis::mcp
