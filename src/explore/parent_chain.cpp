#include "explore/parent_chain.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "pycompat/repr.h"
#include "pycompat/value.h"

namespace jarvis::analysis {

namespace {

constexpr const char* kFields[] = {"Input Dims", "Input type"};

bool is_gpu_category(const Trace& trace, Uid uid) {
  return trace.events[uid].is_gpu();
}

// Python prints a JSON duration as read: integral values without ".0" are the
// common Kineto spelling; fractional ones use the float repr.
std::string duration_text(double dur) {
  if (std::isnan(dur)) return "None";
  if (dur == std::floor(dur) && std::fabs(dur) < 1e15)
    return std::to_string(static_cast<int64_t>(dur));
  return pycompat::py_float_repr(dur);
}

std::string node_line(const Trace& trace, Uid uid) {
  std::string cat(trace.cat_name(uid));
  std::string line = "UID: " + std::to_string(uid) + ", Category: " + cat +
                     ", Name: " + short_event_name(trace.name(uid));
  if (is_gpu_category(trace, uid)) line += ", Duration: " + duration_text(trace.events[uid].dur());
  return line;
}

ojson json_value(const PyValue& v) {
  return v.to_ojson();
}

bool keep_child(const Trace& trace, const CallTree& tree, Uid child, bool prune) {
  return !prune || is_gpu_category(trace, child) || !tree.gpu_events(child).empty();
}

std::vector<Uid> shown_children(const Trace& trace, const CallTree& tree, Uid uid, bool prune) {
  std::vector<Uid> out;
  for (Uid c : tree.children(uid))
    if (keep_child(trace, tree, c, prune)) out.push_back(c);
  return out;
}

ojson subtree_json(const Trace& trace, const CallTree& tree, Uid uid, int depth,
                   const ParentChainQuery& q) {
  ojson node = describe_event(trace, uid);
  std::vector<Uid> kids = shown_children(trace, tree, uid, q.prune_non_gpu);
  node["gpu_event_count"] = tree.gpu_events(uid).size();
  if (kids.empty()) return node;
  if (q.subtree_depth >= 0 && depth >= q.subtree_depth) {
    node["children_not_shown"] = kids.size();
    return node;
  }
  ojson children = ojson::array();
  for (size_t k = 0; k < kids.size() && k < q.max_children; ++k)
    children.push_back(subtree_json(trace, tree, kids[k], depth + 1, q));
  node["children"] = children;
  if (kids.size() > q.max_children) node["children_not_shown"] = kids.size() - q.max_children;
  return node;
}

void subtree_text(const Trace& trace, const CallTree& tree, Uid uid, int depth,
                  const ParentChainQuery& q, const std::string& prefix, bool is_last,
                  std::string& out) {
  out += prefix +
         (is_last ? "\xE2\x94\x94\xE2\x94\x80\xE2\x94\x80 "
                  : "\xE2\x94\x9C\xE2\x94\x80\xE2\x94\x80 ") +
         node_line(trace, uid) + "\n";
  std::string child_prefix = prefix + (is_last ? "    " : "\xE2\x94\x82   ");
  if (trace.events[uid].cat == Cat::CpuOp) {
    std::string detail_prefix = child_prefix + "|   ";
    bool emitted = false;
    for (const char* f : kFields)
      if (const PyValue* v = trace.arg(uid, f)) {
        out += detail_prefix + f + ": " + v->repr_list() + "\n";
        emitted = true;
      }
    if (emitted) out += detail_prefix + "\n";
  }
  std::vector<Uid> kids = shown_children(trace, tree, uid, q.prune_non_gpu);
  if (kids.empty()) return;
  if (q.subtree_depth >= 0 && depth >= q.subtree_depth) {
    out += child_prefix + "\xE2\x94\x94\xE2\x94\x80\xE2\x94\x80 ... " +
           std::to_string(kids.size()) + " child event(s) below the depth limit\n";
    return;
  }
  size_t shown = std::min(kids.size(), q.max_children);
  bool truncated = kids.size() > shown;
  for (size_t k = 0; k < shown; ++k)
    subtree_text(trace, tree, kids[k], depth + 1, q, child_prefix, k + 1 == shown && !truncated,
                 out);
  if (truncated)
    out += child_prefix + "\xE2\x94\x94\xE2\x94\x80\xE2\x94\x80 ... " +
           std::to_string(kids.size() - shown) + " more child event(s)\n";
}

// --- host context: annotations, nn.Module and Python frames ----------------
// Kineto nests record_function annotations (ProfilerStep#N, Optimizer.step,
// user ranges) and python_function frames (nn.Module: X_0, file(line): fn) by
// time on the thread that ran them; TraceLens's call tree keeps none of them,
// so the agent could not say which layer an op came from. They are found here
// by containment on the op's thread, outermost first.

bool is_context_event(const Event& e) {
  return (e.cat == Cat::UserAnnotation || e.cat == Cat::PythonFunction) &&
         e.ph == Phase::Complete && e.has_ts() && e.has_dur();
}

// The host event whose thread and time place `uid`: itself for host events,
// the launching runtime call for a GPU event (kNoUid when unlinked).
Uid host_anchor(const Trace& trace, const CallTree& tree, Uid uid) {
  Uid u = uid;
  while (u != kNoUid && trace.events[u].is_gpu()) u = tree.parent(u);
  return u;
}

// (pid, tid) pairs are interned once per trace: equal pairs, equal index.
bool same_thread(const Event& a, const Event& b) {
  return a.thread == b.thread;
}

bool encloses(const Event& outer, const Event& inner) {
  return outer.ts() <= inner.ts() && outer.ts() + outer.dur() >= inner.ts() + inner.dur();
}

// Annotation and Python events enclosing `anchor` on its thread, outermost
// first (earlier start, then longer).
std::vector<Uid> enclosing_context(const Trace& trace, Uid anchor) {
  std::vector<Uid> out;
  const Event& a = trace.events[anchor];
  if (!a.has_ts() || !a.has_dur()) return out;
  for (Uid u = 0; u < trace.events.size(); ++u) {
    const Event& e = trace.events[u];
    if (u != anchor && is_context_event(e) && same_thread(e, a) && encloses(e, a)) out.push_back(u);
  }
  std::stable_sort(out.begin(), out.end(), [&](Uid x, Uid y) {
    const Event& ex = trace.events[x];
    const Event& ey = trace.events[y];
    if (ex.ts() != ey.ts()) return ex.ts() < ey.ts();
    return ex.dur() > ey.dur();
  });
  return out;
}

constexpr size_t kMaxPythonFrames = 12;

// {profiler_step, annotations[], modules[], python_frames[]}: names, outermost
// first; python_frames keeps the innermost kMaxPythonFrames non-module frames.
ojson host_context_json(const Trace& trace, const std::vector<Uid>& enclosing) {
  ojson ctx = ojson::object();
  ctx["profiler_step"] = nullptr;
  ojson annotations = ojson::array(), modules = ojson::array();
  std::vector<std::string> frames;
  for (Uid u : enclosing) {
    std::string name(trace.name(u));
    if (trace.events[u].cat == Cat::UserAnnotation) {
      if (name.starts_with("ProfilerStep#"))
        ctx["profiler_step"] = name;
      else
        annotations.push_back(name);
    } else if (name.starts_with("nn.Module: ")) {
      modules.push_back(name);
    } else {
      frames.push_back(name);
    }
  }
  size_t skip = frames.size() > kMaxPythonFrames ? frames.size() - kMaxPythonFrames : 0;
  ctx["annotations"] = annotations;
  ctx["modules"] = modules;
  ctx["python_frames"] = ojson(
      std::vector<std::string>(frames.begin() + static_cast<std::ptrdiff_t>(skip), frames.end()));
  ctx["python_frames_not_shown"] = skip;
  return ctx;
}

std::string host_context_text(const ojson& ctx) {
  std::string line;
  auto add = [&line](const std::string& part) { line += (line.empty() ? "" : " > ") + part; };
  if (ctx["profiler_step"].is_string()) add(ctx["profiler_step"].get<std::string>());
  for (const auto& a : ctx["annotations"]) add(a.get<std::string>());
  for (const auto& m : ctx["modules"]) add(m.get<std::string>());
  if (line.empty()) return {};
  return "Context:\n  " + line + "\n";
}

// The top-level call-tree ops inside an annotation or Python frame (which the
// call tree does not hold): host tree events on its thread within its span
// whose parent lies outside it, in time order.
std::vector<Uid> enclosed_top_ops(const Trace& trace, const CallTree& tree, Uid uid) {
  const Event& span = trace.events[uid];
  std::vector<Uid> out;
  auto inside = [&](Uid u) {
    const Event& e = trace.events[u];
    return !e.is_gpu() && tree.in_tree(u) && e.has_ts() && e.has_dur() && same_thread(e, span) &&
           encloses(span, e);
  };
  for (Uid u = 0; u < trace.events.size(); ++u) {
    if (!inside(u)) continue;
    Uid p = tree.parent(u);
    if (p == kNoUid || !inside(p)) out.push_back(u);
  }
  std::stable_sort(out.begin(), out.end(),
                   [&](Uid x, Uid y) { return trace.events[x].ts() < trace.events[y].ts(); });
  return out;
}

// Subtree of an annotation / Python frame: the enclosed top-level ops as its
// children (each with its own call-tree subtree), JSON and text.
ojson enclosed_subtree(const Trace& trace, const CallTree& tree, Uid uid, const ParentChainQuery& q,
                       std::string& text) {
  std::vector<Uid> kids;
  size_t gpu_events = 0;
  for (Uid c : enclosed_top_ops(trace, tree, uid)) {
    if (!keep_child(trace, tree, c, q.prune_non_gpu)) continue;
    kids.push_back(c);
    gpu_events += tree.gpu_events(c).size();
  }
  ojson node = describe_event(trace, uid);
  node["gpu_event_count"] = gpu_events;
  text += "\xE2\x94\x94\xE2\x94\x80\xE2\x94\x80 " + node_line(trace, uid) + "\n";
  if (kids.empty()) return node;
  if (q.subtree_depth == 0) {
    node["children_not_shown"] = kids.size();
    text += "    \xE2\x94\x94\xE2\x94\x80\xE2\x94\x80 ... " + std::to_string(kids.size()) +
            " child event(s) below the depth limit\n";
    return node;
  }
  size_t shown = std::min(kids.size(), q.max_children);
  ojson children = ojson::array();
  for (size_t k = 0; k < shown; ++k) {
    children.push_back(subtree_json(trace, tree, kids[k], 1, q));
    subtree_text(trace, tree, kids[k], 1, q, "    ", k + 1 == shown && shown == kids.size(), text);
  }
  node["children"] = children;
  if (kids.size() > shown) {
    node["children_not_shown"] = kids.size() - shown;
    text += "    \xE2\x94\x94\xE2\x94\x80\xE2\x94\x80 ... " + std::to_string(kids.size() - shown) +
            " more child event(s)\n";
  }
  return node;
}

// The time a match stands for: a kernel's duration, a host op's GPU time
// (the GPU events it launches, directly or below it).
double match_time_us(const Trace& trace, const CallTree& tree, Uid u) {
  const Event& e = trace.events[u];
  if (e.is_gpu()) return e.has_dur() ? e.dur() : 0;
  double sum = 0;
  for (Uid g : tree.gpu_events(u))
    if (trace.events[g].has_dur()) sum += trace.events[g].dur();
  return sum;
}

// Kernel matches longest first (ties in trace order): a kernel name such as
// attn_fwd matches cheap and expensive instances alike, and the expensive one
// is the one asked about. Host ops keep trace order (index = the n-th call).
void rank_kernel_matches(const Trace& trace, std::vector<Uid>& found) {
  std::stable_sort(found.begin(), found.end(),
                   [&](Uid a, Uid b) { return trace.events[a].dur() > trace.events[b].dur(); });
}

// Up to `n` matches by time, longest first: {uid, time_us, index}.
ojson top_matches(const Trace& trace, const CallTree& tree, const std::vector<Uid>& found,
                  size_t n) {
  std::vector<std::pair<double, size_t>> by_time;
  for (size_t k = 0; k < found.size(); ++k)
    by_time.push_back({match_time_us(trace, tree, found[k]), k});
  std::stable_sort(by_time.begin(), by_time.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  ojson out = ojson::array();
  for (size_t k = 0; k < by_time.size() && k < n; ++k)
    out.push_back({{"uid", found[by_time[k].second]},
                   {"index", by_time[k].second},
                   {"name", std::string(trace.name(found[by_time[k].second]))},
                   {trace.events[found[by_time[k].second]].is_gpu() ? "duration_us" : "gpu_time_us",
                    by_time[k].first}});
  return out;
}

constexpr size_t kTopMatches = 5;

// UIDs matching the query's name selector, UID order.
std::vector<Uid> matches(const Trace& trace, const ParentChainQuery& q) {
  std::vector<Uid> exact, partial;
  bool kernel = !q.kernel_name.empty();
  const std::string& wanted = kernel ? q.kernel_name : q.op_name;
  for (Uid u = 0; u < trace.events.size(); ++u) {
    const Event& e = trace.events[u];
    if (kernel != e.is_gpu()) continue;
    if (!kernel && e.ph != Phase::Complete) continue;
    std::string_view name = trace.name(u);
    if (name == wanted)
      exact.push_back(u);
    else if (kernel && name.find(wanted) != std::string_view::npos)
      partial.push_back(u);
  }
  return exact.empty() ? partial : exact;
}

}  // namespace

std::string short_event_name(std::string_view name) {
  if (name.size() > 64) return std::string(name.substr(0, 64)) + "..";
  return std::string(name);
}

ojson describe_event(const Trace& trace, Uid uid) {
  const Event& e = trace.events[uid];
  ojson j = ojson::object();
  j["uid"] = uid;
  j["name"] = std::string(trace.name(uid));
  j["category"] = std::string(trace.cat_name(uid));
  j["ts"] = e.has_ts() ? ojson(e.ts()) : ojson(nullptr);
  j["duration_us"] = e.has_dur() ? ojson(e.dur()) : ojson(nullptr);
  if (e.cat == Cat::CpuOp)
    for (const char* f : kFields)
      if (const PyValue* v = trace.arg(uid, f)) j[f] = json_value(*v);
  if (e.is_gpu() && trace.stream(e) != kNoInt) j["stream"] = trace.stream(e);
  return j;
}

ParentChainResult parent_chain(const Trace& trace, const CallTree& tree,
                               const ParentChainQuery& q) {
  int selectors = (q.uid ? 1 : 0) + (q.op_name.empty() ? 0 : 1) + (q.kernel_name.empty() ? 0 : 1);
  if (selectors != 1)
    throw std::invalid_argument("give exactly one of uid, op_name or kernel_name");
  Uid uid = kNoUid;
  size_t match_count = 1;
  ojson ranked = nullptr;
  if (q.uid) {
    if (*q.uid >= trace.events.size())
      throw std::invalid_argument("uid " + std::to_string(*q.uid) + " out of range (trace has " +
                                  std::to_string(trace.events.size()) + " events)");
    uid = *q.uid;
  } else {
    std::vector<Uid> found = matches(trace, q);
    if (!q.kernel_name.empty()) rank_kernel_matches(trace, found);
    match_count = found.size();
    if (found.size() > 1) ranked = top_matches(trace, tree, found, kTopMatches);
    std::string what =
        q.kernel_name.empty() ? "op '" + q.op_name + "'" : "kernel '" + q.kernel_name + "'";
    if (found.empty()) throw std::invalid_argument("no event matches " + what);
    if (q.index >= found.size())
      throw std::invalid_argument("index " + std::to_string(q.index) + " out of range: " + what +
                                  " has " + std::to_string(found.size()) + " match(es)");
    uid = found[q.index];
  }

  ParentChainResult r;
  r.uid = uid;
  ojson chain = ojson::array();
  std::string text = "Node:\n  " + node_line(trace, uid) + "\n";
  auto append_fields = [&](Uid u) {
    if (trace.events[u].cat != Cat::CpuOp) return;
    for (const char* f : kFields)
      if (const PyValue* v = trace.arg(u, f))
        text += std::string("    ") + f + ": " + v->repr_list() + "\n";
  };
  append_fields(uid);
  int depth = 1;
  for (Uid p : tree.parent_chain(uid)) {
    ojson node = describe_event(trace, p);
    node["level"] = depth;
    chain.push_back(node);
    text += std::to_string(depth) + "-up:\n  " + node_line(trace, p) + "\n";
    append_fields(p);
    ++depth;
  }
  Uid anchor = host_anchor(trace, tree, uid);
  ojson context = anchor == kNoUid ? host_context_json(trace, {})
                                   : host_context_json(trace, enclosing_context(trace, anchor));
  text += host_context_text(context);

  std::string sub;
  ojson subtree;
  if (is_context_event(trace.events[uid]) && !tree.in_tree(uid)) {
    // An annotation (Optimizer.step, a record_function range) or a Python
    // frame: its subtree is the call-tree ops it encloses.
    subtree = enclosed_subtree(trace, tree, uid, q, sub);
  } else {
    subtree_text(trace, tree, uid, 0, q, "", true, sub);
    subtree = subtree_json(trace, tree, uid, 0, q);
  }

  r.json = ojson::object();
  r.json["event"] = describe_event(trace, uid);
  r.json["match_count"] = match_count;
  // With several matches: the most expensive ones (index picks one of them).
  if (!ranked.is_null()) r.json["top_matches"] = ranked;
  r.json["parent_chain"] = chain;
  r.json["context"] = context;
  r.json["subtree"] = subtree;
  r.text = text + "\nSubtree:\n" + sub;
  r.json["text"] = r.text;
  return r;
}

}  // namespace jarvis::analysis
