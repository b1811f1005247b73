// render_report: the self-contained HTML report of a loaded trace, and
// optionally every chart as an SVG file.
#include <filesystem>
#include <optional>

#include <fmt/format.h>

#include "base/output_guard.h"
#include "engine/engine.h"
#include "mcp/tool.h"
#include "mcp/tools/trace_arg.h"

namespace jarvis::mcp {
namespace {

ToolResult render_report_tool(const json& args, ToolContext& ctx) {
  auto entry = trace_arg(args, ctx);
  std::string output = args.at("output").get<std::string>();
  bool overwrite = args.at("overwrite").get<bool>();
  auto out = ctx.output_file(output, output.ends_with(".htm") ? ".htm" : ".html", overwrite);
  // The annotated trace beside the page (inside the roots with it). Its name
  // is a trace's: write_file_atomic's guard replaces it only when jarvis wrote it.
  const std::string annotated_name = engine::annotated_trace_name(out.string());
  const std::filesystem::path annotated_path = out.parent_path() / annotated_name;
  check_output_target(annotated_path);  // before the work
  std::filesystem::path svg_dir;
  if (args.contains("svg_dir"))
    svg_dir = ctx.output_dir(args.at("svg_dir").get<std::string>(), overwrite);
  std::string arch = ctx.arch(args.value("arch", std::string()));
  if (arch.empty()) arch = engine::detect_arch_name(entry->trace());
  engine::ReportPageOptions page;
  page.trace_path = entry->path();
  page.top_ops = args.at("top_n").get<size_t>();
  std::shared_ptr<const Report> report;
  try {
    report = engine::trace_report(*entry, arch.empty() ? "none" : arch);
    if (!arch.empty()) {
      page.arch = engine::load_arch_json(arch);
      page.arch_name = page.arch.value("name", arch);
    }
  } catch (const engine::GpuArchError& e) {
    throw ToolError(e.what());
  } catch (const std::invalid_argument& e) {
    throw ToolError(e.what());
  }
  std::optional<GpuArch> gpu;
  if (!arch.empty() && arch != "none") gpu = engine::load_gpu_arch(arch);
  // The session's tree and step model (load_trace built them).
  const engine::ReportVerdict verdict =
      engine::report_verdict(entry->trace(), *engine::trace_call_tree(*entry),
                             gpu ? &*gpu : nullptr, loaded_step_model(*entry).get());
  page.verdict = &verdict;
  page.annotated_trace = annotated_name;
  ctx.report_progress(1, 2, "report built; drawing charts");
  auto charts = engine::report_charts(entry->trace(), *report, page);
  std::string html = engine::report_html(entry->trace(), *report, charts, page);
  write_file_atomic(
      annotated_path.string(),
      engine::annotated_trace_gzip(entry->trace(), verdict,
                                   std::filesystem::path(entry->path()).filename().string()));
  ctx.paths().note_written(annotated_path);
  write_file_atomic(out.string(), html);
  ctx.paths().note_written(out);
  std::vector<std::string> svg_paths;
  if (!svg_dir.empty()) {
    svg_paths = engine::write_chart_svgs(charts, svg_dir.string());
    ctx.paths().mark_output_dir(svg_dir);
  }
  json list = json::array();
  for (size_t i = 0; i < charts.size(); ++i)
    list.push_back({{"name", charts[i].name},
                    {"title", std::visit([](const auto& c) { return c.title; }, charts[i].chart)},
                    {"svg_path", svg_paths.empty() ? json(nullptr) : json(svg_paths[i])}});
  json result = {{"trace", entry->handle()},
                 {"path", out.string()},
                 {"bytes", html.size()},
                 {"annotated_trace", annotated_path.string()},
                 {"arch", page.arch_name.empty() ? json(nullptr) : json(page.arch_name)},
                 {"charts", list}};
  return {result,
          fmt::format("Wrote {} ({} bytes, {} charts{}) and the annotated trace {} (Perfetto UI, "
                      "chrome://tracing).",
                      out.string(), html.size(), charts.size(),
                      svg_paths.empty() ? "" : ", SVGs in " + svg_dir.string(),
                      annotated_path.string())};
}

}  // namespace
JARVIS_MCP_TOOL(render_report, render_report_tool);
}  // namespace jarvis::mcp
