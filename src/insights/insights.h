// Insights: expert judgments a performance engineer would add to the
// numbers (beyond TraceLens). A rule engine over the engine's typed rows:
// each rule is one small function in its own file (rule_*.cpp) that attaches
// structured insights with evidence, impact and the action in both paths of
// the workflow (Path A: change the model; Path B: tune the kernel).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "critical_path/critical_path.h"
#include "perf/gpu_arch.h"
#include "report/gpu_timeline.h"
#include "report/perf_tables.h"
#include "trace/trace.h"
#include "tree/call_tree.h"

namespace jarvis {
struct CacheFilePlan;  // trace/cache_file.h
}

namespace jarvis::insights {

struct Insight {
  std::string rule;      // rule id, e.g. "gemm_unaligned_dims"
  std::string severity;  // "high", "medium", "low"
  std::string scope;     // "op", "kernel", "category", "trace"
  std::string category;  // op category the insight is about ("" for the trace)
  std::string title;     // one line, with the numbers
  std::string detail;    // why it matters, in a sentence or two
  // Evidence: the ops and kernels it is about, and the numbers behind it.
  std::vector<Uid> uids;
  std::vector<std::string> kernel_names;  // full names, never truncated
  nlohmann::json evidence = nlohmann::json::object();
  // Impact: kernel time the insight covers, its share of all kernel time and
  // an upper bound of the time a fix could recover (null when unknown).
  double time_us = 0;
  double share = 0;
  // The rule's own bound, before other findings' claims on the same time.
  std::optional<double> gain_upper_bound_us;
  // The one recoverable-time model every ranking uses (claim_recoverable_time):
  // the rule's bound, capped at the time it is about and de-duplicated
  // against findings ranked above it that claim the same ops (or the same
  // idle time), so a ranking never sums past what can be saved. The range
  // is the fix closing 75-100 % of the gap, as the category impact
  // estimates assume; `method` says what the bound stands on.
  std::optional<double> recoverable_low_us, recoverable_us;
  std::string recoverable_method;
  std::vector<std::string> shares_time_with;  // other findings' rules claiming the same time
  // GPU idle time the fix closes, by place (IdleGap::place's name: the
  // annotation or top-level op whose launch ended a host-opened gap), part
  // of gain_upper_bound_us. Each place's idle is one pool: a finding about
  // that place (the optimizer step) claims it before a trace-wide one (a
  // host-bound step), so the two never count the same gap twice.
  std::map<std::string, double> idle_claim_us;
  // What the bound stands on when the rule sized it its own way (e.g. a
  // what-if on the dependency graph); "" uses the rule's usual method.
  std::string gain_method;
  // The step-time saving the critical path's what-if predicts for this fix
  // (the finding's GPU work shortened by its recoverable time; for a host
  // finding, no host gaps), summed over the trace's iterations like the
  // recoverable time. Below the recoverable time where the work is off the
  // critical path: a host-bound step absorbs GPU speed-ups until the host
  // is fixed. Absent when no dependency graph could be built.
  std::optional<double> step_saving_us;
  std::string step_saving_note;  // why the step saving differs, in words
  // The what_if tool's arguments (beyond `traces`) that stand for this
  // finding's fix, when a what-if of the dependency graph sizes it: an agent
  // replays them, or a subset (some of the ops, a factor), without SQL.
  nlohmann::json what_if = nullptr;
  // The iterations the totals above cover (recoverable_us and step_saving_us
  // are sums over them; the JSON names them *_total and gives *_per_step).
  size_t steps = 1;
  // The change that fixes it, where the rule can name it ("pad 32001 to
  // 32064", "channels_last"): findings of one change are reported as one
  // (fold_one_change), the others listed as its symptoms.
  std::string change;
  // Ops the change alters beyond the finding's own (channels_last: the NCHW
  // batch norms); findings about them fold into this one.
  std::vector<Uid> change_also;
  std::string action_model;   // Path A
  std::string action_kernel;  // Path B
  std::string verify;         // how to check it before repeating it
};

namespace detail {
struct TraceFacts;  // trace_facts.h
}

// The unified perf rows a context reads, held by pointer rather than copied:
// an MCP session's loaded trace keeps one set (engine::trace_perf_rows,
// 234k rows at x256) that every worker forked later reads in place. Reads
// as a const vector.
class ContextRows {
 public:
  using Rows = std::vector<report::PerfOpRow>;
  ContextRows() = default;
  explicit ContextRows(std::shared_ptr<const Rows> rows) : rows_(std::move(rows)) {}
  const Rows& all() const { return rows_ ? *rows_ : no_rows(); }
  operator const Rows&() const { return all(); }  // NOLINT: reads as the vector it holds
  Rows::const_iterator begin() const { return all().begin(); }
  Rows::const_iterator end() const { return all().end(); }
  size_t size() const { return all().size(); }
  bool empty() const { return all().empty(); }
  const report::PerfOpRow* data() const { return all().data(); }
  const report::PerfOpRow& operator[](size_t k) const { return all()[k]; }
  const report::PerfOpRow& front() const { return all().front(); }
  const report::PerfOpRow& back() const { return all().back(); }
  const std::shared_ptr<const Rows>& shared() const { return rows_; }

 private:
  static const Rows& no_rows() {
    static const Rows none;
    return none;
  }
  std::shared_ptr<const Rows> rows_;
};

// What the rules read. Build once per trace (run_insights does).
struct InsightContext {
  const Trace& trace;
  const CallTree& tree;
  const GpuArch* arch = nullptr;    // null: rules needing peaks skip
  ContextRows rows;                 // unified perf rows
  double total_kernel_time_us = 0;  // sum over rows
  // Null when the trace has no GPU events; the caller's when it gave one
  // (held like `trace` and `tree`: it outlives the context), else its own.
  std::shared_ptr<const GpuTimeline> timeline;
  std::string gpu_name;  // from the trace
  // The trace's dependency graph and its measured critical path (what
  // bounds each iteration); null when no graph can be built (no launches,
  // no GPU work).
  struct StepModel {
    critical_path::Graph graph;
    // The verdict every rule reads: the critical path without the profiler's
    // estimated host cost (critical_path::analyse_unprofiled).
    critical_path::Analysis measured;
    // The trace's own schedule: what the pages draw over its events.
    critical_path::Analysis recorded;
    // graph.attached_base is set: what every what-if of the rules starts
    // from (the un-profiled schedule and its step), computed once per trace
    // with `measured`, so that a rule's what-if replays the graph once.
    size_t host_bound_iterations() const;
  };
  std::shared_ptr<const StepModel> step;
  // What several rules read, computed on first use and kept here
  // (trace_facts.h); null until then.
  mutable std::shared_ptr<detail::TraceFacts> facts;
};

// The trace's step model (null when no dependency graph can be built: no
// GPU work, no launches): the graph with its what-if base, the recorded and
// the un-profiled analyses. make_context builds one unless given one;
// trace_health reads the same, so a loaded trace keeps one for both
// (engine::loaded_step_model in the MCP server: built once in the server
// before any worker is forked, which inherits it).
// `graph_file`: the trace's graph cache file (critical_path/graph_file.h):
// the graph is read from it when it matches, else built and written to it,
// here, or by the task given to `write_later` when one is given (the task
// holds the model; the caller keeps the trace alive until it has run).
using GraphFileWriteLater = std::function<void(std::function<void()> task)>;
std::shared_ptr<const InsightContext::StepModel> build_step_model(
    const Trace& trace, const CallTree& tree, const CacheFilePlan* graph_file = nullptr,
    const GraphFileWriteLater& write_later = {});
// A step model given to make_context / trace_health (`model` null: the trace
// has none, nothing is built).
struct StepModelRef {
  std::shared_ptr<const InsightContext::StepModel> model;
};

// The facts of a trace that read only its events and call tree (the GPU's
// idle gaps and the host's share of them by place, the kernel names', the
// launching siblings, the events by name: trace_facts.h), made once for a
// loaded trace and read, unchanged, by each later analysis of it.
struct SharedTraceFacts {
  std::shared_ptr<const detail::TraceFacts> facts;
};
SharedTraceFacts make_shared_trace_facts(const Trace& trace, const CallTree& tree);
// The same in parts to run in any order, on any thread, at once: `facts`
// holds them all once every part has run (MCP load_trace runs them on
// whichever core is free of its step model and perf rows).
struct SharedTraceFactsInParts {
  SharedTraceFacts facts;
  std::vector<std::function<void()>> parts;
};
SharedTraceFactsInParts shared_trace_facts_in_parts(const Trace& trace, const CallTree& tree);

// What a loaded trace keeps for the later analyses of it beside its step
// model (MCP load_trace makes them on the core the model leaves free, and
// the worker of a later call inherits them): the perf rows for the call's
// arch (report::unified_perf_rows) and the facts of the trace alone, over
// the same trace and call tree. Null members are made by the analysis.
struct TraceHeadStart {
  std::shared_ptr<const ContextRows::Rows> rows;
  SharedTraceFacts facts;
};

// `timeline`: compute_gpu_timeline(trace, tree) when the caller has it already
// (null: computed here; a trace without GPU events has none either way).
// `step`: build_step_model(trace, tree) when the caller has it (null: built here).
// `rows`: report::unified_perf_rows(trace, tree, arch) when the caller has
// them (a loaded trace's, engine::trace_perf_rows; null: built here).
InsightContext make_context(const Trace& trace, const CallTree& tree, const GpuArch* arch,
                            const GpuTimeline* timeline = nullptr,
                            const StepModelRef* step = nullptr,
                            std::shared_ptr<const ContextRows::Rows> rows = nullptr);

// Every rule over the context, its claims de-duplicated
// (claim_recoverable_time); sorted by recoverable time (then time), largest first.
std::vector<Insight> run_insights(const InsightContext& context);

// make_context (building the step model) and run_insights in one, the same
// context and findings, sooner: the rules that do not read the step model
// run while it is built.
struct TraceInsights {
  InsightContext context;
  std::vector<Insight> found;
};
// `graph_file`: the trace's graph cache file, as for build_step_model (the
// CLI passes the file of the trace it loaded; null: none).
TraceInsights analyse_trace(const Trace& trace, const CallTree& tree, const GpuArch* arch,
                            const CacheFilePlan* graph_file = nullptr);
// The same (make_context then run_insights: the same context and findings)
// given the caller's timeline (null: computed) and step model (`model`
// null: the trace has none), sooner: the rules start once the perf rows are
// made, beside the facts that read no row; and what else the caller made
// of the trace (`made`: its perf rows for `arch`, its facts; null members
// are made here).
TraceInsights analyse_trace(const Trace& trace, const CallTree& tree, const GpuArch* arch,
                            const GpuTimeline* timeline, const StepModelRef& step,
                            const TraceHeadStart& made = {});

// The rules' findings as they report them (before claims, folding and
// ranking), in run order, one thread; `without_step_only`: only the rules
// analyse_trace runs before the step model exists. For the test that holds
// those rules to the same findings with and without it.
std::vector<Insight> run_rules_for_test(const InsightContext& context, bool without_step_only);

// Each finding's step-time saving from the what-if (Insight::step_saving_us);
// nothing when the context has no step model. Part of run_insights.
void size_step_savings(const InsightContext& context, std::vector<Insight>& insights);

// The de-duplication pass of run_insights, on findings in any order: ranks
// them by their own bound, then lets each claim only what is left of the
// kernel time of its ops (each op row's time is one pool) or, for a
// trace-scope finding, of the GPU idle time. Sets recoverable_* and
// shares_time_with; returns them ranked by recoverable time.
std::vector<Insight> claim_recoverable_time(const InsightContext& context,
                                            std::vector<Insight> insights);

// One change, one finding: findings of the same change (Insight::change),
// and findings that are a symptom of a named change (an old-arch fallback
// kernel of the unaligned GEMMs that padding changes; the NCHW batch norms
// that channels_last changes), fold into the change's finding. Its
// recoverable time is the sum of their (already de-duplicated) claims, its
// uids the union, evidence.symptoms lists what was folded; step savings are
// sized after this, once, for the whole change. Part of run_insights.
void fold_one_change(const InsightContext& context, std::vector<Insight>& insights);

// What each rule's bound stands on, for `recoverable_method`.
std::string_view recoverable_method_of(std::string_view rule);

// The rule ids, in the order they run.
std::vector<std::string> rule_ids();

// What a ranking orders findings by (a total over the trace's steps): the
// step saving the what-if predicts, else the recoverable time.
double ranking_saving_us(const Insight& insight);

nlohmann::json to_json(const Insight& insight);

// The top findings' changes made one after the other, in their ranking's
// order (but a sync's removal before a CUDA graph of the step, which cannot
// capture a step that syncs): change k's step is the what-if of changes 1..k together, so its
// saving is what it adds once those above it are made (a GPU fix on a step
// the first change turns host-bound adds little) and the savings add up to
// the joint one. A finding whose what-if arguments match nothing is left out.
struct PlanStep {
  size_t finding = 0;          // index into the insights given
  double step_after_us = 0;    // the un-profiled step with changes 1..k made
  double saving_us = 0;        // per step: the step before change k less step_after_us
  double alone_saving_us = 0;  // per step: the finding's own what-if (its step_saving_us)
  std::string note;            // why it stands before a change ranked above it
};
struct ChangePlan {
  double step_before_us = 0;  // the un-profiled step, before any change
  // What a step is when it is not the ProfilerStep (decode steps inside one
  // generate() call each): said in the text's first line, with the call.
  std::string step_unit;  // "" or e.g. "decode step"
  std::string step_context;
  std::vector<PlanStep> steps;
  // Findings among the top ones that save something alone but carry no
  // what-if to join the others with (a JAX step run op by op, sized as a
  // jit): named beside the plan, not left out of the answer.
  std::vector<PlanStep> not_replayed;  // finding and alone_saving_us only
};
// Empty without a step model; at most max_changes findings with a what-if
// and a step saving, in the order given.
ChangePlan plan_changes(const InsightContext& context, const std::vector<Insight>& insights,
                        size_t max_changes = 5);
nlohmann::json to_json(const ChangePlan& plan, const std::vector<Insight>& insights);
// The plan in lines ("" when it is empty): the step before, each change with
// what it adds and the step after it, the step after them all.
std::string plan_text(const ChangePlan& plan, const std::vector<Insight>& insights);

}  // namespace jarvis::insights
