// load_trace: confine the path, load (or reuse) the trace with progress and
// cancellation, return the engine's overview.
#include <fmt/format.h>

#include "analysis/summaries.h"
#include "analysis/trace_store.h"
#include "mcp/tool.h"

namespace jarvis::mcp {
namespace {

ToolResult load_trace_tool(const json& args, ToolContext& ctx) {
  auto path = ctx.resolve_path(args.at("path").get<std::string>(), /*must_exist=*/true,
                               /*for_write=*/false);
  LoadOptions options;
  // The loader reports uncompressed bytes read; their total is unknown until
  // the end, so the notifications carry no total.
  options.progress = [&ctx](uint64_t bytes, uint64_t events) {
    ctx.report_progress(static_cast<double>(bytes), 0,
                        fmt::format("{} events read ({} MB of JSON)", events, bytes >> 20));
    return !ctx.cancelled();
  };
  auto loaded = ctx.traces().load(path.string(), options);
  json summary = analysis::trace_overview(*loaded.entry);
  summary["reused"] = loaded.reused;
  ctx.throw_if_cancelled();
  if (json timeline = analysis::trace_gpu_timeline(*loaded.entry); !timeline.is_null())
    summary["gpu_timeline"] = timeline;
  std::string text = fmt::format(
      "Loaded {} as handle \"{}\"{}: platform {}, GPU {}, {} events ({} kernels, {} cpu_ops).\n{}",
      loaded.entry->path(), loaded.entry->handle(), loaded.reused ? " (reused, unchanged file)" : "",
      summary["platform"].get<std::string>(),
      summary["gpu_name"].get<std::string>().empty() ? "unknown" : summary["gpu_name"].get<std::string>(),
      summary["events"]["total"].get<int64_t>(), summary["events"]["kernel"].get<int64_t>(),
      summary["events"]["cpu_op"].get<int64_t>(), summary.dump());
  return {summary, text};
}

}  // namespace
JARVIS_MCP_TOOL(load_trace, load_trace_tool);
}  // namespace jarvis::mcp
