// load_trace: confine the path, load (or reuse) the trace with progress and
// cancellation, return the engine's overview.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <functional>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/phase_timer.h"
#include "base/two_threads.h"
#include "engine/engine.h"
#include "mcp/tool.h"
#include "mcp/tools/trace_arg.h"

namespace jarvis::mcp {
namespace {

// A rocprofv3 trace: kernels (and copies) only, so the overview, TraceLens's
// rocprof gpu_timeline and a health note saying what the trace cannot do.
ToolResult rocprof_result(const LoadedTrace& entry, const engine::RocprofProfile& profile,
                          bool reused) {
  json summary = engine::trace_overview(entry);
  summary["reused"] = reused;
  summary["source"] = "rocprofv3";
  summary["rocprof"] = engine::rocprof_info_json(profile);
  if (json timeline = engine::rocprof_gpu_timeline_json(profile); !timeline.is_null())
    summary["gpu_timeline"] = timeline;
  summary["health"] = engine::rocprof_health_json(profile);
  std::string text = fmt::format(
      "Loaded {} as handle \"{}\"{}: rocprofv3 {} output, platform ROCm, GPU {}, {} kernel "
      "dispatches of {} kernels, {} memory copies, {} counter values ({}).\n"
      "No CPU op tree: ops_summary gives the kernel summary; kernel_counters gives hardware "
      "counters; op-level tools (parent_chain, category_filter, gemm_roofline, insights, ...) "
      "refuse this trace.\n{}",
      entry.path(), entry.handle(), reused ? " (reused, unchanged file)" : "", profile.format,
      summary["gpu_name"].get<std::string>().empty() ? "unknown"
                                                     : summary["gpu_name"].get<std::string>(),
      profile.dispatches.size(), profile.kernel_names.size(), profile.copies.size(),
      profile.counters.size(),
      profile.counter_names.empty() ? "none"
                                    : fmt::format("{}", fmt::join(profile.counter_names, ", ")),
      "");
  ToolResult out{summary, text};
  out.suggest("ops_summary", {{"trace", entry.handle()}}, "kernel time per kernel name");
  if (!profile.counter_names.empty())
    out.suggest("kernel_counters", {{"trace", entry.handle()}}, "hardware counters per kernel");
  return out;
}

// One line on the collectives, when the trace has any.
std::string collectives_line(const json& summary) {
  if (!summary.contains("collectives")) return "";
  const json& c = summary["collectives"];
  std::string line =
      fmt::format("Collectives: {} kernels, {:.3f} ms busy, {:.3f} ms exposed ({:.1f}%)",
                  c["count"].get<int64_t>(), c["total_us"].get<double>() / 1e3,
                  c["exposed_us"].get<double>() / 1e3, c["exposed_percent"].get<double>());
  if (!c["top"].empty())
    line += fmt::format("; top: {} ({:.3f} ms)", c["top"][0]["collective"].get<std::string>(),
                        c["top"][0]["total_us"].get<double>() / 1e3);
  return line + ".\n";
}

// The GPU timeline as the structured result has it (TraceLens's split of
// the trace's span): what a client showing only the text reads too. A span
// of no length (every GPU event lasts 0 us) has no percentages: the
// structured rows hold null for them, and the line says so.
std::string timeline_line(const json& timeline) {
  if (!timeline.contains("total_time")) return "";
  auto figure = [&](const char* row, const char* field) -> std::optional<double> {
    const json& v = timeline.value(row, json::object()).value(field, json());
    if (!v.is_number()) return std::nullopt;
    return v.get<double>();
  };
  const double span_ms = figure("total_time", "time_ms").value_or(0);
  if (!figure("total_time", "percent"))
    return fmt::format(
        "GPU timeline over {:.2f} ms: the GPU events span no time, so it has no shares.\n",
        span_ms);
  return fmt::format(
      "GPU timeline over {:.2f} ms: computation {:.1f}%, exposed comm {:.1f}%, exposed "
      "memcpy {:.1f}%, idle {:.1f}% ({:.2f} ms).\n",
      span_ms, figure("computation_time", "percent").value_or(0),
      figure("exposed_comm_time", "percent").value_or(0),
      figure("exposed_memcpy_time", "percent").value_or(0),
      figure("idle_time", "percent").value_or(0), figure("idle_time", "time_ms").value_or(0));
}

// The perf rows of the trace's own arch and the facts of the trace alone
// the insights rules read, kept on the entry for the session's later calls
// (engine::trace_perf_rows, loaded_trace_facts): tasks for the two threads
// beside the step model, the facts in parts so that the core the model
// leaves free takes what is left of them (a model read from its graph file
// takes ~0.2 s at x256, the rows and facts ~0.7 s one after the other).
// Only a head start: a trace whose rows or facts cannot be made keeps none,
// and the call that needs them meets the error itself.
struct InsightsHeadStart {
  std::vector<std::function<void()>> tasks;
  // Keeps the facts on the entry once every task has run (none failed).
  std::function<void()> keep;
};

InsightsHeadStart insights_head_start(const LoadedTrace& entry) {
  // A trace of a few thousand events: the worker makes them in a millisecond
  // or two, and the server need not hold them for the session.
  constexpr size_t kHeadStartMinEvents = 5000;
  InsightsHeadStart head;
  if (entry.trace().events.size() < kHeadStartMinEvents) return head;
  head.tasks.push_back([&entry] {
    PhaseTimer t("load_trace/perf_rows");
    try {
      (void)engine::trace_perf_rows(entry);
    } catch (const std::runtime_error&) {
    }
  });
  if (entry.entry().find<engine::SharedTraceFacts>("insights:trace_facts")) return head;
  std::shared_ptr<engine::SharedTraceFactsInParts> facts;
  try {
    facts = std::make_shared<engine::SharedTraceFactsInParts>(
        engine::shared_trace_facts_in_parts(entry.trace(), *engine::trace_call_tree(entry)));
  } catch (const std::runtime_error&) {
    return head;
  }
  auto failed = std::make_shared<std::atomic<bool>>(false);
  for (const auto& part : facts->parts)
    head.tasks.push_back([part, failed] {
      try {
        part();
      } catch (const std::runtime_error&) {
        *failed = true;
      }
    });
  head.keep = [&entry, facts, failed] {
    if (*failed) return;
    (void)entry.cached<engine::SharedTraceFacts>("insights:trace_facts",
                                                 [&facts] { return facts->facts; });
  };
  return head;
}

// The result of a trace load_trace registered: the overview, GPU timeline,
// collectives and health block.
ToolResult loaded_result(const TraceStore::LoadResult& loaded, ToolContext& ctx) {
  if (auto profile = engine::rocprof_profile(*loaded.entry)) {
    ctx.report_progress(1, 1, "loaded");
    return rocprof_result(*loaded.entry, *profile, loaded.reused);
  }
  std::optional<PhaseTimer> timer(std::in_place, "load_trace/overview");
  json summary = engine::trace_overview(*loaded.entry);
  summary["reused"] = loaded.reused;
  summary["source"] = "kineto";
  ctx.throw_if_cancelled();
  if (!loaded.reused) ctx.report_progress(0.95, 1, "computing the GPU timeline");
  timer.emplace("load_trace/tree+gpu_timeline");
  if (json timeline = engine::trace_gpu_timeline(*loaded.entry); !timeline.is_null())
    summary["gpu_timeline"] = timeline;
  timer.emplace("load_trace/collectives");
  if (json coll = engine::loaded_trace_collectives_json(*loaded.entry); !coll.is_null())
    summary["collectives"] = coll;
  // Kept on the entry with the step model it reads: the insights and
  // what-ifs of later calls (and their workers) start from them.
  // (After the timeline, not beside it: side by side they saved 30-50 ms of
  // 0.3 s at x32 and raised the server's peak by 8 MB, 12 % of the report's.)
  //
  // Beside the step model (one core's work), the perf rows of the trace's
  // own arch, kept on the entry too: an agent's next call is insights,
  // whose worker would otherwise spend its first half-second building them
  // with the other core idle here (x256: 0.5 s, 234k rows).
  timer.emplace("load_trace/step_model+health+perf_rows");
  std::shared_ptr<const engine::TraceHealth> health_block;
  InsightsHeadStart head = insights_head_start(*loaded.entry);
  std::vector<std::function<void()>> tasks{
      [&] { health_block = loaded_trace_health_block(*loaded.entry); }};
  for (auto& task : head.tasks) tasks.push_back(std::move(task));
  run_on_two_threads(tasks);
  if (head.keep) head.keep();
  const engine::TraceHealth& health = *health_block;
  summary["health"] = loaded_trace_health(*loaded.entry);
  timer.reset();
  ctx.report_progress(1, 1, "loaded");
  std::string text = fmt::format(
      "Loaded {} as handle \"{}\"{}: platform {}, GPU {}, {} events ({} kernels, {} cpu_ops).\n"
      "Confidence {}{}{}.\n{}",
      loaded.entry->path(), loaded.entry->handle(),
      loaded.reused ? " (reused, unchanged file)" : "", summary["platform"].get<std::string>(),
      summary["gpu_name"].get<std::string>().empty() ? "unknown"
                                                     : summary["gpu_name"].get<std::string>(),
      summary["events"]["total"].get<int64_t>(), summary["events"]["kernel"].get<int64_t>(),
      summary["events"]["cpu_op"].get<int64_t>(), health.confidence,
      health.warnings.empty() ? "" : ": ", fmt::format("{}", fmt::join(health.warnings, "; ")),
      collectives_line(summary));
  text += timeline_line(summary.value("gpu_timeline", json::object()));
  if (health.recorded_step_us && health.estimated_unprofiled_step_us) {
    // The verdict with the path it stands on, so a step called gpu-bound
    // whose path is half host reads as close (issue 73 point 6).
    // The path's shares say what the step waits for; the GPU's busy share
    // says how much of the step the GPU works, waited for or not (a
    // host-bound step whose path is 7 % GPU ops can keep the GPU busy 80 %
    // of it): both, each named for what it is.
    const double gpu = health.unprofiled_path_gpu_share, host = health.unprofiled_path_host_share;
    text += fmt::format(
        "Step (mean per step): {:.2f} ms recorded (profiled), {:.2f} ms estimated without the "
        "profiler ({}-bound: of its critical path, the chain of work the step waits for, {:.0f}% "
        "is GPU ops and {:.0f}% host{}{}){}.\n",
        *health.recorded_step_us / 1e3, *health.estimated_unprofiled_step_us / 1e3,
        health.unprofiled_bound_by, 100 * gpu, 100 * host,
        std::abs(gpu - host) < 0.2 ? ", host and GPU close" : "",
        health.gpu_busy_us_per_step
            ? fmt::format("; the GPU is busy {:.2f} ms per step, {:.0f}% of the un-profiled "
                          "step{}",
                          *health.gpu_busy_us_per_step / 1e3,
                          100 * health.unprofiled_step_gpu_busy_share,
                          host > gpu ? ", mostly while the path runs on the host" : "")
            : "",
        health.profiler_note.empty() ? "" : "; " + health.profiler_note);
    if (health.estimated_unprofiled_per_profiler_step_us)  // decode steps of generate() calls
      text += fmt::format(
          "The steps above are decode steps (a token each, {:.1f} per ProfilerStep); per "
          "generate() call (ProfilerStep): {:.2f} ms recorded, {:.2f} ms estimated without the "
          "profiler, of which {:.2f} ms before the decode steps (set-up and prefill) and {:.2f} "
          "ms after them, outside the iterations.\n",
          health.decode_steps_per_profiler_step,
          health.recorded_per_profiler_step_us.value_or(0) / 1e3,
          *health.estimated_unprofiled_per_profiler_step_us / 1e3,
          health.unprofiled_before_decode_us_per_profiler_step / 1e3,
          health.unprofiled_after_decode_us_per_profiler_step / 1e3);
  }
  ToolResult out{summary, text};
  const std::string handle = loaded.entry->handle();
  out.suggest("ops_summary", {{"trace", handle}}, "top ops by GPU kernel time")
      .suggest("insights", {{"trace", handle}}, "ranked fixes with the time they could recover")
      .suggest("category_filter", {{"trace", handle}, {"output_dir", "<dir>"}},
               "the per-category workflow (analyze_category, write_findings)");
  return out;
}

ToolResult load_trace_tool(const json& args, ToolContext& ctx) {
  std::string given = args.at("path").get<std::string>();
  auto path = ctx.paths().trace_path(given);
  // Progress is a fraction of 1: loading takes it to 0.9 (the uncompressed
  // size is unknown up front, so bytes read are mapped onto a saturating
  // curve scaled by the file size), the GPU timeline to 1.
  std::error_code ec;
  double file_bytes = static_cast<double>(std::filesystem::file_size(path, ec));
  double expected = std::max(1.0, file_bytes * (path.extension() == ".gz" ? 12.0 : 1.0));
  ctx.report_progress(0, 1, "loading " + path.filename().string());
  LoadOptions options;
  options.progress = [&ctx, expected](uint64_t bytes, uint64_t events) {
    if (bytes > 0)
      ctx.report_progress(0.9 * (1 - std::exp(-static_cast<double>(bytes) / expected)), 1,
                          fmt::format("{} events read", events));
    return !ctx.cancelled();
  };
  std::optional<PhaseTimer> timer(std::in_place, "load_trace/load");
  auto loaded = ctx.traces().load(path.string(), options);
  timer.reset();
  // Whatever fails from here on (an analysis, a cancellation), the handle
  // this call made is given back: a failed load leaves nothing listed.
  try {
    ToolResult out = loaded_result(loaded, ctx);
    ctx.throw_if_cancelled();
#ifdef __GLIBC__
    // The step model's builders freed what they held while building (the
    // profiler-cost index, the per-stream maps, sort buffers: 10-15 MB at
    // x32) into the allocator, which keeps it resident: given back, the
    // server and the worker of the next call (insights) peak that much lower
    // together.
    ::malloc_trim(0);
#endif
    return out;
  } catch (...) {
    if (loaded.new_handle) ctx.traces().unload(loaded.entry->handle());
    throw;
  }
}

}  // namespace
JARVIS_MCP_TOOL(load_trace, load_trace_tool);
}  // namespace jarvis::mcp
