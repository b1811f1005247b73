// gemm_roofline: per-shape GEMM roofline of a loaded trace, optional SVG plot.
#include <fmt/format.h>

#include "engine/engine.h"
#include "mcp/result_shape.h"
#include "mcp/tool.h"
#include "mcp/tools/trace_arg.h"

namespace jarvis::mcp {
namespace {

// Shapes the text summary lists; structuredContent has up to `limit`.
constexpr size_t kTextShapes = 10;

// " (recorded fp32, kernels bf16: ...)" for a shape judged at its kernels'
// precision; "" otherwise.
std::string autocast_note(const json& s) {
  if (!s.contains("compute_spec_of_kernels")) return "";
  std::string note =
      fmt::format(" (recorded {}, kernels run {}",
                  s["precision"].is_string() ? s["precision"].get<std::string>() : "?",
                  s["kernel_precision"].get<std::string>());
  if (s["efficiency_percent_recorded_dtype"].is_number())
    note += fmt::format("; {:.1f}% against the recorded dtype's peak",
                        s["efficiency_percent_recorded_dtype"].get<double>());
  if (s["wraps_shape"].is_number())
    note +=
        fmt::format("; wraps #{}, whose kernels its time counts again", s["wraps_shape"].dump());
  return note + ")";
}

std::string shapes_text(const json& r) {
  std::string t = fmt::format("GEMM roofline ({}): {} shapes, {:.1f}% of compute time\n",
                              r["arch"].get<std::string>(), r["shape_count"].get<size_t>(),
                              r["gemm_percent_of_compute"].get<double>());
  size_t listed = 0;
  for (const auto& s : r["shapes"]) {
    if (++listed > kTextShapes) break;
    auto n = [&](const char* k) { return s[k].is_number() ? s[k].get<double>() : 0.0; };
    t += fmt::format(
        "  #{} {:<8} {} M={} N={} K={} B={} x{} {:.2f}% compute  AI={:.1f} (ridge {:.1f}) {}  "
        "{:.1f} TFLOPS/s {:.2f} TB/s  eff {:.1f}%{}\n",
        s["index"].dump(), s["priority"].get<std::string>(), s["op"].get<std::string>(),
        s["M"].dump(), s["N"].dump(), s["K"].dump(), s["batch"].dump(), s["count"].dump(),
        n("percent_of_compute"), n("flops_per_byte"), n("ridge_point"),
        s["bound"].is_string() ? s["bound"].get<std::string>() : "?", n("achieved_tflops"),
        n("achieved_tbs"), n("efficiency_percent"), autocast_note(s));
    if (s.value("efficiency_above_roof_reason", json()).is_string())
      t += "      eff " + s["efficiency_above_roof_reason"].get<std::string>() + "\n";
  }
  // Kernel times and headroom are totals over the whole trace, as profiled;
  // rates and efficiencies are per call (issue 73 point 6).
  t += fmt::format(
      "GEMM kernel time {:.3f} ms {}, each kernel counted once (a shape's own time is its "
      "subtree's, TraceLens's GEMM sheet: {:.3f} ms in all); shapes' kernel and headroom times are "
      "totals over the trace, TFLOPS/s, TB/s and eff per call\n",
      r["gemm_time_us"].get<double>() / 1000,
      r.contains("scope") ? step_scope_text(r["scope"], "gemm_time_ms", "ms")
                          : std::string("over the whole trace, profiled"),
      r["gemm_sheet_kernel_time_us"].get<double>() / 1000);
  return t;
}

// The rule engine's GEMM insights (unaligned dims, old-arch kernels,
// autocast dtype, tiny GEMMs): the judgment beside the roofline numbers.
json gemm_insights(const LoadedTrace& entry, const std::string& arch_name) {
  GpuArch arch = engine::load_gpu_arch(arch_name);
  auto tree = engine::trace_call_tree(entry);
  json out = json::array();
  auto timeline = engine::trace_timeline(entry);
  // The session's step model (load_trace built it), not a second one.
  const auto step_model = loaded_step_model(entry);
  for (const auto& i : engine::run_insights(
           engine::make_context(entry.trace(), *tree, &arch, timeline.get(), step_model.get())))
    if (i.category == "GEMM") out.push_back(engine::to_json(i));
  return out;
}

ToolResult gemm_roofline_tool(const json& args, ToolContext& ctx) {
  auto entry = trace_arg(args, ctx);
  std::string arch = ctx.arch(args.value("arch", std::string()));
  if (arch.empty()) arch = engine::detect_arch_name(entry->trace());
  if (arch.empty())
    throw ToolError("cannot detect the GPU arch from the trace; pass arch (e.g. MI300X, H100)");
  engine::GemmRooflineFilters f;
  f.op_contains = args.value("op_contains", std::string());
  f.dtype = args.value("dtype", std::string());
  f.min_percent = args.at("min_percent").get<double>();
  f.top_n = row_limit(args);
  engine::ojson r;
  try {
    auto report = engine::trace_report(*entry, arch);
    auto tree = engine::trace_call_tree(*entry);
    r = engine::gemm_roofline_for_report(entry->trace(), *tree, *report, arch, f);
  } catch (const engine::GpuArchError& e) {
    throw ToolError(e.what());
  } catch (const std::invalid_argument& e) {
    throw ToolError(e.what());
  }
  json result(r);
  result["trace"] = entry->handle();
  result["scope"] =
      step_scope_json(*entry, result["gemm_time_us"].get<double>() / 1000, "gemm_time_ms");
  result["insights"] = gemm_insights(*entry, arch);
  result["svg_path"] = nullptr;
  if (args.contains("svg_path")) {
    auto path = ctx.output_file(args.at("svg_path").get<std::string>(), ".svg",
                                args.at("overwrite").get<bool>());
    write_file_atomic(path.string(), engine::gemm_roofline_svg(r));
    ctx.paths().note_written(path);
    result["svg_path"] = path.string();
  }
  ToolResult out{result, shapes_text(result)};
  out.rows("/shapes", result["shape_count"].get<size_t>()).rows("/insights").rows("/linear_layers");
  if (!result["shapes"].empty() && result["shapes"][0].contains("op"))
    out.suggest("parent_chain",
                {{"trace", entry->handle()}, {"op_name", result["shapes"][0]["op"]}},
                "the layer (nn.Module) the most expensive GEMM shape belongs to");
  out.suggest("category_filter",
              {{"trace", entry->handle()}, {"output_dir", "<dir>"}, {"category", "gemm"}},
              "then analyze_category(gemm) for the TraceLens GEMM findings");
  return out;
}

}  // namespace
JARVIS_MCP_TOOL(gemm_roofline, gemm_roofline_tool);
}  // namespace jarvis::mcp
