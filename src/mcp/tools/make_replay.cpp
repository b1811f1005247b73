// make_replay: confine the output directory, turn the arguments into a
// engine::ReplaySelection and let the engine write the package.
#include <fmt/format.h>

#include "engine/engine.h"
#include "mcp/result_shape.h"
#include "mcp/tool.h"
#include "mcp/tools/trace_arg.h"

namespace jarvis::mcp {
namespace {

engine::ReplaySelection selection_from(const json& args) {
  if (args.contains("uids")) {
    // Read wide and range-check: get<Uid>() would wrap 2^32 + 1 to event 1.
    std::vector<Uid> uids;
    for (uint64_t uid : args.at("uids").get<std::vector<uint64_t>>()) {
      if (uid >= kNoUid) throw ToolError(fmt::format("uid {} is out of range", uid));
      uids.push_back(static_cast<Uid>(uid));
    }
    return engine::ReplaySelection::by_uids(std::move(uids));
  }
  if (args.contains("op")) {
    std::optional<PyValue> dims;
    if (args.contains("input_dims"))
      dims = engine::parse_dims(args.at("input_dims").is_string()
                                    ? args.at("input_dims").get<std::string>()
                                    : args.at("input_dims").dump());
    return engine::ReplaySelection::by_op(args.at("op").get<std::string>(), dims);
  }
  return engine::ReplaySelection::by_category(args.at("category").get<std::string>(),
                                              args.at("top").get<size_t>());
}

std::string replay_summary_text(const json& s) {
  std::string text =
      fmt::format("Replay package for {} ({} op signatures, {} replayable) in {}.\n",
                  s["selection"].get<std::string>(), s["op_count"].get<size_t>(),
                  s["replayable_count"].get<size_t>(), s["files"]["dir"].get<std::string>());
  size_t listed = 0;
  for (const json& op : s["ops"]) {
    if (++listed > 10) break;
    std::string t = op["trace_gpu_time_us_mean"].is_null()
                        ? "no GPU work"
                        : fmt::format("{:.2f} us/call", op["trace_gpu_time_us_mean"].get<double>());
    text += fmt::format(
        "  [{}] {} {} x{} {}{}\n", op["id"].get<size_t>(), op["name"].get<std::string>(),
        op["input_dims"].get<std::string>(), op["count"].get<size_t>(), t,
        op["not_replayable_reason"].is_null()
            ? ""
            : " (not replayable: " + op["not_replayable_reason"].get<std::string>() + ")");
  }
  text += "Run it with: " + s["run_command"].get<std::string>() + "\n";
  return text;
}

ToolResult make_replay_tool(const json& args, ToolContext& ctx) {
  auto entry = trace_arg(args, ctx);
  auto out =
      ctx.output_dir(args.at("output_dir").get<std::string>(), args.at("overwrite").get<bool>());
  engine::ReplaySelection selection;
  try {
    selection = selection_from(args);
  } catch (const engine::ReplayError& e) {
    throw ToolError(e.what());
  }
  auto tree = engine::trace_call_tree(*entry);
  ctx.throw_if_cancelled();
  try {
    auto result = engine::make_replay(entry->trace(), *tree, selection, out.string());
    ctx.paths().mark_output_dir(out);
    json summary = engine::replay_summary_json(result);
    summary["trace"] = entry->handle();
    ToolResult res{summary, replay_summary_text(summary)};
    res.rows("/ops");
    return res;
  } catch (const engine::ReplayError& e) {
    throw ToolError(e.what());
  }
}

}  // namespace
JARVIS_MCP_TOOL(make_replay, make_replay_tool);
}  // namespace jarvis::mcp
