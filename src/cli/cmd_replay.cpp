// jarvis replay TRACE --out DIR (--uid N ... | --op NAME [--dims DIMS] | --category CAT --top N)
#include <charconv>
#include <cstdio>
#include <optional>

#include <fmt/format.h>

#include "analysis/replay.h"
#include "cli/commands.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

namespace jarvis::cli {
namespace {

constexpr const char* kUsage =
    "usage: jarvis replay TRACE --out DIR SELECTION\n"
    "selection (one of):\n"
    "  --uid N [--uid N ...]        cpu_op UIDs (also --uid 12,40,77)\n"
    "  --op NAME [--dims DIMS]      every call of an op, optionally only Input Dims DIMS\n"
    "                               (e.g. --dims \"[[8944, 1024], [1024, 2816]]\")\n"
    "  --category CAT [--top N]     the N (default 10) op signatures of a category with the\n"
    "                               most GPU kernel time (GEMM, SDPA_fwd, elementwise, ...)\n"
    "writes DIR/replay_ir.json, DIR/replay.py, DIR/README.md, DIR/replay_package.zip\n";

uint64_t parse_count(const std::string& text, const char* flag) {
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size())
    throw replay::ReplayError(
        fmt::format("{} expects a non-negative integer, got '{}'", flag, text));
  return v;
}

// Every value of a repeatable flag; comma-separated lists are split.
std::vector<Uid> uid_values(const Args& args) {
  std::vector<Uid> uids;
  for (size_t k = 0; k < args.size(); ++k) {
    if (args[k] != "--uid") continue;
    if (k + 1 >= args.size()) throw replay::ReplayError("--uid needs a value");
    std::string list = args[k + 1];
    size_t start = 0;
    while (start <= list.size()) {
      size_t comma = list.find(',', start);
      std::string item = list.substr(start, comma == std::string::npos ? comma : comma - start);
      if (!item.empty()) {
        uint64_t v = parse_count(item, "--uid");
        if (v >= kNoUid) throw replay::ReplayError("--uid value out of range: " + item);
        uids.push_back(static_cast<Uid>(v));
      }
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return uids;
}

replay::Selection selection_from(const Args& args) {
  bool by_uid = has_flag(args, "--uid");
  bool by_op = has_flag(args, "--op");
  bool by_cat = has_flag(args, "--category");
  if (by_uid + by_op + by_cat != 1)
    throw replay::ReplayError("give exactly one of --uid, --op, --category\n" +
                              std::string(kUsage));
  if (by_uid) return replay::Selection::by_uids(uid_values(args));
  if (by_op) {
    std::string name = flag_value(args, "--op");
    if (name.empty()) throw replay::ReplayError("--op needs an op name, e.g. --op aten::mm");
    std::optional<PyValue> dims;
    if (has_flag(args, "--dims")) dims = replay::parse_dims(flag_value(args, "--dims"));
    return replay::Selection::by_op(name, dims);
  }
  std::string cat = flag_value(args, "--category");
  if (cat.empty()) throw replay::ReplayError("--category needs a category, e.g. --category GEMM");
  size_t top = has_flag(args, "--top") ? parse_count(flag_value(args, "--top"), "--top") : 10;
  return replay::Selection::by_category(cat, top);
}

void print_summary(const replay::ReplayResult& r) {
  fmt::print("selection: {}\n", r.plan.selection);
  fmt::print("{:>3}  {:<44} {:>6} {:>14}  {}\n", "id", "op", "count", "trace us/call",
             "input dims");
  for (const replay::ReplayOp& op : r.plan.ops) {
    std::string t = op.gpu_time ? fmt::format("{:.2f}", op.gpu_time->mean) : "-";
    fmt::print("{:>3}  {:<44} {:>6} {:>14}  {}\n", op.id, op.name, op.uids.size(), t,
               op.input_dims.repr_tuple());
    if (!op.not_replayable.empty()) fmt::print("     not replayable: {}\n", op.not_replayable);
  }
  fmt::print("wrote {}\n      {}\n      {}\n      {}\n", r.files.ir, r.files.runner, r.files.readme,
             r.files.zip);
  fmt::print("run:  cd {} && python3 replay.py\n", r.files.dir);
}

}  // namespace

int cmd_replay(const Args& args) {
  auto pos = positionals(args, {"--out", "--uid", "--op", "--dims", "--category", "--top"});
  std::string out = flag_value(args, "--out");
  if (pos.size() != 1 || out.empty()) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  replay::Selection selection;
  try {
    selection = selection_from(args);
  } catch (const replay::ReplayError& e) {
    std::fprintf(stderr, "jarvis replay: %s\n", e.what());
    return 2;
  }
  Trace trace = load_trace(pos[0]);
  CallTree tree(trace);
  replay::ReplayResult result = replay::make_replay(trace, tree, selection, out);
  print_summary(result);
  return 0;
}

}  // namespace jarvis::cli
