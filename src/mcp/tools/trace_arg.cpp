#include "mcp/tools/trace_arg.h"

#include <string>

#include <fmt/format.h>

#include "engine/engine.h"

namespace jarvis::mcp {

namespace {

// The health block of a loaded Kineto trace, computed once per entry (the
// call tree and timeline are the entry's cached ones).
json loaded_trace_health(const LoadedTrace& entry) {
  if (engine::is_rocprof_trace(entry.trace())) return nullptr;  // its own health (load_trace)
  return *entry.cached<json>("trace_health", [&entry] {
    return json(engine::to_json(engine::trace_health(entry.trace(), *engine::trace_call_tree(entry),
                                                     engine::trace_timeline(entry).get())));
  });
}

}  // namespace

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
