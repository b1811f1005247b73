// jarvis replay TRACE --out DIR (--uid N ... | --op NAME [--dims DIMS] | --category CAT --top N)
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/options.h"
#include "engine/engine.h"

namespace jarvis::cli {
namespace {

struct ReplayArgs {
  std::string trace, out, op, dims, category;
  std::vector<uint64_t> uids;
  size_t top = 10;
  ProgressFlags progress;
};

engine::ReplaySelection selection_from(const ReplayArgs& a) {
  if (!a.uids.empty()) {
    std::vector<Uid> uids;
    for (uint64_t v : a.uids) {
      if (v >= kNoUid) usage_error(fmt::format("--uid value out of range: {}", v));
      uids.push_back(static_cast<Uid>(v));
    }
    return engine::ReplaySelection::by_uids(uids);
  }
  if (!a.op.empty()) {
    std::optional<PyValue> dims;
    try {
      if (!a.dims.empty()) dims = engine::parse_dims(a.dims);
    } catch (const engine::ReplayError& e) {
      usage_error(fmt::format("--dims: {}", e.what()));
    }
    return engine::ReplaySelection::by_op(a.op, dims);
  }
  return engine::ReplaySelection::by_category(a.category, a.top);
}

void print_summary(const engine::ReplayResult& r) {
  fmt::print("selection: {}\n", r.plan.selection);
  fmt::print("{:>3}  {:<44} {:>6} {:>14}  {}\n", "id", "op", "count", "trace us/call",
             "input dims");
  for (const engine::ReplayOp& op : r.plan.ops) {
    std::string t = op.gpu_time ? fmt::format("{:.2f}", op.gpu_time->mean) : "-";
    fmt::print("{:>3}  {:<44} {:>6} {:>14}  {}\n", op.id, op.name, op.uids.size(), t,
               op.input_dims.repr_tuple());
    if (!op.not_replayable.empty()) fmt::print("     not replayable: {}\n", op.not_replayable);
  }
  fmt::print("wrote {}\n      {}\n      {}\n      {}\n", r.files.ir, r.files.runner, r.files.readme,
             r.files.zip);
  fmt::print("run:  cd {} && python3 replay.py\n", r.files.dir);
}

int run_replay(const ReplayArgs& a) {
  engine::ReplaySelection selection = selection_from(a);
  Progress progress(a.progress.resolve(), "replay");
  progress.phase("load");
  Trace trace = engine::load_any_trace(a.trace);
  progress.phase("call tree");
  CallTree tree(trace);
  progress.phase("package");
  engine::ReplayResult result = engine::make_replay(trace, tree, selection, a.out);
  progress.finish();
  print_summary(result);
  return 0;
}

}  // namespace

Runner add_replay(CLI::App& app) {
  auto a = std::make_shared<ReplayArgs>();
  CLI::App* cmd = app.add_subcommand("replay", "reproducer package of selected ops (PyTorch)");
  cmd->add_option("TRACE", a->trace, "Kineto trace (.json/.json.gz)")->required();
  cmd->add_option("-o,--out", a->out, "package directory (created)")
      ->check(output_directory())
      ->required();
  auto* selection = cmd->add_option_group("selection", "exactly one of --uid, --op, --category");
  selection->add_option("--uid", a->uids, "cpu_op UIDs (repeatable; also --uid 12,40,77)")
      ->delimiter(',')
      ->allow_extra_args(false);
  auto* op = selection->add_option("--op", a->op, "every call of an op, e.g. aten::mm");
  auto* category = selection->add_option(
      "--category", a->category,
      "the --top op signatures of a category with the most GPU kernel time (GEMM, SDPA_fwd, ...)");
  selection->require_option(1);
  cmd->add_option("--dims", a->dims,
                  "with --op: only Input Dims DIMS, e.g. \"[[8944, 1024], "
                  "[1024, 2816]]\" or, as insights print a GEMM, \"(8944, 1024) x (1024, "
                  "2816)\"")
      ->needs(op);
  cmd->add_option("--top", a->top, "with --category: how many op signatures")
      ->needs(category)
      ->default_str("10");
  add_progress_flags(cmd, a->progress);
  cmd->footer("Writes DIR/replay_ir.json, DIR/replay.py, DIR/README.md, DIR/replay_package.zip.");
  return [a] { return run_replay(*a); };
}

}  // namespace jarvis::cli
