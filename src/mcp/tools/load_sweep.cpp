// load_sweep: discover and analyse every run of a sweep directory (parallel,
// cached), keep the derived tables under a handle.
#include <fmt/format.h>

#include "mcp/result_shape.h"
#include "mcp/tool.h"
#include "mcp/tools/sweep_common.h"

namespace jarvis::mcp {
namespace {

json configs_json(const engine::Sweep& s) {
  json out = json::array();
  std::map<std::string, size_t> index;
  for (const auto& run : s.runs) {
    std::string label = s.config_label(run);
    auto [it, fresh] = index.emplace(label, out.size());
    if (fresh) out.push_back({{"config", label}, {"runs", 0}, {"ranks", json::array()}});
    json& c = out[it->second];
    c["runs"] = c["runs"].get<int>() + 1;
    c["ranks"].push_back(s.rank_of(run));
  }
  return out;
}

ToolResult load_sweep_tool(const json& args, ToolContext& ctx) {
  std::string root = ctx.resolve_path(args.at("path").get<std::string>(), true, false).string();
  engine::SweepLoadOptions options;
  if (args.contains("layout")) options.pattern = args.at("layout").get<std::string>();
  options.jobs = args.at("jobs").get<size_t>();
  if (args.contains("cache_dir")) {
    std::string c = args.at("cache_dir").get<std::string>();
    options.cache_dir = c == "none" ? c : ctx.resolve_path(c, false, true).string();
  }
  // Every directory the walk enters and every run it adds must resolve
  // inside the roots, as load_trace's paths must: a symlink in the sweep
  // leading out is refused as that run's failure, never followed.
  const PathPolicy& paths = ctx.paths();
  options.admit = [&paths](const std::string& found) -> std::string {
    try {
      std::filesystem::path resolved = paths.resolve(found, /*must_exist=*/true, false);
      std::error_code ec;
      if (std::filesystem::is_directory(resolved, ec))
        for (const auto& e : std::filesystem::directory_iterator(resolved, ec))
          if (e.is_symlink(ec)) paths.resolve(e.path().string(), true, false);
      return "";
    } catch (const ToolError& e) {
      return std::string("refused: ") + e.what();
    }
  };
  options.progress = [&ctx](size_t done, size_t total, const std::string& path) {
    ctx.report_progress(static_cast<double>(done), static_cast<double>(total),
                        fmt::format("{} of {} runs analysed ({})", done, total, path));
    return !ctx.cancelled();
  };
  std::shared_ptr<const engine::Sweep> s;
  try {
    s = std::make_shared<const engine::Sweep>(engine::load_sweep(root, options));
  } catch (const engine::SweepError& e) {
    throw ToolError(e.what());
  }
  std::string handle = engine::SweepStore::global().add(s);
  json failures = json::array();
  for (const auto& f : s->failures) failures.push_back({{"path", f.path}, {"reason", f.reason}});
  json runs = json::array();
  for (const auto& r : s->runs) {
    json run = {{"run", r.input.relative},
                {"config", s->config_label(r)},
                {"rank", s->rank_of(r)},
                {"kind", engine::run_kind_name(r.data.kind)},
                {"gemm_rows", r.data.gemms.size()},
                {"collective_kernels", r.data.collectives.size()},
                // Report runs have no kernels but coll_analysis counts.
                {"collectives", engine::collective_count(r.data)},
                {"steps", r.data.step_ms.size()}};
    if (!r.data.health_confidence.empty()) {  // a report input has no trace to judge
      run["confidence"] = r.data.health_confidence;
      run["warnings"] = r.data.health_warnings;
    }
    runs.push_back(std::move(run));
  }
  json result = {{"sweep", handle},
                 {"root", s->root},
                 {"layout", s->layout.pattern},
                 {"fields", s->layout.fields},
                 {"run_count", s->runs.size()},
                 {"cache_hits", s->cache_hits},
                 {"cache_dir", s->cache_dir},
                 {"cache_warning", s->cache_warning},
                 {"configs", configs_json(*s)},
                 {"runs", runs},
                 {"failures", failures}};
  std::vector<std::string> flags;
  if (std::string reason = engine::nccl_empty_reason(*s); !reason.empty()) flags.push_back(reason);
  size_t repeats = 0;
  for (const auto& c : result["configs"]) repeats = std::max(repeats, c["runs"].get<size_t>());
  if (repeats < 4)
    flags.push_back(fmt::format(
        "at most {} run(s) per configuration: run-to-run noise cannot be tested (a rank test "
        "needs 4 a side); differences between configurations are not established by this sweep "
        "alone",
        repeats));
  result["flags"] = flags;
  std::string text = fmt::format(
      "sweep {}: {} runs ({} from cache), {} configs, {} failed; "
      "layout {}\n",
      handle, s->runs.size(), s->cache_hits, result["configs"].size(), failures.size(),
      s->layout.pattern);
  for (const auto& f : flags) text += "- " + f + "\n";
  ToolResult out{result, text};
  out.rows("/runs").rows("/failures").rows("/configs");
  out.suggest("sweep_gemm_variance", {{"sweep", handle}},
              "GEMM rows whose time varies most per run")
      .suggest("sweep_gpu_timeline", {{"sweep", handle}}, "GPU timeline per configuration");
  return out;
}

}  // namespace
JARVIS_MCP_TOOL(load_sweep, load_sweep_tool);
}  // namespace jarvis::mcp
