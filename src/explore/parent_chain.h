// Call-stack context of one event: its parent chain up to the root and its
// subtree down to a chosen depth, as structured JSON and as the indented text
// TraceLens prints (TraceToTree.traverse_parents_and_print /
// traverse_subtree_and_print with cpu_op_fields=('Input Dims', 'Input type')).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "categories/category_analysis_common.h"
#include "trace/trace.h"
#include "tree/call_tree.h"

namespace jarvis::analysis {

struct ParentChainQuery {
  // Exactly one way to pick the event:
  std::optional<Uid> uid;   // an event UID (e.g. ex_UID of unified_perf_summary)
  std::string op_name;      // exact host event name (aten::mm, nn.Module: Linear_0, ...)
  std::string kernel_name;  // GPU event name: exact match first, else substring
  // Which match (0-based): op_name in trace order (the n-th call), kernel_name
  // longest first. The result's top_matches lists the most expensive matches.
  size_t index = 0;
  int subtree_depth = 2;      // levels below the event (0 = none, <0 = unlimited)
  bool prune_non_gpu = true;  // drop subtree branches that launch no GPU work
  size_t max_children = 50;   // per node; the rest is summarized
};

struct ParentChainResult {
  Uid uid = kNoUid;
  ojson json;        // {event, parent_chain[], subtree, match_count, text}
  std::string text;  // "Node: / 1-up: ..." block, blank line, subtree tree
};

// Throws std::invalid_argument when the query names no event, names more than
// one selector, or matches nothing (the message says how many matched).
ParentChainResult parent_chain(const Trace& trace, const CallTree& tree,
                               const ParentChainQuery& query);

// The JSON description of one event (uid, name, category, ts, duration_us,
// and for cpu_ops Input Dims / Input type when present).
ojson describe_event(const Trace& trace, Uid uid);

// TraceLens's name shortening for printing (64 chars + "..").
std::string short_event_name(std::string_view name);

}  // namespace jarvis::analysis
