#include "replay/replay.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "perf/categories.h"
#include "pycompat/literal.h"
#include "pycompat/text.h"
#include "replay/replay_zip.h"
#include "report/table.h"
#include "tree/call_tree.h"
#include "xplane/space.h"

namespace jarvis::replay {

// Ordered so replay_ir.json reads name-first, as written.
using json = nlohmann::ordered_json;

// ------------------------------------------------------------- selection ---

Selection Selection::by_uids(std::vector<Uid> uids) {
  Selection s;
  s.mode = Mode::Uids;
  s.uids = std::move(uids);
  return s;
}

Selection Selection::by_op(std::string name, std::optional<PyValue> dims) {
  Selection s;
  s.mode = Mode::OpName;
  s.op_name = std::move(name);
  s.input_dims = std::move(dims);
  return s;
}

Selection Selection::by_category(std::string category, size_t top_n) {
  Selection s;
  s.mode = Mode::Category;
  s.category = std::move(category);
  s.top_n = top_n;
  return s;
}

std::string Selection::describe() const {
  switch (mode) {
    case Mode::Uids: {
      std::string list;
      for (Uid u : uids) list += (list.empty() ? "" : ", ") + std::to_string(u);
      return "ops with UIDs " + list;
    }
    case Mode::OpName:
      return "all " + op_name + " calls" +
             (input_dims ? " with Input Dims " + input_dims->repr_list() : "");
    case Mode::Category:
      return fmt::format("top {} {} ops by GPU kernel time", top_n, category);
  }
  return "";
}

namespace {

// One POSIX shell word whatever the text holds: single quotes around it, each
// single quote in it closed, escaped and reopened. The directory comes from
// a caller (an agent's output_dir such as "rep;touch PWNED;#"), and the
// command is meant to be pasted into a shell.
std::string shell_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// A parsed filter as the recorded-arg value: lists and tuples become lists,
// every leaf must be an int.
PyValue dims_value(const PyValue& lit) {
  if (lit.is_seq()) {
    std::vector<PyValue> items;
    for (const auto& x : lit.list) items.push_back(dims_value(x));
    return PyValue::make_list(std::move(items));
  }
  if (lit.kind == PyValue::Kind::Int) return PyValue::integer(lit.i);
  throw ReplayError("Input Dims filter: only nested lists of integers are allowed");
}

json py_to_json(const PyValue& v) {
  return json(v.to_ojson());
}

}  // namespace

PyValue parse_dims(const std::string& text) {
  // JSON lists and Python tuples are both Python literals: "((16,), ())".
  auto lit = pycompat::try_parse_py_literal(text);
  // The form jarvis prints a GEMM's operands in (insights, gemm_roofline):
  // "(4096, 768) x (768, 50257)", one shape per argument.
  if ((!lit || !lit->is_seq()) && text.find(") x (") != std::string::npos) {
    std::vector<PyValue> shapes;
    size_t start = 0;
    while (start <= text.size()) {
      size_t end = text.find(" x ", start);
      auto shape = pycompat::try_parse_py_literal(
          text.substr(start, end == std::string::npos ? std::string::npos : end - start));
      if (!shape || !shape->is_seq()) {
        shapes.clear();
        break;
      }
      shapes.push_back(*shape);
      if (end == std::string::npos) break;
      start = end + 3;
    }
    if (!shapes.empty()) lit = PyValue::make_list(std::move(shapes));
  }
  if (!lit || !lit->is_seq())
    throw ReplayError("cannot parse Input Dims filter '" + text +
                      "': write it like [[8944, 1024], [1024, 2816]] (one list per argument, "
                      "[] for scalars) or (8944, 1024) x (1024, 2816)");
  return dims_value(*lit);
}

namespace {

// --------------------------------------------------------- recorded args ---

// Kineto dtype spellings the runner can rebuild (its DTYPE_NAMES).
const std::set<std::string, std::less<>>& known_dtypes() {
  static const std::set<std::string, std::less<>> names = {"double",
                                                           "float",
                                                           "c10::Half",
                                                           "c10::BFloat16",
                                                           "long int",
                                                           "long",
                                                           "int",
                                                           "short int",
                                                           "short",
                                                           "signed char",
                                                           "unsigned char",
                                                           "bool",
                                                           "c10::Float8_e4m3fn",
                                                           "c10::Float8_e4m3fnuz",
                                                           "c10::Float8_e5m2",
                                                           "c10::Float8_e5m2fnuz",
                                                           "c10::Float8_e8m0fnu"};
  return names;
}

// The tensor dtypes TraceLens's EventReplayer accepts (utils.py list).
bool tracelens_dtype(std::string_view t) {
  return t == "double" || t == "float" || t == "c10::Half" || t == "c10::BFloat16" || t == "long" ||
         t == "int" || t == "bool";
}

bool is_non_tensor_type(std::string_view t) {
  return t.empty() || t == "Scalar" || t == "ScalarList" || t == "TensorList" || t == "String";
}

bool is_int_list(const PyValue& v) {
  return v.is_list() && std::all_of(v.list.begin(), v.list.end(),
                                    [](const PyValue& x) { return x.kind == PyValue::Kind::Int; });
}

struct RecordedArgs {
  const PyValue* dims = nullptr;
  const PyValue* types = nullptr;
  const PyValue* strides = nullptr;
  const PyValue* concrete = nullptr;
};

RecordedArgs recorded_args(const Trace& trace, Uid uid) {
  return {trace.arg(uid, "Input Dims"), trace.arg(uid, "Input type"),
          trace.arg(uid, "Input Strides"), trace.arg(uid, "Concrete Inputs")};
}

const PyValue& or_none(const PyValue* v) {
  static const PyValue none;
  return v ? *v : none;
}

// Why the recorded args cannot describe a call ("" when they can).
std::string shape_problem(const RecordedArgs& a) {
  if (!a.dims || !a.types || !a.strides || !a.concrete)
    return "the trace has no Input Dims / Input type / Input Strides / Concrete Inputs for this "
           "op (profile with record_shapes=True)";
  if (!a.dims->is_list() || !a.types->is_list() || !a.strides->is_list() || !a.concrete->is_list())
    return "recorded input args are not lists";
  size_t n = a.types->size();
  if (a.dims->size() != n || a.strides->size() != n || a.concrete->size() != n)
    return "recorded input arg lists differ in length";
  return "";
}

// Per-argument reason no PyTorch could rebuild the call.
std::string arg_problem(const RecordedArgs& a, size_t i) {
  const PyValue& t = (*a.types)[i];
  if (!t.is_string()) return fmt::format("argument {} has a non-text Input type", i);
  if (t.s == "TensorList")
    return fmt::format(
        "argument {} is a tensor list: the profiler records no per-element dtypes, so it "
        "cannot be rebuilt",
        i);
  if (is_non_tensor_type(t.s)) {
    if (t.s != "" && !(*a.concrete)[i].is_string())
      return fmt::format("argument {} has a non-text Concrete Inputs value", i);
    return "";
  }
  if (!known_dtypes().count(t.s))
    return fmt::format("argument {} has dtype '{}', which the runner cannot build", i, t.s);
  const PyValue& dims = (*a.dims)[i];
  const PyValue& strides = (*a.strides)[i];
  if (!is_int_list(dims) || !is_int_list(strides) || dims.size() != strides.size())
    return fmt::format("argument {} ({}) has unusable shape / strides {} / {}", i, t.s,
                       dims.repr_list(), strides.repr_list());
  return "";
}

std::string not_replayable_reason(const RecordedArgs& a) {
  std::string why = shape_problem(a);
  if (!why.empty()) return why;
  for (size_t i = 0; i < a.types->size(); ++i) {
    why = arg_problem(a, i);
    if (!why.empty()) return why;
  }
  return "";
}

// What TraceLens's EventReplayer would refuse, as far as the recorded args
// tell (its schema checks need PyTorch; the runner repeats them with
// --tracelens-strict).
std::string tracelens_rejection(const RecordedArgs& a, const std::string& not_replayable) {
  if (!not_replayable.empty()) return not_replayable;
  for (size_t i = 0; i < a.types->size(); ++i) {
    const std::string& t = (*a.types)[i].s;
    if (!is_non_tensor_type(t) && !tracelens_dtype(t))
      return fmt::format(
          "argument {} has dtype '{}', outside TraceLens's tensor type list (double, float, "
          "c10::Half, c10::BFloat16, long, int, bool); jarvis's runner replays it anyway",
          i, t);
  }
  return "";
}

// Concrete Inputs text -> typed value: True/False, int, float, or the text.
json decode_concrete(const std::string& text) {
  if (text == "True" || text == "False") return text == "True";
  int64_t iv = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), iv);
  if (ec == std::errc() && p == text.data() + text.size() && !text.empty()) return iv;
  double dv = 0;
  auto [q, ec2] = std::from_chars(text.data(), text.data() + text.size(), dv);
  if (ec2 == std::errc() && q == text.data() + text.size() && !text.empty() && std::isfinite(dv))
    return dv;
  return text;
}

json decode_concrete_list(const std::string& text) {
  std::string inner = text;
  if (inner.size() >= 2 && inner.front() == '[' && inner.back() == ']')
    inner = inner.substr(1, inner.size() - 2);
  json out = json::array();
  size_t start = 0;
  while (start <= inner.size()) {
    size_t comma = inner.find(',', start);
    std::string item =
        inner.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    if (!item.empty()) out.push_back(decode_concrete(item));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

// A typed description of one recorded argument (for readers of the IR and
// for the runner's attention fallback).
json decode_arg(const RecordedArgs& a, size_t i) {
  const std::string& t = (*a.types)[i].s;
  const PyValue& c = (*a.concrete)[i];
  std::string concrete = c.is_string() ? c.s : "";
  if (t.empty()) return {{"kind", "none"}};
  if (t == "Scalar")
    return {{"kind", "scalar"}, {"text", concrete}, {"value", decode_concrete(concrete)}};
  if (t == "ScalarList")
    return {{"kind", "scalar_list"}, {"text", concrete}, {"value", decode_concrete_list(concrete)}};
  json shape = py_to_json((*a.dims)[i]);
  json strides = py_to_json((*a.strides)[i]);
  if (t == "TensorList") return {{"kind", "tensor_list"}, {"shapes", shape}, {"strides", strides}};
  return {{"kind", "tensor"}, {"dtype", t}, {"shape", shape}, {"strides", strides}};
}

// --------------------------------------------------------------- timing ---

std::string signature_key(const Trace& trace, Uid uid) {
  RecordedArgs a = recorded_args(trace, uid);
  std::string key(trace.name(uid));
  for (const PyValue* v : {a.dims, a.types, a.strides, a.concrete}) {
    key += '\x1f';
    key += or_none(v).repr_tuple();
  }
  return key;
}

std::vector<Uid> sorted_by_ts(const Trace& trace, std::span<const Uid> uids) {
  std::vector<Uid> out(uids.begin(), uids.end());
  std::stable_sort(out.begin(), out.end(),
                   [&](Uid x, Uid y) { return trace.events[x].ts() < trace.events[y].ts(); });
  return out;
}

std::optional<GpuTimeStats> gpu_time_stats(const CallTree& tree, const std::vector<Uid>& uids) {
  std::vector<double> times;
  for (Uid u : uids) {
    auto gpu = tree.gpu_events(u);
    if (!gpu.empty()) times.push_back(tree.busy_time(gpu));
  }
  if (times.empty()) return std::nullopt;
  GpuTimeStats s;
  s.n = times.size();
  for (double t : times) s.sum += t;
  s.mean = s.sum / static_cast<double>(s.n);
  std::sort(times.begin(), times.end());
  s.min = times.front();
  s.max = times.back();
  size_t mid = s.n / 2;
  s.median = s.n % 2 ? times[mid] : (times[mid - 1] + times[mid]) / 2;
  return s;
}

// Distinct kernel names of the first occurrence that launched GPU work, in
// kernel start order.
std::vector<std::string> kernel_names(const Trace& trace, const CallTree& tree,
                                      const std::vector<Uid>& uids) {
  constexpr size_t kMaxNames = 16;
  std::vector<std::string> names;
  for (Uid u : uids) {
    auto gpu = tree.gpu_events(u);
    if (gpu.empty()) continue;
    for (Uid k : sorted_by_ts(trace, gpu)) {
      std::string n(trace.name(k));
      if (std::find(names.begin(), names.end(), n) == names.end() && names.size() < kMaxNames)
        names.push_back(std::move(n));
    }
    break;
  }
  return names;
}

// TraceLens op category: registry, name patterns, then the first direct
// kernel's name (spec tree-and-timeline.md §9).
std::string category_of(const Trace& trace, const CallTree& tree, Uid uid) {
  std::string first_kernel;
  auto direct = tree.direct_kernels(uid);
  if (!direct.empty()) first_kernel = trace.name(sorted_by_ts(trace, direct).front());
  return std::string(perf::op_category(trace.name(uid), first_kernel));
}

// Every cpu_op whose name is in `names`, grouped by signature, UID order.
std::unordered_map<std::string, std::vector<Uid>> occurrences(const Trace& trace,
                                                              const std::set<std::string>& names) {
  std::unordered_map<std::string, std::vector<Uid>> out;
  for (Uid u = 0; u < trace.events.size(); ++u) {
    if (trace.events[u].cat != Cat::CpuOp) continue;
    if (!names.count(std::string(trace.name(u)))) continue;
    out[signature_key(trace, u)].push_back(u);
  }
  return out;
}

ReplayOp make_op(const Trace& trace, const CallTree& tree, std::vector<Uid> uids) {
  ReplayOp op;
  Uid first = uids.front();
  op.name = trace.name(first);
  op.category = category_of(trace, tree, first);
  RecordedArgs a = recorded_args(trace, first);
  op.input_dims = or_none(a.dims);
  op.input_type = or_none(a.types);
  op.input_strides = or_none(a.strides);
  op.concrete_inputs = or_none(a.concrete);
  op.not_replayable = not_replayable_reason(a);
  op.tracelens_rejects = tracelens_rejection(a, op.not_replayable);
  op.gpu_time = gpu_time_stats(tree, uids);
  op.kernels = kernel_names(trace, tree, uids);
  op.uids = std::move(uids);
  return op;
}

std::string uid_error(const Trace& trace, const CallTree& tree, Uid uid) {
  if (uid >= trace.events.size())
    return fmt::format("UID {} is out of range: the trace has {} events (UIDs 0..{})", uid,
                       trace.events.size(), trace.events.size() - 1);
  const Event& e = trace.events[uid];
  if (e.cat == Cat::CpuOp) return "";
  std::string what = fmt::format("UID {} ('{}', cat '{}') is not a cpu_op", uid, trace.name(uid),
                                 trace.cat_name(uid));
  Uid op = e.is_gpu() ? tree.nearest_cpu_op(uid) : kNoUid;
  if (op != kNoUid)
    return what + fmt::format("; the op that launched it is UID {} ('{}')", op, trace.name(op));
  return what + "; pass the UID of an aten:: op (cat cpu_op)";
}

double total_gpu(const ReplayOp& op) {
  return op.gpu_time ? op.gpu_time->sum : 0.0;
}

void order_by_gpu_time(std::vector<ReplayOp>& ops) {
  std::stable_sort(ops.begin(), ops.end(), [](const ReplayOp& x, const ReplayOp& y) {
    if (total_gpu(x) != total_gpu(y)) return total_gpu(x) > total_gpu(y);
    return x.uids.front() < y.uids.front();
  });
}

std::vector<ReplayOp> plan_uids(const Trace& trace, const CallTree& tree,
                                const std::vector<Uid>& uids) {
  if (uids.empty()) throw ReplayError("no UIDs given: pass at least one cpu_op UID");
  std::set<std::string> names;
  for (Uid u : uids) {
    std::string err = uid_error(trace, tree, u);
    if (!err.empty()) throw ReplayError(err);
    names.insert(std::string(trace.name(u)));
  }
  auto groups = occurrences(trace, names);
  std::vector<ReplayOp> ops;
  std::set<std::string> seen;
  for (Uid u : uids) {
    std::string key = signature_key(trace, u);
    if (seen.insert(key).second) ops.push_back(make_op(trace, tree, groups.at(key)));
  }
  return ops;
}

// Op names of the trace containing `text` (case-insensitive), for hints.
std::string similar_names(const Trace& trace, const std::string& text) {
  std::string needle = pycompat::ascii_lower(
      text.substr(text.rfind(':') == std::string::npos ? 0 : text.rfind(':') + 1));
  std::set<std::string> hits;
  for (Uid u = 0; u < trace.events.size() && hits.size() < 8; ++u)
    if (trace.events[u].cat == Cat::CpuOp &&
        pycompat::ascii_lower(trace.name(u)).find(needle) != std::string::npos)
      hits.insert(std::string(trace.name(u)));
  std::string out;
  for (const auto& h : hits) out += (out.empty() ? "" : ", ") + h;
  return out;
}

std::vector<ReplayOp> plan_op_name(const Trace& trace, const CallTree& tree, const Selection& s) {
  auto groups = occurrences(trace, {s.op_name});
  if (groups.empty()) {
    std::string hint = similar_names(trace, s.op_name);
    throw ReplayError("no cpu_op named '" + s.op_name + "' in the trace" +
                      (hint.empty() ? "" : "; similar names: " + hint));
  }
  std::vector<ReplayOp> ops;
  std::string seen_dims;
  for (auto& [key, uids] : groups) {
    const PyValue& dims = or_none(trace.arg(uids.front(), "Input Dims"));
    if (s.input_dims && !(dims == *s.input_dims)) {
      if (seen_dims.size() < 400) seen_dims += " " + dims.repr_list();
      continue;
    }
    ops.push_back(make_op(trace, tree, uids));
  }
  if (ops.empty())
    throw ReplayError("no '" + s.op_name + "' call has Input Dims " + s.input_dims->repr_list() +
                      "; recorded Input Dims are:" + seen_dims);
  order_by_gpu_time(ops);
  return ops;
}

// Ops of a category, as the roofline sheets see them: every kernel launcher
// with its TraceLens category, plus registered perf-model ops that reach their
// kernels through a nested launcher (aten::_scaled_dot_product_flash_attention
// launches through aten::_flash_attention_forward, which TraceLens files under
// "other"). An op nested in another op of the same category is left out, so
// no GPU time is counted twice.
std::map<Uid, std::string> category_members(const Trace& trace, const CallTree& tree,
                                            const std::string& category,
                                            std::map<std::string, double>& category_time) {
  std::map<Uid, std::string> members;  // uid -> category
  for (Uid u : tree.launchers()) {
    if (trace.events[u].cat != Cat::CpuOp) continue;
    std::string cat = category_of(trace, tree, u);
    category_time[cat] += tree.busy_time(tree.direct_kernels(u));
    if (perf::category_named_by(cat, category)) members[u] = cat;
  }
  for (Uid u = 0; u < trace.events.size(); ++u) {
    if (trace.events[u].cat != Cat::CpuOp || members.count(u) || tree.gpu_events(u).empty())
      continue;
    std::string_view cat = perf::op_category_by_name(trace.name(u));
    if (!cat.empty() && perf::category_named_by(cat, category)) members[u] = std::string(cat);
  }
  std::erase_if(members, [&](const auto& m) {
    for (Uid up : tree.parent_chain(m.first))
      if (members.count(up)) return true;
    return false;
  });
  return members;
}

std::vector<ReplayOp> plan_category(const Trace& trace, const CallTree& tree, const Selection& s) {
  if (s.top_n == 0) throw ReplayError("top N must be at least 1");
  std::map<std::string, double> category_time;
  auto members = category_members(trace, tree, s.category, category_time);
  if (members.empty()) {
    std::string have;
    for (const auto& [cat, t] : category_time)
      have += fmt::format("{}{} ({:.1f} us)", have.empty() ? "" : ", ", cat, t);
    throw ReplayError(
        "no GPU-launching op of category '" + s.category +
        "' in the trace; launcher categories present: " + (have.empty() ? "none" : have));
  }
  // Group by signature; rank by the summed subtree GPU time, then first UID.
  std::map<std::string, std::pair<double, Uid>> rank;
  for (const auto& [u, cat] : members) {
    auto [it, fresh] = rank.try_emplace(signature_key(trace, u), 0.0, u);
    it->second.first += tree.busy_time(tree.gpu_events(u));
  }
  std::vector<std::pair<std::string, std::pair<double, Uid>>> rows(rank.begin(), rank.end());
  std::sort(rows.begin(), rows.end(), [](const auto& x, const auto& y) {
    if (x.second.first != y.second.first) return x.second.first > y.second.first;
    return x.second.second < y.second.second;
  });
  if (rows.size() > s.top_n) rows.resize(s.top_n);
  std::set<std::string> names;
  for (const auto& r : rows) names.insert(std::string(trace.name(r.second.second)));
  auto groups = occurrences(trace, names);
  std::vector<ReplayOp> ops;
  for (const auto& r : rows) ops.push_back(make_op(trace, tree, groups.at(r.first)));
  return ops;
}

// ------------------------------------------------------------------- IR ---

json gpu_time_json(const std::optional<GpuTimeStats>& g) {
  if (!g) return nullptr;
  return {{"n", g->n},     {"mean", g->mean}, {"median", g->median},
          {"min", g->min}, {"max", g->max},   {"sum", g->sum}};
}

json text_or_null(const std::string& s) {
  return s.empty() ? json(nullptr) : json(s);
}

json op_json(const ReplayOp& op) {
  constexpr size_t kMaxUids = 20;
  json uids = json::array();
  for (size_t k = 0; k < op.uids.size() && k < kMaxUids; ++k) uids.push_back(op.uids[k]);
  json args = json::array();
  if (op.not_replayable.empty()) {
    RecordedArgs a{&op.input_dims, &op.input_type, &op.input_strides, &op.concrete_inputs};
    for (size_t i = 0; i < op.input_type.size(); ++i) args.push_back(decode_arg(a, i));
  }
  return {{"id", op.id},
          {"name", op.name},
          {"category", op.category},
          {"count", op.uids.size()},
          {"uids", uids},
          {"Input Dims", py_to_json(op.input_dims)},
          {"Input Strides", py_to_json(op.input_strides)},
          {"Input type", py_to_json(op.input_type)},
          {"Concrete Inputs", py_to_json(op.concrete_inputs)},
          {"args", args},
          {"trace_gpu_time_us", gpu_time_json(op.gpu_time)},
          {"kernels", op.kernels},
          {"not_replayable_reason", text_or_null(op.not_replayable)},
          {"tracelens_rejects", text_or_null(op.tracelens_rejects)}};
}

std::string base_name(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

}  // namespace

ReplayPlan plan_replay(const Trace& trace, const CallTree& tree, const Selection& selection) {
  if (xplane::is_xplane_trace(trace))
    throw ReplayError(fmt::format(
        "{}: a JAX / XLA XPlane trace: replay writes PyTorch reproducers of aten ops, and an XLA "
        "program has none (its kernels come from HLO instructions, whose shapes each kernel "
        "carries as hlo_* args); reproduce an XLA program from its HLO dump "
        "(XLA_FLAGS=--xla_dump_to=DIR)",
        trace.path.empty() ? std::string("trace") : trace.path));
  ReplayPlan plan;
  plan.selection = selection.describe();
  switch (selection.mode) {
    case Selection::Mode::Uids:
      plan.ops = plan_uids(trace, tree, selection.uids);
      break;
    case Selection::Mode::OpName:
      plan.ops = plan_op_name(trace, tree, selection);
      break;
    case Selection::Mode::Category:
      plan.ops = plan_category(trace, tree, selection);
      break;
  }
  for (size_t k = 0; k < plan.ops.size(); ++k) plan.ops[k].id = k;
  return plan;
}

json replay_ir_json(const Trace& trace, const ReplayPlan& plan) {
  json ops = json::array();
  for (const ReplayOp& op : plan.ops) ops.push_back(op_json(op));
  std::string gpu = trace.gpu_name();
  return {{"format", "jarvis-replay-ir"},
          {"version", 1},
          {"source_trace", base_name(trace.path)},
          {"platform", platform_name(trace.platform)},
          {"gpu_name", text_or_null(gpu)},
          {"selection", plan.selection},
          {"time_unit", "us"},
          {"trace_gpu_time_definition",
           "per call: busy time (union of kernel / memcpy / memset intervals) of all GPU work "
           "launched in the op's subtree; statistics over the calls with this exact signature"},
          {"ops", ops}};
}

PackageFiles write_replay_package(const Trace& trace, const ReplayPlan& plan,
                                  const std::string& out_dir) {
  namespace fs = std::filesystem;
  if (out_dir.empty()) throw ReplayError("no output directory given");
  fs::path dir(out_dir);
  if (fs::exists(dir) && !fs::is_directory(dir))
    throw ReplayError("output path " + out_dir + " exists and is not a directory");
  PackageFiles f;
  f.dir = dir.string();
  f.ir = (dir / "replay_ir.json").string();
  f.runner = (dir / "replay.py").string();
  f.readme = (dir / "README.md").string();
  f.zip = (dir / "replay_package.zip").string();
  std::string ir = replay_ir_json(trace, plan).dump(2) + "\n";
  std::string readme = readme_text(trace, plan);
  std::string zip = make_zip({{"replay_package/replay_ir.json", ir},
                              {"replay_package/replay.py", runner_script()},
                              {"replay_package/README.md", readme}});
  write_file_atomic(f.ir, ir);
  write_file_atomic(f.runner, runner_script());
  write_file_atomic(f.readme, readme);
  write_file_atomic(f.zip, zip);
  return f;
}

ReplayResult make_replay(const Trace& trace, const CallTree& tree, const Selection& selection,
                         const std::string& out_dir) {
  ReplayResult r;
  r.plan = plan_replay(trace, tree, selection);
  r.files = write_replay_package(trace, r.plan, out_dir);
  return r;
}

json replay_summary_json(const ReplayResult& result) {
  json ops = json::array();
  size_t replayable = 0;
  for (const ReplayOp& op : result.plan.ops) {
    if (op.not_replayable.empty()) ++replayable;
    ops.push_back({{"id", op.id},
                   {"name", op.name},
                   {"category", op.category},
                   {"input_dims", op.input_dims.repr_tuple()},
                   {"input_type", op.input_type.repr_tuple()},
                   {"count", op.uids.size()},
                   {"example_uid", op.uids.front()},
                   {"trace_gpu_time_us_mean", op.gpu_time ? json(op.gpu_time->mean) : json()},
                   {"trace_gpu_time_us_sum", op.gpu_time ? json(op.gpu_time->sum) : json()},
                   {"not_replayable_reason", text_or_null(op.not_replayable)}});
  }
  return {{"selection", result.plan.selection},
          {"op_count", result.plan.ops.size()},
          {"replayable_count", replayable},
          {"ops", ops},
          {"files",
           {{"dir", result.files.dir},
            {"replay_ir", result.files.ir},
            {"runner", result.files.runner},
            {"readme", result.files.readme},
            {"zip", result.files.zip}}},
          {"run_command", "cd " + shell_quote(result.files.dir) + " && python3 replay.py"}};
}

}  // namespace jarvis::replay
