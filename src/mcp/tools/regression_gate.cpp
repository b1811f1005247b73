// regression_gate: candidate runs against baseline runs (or a named
// baseline), per step, category, op and kernel, as `jarvis gate`.
#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "mcp/result_shape.h"
#include "mcp/tool.h"
#include "mcp/tools/sweep_common.h"

namespace jarvis::mcp {
namespace {

engine::GateSide side_of(const json& paths_arg, ToolContext& ctx) {
  std::vector<std::string> paths;
  for (const auto& p : paths_arg)
    paths.push_back(ctx.resolve_path(p.get<std::string>(), true, false).string());
  engine::SweepLoadOptions options;
  // As load_sweep: what a sweep directory leads to must stay inside the roots.
  const PathPolicy& policy = ctx.paths();
  options.admit = [&policy](const std::string& found) -> std::string {
    try {
      policy.resolve(found, /*must_exist=*/true, false);
      return "";
    } catch (const ToolError& e) {
      return std::string("refused: ") + e.what();
    }
  };
  return engine::gate_side(paths, options);
}

ToolResult regression_gate_tool(const json& args, ToolContext& ctx) {
  if (args.contains("base") == args.contains("baseline"))
    throw ToolError("give exactly one of `base` (runs) and `baseline` (a saved name)");
  engine::GateOptions g;
  g.alpha = args.at("alpha").get<double>();
  g.threshold_pct = args.at("threshold_pct").get<double>();
  g.min_share_pct = args.at("min_share_pct").get<double>();
  engine::GateResult res;
  std::string saved, read_from;
  try {
    // An agent's baselines live apart from a person's (sweep/gate.h).
    engine::GateSide base =
        args.contains("base")
            ? side_of(args.at("base"), ctx)
            : engine::load_agent_baseline(args.at("baseline").get<std::string>(), &read_from);
    if (args.contains("save_baseline")) {
      if (!args.contains("base")) throw ToolError("`save_baseline` needs `base` runs");
      saved = engine::save_agent_baseline(args.at("save_baseline").get<std::string>(), base);
    }
    res = engine::gate(base, side_of(args.at("candidate"), ctx), g);
  } catch (const engine::SweepError& e) {
    throw ToolError(e.what(), e.kind());
  }
  Table t = engine::gate_table(res);
  std::map<std::string, size_t> counts;
  for (size_t r = 0; r < t.rows.size(); ++r) counts[t.at(r, "verdict").text()]++;
  json result = {
      {"regression", res.regression}, {"base_runs", res.base_runs},
      {"cand_runs", res.cand_runs},   {"not_judged", res.not_judged},
      {"verdicts", counts},           {"rows", sweep_tools::rows_json(t, t.rows.size())}};
  if (!saved.empty()) result["saved_baseline"] = saved;
  if (!read_from.empty()) result["baseline_file"] = read_from;
  ToolResult out{result, engine::gate_summary(res, g)};
  out.rows("/rows", t.rows.size());
  return out;
}

}  // namespace
JARVIS_MCP_TOOL(regression_gate, regression_gate_tool);
}  // namespace jarvis::mcp
