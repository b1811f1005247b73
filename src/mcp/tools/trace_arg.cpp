#include "mcp/tools/trace_arg.h"

#include <string>

#include <fmt/format.h>

#include "engine/engine.h"

namespace jarvis::mcp {

std::shared_ptr<const engine::StepModelRef> loaded_step_model(const LoadedTrace& entry) {
  return engine::trace_step_model(entry);
}

std::shared_ptr<const engine::SharedTraceFacts> loaded_trace_facts(const LoadedTrace& entry) {
  return entry.cached<engine::SharedTraceFacts>("insights:trace_facts", [&entry] {
    return engine::make_shared_trace_facts(entry.trace(), *engine::trace_call_tree(entry));
  });
}

std::shared_ptr<const engine::TraceHealth> loaded_trace_health_block(const LoadedTrace& entry) {
  return entry.cached<engine::TraceHealth>("trace_health:block", [&entry] {
    return engine::trace_health(entry.trace(), *engine::trace_call_tree(entry),
                                engine::trace_timeline(entry).get(),
                                loaded_step_model(entry).get());
  });
}

json loaded_trace_health(const LoadedTrace& entry) {
  if (engine::is_rocprof_trace(entry.trace())) return nullptr;  // its own health (load_trace)
  return *entry.cached<json>("trace_health", [&entry] {
    return json(engine::to_json(*loaded_trace_health_block(entry)));
  });
}

bool loaded_trace_health_ready(const LoadedTrace& entry) {
  return engine::is_rocprof_trace(entry.trace()) ||
         entry.entry().find<json>("trace_health") != nullptr;
}

json step_scope_json(const LoadedTrace& entry, double total, const std::string& field) {
  return step_scope_json(loaded_trace_health(entry), total, field);
}

json step_scope_json(const json& health, double total, const std::string& field) {
  size_t steps = 0;
  std::string source;
  if (health.is_object()) {
    steps = health.value("profiler_steps", size_t{0});
    source = "ProfilerStep#N annotations";
    if (steps < 2 && health.value("detected_iterations", size_t{0}) >= 2) {
      steps = health.value("detected_iterations", size_t{0});
      source = "repeats of the launch sequence";
    }
  }
  json scope = {
      {"figures",
       "totals over the whole trace (every kernel it recorded, inside the steps or not), as the "
       "profiled run recorded them (the profiler adds host time, not kernel time)"},
      {"steps", steps > 0 ? json(steps) : json()},
      {"steps_source", steps > 0 ? json(source) : json()}};
  scope[field + "_per_step"] = steps > 0 ? json(total / static_cast<double>(steps)) : json();
  return scope;
}

std::string step_scope_text(const json& scope, const std::string& field, const char* unit) {
  if (!scope.is_object() || !scope["steps"].is_number())
    return "over the whole trace (no steps found), profiled";
  return fmt::format("over the whole trace's {} steps ({:.3f} {} per step), profiled",
                     scope["steps"].get<size_t>(), scope[field + "_per_step"].get<double>(), unit);
}

std::shared_ptr<const LoadedTrace> trace_arg(const json& args, ToolContext& ctx) {
  std::string handle = args.at("trace").get<std::string>();
  auto entry = ctx.traces().get(handle);
  if (!entry)
    throw ToolError(
        "unknown trace handle \"" + handle + "\"; call load_trace first (or list_traces)",
        ErrorKind::NotFound);
  note_trace_health(*entry, ctx);
  if (entry->reloaded())
    ctx.add_trace_caveats(
        handle + " (memory budget)",
        {{"confidence", "high"},
         {"warnings",
          {fmt::format("{} was evicted from the server's trace cache (least recently used, under "
                       "its memory budget: jarvis serve --max-memory) and parsed again for this "
                       "call ({:.2f} s); nothing about the trace changed",
                       entry->path(), entry->load_seconds())}}});
  return entry;
}

void note_trace_health(const LoadedTrace& entry, ToolContext& ctx) {
  ctx.add_trace_caveats(entry.handle(), loaded_trace_health(entry));
}

}  // namespace jarvis::mcp
