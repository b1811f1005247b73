// make_replay: confine the output directory, turn the arguments into a
// replay::Selection and let the engine write the package.
#include <fmt/format.h>

#include "explore/trace_store.h"
#include "mcp/result_shape.h"
#include "mcp/tool.h"
#include "mcp/tools/trace_arg.h"
#include "replay/replay.h"

namespace jarvis::mcp {
namespace {

replay::Selection selection_from(const json& args) {
  if (args.contains("uids")) {
    // Read wide and range-check: get<Uid>() would wrap 2^32 + 1 to event 1.
    std::vector<Uid> uids;
    for (uint64_t uid : args.at("uids").get<std::vector<uint64_t>>()) {
      if (uid >= kNoUid) throw ToolError(fmt::format("uid {} is out of range", uid));
      uids.push_back(static_cast<Uid>(uid));
    }
    return replay::Selection::by_uids(std::move(uids));
  }
  if (args.contains("op")) {
    std::optional<PyValue> dims;
    if (args.contains("input_dims")) dims = replay::parse_dims(args.at("input_dims").dump());
    return replay::Selection::by_op(args.at("op").get<std::string>(), dims);
  }
  return replay::Selection::by_category(args.at("category").get<std::string>(),
                                        args.at("top").get<size_t>());
}

std::string summary_text(const json& s) {
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
  replay::Selection selection;
  try {
    selection = selection_from(args);
  } catch (const replay::ReplayError& e) {
    throw ToolError(e.what());
  }
  auto tree = trace_call_tree(*entry);
  ctx.throw_if_cancelled();
  try {
    auto result = replay::make_replay(entry->trace(), *tree, selection, out.string());
    ctx.paths().mark_output_dir(out);
    json summary = replay::replay_summary_json(result);
    summary["trace"] = entry->handle();
    ToolResult res{summary, summary_text(summary)};
    res.rows("/ops");
    return res;
  } catch (const replay::ReplayError& e) {
    throw ToolError(e.what());
  }
}

}  // namespace
JARVIS_MCP_TOOL(make_replay, make_replay_tool);
}  // namespace jarvis::mcp
