// Facts about one trace that several rules read (issue 75): computed once
// per InsightContext, on the first rule that asks, and kept in the context
// (InsightContext::facts), instead of each rule scanning the events again.
// What a kernel's name says is read once per distinct name (a tiled trace
// launches the same few hundred kernels a million times); the GPU's idle
// gaps, the graph-capture calls and the unrecorded host stretches once per
// trace. The rules run on two threads (run_insights): what they read here is
// safe to read from both once prepare_trace_facts has run.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "critical_path/host_gaps.h"
#include "insights/insights.h"
#include "insights/kernel_name.h"

namespace jarvis::insights::detail {

// Makes c.facts (once; run_insights calls it before the rules start): reads
// the names of the trace's GPU events, which the rules then look up from two
// threads without a lock.
// `base`: the loaded trace's facts of the trace alone
// (make_shared_trace_facts over the same trace and call tree), read where
// they hold a fact instead of making it again (null: every fact made here).
void prepare_trace_facts(const InsightContext& c, std::shared_ptr<const TraceFacts> base = nullptr);

// The facts that read the trace and its call tree alone, made now: the
// kernel names', the graph-capture calls, the GPU's idle gaps and the host's
// share of them by place, the launching siblings, the events by name, the
// op levels and what the unrecorded host stretches are read from. A loaded trace keeps them (MCP
// load_trace makes them on the core its step model leaves free) for the contexts of its later
// analyses, which read them unchanged (prepare_trace_facts' `base`).
std::shared_ptr<const TraceFacts> make_shared_trace_facts(const Trace& trace, const CallTree& tree);
// The same facts in parts that run in any order, on any thread, at once
// (each fact is made under its own lock): `facts` holds them all once every
// part has run. The parts keep the trace and the tree referenced.
struct TraceFactsInParts {
  std::shared_ptr<const TraceFacts> facts;
  std::vector<std::function<void()>> parts;
};
TraceFactsInParts shared_trace_facts_in_parts(const Trace& trace, const CallTree& tree);

// Makes now the facts that read no perf row and no timeline (the GPU's idle
// gaps and the host's share of them by place, the graph-capture calls, the
// unrecorded host stretches when c.step is set) so that make_context can
// make them beside the rows. The rules read the same facts either way.
void make_facts_before_rows(const InsightContext& c);
// Its two independent parts, for two threads (after prepare_trace_facts):
// the GPU's idle gaps and the host's share of them by place; the graph-capture
// calls and the unrecorded host stretches (when c.step is set).
void make_idle_facts(const InsightContext& c);
void make_unrecorded_facts(const InsightContext& c);

// Makes now the index of the events by name events_named reads
// (rules_internal.h), beside the rows, so that no rule waits for it.
void make_events_by_name(const InsightContext& c);

// Makes now the lists for_each_launching_sibling_list visits (rules_internal.h),
// so that neither rule that reads them waits for the other to make them.
void make_launching_siblings(const InsightContext& c);

// What a GPU kernel's name says.
struct KernelNameFacts {
  KernelTraits traits;             // parse_kernel_name
  bool fp32_simt_gemm = false;     // is_fp32_simt_gemm_kernel (rule_fp32_gemm_simt.cpp)
  bool layout_conversion = false;  // is_layout_conversion_kernel (rule_conv_layout_transposes.cpp)
};

// cuDNN's nchwToNhwc / nhwcToNchw kernels, MIOpen's batched_transpose.
bool is_layout_conversion_kernel(std::string_view name);

// The facts of the event's name (any event; the rules ask about kernels).
const KernelNameFacts& kernel_name_facts(const InsightContext& c, Uid event);

// graph_capture_calls(c.trace).
size_t graph_capture_calls(const InsightContext& c);

// Drops what only the rules that do not read the step model share (the GEMM
// dims of the rows, gemm_dims(c, row): 8 MB on a 1 GB trace) once they ran:
// the replays after them set the peak. A later call makes it again.
void release_rule_scratch(const InsightContext& c);

// Every field of a what-if scenario (and the detail and removed time asked),
// byte for byte: equal keys, equal replays. step_time_what_if keys the host
// changes (no GPU events named: short keys) by it.
std::string scenario_key(const critical_path::Scenario& change, critical_path::StepDetail detail,
                         critical_path::RemovedUs removed);
// replay()'s result, made once per key and trace (the rules and the findings'
// replays ask from two threads; a key asked by both at once may be replayed
// twice, to the same result).
critical_path::WhatIfResult replayed_once(
    const InsightContext& c, const std::string& key,
    const std::function<critical_path::WhatIfResult()>& replay);

// The shortest unrecorded host stretch the rules read (rule_unrecorded_host_time).
inline constexpr double kUnrecordedMinGapUs = 100;

// What unrecorded_host_gaps reads of the trace alone (critical_path::
// host_gap_events), made now, before the step model exists (analyse_trace,
// while the model is built); unrecorded_host_gaps takes it over. Nothing
// for a trace that records a graph capture (the rule reads none).
void make_host_gap_events(const InsightContext& c);

// critical_path::unrecorded_host_gaps of the step model's graph over this
// trace, of any place, at least kUnrecordedMinGapUs long. Needs c.step;
// throws what that throws (a graph of other traces).
const std::vector<critical_path::HostGap>& unrecorded_host_gaps(const InsightContext& c);

// critical_path::add_host_gap_removal on this trace and the step model's
// graph, the same stretches and the same scenario, picked from
// unrecorded_host_gaps(c) when `sel` reads no shorter stretch and names no
// rank (else, and when it selects nothing, to throw the same error, through
// the scan itself).
std::vector<critical_path::HostGap> add_host_gap_removal(const InsightContext& c,
                                                         const critical_path::HostGapSelector& sel,
                                                         critical_path::Scenario& scenario);

// critical_path::add_host_removal on this trace and the step model's graph:
// the same scenario (its remove_host, remove_syncs and remove_gpu extended,
// its host_removal set), what a removal adds made once per removal (each
// scan reads every host event and runtime call).
void add_host_removal(const InsightContext& c, const critical_path::HostRemoval& removal,
                      critical_path::Scenario& scenario);

}  // namespace jarvis::insights::detail
