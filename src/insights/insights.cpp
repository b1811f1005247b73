#include "insights/insights.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string_view>

#include <fmt/format.h>

#include "base/phase_timer.h"
#include "base/sort_runs.h"
#include "base/two_threads.h"
#include "critical_path/graph_file.h"
#include "critical_path/what_if_request.h"
#include "insights/idle_gaps.h"
#include "insights/rules_internal.h"
#include "insights/trace_facts.h"
#include "perf/perf_model.h"

namespace jarvis::insights {
namespace {

struct NamedRule {
  const char* id;
  RuleFn fn;
  // The rule reads the step model (c.step, directly or through a helper that
  // needs it). analyse_trace runs the others while the model is built; a
  // test holds each of them to the same findings without the model.
  bool reads_step = false;
};
constexpr bool kReadsStep = true;

// Run order. One line per rule.
constexpr NamedRule kRules[] = {
    {"gemm_unaligned_dims", rule_gemm_unaligned_dims},
    {"old_arch_kernel", rule_old_arch_kernel},
    {"autocast_dtype", rule_autocast_dtype},
    {"tiny_gemm_batching", rule_tiny_gemm_batching},
    {"launch_bound", rule_launch_bound, kReadsStep},
    {"conv_layout_transposes", rule_conv_layout_transposes, kReadsStep},
    {"unfused_attention", rule_unfused_attention},
    {"elementwise_chain", rule_elementwise_chain},
    {"bandwidth_baseline", rule_bandwidth_baseline},
    {"foreach_optimizer", rule_foreach_optimizer, kReadsStep},
    {"fp32_cross_entropy", rule_fp32_cross_entropy},
    {"full_vocab_logits", rule_full_vocab_logits},
    {"unfused_rmsnorm", rule_unfused_rmsnorm},
    {"unfused_rope", rule_unfused_rope},
    {"kv_cache_cat", rule_kv_cache_cat},
    {"dtype_casts", rule_dtype_casts},
    {"epilogue_fusion", rule_epilogue_fusion},
    {"attention_efficiency", rule_attention_efficiency},
    {"capture_host_cost", rule_capture_host_cost},
    {"gemm_shared_input", rule_gemm_shared_input},
    {"compiled_kernel_headroom", rule_compiled_kernel_headroom},
    {"unfused_gelu", rule_unfused_gelu},
    {"fp32_gemm_simt", rule_fp32_gemm_simt},
    {"host_sync", rule_host_sync, kReadsStep},
    {"dataloader_main_process", rule_dataloader_main_process, kReadsStep},
    {"activation_recompute", rule_activation_recompute, kReadsStep},
    {"unrecorded_host_time", rule_unrecorded_host_time, kReadsStep},
};

int64_t int_param(const perf::Params& params, std::string_view name) {
  const perf::Param* p = perf::find_param(params, name);
  if (!p || p->value.kind != PyValue::Kind::Int) return 0;
  return p->value.i;
}

// The last two entries of an int list param ("stride_A"), or empty.
std::vector<int64_t> last_two_ints(const perf::Params& params, std::string_view name) {
  const perf::Param* p = perf::find_param(params, name);
  if (!p || !p->value.is_list() || p->value.list.size() < 2) return {};
  std::vector<int64_t> out;
  for (size_t i = p->value.list.size() - 2; i < p->value.list.size(); ++i) {
    const PyValue& v = p->value.list[i];
    if (v.kind != PyValue::Kind::Int) return {};
    out.push_back(v.i);
  }
  return out;
}

// Ops whose model reads A as M x K and B as K x N from their recorded inputs,
// so "stride_A" / "stride_B" are strides in that orientation.
bool strides_are_mk_kn(std::string_view op) {
  return op == "aten::mm" || op == "aten::addmm" || op == "aten::bmm" || op == "aten::baddbmm" ||
         op == "aten::_scaled_mm";
}

}  // namespace

namespace detail {

std::optional<GemmDims> gemm_dims(const report::PerfOpRow& row) {
  if (!row.metrics || row.sheet != "GEMM") return std::nullopt;
  const auto& params = row.metrics->params();
  GemmDims d;
  d.m = int_param(params, "M");
  d.n = int_param(params, "N");
  d.k = int_param(params, "K");
  if (int64_t b = int_param(params, "B"); b > 0) d.batch = b;
  if (d.m <= 0 || d.n <= 0 || d.k <= 0) return std::nullopt;
  if (const perf::Param* p = perf::find_param(params, "dtype_A_B");
      p && p->value.is_list() && !p->value.list.empty() && p->value.list[0].is_string())
    d.precision = perf::precision_of(p->value.list[0].s);
  if (strides_are_mk_kn(row.name)) {
    d.stride_a = last_two_ints(params, "stride_A");
    d.stride_b = last_two_ints(params, "stride_B");
  }
  return d;
}

std::optional<double> time_above_roofline(const report::PerfOpRow& row) {
  if (!row.metrics || !row.metrics->roofline) return std::nullopt;
  return std::max(0.0, row.kernel_time_us - row.metrics->roofline->time_us);
}

std::vector<std::string> kernel_names(const Trace& trace, const report::PerfOpRow& row) {
  std::vector<std::string> out;
  std::set<std::string_view> seen;
  for (Uid k : row.kernels)
    if (seen.insert(trace.name(k)).second) out.emplace_back(trace.name(k));
  return out;
}

std::string gemm_label(const report::PerfOpRow& row, const GemmDims& d) {
  std::string batch = d.batch > 1 ? fmt::format("{} x ", d.batch) : "";
  return fmt::format("{} {}({}, {}) x ({}, {})", row.name, batch, d.m, d.k, d.k, d.n);
}

critical_path::WhatIfResult step_what_if(const InsightContext& c,
                                         const critical_path::Scenario& change) {
  return critical_path::what_if(c.step->graph, change, *c.step->graph.attached_base,
                                /*profiled_prediction=*/false);
}

critical_path::WhatIfResult step_time_what_if(const InsightContext& c,
                                              const critical_path::Scenario& change,
                                              critical_path::StepDetail detail,
                                              const critical_path::BoundsWhen& bounds_when,
                                              critical_path::RemovedUs removed) {
  const auto replay = [&] {
    return critical_path::what_if_step(c.step->graph, change, *c.step->graph.attached_base, detail,
                                       bounds_when, removed);
  };
  // A host change (no GPU events named) is often replayed twice: by its rule
  // and again from its what_if arguments (replay_what_ifs), the same
  // scenario. The replay is a function of the scenario: the first result
  // serves the second.
  if (bounds_when || !change.select.gpu_uids.empty() || !change.also_scale.empty()) return replay();
  return detail::replayed_once(c, detail::scenario_key(change, detail, removed), replay);
}

double step_saving_total_us(const InsightContext& c, const critical_path::Scenario& change) {
  if (!c.step) return 0;
  try {
    const auto r = step_time_what_if(c, change);
    return std::max(0.0, r.measured_step_time_us - r.predicted_step_time_us) *
           static_cast<double>(c.step->measured.iterations.size());
  } catch (const std::runtime_error&) {  // nothing the change selects
    return 0;
  }
}

StepWindow step_window(const InsightContext& c) {
  const auto& graph = c.step->graph;
  StepWindow w;
  w.rank = graph.ranks.front();
  const double offset =
      graph.clock_offset_us.count(w.rank) ? graph.clock_offset_us.at(w.rank) : 0.0;
  w.from_us = 1e300;
  w.to_us = -1e300;
  for (const auto& it : graph.iterations) {
    w.from_us = std::min(w.from_us, it.start - offset);
    w.to_us = std::max(w.to_us, it.end - offset);
  }
  return w;
}

std::string severity_by_step_saving(const InsightContext& c, double saving_total_us) {
  const double steps = static_cast<double>(std::max<size_t>(1, c.step->measured.iterations.size()));
  return saving_total_us >= 0.05 * c.step->measured.step_time_us * steps ? "high"
         : saving_total_us > 0                                           ? "medium"
                                                                         : "low";
}

double share_of(const InsightContext& c, double time_us) {
  return c.total_kernel_time_us > 0 ? time_us / c.total_kernel_time_us : 0;
}

std::string severity_by_share(double share) {
  constexpr double kHigh = 0.05, kMedium = 0.01;
  return share >= kHigh ? "high" : share >= kMedium ? "medium" : "low";
}

std::optional<std::vector<int64_t>> first_input_dims(const Trace& t, Uid op) {
  const PyValue* dims = t.arg(op, "Input Dims");
  if (!dims || !dims->is_seq() || dims->size() == 0 || !(*dims)[0].is_seq()) return std::nullopt;
  std::vector<int64_t> out;
  for (const PyValue& d : (*dims)[0].list) {
    if (d.kind != PyValue::Kind::Int) return std::nullopt;
    out.push_back(d.i);
  }
  return out;
}

std::string first_input_type(const Trace& t, Uid op) {
  const PyValue* types = t.arg(op, "Input type");
  if (!types || !types->is_seq() || types->size() == 0 || !(*types)[0].is_string()) return "";
  return (*types)[0].s;
}

int64_t elements(const std::vector<int64_t>& dims) {
  constexpr int64_t kAbsurd = int64_t{1} << 40;
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0 || n > kAbsurd) return 0;
    n *= d;
  }
  return n;
}

bool is_half_type(std::string_view recorded_type) {
  return recorded_type == "c10::BFloat16" || recorded_type == "c10::Half";
}

FlopRate gemm_rate(const InsightContext& c, const std::string& spec,
                   const std::function<bool(const report::PerfOpRow&)>& keep) {
  FlopRate rate;
  for (const auto& row : c.rows)
    if (row.sheet == "GEMM" && row.metrics && row.metrics->compute_spec == spec &&
        row.kernel_time_us > 0 && keep(row)) {
      rate.gflops += row.metrics->gflops;
      rate.time_us += row.kernel_time_us;
    }
  return rate;
}

void for_each_sibling_list(const InsightContext& c,
                           const std::function<void(std::span<const Uid>)>& visit) {
  std::map<uint32_t, std::vector<Uid>> roots;  // top-level cpu_ops by thread
  for (size_t u = 0; u < c.trace.events.size(); ++u) {
    const Uid uid = static_cast<Uid>(u);
    if (!c.tree.in_tree(uid)) continue;
    if (auto kids = c.tree.children(uid); kids.size() >= 2) visit(kids);
    if (c.tree.parent(uid) == kNoUid && c.trace.events[u].cat == Cat::CpuOp)
      roots[c.trace.events[u].thread].push_back(uid);
  }
  for (auto& [thread, list] : roots) {
    // Nearly always in time order already: one pass, no buffer (sort_runs.h).
    stable_sort_runs(list.begin(), list.end(),
                     [&](Uid a, Uid b) { return c.trace.events[a].ts() < c.trace.events[b].ts(); });
    visit(list);
  }
}

size_t graph_capture_calls(const Trace& trace) {
  // Each interned name read once (a tiled trace's million runtime calls
  // have a few dozen names): 0 unread, 1 neither, 2 a capture call that
  // begins one, 3 GetCaptureInfo.
  constexpr uint8_t kUnread = 0, kNeither = 1, kBegins = 2, kAsks = 3;
  std::vector<uint8_t> kind_of(trace.strings.size(), kUnread);
  auto kind = [&](uint32_t id) {
    uint8_t& k = kind_of[id];
    if (k == kUnread) {
      std::string_view name = trace.str(id);
      k = name.find("BeginCapture") != std::string_view::npos ||
                  name.find("GraphInstantiate") != std::string_view::npos
              ? kBegins
          : name.find("GetCaptureInfo") != std::string_view::npos ? kAsks
                                                                  : kNeither;
    }
    return k;
  };
  size_t calls = 0;
  bool captured = false;  // GetCaptureInfo alone is no capture: PyTorch asks it routinely
  for (const Event& e : trace.events) {
    if (e.cat != Cat::CudaRuntime && e.cat != Cat::CudaDriver) continue;
    const uint8_t k = e.name < kind_of.size() ? kind(e.name) : kNeither;
    captured = captured || k == kBegins;
    if (k == kBegins || k == kAsks) ++calls;
  }
  return captured ? calls : 0;
}

std::vector<Uid> rows_holding(const InsightContext& c, const std::vector<Uid>& sorted_kernels) {
  std::vector<Uid> rows;
  if (sorted_kernels.empty()) return rows;
  // The kernels marked by UID: a row's kernels are looked up in O(1), not
  // searched for (every row's kernels, for each rule that asks).
  // (Sized by the largest, not the last: a caller's list out of order stays in bounds.)
  const Uid largest = *std::max_element(sorted_kernels.begin(), sorted_kernels.end());
  std::vector<bool> wanted(static_cast<size_t>(largest) + 1, false);
  for (Uid k : sorted_kernels) wanted[k] = true;
  for (const auto& row : c.rows)
    for (Uid k : row.kernels)
      if (k < wanted.size() && wanted[k]) {
        rows.push_back(row.uid);
        break;
      }
  // Rows of one op (its forward and backward rows) share its UID: one pool.
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  return rows;
}

Insight kernels_insight(const InsightContext& c, std::string_view rule, std::string category,
                        std::vector<Uid>& kernels, double time_us) {
  std::sort(kernels.begin(), kernels.end());
  kernels.erase(std::unique(kernels.begin(), kernels.end()), kernels.end());
  Insight i = op_insight(c, rule, std::move(category), rows_holding(c, kernels), time_us);
  std::set<std::string> names;
  for (Uid k : kernels) names.emplace(c.trace.name(k));
  i.kernel_names.assign(names.begin(), names.end());
  return i;
}

Siblings::Siblings(const InsightContext& c) : trace_(c.trace), tree_(c.tree) {
  for (Uid r : tree_.cpu_root_nodes()) roots_[thread_of(r)].push_back(r);
  for (auto& [key, v] : roots_) sort_by_ts(v);
}

Siblings::Level Siblings::of(Uid op, std::vector<Uid>& scratch) const {
  const Uid parent = tree_.parent(op);
  std::span<const Uid> ops;
  if (parent == kNoUid) {
    auto it = roots_.find(thread_of(op));
    if (it != roots_.end()) ops = it->second;
  } else {
    scratch.clear();
    for (Uid k : tree_.children(parent))
      if (tree_.cat(k) == Cat::CpuOp) scratch.push_back(k);
    sort_by_ts(scratch);
    ops = scratch;
  }
  const double ts = trace_.events[op].ts();
  auto first = std::lower_bound(ops.begin(), ops.end(), ts,
                                [&](Uid u, double t) { return trace_.events[u].ts() < t; });
  for (auto it = first; it != ops.end() && trace_.events[*it].ts() == ts; ++it)
    if (*it == op) return {ops, static_cast<size_t>(it - ops.begin())};
  return {ops, std::nullopt};
}

std::pair<ProcId, ProcId> Siblings::thread_of(Uid u) const {
  const Event& e = trace_.events[u];
  return {trace_.pid(e), trace_.tid(e)};
}

void Siblings::sort_by_ts(std::vector<Uid>& v) const {
  // A parent's children and a thread's roots come in time order but for a
  // few: stable_sort_runs gives std::stable_sort's order in one pass and
  // without its buffer (four rules ask for every level, issue 75).
  stable_sort_runs(v.begin(), v.end(),
                   [&](Uid a, Uid b) { return trace_.events[a].ts() < trace_.events[b].ts(); });
}

Insight op_insight(const InsightContext& c, std::string_view rule, std::string category,
                   std::vector<Uid> uids, double time_us) {
  Insight i;
  i.rule = std::string(rule);
  i.scope = "op";
  i.category = std::move(category);
  i.uids = std::move(uids);
  i.time_us = time_us;
  i.share = share_of(c, time_us);
  i.severity = severity_by_share(i.share);
  return i;
}

}  // namespace detail

// The dependency graph of a one-trace job; none when the trace cannot give
// one (no GPU work, no launches, a rank set that does not match).
std::shared_ptr<const InsightContext::StepModel> build_step_model(
    const Trace& trace, const CallTree& tree, const CacheFilePlan* graph_file,
    const GraphFileWriteLater& write_later) {
  try {
    auto model = std::make_shared<InsightContext::StepModel>();
    if (std::optional<critical_path::Graph> kept =
            graph_file ? critical_path::read_graph_file(*graph_file, trace) : std::nullopt) {
      model->graph = std::move(*kept);
    } else {
      {
        PhaseTimer t("insights/step_model/build_graph");
        model->graph = critical_path::build_graph({{&trace, &tree, -1}});
      }
      if (graph_file && write_later) {
        write_later([plan = *graph_file, &trace, model] {
          critical_path::write_graph_file(plan, trace, model->graph);
        });
      } else if (graph_file) {
        critical_path::write_graph_file(*graph_file, trace, model->graph);
      }
    }
    if (model->graph.iterations.empty()) return nullptr;
    PhaseTimer t("insights/step_model/analyses");
    // The base is indexed for replays: the findings' what-ifs select by UID.
    auto base = std::make_shared<critical_path::WhatIfBase>();
    critical_path::BothAnalyses both = critical_path::analyse_and_index(model->graph, *base);
    model->recorded = std::move(both.recorded);
    model->measured = std::move(both.unprofiled);
    model->graph.attached_base = std::move(base);
    return model;
  } catch (const std::runtime_error&) {  // CriticalPathError, CollectiveError
    return nullptr;                      // the rules fall back to the trace's own times
  }
}

namespace {

// The context's perf rows and their kernel time. Reads the trace and the
// tree and writes these fields alone: the facts that read no row are made
// beside it (make_idle_facts, make_unrecorded_facts).
// `given`: the rows of a loaded trace for the same arch (null: built here).
void add_rows(InsightContext& c, std::shared_ptr<const ContextRows::Rows> given) {
  if (given) {
    c.rows = ContextRows(std::move(given));
  } else {
    PhaseTimer t("insights/context/perf_rows");
    c.rows = ContextRows(std::make_shared<const ContextRows::Rows>(
        report::unified_perf_rows(c.trace, c.tree, c.arch)));
  }
  for (const auto& r : c.rows) c.total_kernel_time_us += r.kernel_time_us;
}

// The context's GPU timeline: the caller's (not copied: a tiled trace's
// timeline is megabytes), else its own.
void add_timeline(InsightContext& c, const GpuTimeline* timeline) {
  if (timeline) {
    c.timeline = std::shared_ptr<const GpuTimeline>(std::shared_ptr<const void>(), timeline);
    return;
  }
  PhaseTimer t("insights/context/timeline");
  try {
    c.timeline = std::make_shared<const GpuTimeline>(compute_gpu_timeline(c.trace, c.tree));
  } catch (const std::runtime_error&) {
    // No GPU events: the trace-level rules have nothing to say.
  }
}

void add_rows_and_timeline(InsightContext& c, const GpuTimeline* timeline,
                           std::shared_ptr<const ContextRows::Rows> rows) {
  add_rows(c, std::move(rows));
  add_timeline(c, timeline);
}

size_t rule_index(std::string_view id) {
  for (size_t k = 0; k < std::size(kRules); ++k)
    if (id == kRules[k].id) return k;
  throw std::logic_error(fmt::format("no rule {}", id));
}

}  // namespace

InsightContext make_context(const Trace& trace, const CallTree& tree, const GpuArch* arch,
                            const GpuTimeline* timeline, const StepModelRef* step,
                            std::shared_ptr<const ContextRows::Rows> rows) {
  InsightContext c{trace, tree, arch, {}, 0, {}, trace.gpu_name(), {}, {}};
  // The step model (the dependency graph and its two schedules) and the perf
  // rows with the GPU timeline read the trace and the tree and nothing of
  // each other: with a second core, side by side (the model first, it costs
  // most). Given the model (an MCP worker: load_trace built it), the second
  // core makes the facts the rules read that do not read the rows (the GPU's
  // idle gaps, the host stretches), which the rules would otherwise make.
  std::shared_ptr<const InsightContext::StepModel> model;
  std::vector<std::function<void()>> parts;
  if (!step) parts.push_back([&] { model = build_step_model(trace, tree); });
  parts.push_back([&] { add_rows_and_timeline(c, timeline, std::move(rows)); });
  if (step && step->model) {
    // Reads c's trace, tree and step, which the other part leaves alone.
    c.step = step->model;
    parts.push_back([&] {
      PhaseTimer t("insights/context/facts");
      detail::make_facts_before_rows(c);
    });
  }
  run_on_two_threads(parts);
  if (!step) c.step = std::move(model);
  return c;
}

SharedTraceFacts make_shared_trace_facts(const Trace& trace, const CallTree& tree) {
  return {detail::make_shared_trace_facts(trace, tree)};
}

SharedTraceFactsInParts shared_trace_facts_in_parts(const Trace& trace, const CallTree& tree) {
  detail::TraceFactsInParts made = detail::shared_trace_facts_in_parts(trace, tree);
  return {{std::move(made.facts)}, std::move(made.parts)};
}

size_t InsightContext::StepModel::host_bound_iterations() const {
  return static_cast<size_t>(
      std::count_if(measured.iterations.begin(), measured.iterations.end(),
                    [](const auto& it) { return it.bound_by == critical_path::kBoundByHost; }));
}

namespace {

// The outermost cpu_op above `u` (u itself when none is above it).
Uid outermost_op(const InsightContext& c, Uid u) {
  Uid top = u;
  for (Uid p = c.tree.parent(u); p != kNoUid; p = c.tree.parent(p))
    if (c.trace.events[p].cat == Cat::CpuOp) top = p;
  return top;
}

// evidence.where: the names of the ops a finding is about and of the
// outermost ops they run under (aten::batch_norm above
// aten::native_batch_norm, an autograd node above its backward ops), first
// seen first, so a reader finds them in the model without a parent_chain.
void add_where(const InsightContext& c, Insight& i) {
  constexpr size_t kMaxNames = 8;
  if (i.uids.empty() || i.evidence.contains("where")) return;
  std::vector<std::string> names;
  auto add = [&](Uid u) {
    if (u >= c.trace.events.size() || names.size() == kMaxNames) return;
    std::string name(c.trace.name(u));
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  };
  for (Uid u : i.uids) {
    if (names.size() == kMaxNames) break;  // the rest adds nothing (a tiled trace's 100k uids)
    if (u >= c.trace.events.size() || c.trace.events[u].cat != Cat::CpuOp) continue;
    add(u);
    add(outermost_op(c, u));
  }
  if (!names.empty()) i.evidence["where"] = names;
}

// Severity follows the ranking (issue 73 point 9): a finding is rated no
// higher than one ranked above it that saves more per step; the rule's own
// rating is kept in evidence.rule_severity with the reason in
// evidence.severity_note. Findings tied on their saving keep their own.
void severity_follows_ranking(std::vector<Insight>& ranked) {
  const auto level = [](const std::string& s) { return s == "high" ? 2 : s == "medium" ? 1 : 0; };
  int cap = 2;  // the lowest rating of the findings saving more
  const Insight* capper = nullptr;
  size_t k = 0;
  while (k < ranked.size()) {
    const double saving = ranking_saving_us(ranked[k]);
    size_t tie_end = k;
    while (tie_end < ranked.size() && ranking_saving_us(ranked[tie_end]) == saving) ++tie_end;
    int lowest = cap;
    const Insight* lowest_by = capper;
    for (size_t n = k; n < tie_end; ++n) {
      Insight& i = ranked[n];
      if (capper && level(i.severity) > cap) {
        i.evidence["rule_severity"] = i.severity;
        i.severity = cap == 1 ? "medium" : "low";
        i.evidence["severity_note"] = fmt::format(
            "rated {} by its rule; {} here: ranked below {} [{}], which saves more per step",
            i.evidence["rule_severity"].get<std::string>(), i.severity, capper->rule,
            capper->severity);
      }
      if (level(i.severity) < lowest) lowest = level(i.severity), lowest_by = &i;
    }
    cap = lowest;
    capper = lowest_by;
    k = tie_end;
  }
}

}  // namespace

namespace {

using FindingsByRule = std::vector<std::vector<Insight>>;  // indexed like kRules

void run_rule(const InsightContext& context, size_t k, std::vector<Insight>& out) {
  const NamedRule& rule = kRules[k];
  PhaseTimer t(profile_phases_enabled() ? std::string("insights/rule/") + rule.id : "");
  rule.fn(context, out);
}

// The rules read the context and write their own findings: with a second
// core two threads take them in turn (in run order); the findings keep the
// rules' order whichever thread ran them.
std::function<void()> rule_task(const InsightContext& context, size_t k, FindingsByRule& found) {
  return [&context, k, &found] { run_rule(context, k, found[k]); };
}

std::vector<Insight> ranked_insights(const InsightContext& context, FindingsByRule by_rule);

}  // namespace

std::vector<Insight> run_insights(const InsightContext& context) {
  detail::prepare_trace_facts(context);
  FindingsByRule by_rule(std::size(kRules));
  std::vector<std::function<void()>> rules;
  for (size_t k = 0; k < std::size(kRules); ++k) rules.push_back(rule_task(context, k, by_rule));
  run_on_two_threads(rules);
  detail::release_rule_scratch(context);
  return ranked_insights(context, std::move(by_rule));
}

TraceInsights analyse_trace(const Trace& trace, const CallTree& tree, const GpuArch* arch,
                            const CacheFilePlan* graph_file) {
  // The step model costs about what the perf rows cost (less when its graph
  // is read from its file): one thread makes the model while the other makes
  // the rows; the facts the rules read of the trace alone go to whichever is
  // free first (they read no row); the rules that do not read the model run
  // once the rows are there, until the model is done; then the rules that
  // read it, on both.
  std::shared_ptr<const InsightContext::StepModel> model;
  InsightContext context{trace, tree, arch, {}, 0, {}, trace.gpu_name(), nullptr, {}};
  detail::prepare_trace_facts(context);
  FindingsByRule by_rule(std::size(kRules));
  TaskLatch rows_ready;
  std::atomic<bool> model_built{false};
  std::vector<char> ran(std::size(kRules), 0);  // each written by the one task of its rule
  std::vector<std::function<void()>> before_model{[&] {
                                                    model =
                                                        build_step_model(trace, tree, graph_file);
                                                    model_built = true;
                                                  },
                                                  [&] {
                                                    rows_ready.run([&] {
                                                      add_rows(context, nullptr);
                                                      add_timeline(context, nullptr);
                                                    });
                                                  }};
  // The facts of the trace alone (computed once each, under their own
  // locks, as a rule reading one meanwhile would): the GPU's idle gaps and
  // the idle the host opened by place; the host events in time order the
  // unrecorded stretches start from (the stretches themselves need the
  // model); the launching siblings two rules read; the events by name a
  // dozen read.
  for (void (*make)(const InsightContext&) :
       {detail::make_idle_facts, detail::make_host_gap_events, detail::make_launching_siblings,
        detail::make_events_by_name})
    before_model.push_back([&, make] { make(context); });
  // A rule that does not read the model runs here while the model is being
  // built; once it is, the rules left run after it, beside those that read
  // it (they find the same with the model as without: test_rules_overlap),
  // so that no thread waits here for the other's last rule.
  for (size_t k = 0; k < std::size(kRules); ++k) {
    if (kRules[k].reads_step) continue;
    before_model.push_back([&, k] {
      rows_ready.wait();
      if (model_built) return;
      run_rule(context, k, by_rule[k]);
      ran[k] = 1;
    });
  }
  run_on_two_threads(before_model);
  context.step = std::move(model);
  // The unrecorded host stretches and the rule that replays them (the
  // longest that reads the model, 70 ms at x256) first, on one thread, the
  // other rules beside them.
  const size_t unrecorded = rule_index("unrecorded_host_time");
  std::vector<std::function<void()>> with_model{[&] {
    detail::make_unrecorded_facts(context);
    run_rule(context, unrecorded, by_rule[unrecorded]);
  }};
  for (size_t k = 0; k < std::size(kRules); ++k)
    if (kRules[k].reads_step && k != unrecorded)
      with_model.push_back(rule_task(context, k, by_rule));
  for (size_t k = 0; k < std::size(kRules); ++k)
    if (!kRules[k].reads_step && !ran[k]) with_model.push_back(rule_task(context, k, by_rule));
  run_on_two_threads(with_model);
  detail::release_rule_scratch(context);
  std::vector<Insight> found = ranked_insights(context, std::move(by_rule));
  return {std::move(context), std::move(found)};
}

TraceInsights analyse_trace(const Trace& trace, const CallTree& tree, const GpuArch* arch,
                            const GpuTimeline* timeline, const StepModelRef& step,
                            const TraceHeadStart& made) {
  if (!step.model) {
    InsightContext context = make_context(trace, tree, arch, timeline, &step, made.rows);
    detail::prepare_trace_facts(context, made.facts.facts);
    std::vector<Insight> found = run_insights(context);
    return {std::move(context), std::move(found)};
  }
  // The model given (an MCP worker: load_trace built it): the rows on one
  // thread (none to build when given: load_trace built them beside the
  // model), on the other the facts that read no row (the GPU's idle gaps,
  // the unrecorded host stretches), then the rules on both from the moment
  // the rows are there. A rule that reads a fact still being made waits for
  // it (computed_once); the others run beside it (make_context then
  // run_insights left a core idle while the longer of the two parts ended).
  InsightContext context{trace, tree, arch, {}, 0, {}, trace.gpu_name(), step.model, {}};
  detail::prepare_trace_facts(context, made.facts.facts);
  FindingsByRule by_rule(std::size(kRules));
  TaskLatch rows_ready;
  // The unrecorded host stretches and the rule that replays them read no
  // row, only the timeline's total: one task, on the thread free of the
  // rows, not the last rule alone at the end (x256: 100 ms).
  const size_t unrecorded = rule_index("unrecorded_host_time");
  if (timeline) add_timeline(context, timeline);
  std::vector<std::function<void()>> tasks{
      [&] {
        rows_ready.run([&] {
          add_rows(context, made.rows);
          if (!timeline) add_timeline(context, nullptr);
        });
      },
      [&] { detail::make_idle_facts(context); },
      [&] {
        detail::make_unrecorded_facts(context);
        if (!timeline) rows_ready.wait();  // the rule reads the timeline the rows' task makes
        run_rule(context, unrecorded, by_rule[unrecorded]);
      },
      [&] { detail::make_launching_siblings(context); },
      [&] { detail::make_events_by_name(context); }};
  for (size_t k = 0; k < std::size(kRules); ++k)
    if (k != unrecorded)
      tasks.push_back([&, k] {
        rows_ready.wait();
        run_rule(context, k, by_rule[k]);
      });
  run_on_two_threads(tasks);
  detail::release_rule_scratch(context);
  std::vector<Insight> found = ranked_insights(context, std::move(by_rule));
  return {std::move(context), std::move(found)};
}

std::vector<Insight> run_rules_for_test(const InsightContext& context, bool without_step_only) {
  detail::prepare_trace_facts(context);
  std::vector<Insight> out;
  for (size_t k = 0; k < std::size(kRules); ++k)
    if (!without_step_only || !kRules[k].reads_step) run_rule(context, k, out);
  return out;
}

namespace {

// The kernels a finding's what-if shortens (what_if.kernel_uids at a factor
// below 1), sorted and unique; empty when its what-if changes no kernel.
// Read from the arguments the finding reports, so that what it declares is
// what a reader replays; sorted here, as a rule that sizes its own what-if
// (activation_recompute) lists them in its own order.
std::vector<Uid> what_if_kernels(const Insight& i) {
  if (!i.what_if.is_object() || !i.what_if.contains("kernel_uids")) return {};
  if (!(i.what_if.value("factor", 1.0) < 1.0)) return {};
  auto uids = i.what_if.at("kernel_uids").get<std::vector<Uid>>();
  std::sort(uids.begin(), uids.end());
  uids.erase(std::unique(uids.begin(), uids.end()), uids.end());
  return uids;
}

bool sorted_lists_meet(const std::vector<Uid>& a, const std::vector<Uid>& b) {
  if (a.empty() || b.empty() || a.back() < b.front() || b.back() < a.front()) return false;
  const auto& small = a.size() <= b.size() ? a : b;
  const auto& large = a.size() <= b.size() ? b : a;
  auto from = large.begin();
  for (Uid u : small) {
    from = std::lower_bound(from, large.end(), u);
    if (from == large.end()) return false;
    if (*from == u) return true;
  }
  return false;
}

// Two findings whose what-ifs shorten the same kernels share that time as
// two claims on one op do: their step savings do not add, so each names the
// other's rule in shares_time_with (claim_recoverable_time pools the ops'
// time, which misses a kernel two rules reach through different ops:
// epilogue_fusion's activation kernels that are dtype_casts' casts).
void share_what_if_kernels(std::vector<Insight>& insights) {
  // Read from the JSON only for the pairs not named already (x256: 35
  // findings, most pairs named by their claims).
  std::vector<std::optional<std::vector<Uid>>> read(insights.size());
  auto kernels = [&](size_t k) -> const std::vector<Uid>& {
    if (!read[k]) read[k] = what_if_kernels(insights[k]);
    return *read[k];
  };
  auto names = [](const Insight& i, const std::string& rule) {
    return std::find(i.shares_time_with.begin(), i.shares_time_with.end(), rule) !=
           i.shares_time_with.end();
  };
  for (size_t a = 0; a < insights.size(); ++a)
    for (size_t b = a + 1; b < insights.size(); ++b) {
      Insight &x = insights[a], &y = insights[b];
      if (x.rule == y.rule || (names(x, y.rule) && names(y, x.rule))) continue;
      if (!sorted_lists_meet(kernels(a), kernels(b))) continue;
      for (auto [to, rule] : {std::pair{&x, &y.rule}, std::pair{&y, &x.rule}})
        if (!names(*to, *rule)) {
          to->shares_time_with.push_back(*rule);
          std::sort(to->shares_time_with.begin(), to->shares_time_with.end());
        }
    }
}

std::vector<Insight> ranked_insights(const InsightContext& context, FindingsByRule by_rule) {
  std::vector<Insight> out;
  for (auto& found : by_rule) std::move(found.begin(), found.end(), std::back_inserter(out));
  {
    PhaseTimer t("insights/where+claim+fold");
    for (Insight& i : out) add_where(context, i);
    out = claim_recoverable_time(context, std::move(out));
    fold_one_change(context, out);
  }
  {
    PhaseTimer t("insights/step_savings");
    size_step_savings(context, out);
  }
  {
    PhaseTimer t("insights/share_what_if_kernels");
    share_what_if_kernels(out);
  }
  const size_t steps =
      context.step ? std::max<size_t>(1, context.step->measured.iterations.size()) : 1;
  for (Insight& i : out) i.steps = steps;
  // Every ranking orders by what a fix saves per step: the predicted step
  // saving where the dependency graph gives one, else the recoverable time.
  std::stable_sort(out.begin(), out.end(), [](const Insight& a, const Insight& b) {
    return ranking_saving_us(a) > ranking_saving_us(b);
  });
  severity_follows_ranking(out);
  return out;
}

}  // namespace

void size_step_savings(const InsightContext& context, std::vector<Insight>& insights) {
  if (!context.step) return;
  const auto& model = *context.step;
  const double iterations = static_cast<double>(model.measured.iterations.size());
  const bool host_bound = 2 * model.host_bound_iterations() > model.measured.iterations.size();
  std::map<Uid, const std::vector<Uid>*> row_kernels;
  for (const auto& row : context.rows)
    if (row.uid >= context.trace.events.size()) row_kernels[row.uid] = &row.kernels;
  // Each finding's what-if replays the step model on its own and writes that
  // finding only: with a second core, two threads take them in turn.
  auto size_one = [&](Insight& i) {
    if (i.step_saving_us || !i.recoverable_us || i.scope == "trace") return;
    std::vector<Uid> gpu;
    double gpu_time = 0;
    // The GPU work the fix changes, where the rule names it (what_if's
    // kernel_uids: the kernels between an attention block's matmuls, the
    // recomputed forward ops), else every kernel of the finding's ops; with
    // the rule's factor (a removal) or the one its recoverable time leaves.
    const bool named = i.what_if.is_object() && i.what_if.contains("kernel_uids");
    if (named) gpu = i.what_if["kernel_uids"].get<std::vector<Uid>>();
    for (Uid u : named ? std::vector<Uid>{} : i.uids) {
      if (u >= context.trace.events.size()) {
        // A synthetic perf row (a backward-only unified row) has a UID past
        // the trace's events: its kernels are the row's own.
        if (auto row = row_kernels.find(u); row != row_kernels.end())
          gpu.insert(gpu.end(), row->second->begin(), row->second->end());
      } else if (context.trace.events[u].is_gpu()) {
        gpu.push_back(u);
      } else {
        for (Uid g : context.tree.gpu_events(u)) gpu.push_back(g);
      }
    }
    std::sort(gpu.begin(), gpu.end());
    gpu.erase(std::unique(gpu.begin(), gpu.end()), gpu.end());
    for (Uid g : gpu) gpu_time += std::max(0.0, context.trace.events[g].dur());
    if (gpu.empty() || !(gpu_time > 0)) return;
    critical_path::Scenario change;
    // A change that also takes work out whole (its what_if's remove_uids:
    // channels_last's layout conversions, each with its launch call) removes
    // it as the what_if tool does with the same arguments.
    if (named && i.what_if.contains("remove_uids")) {
      try {
        detail::add_host_removal(context, critical_path::parse_what_if_request(i.what_if).removal,
                                 change);
      } catch (const std::runtime_error&) {
        return;  // they match nothing in the graph: no figure
      }
    }
    change.select.gpu_uids = gpu;
    // The what-if takes positive factors: all of the time recovered is a
    // nanosecond left.
    constexpr double kSmallestFactor = 1e-6;
    // The kernels' part of the recoverable time: a finding that also closes
    // GPU idle (a foreach optimizer's launch gaps, idle_claim_us) does not
    // make its kernels take that idle time less (it took them to 1e-6 of
    // their time: a fused AdamW "saved" the whole optimizer after a CUDA graph).
    double idle_us = 0;
    for (const auto& [place, us] : i.idle_claim_us) idle_us += us;
    const double kernel_recoverable_us =
        idle_us > 0 ? std::clamp(i.gain_upper_bound_us.value_or(*i.recoverable_us) - idle_us, 0.0,
                                 *i.recoverable_us)
                    : *i.recoverable_us;
    change.factor = named && i.what_if.contains("factor")
                        ? i.what_if["factor"].get<double>()
                        : std::clamp(1.0 - kernel_recoverable_us / gpu_time, kSmallestFactor, 1.0);
    // A step saving well short of the recoverable time is explained (the
    // blind run met channels_last's 8.7 of 16.2 ms a step with no word why):
    // on a step the GPU bounds, by what bounds it after the change, the
    // predicted paths' sides, walked in the same replay only where it falls
    // short.
    constexpr double kExplainBelowShare = 0.75;
    const double measured_step_us = model.graph.attached_base->step_time_us;
    const auto saving_of = [&](double predicted_step_us) {
      return std::max(0.0, measured_step_us - predicted_step_us) * iterations;
    };
    const auto falls_short = [&](const critical_path::Analysis& times) {
      return !host_bound && saving_of(times.step_time_us) < kExplainBelowShare * *i.recoverable_us;
    };
    const auto r =
        detail::step_time_what_if(context, change, critical_path::StepDetail::Times, falls_short);
    i.step_saving_us = saving_of(r.predicted_step_time_us);
    // The what_if tool's arguments that replay this sizing (its saved_us is
    // per step): the finding's GPU events at the factor its recoverable time
    // leaves them.
    if (named) {
      i.what_if["kernel_uids"] = gpu;  // its other arguments (remove_uids) stay
      i.what_if["factor"] = change.factor;
    } else if (i.what_if.is_null()) {
      i.what_if = {{"kernel_uids", gpu}, {"factor", change.factor}};
    }
    if (*i.step_saving_us >= kExplainBelowShare * *i.recoverable_us) return;
    if (host_bound) {
      i.step_saving_note = fmt::format(
          "host-bound step ({} of {} iterations): reaches the step once the host-bound finding "
          "is fixed",
          model.host_bound_iterations(), model.measured.iterations.size());
      return;
    }
    const auto& after = r.predicted.iterations;  // their bounds walked (falls_short)
    const auto host_after = std::count_if(after.begin(), after.end(), [](const auto& it) {
      return it.bound_by == critical_path::kBoundByHost;
    });
    if (2 * static_cast<size_t>(host_after) > after.size())
      i.step_saving_note =
          "the step turns host-bound: once the GPU catches up, the host's launches set it";
    else
      i.step_saving_note = *i.step_saving_us < 0.5 * *i.recoverable_us
                               ? "largely off the critical path (overlapped by other work)"
                               : "partly off the critical path (overlapped by other work)";
  };
  std::vector<std::function<void()>> sizings;
  for (Insight& i : insights) sizings.push_back([&size_one, &i] { size_one(i); });
  run_on_two_threads(sizings);
  detail::replay_what_ifs(context, insights);
}

std::string_view recoverable_method_of(std::string_view rule) {
  static const std::map<std::string_view, std::string_view> methods = {
      {"gemm_unaligned_dims", "padding model: the op's time above the time of its padded shape"},
      {"old_arch_kernel",
       "time above the rate of this trace's native-arch GEMMs (same spec), else above the "
       "roofline"},
      {"autocast_dtype", "kernel efficiency gap at the kernels' dtype"},
      {"tiny_gemm_batching", "batching model: the calls run as one of mean duration"},
      {"launch_bound", "measured GPU idle time"},
      {"conv_layout_transposes", "measured layout-conversion kernel time"},
      {"unfused_attention", "measured softmax kernel time"},
      {"elementwise_chain", "fused-traffic model"},
      {"bandwidth_baseline", "time above the trace's own bandwidth baseline"},
      {"foreach_optimizer", "fused-traffic model"},
      {"unfused_rmsnorm",
       "fused-norm model: the kernels' time above one read and one write at the HBM bandwidth"},
      {"unfused_rope",
       "fused-rotary model: the kernels' time above one read and one write at the HBM bandwidth"},
      {"kv_cache_cat", "measured cat kernel time, its share that copies the old cache"},
      {"dtype_casts", "half the cast kernels' time (fused into their neighbours)"},
      {"fp32_cross_entropy",
       "fused-loss traffic model: the casts' time and half the softmax passes'"},
      {"full_vocab_logits",
       "the head GEMM's and its output's readers' kernel time but the last position's share (1 - "
       "1/S)"},
      {"epilogue_fusion", "measured activation kernel time"},
      {"unfused_gelu",
       "fused-GELU model: the kernels' time above one read and one write per direction at the HBM "
       "bandwidth"},
      {"compiled_kernel_headroom", "time above the kernels' traffic at 80 % of the HBM peak"},
      {"gemm_shared_input",
       "the run's FLOPs at the rate of this trace's GEMMs at least as large as the fused one"},
      {"capture_host_cost",
       "none per step: a one-time startup cost (host time during the capture)"},
      {"fp32_gemm_simt", "the SIMT kernels' time at the same share of the TF32 tensor-core peak"},
      {"host_sync", "the what-if without the syncs' waits, on the un-profiled step"},
      {"dataloader_main_process",
       "the what-if without the loader's host time on the main process, on the un-profiled step"},
      {"activation_recompute",
       "the recomputed forward ops' kernel time (the what-if without it on the un-profiled step)"},
      {"unrecorded_host_time",
       "the what-if without this host time no op records (remove_host_gaps), on the un-profiled "
       "step"},
      {"attention_efficiency",
       "re-timed at the attainable share of the trace's own GEMM rate (0.85 forward, 0.75 "
       "backward)"},
  };
  auto it = methods.find(rule);
  return it == methods.end() ? std::string_view("rule bound") : it->second;
}

namespace {

// The idle part of each finding's claim (Insight::idle_claim_us): findings
// about one place claim its idle first, trace-wide ones what is left, each
// in rank order, with the other findings that claim the same places.
struct IdleClaim {
  double us = 0;
  std::set<std::string> shares;
};

std::vector<IdleClaim> claim_idle_places(const std::vector<Insight>& insights) {
  std::map<std::string, double> left;  // each place's measured idle, the largest claim on it
  std::map<std::string, std::set<std::string>> claimers;
  for (const Insight& i : insights)
    for (const auto& [place, us] : i.idle_claim_us) {
      left[place] = std::max(left[place], us);
      claimers[place].insert(i.rule);
    }
  std::vector<IdleClaim> claimed(insights.size());
  for (bool trace_wide : {false, true})
    for (size_t k = 0; k < insights.size(); ++k) {
      const Insight& i = insights[k];
      // Host time no op records is about its own places, as a finding about
      // one place is: the host-bound step's finding gets what they leave.
      const bool wide = i.scope == "trace" && i.rule != "unrecorded_host_time";
      if (i.idle_claim_us.empty() || wide != trace_wide) continue;
      for (const auto& [place, us] : i.idle_claim_us) {
        double take = std::clamp(us, 0.0, left[place]);
        left[place] -= take;
        claimed[k].us += take;
        claimed[k].shares.insert(claimers[place].begin(), claimers[place].end());
      }
    }
  return claimed;
}

}  // namespace

std::vector<Insight> claim_recoverable_time(const InsightContext& context,
                                            std::vector<Insight> insights) {
  // Claim in the order of the rules' own bounds: the strongest claim on an
  // op's time keeps it.
  std::stable_sort(insights.begin(), insights.end(), [](const Insight& a, const Insight& b) {
    double ga = a.gain_upper_bound_us.value_or(0), gb = b.gain_upper_bound_us.value_or(0);
    if (ga != gb) return ga > gb;
    return a.time_us > b.time_us;
  });
  // What is left to claim: each op row's kernel time, and the idle time.
  // (one sorted array by uid, the rows of one op summed in their order: a
  // tiled trace has a million rows, and a finding looks each of its ops up;
  // the sums keep each finding's op order)
  std::vector<std::pair<Uid, double>> left;
  left.reserve(context.rows.size());
  for (const auto& row : context.rows) left.emplace_back(row.uid, row.kernel_time_us);
  stable_sort_runs(left.begin(), left.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  {
    size_t kept = 0;
    for (size_t r = 0; r < left.size();) {
      double sum = 0;
      const Uid uid = left[r].first;
      for (; r < left.size() && left[r].first == uid; ++r) sum += left[r].second;
      left[kept++] = {uid, sum};
    }
    left.resize(kept);
  }
  const auto slot_of = [&left](Uid u) -> std::optional<size_t> {
    auto it = std::lower_bound(left.begin(), left.end(), u,
                               [](const auto& entry, Uid v) { return entry.first < v; });
    if (it == left.end() || it->first != u) return std::nullopt;
    return static_cast<size_t>(it - left.begin());
  };
  double idle_left = context.timeline ? context.timeline->idle_time : 0;
  // Who claimed what (findings by index): sharing is told both ways, to the
  // finding that claimed first and to those that came after it. Each slot
  // of `left` lists its claims, the latest first (a hash map of vectors by
  // UID was a lookup and an allocation per claim: a tiled trace's findings
  // claim a million rows).
  constexpr uint32_t kNoClaim = UINT32_MAX;
  struct Claim {
    size_t finding;
    uint32_t before;  // the slot's claim before this one
  };
  std::vector<uint32_t> last_claim(left.size(), kNoClaim);
  std::vector<Claim> claims;
  const auto add_claimers = [&](size_t slot, std::set<size_t>& to) {
    for (uint32_t c = last_claim[slot]; c != kNoClaim; c = claims[c].before)
      to.insert(claims[c].finding);
  };
  std::vector<size_t> idle_claimed_by;
  std::vector<std::set<size_t>> shared_with(insights.size());
  const std::vector<IdleClaim> place_idle = claim_idle_places(insights);
  constexpr double kLowShare = 0.75;  // the fix closes 75 % of the gap (category impact model)
  for (size_t k = 0; k < insights.size(); ++k) {
    Insight& i = insights[k];
    i.recoverable_method =
        i.gain_method.empty() ? std::string(recoverable_method_of(i.rule)) : i.gain_method;
    if (!i.gain_upper_bound_us) continue;
    double bound = std::max(0.0, *i.gain_upper_bound_us);
    if (i.time_us > 0) bound = std::min(bound, i.time_us);  // never more than its own time
    if (!i.idle_claim_us.empty()) {
      // The idle part was claimed place by place above; the rest of the
      // bound is kernel time, claimed from the op rows below.
      double own_idle = 0;
      for (const auto& entry : i.idle_claim_us) own_idle += entry.second;
      bound = std::max(0.0, bound - own_idle);
    }
    std::vector<size_t> pooled;  // slots in `left`
    for (Uid u : i.uids)
      if (auto slot = slot_of(u)) pooled.push_back(*slot);
    std::set<size_t>& shares = shared_with[k];
    double claim = 0;
    if (!pooled.empty()) {
      double available = 0;
      for (size_t p : pooled) available += left[p].second;
      claim = std::min(bound, available);
      for (size_t p : pooled) {
        double& rest = left[p].second;
        add_claimers(p, shares);
        if (rest > 0) {
          // A claim of all that is left leaves exactly 0, never an ulp
          // either side of it: s_attn_A's autocast_dtype read -1.4e-14 us
          // after dtype_casts claimed its rows whole.
          rest = claim >= available ? 0.0 : std::max(0.0, rest - claim * rest / available);
          claims.push_back({k, last_claim[p]});
          last_claim[p] = static_cast<uint32_t>(claims.size() - 1);
        }
      }
    } else if (i.scope == "trace" && context.timeline && i.idle_claim_us.empty()) {
      claim = std::min(bound, idle_left);
      idle_left -= claim;
      shares.insert(idle_claimed_by.begin(), idle_claimed_by.end());
      idle_claimed_by.push_back(k);
    } else if (i.idle_claim_us.empty()) {
      claim = bound;  // time outside the op rows and the idle time: the rule's own
    }
    if (!i.idle_claim_us.empty()) {
      claim += std::min(place_idle[k].us, std::max(0.0, idle_left));
      idle_left -= place_idle[k].us;
      shares.insert(idle_claimed_by.begin(), idle_claimed_by.end());
      idle_claimed_by.push_back(k);
    }
    i.recoverable_us = claim;
    i.recoverable_low_us = kLowShare * claim;
  }
  for (size_t k = 0; k < insights.size(); ++k)
    for (const size_t j : shared_with[k]) shared_with[j].insert(k);
  for (size_t k = 0; k < insights.size(); ++k) {
    // the places' idle is shared among all who claim a place, both ways
    std::set<std::string> rules(place_idle[k].shares.begin(), place_idle[k].shares.end());
    for (const size_t j : shared_with[k]) rules.insert(insights[j].rule);
    rules.erase(insights[k].rule);
    insights[k].shares_time_with.assign(rules.begin(), rules.end());
  }
  std::stable_sort(insights.begin(), insights.end(), [](const Insight& a, const Insight& b) {
    double ga = a.recoverable_us.value_or(0), gb = b.recoverable_us.value_or(0);
    if (ga != gb) return ga > gb;
    return a.time_us > b.time_us;
  });
  return insights;
}

std::vector<std::string> rule_ids() {
  std::vector<std::string> ids;
  for (const auto& rule : kRules) ids.emplace_back(rule.id);
  return ids;
}

double ranking_saving_us(const Insight& i) {
  return i.step_saving_us ? *i.step_saving_us : i.recoverable_us.value_or(0);
}

nlohmann::json to_json(const Insight& i) {
  const auto per_step = [&](const std::optional<double>& total) {
    return total ? nlohmann::json(*total / static_cast<double>(std::max<size_t>(1, i.steps)))
                 : nlohmann::json();
  };
  nlohmann::json uids = nlohmann::json::array();
  for (Uid u : i.uids) uids.push_back(u);
  return {{"rule", i.rule},
          {"severity", i.severity},
          {"scope", i.scope},
          {"category", i.category},
          {"title", i.title},
          {"detail", i.detail},
          {"uids", uids},
          {"kernel_names", i.kernel_names},
          {"evidence", i.evidence},
          {"time_us", i.time_us},
          {"share_pct", 100.0 * i.share},
          {"gain_upper_bound_us",
           i.gain_upper_bound_us ? nlohmann::json(*i.gain_upper_bound_us) : nlohmann::json()},
          {"recoverable_us_total",
           i.recoverable_us ? nlohmann::json(*i.recoverable_us) : nlohmann::json()},
          {"recoverable_us_per_step", per_step(i.recoverable_us)},
          {"recoverable_low_us_total",
           i.recoverable_low_us ? nlohmann::json(*i.recoverable_low_us) : nlohmann::json()},
          {"steps", i.steps},
          {"recoverable_method", i.recoverable_method},
          {"step_saving_us_total",
           i.step_saving_us ? nlohmann::json(*i.step_saving_us) : nlohmann::json()},
          {"step_saving_us_per_step", per_step(i.step_saving_us)},
          {"step_saving_note", i.step_saving_note},
          {"what_if", i.what_if},
          {"shares_time_with", i.shares_time_with},
          {"change", i.change},
          {"action_model", i.action_model},
          {"action_kernel", i.action_kernel},
          {"verify", i.verify}};
}

}  // namespace jarvis::insights
