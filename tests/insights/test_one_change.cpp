// One change, one finding (issue 73 point 2), on every Kineto trace of
// ../shared: no two findings name the same change, no symptom is left as a
// finding of its own beside its change, and findings that claim time on the
// same ops never claim more between them than those ops' kernel time, which
// the test sums from the trace's own GPU events under each op.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "golden.h"
#include "insights/insights.h"
#include "perf/gpu_arch.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace in = jarvis::insights;
namespace fs = std::filesystem;
using jarvis::Uid;

// Kernel time under an op: its own GPU events and its descendants', from the
// call tree's links (a synthetic row UID past the events has none here).
double kernel_time_under(const jarvis::Trace& t, const jarvis::CallTree& tree, Uid op,
                         std::set<Uid>& seen) {
  double us = 0;
  std::vector<Uid> stack{op};
  while (!stack.empty()) {
    const Uid u = stack.back();
    stack.pop_back();
    if (u >= t.events.size()) continue;
    if (t.events[u].is_gpu() && seen.insert(u).second) us += std::max(0.0, t.events[u].dur());
    for (Uid g : tree.gpu_events(u))
      if (seen.insert(g).second) us += std::max(0.0, t.events[g].dur());
    for (Uid k : tree.children(u)) stack.push_back(k);
  }
  return us;
}

TEST_CASE("one change, one finding: every Kineto trace of ../shared") {
  const auto traces = jarvis::golden::shared_kineto_traces();
  if (traces.empty()) {
    MESSAGE("skipped: ../shared is missing");
    return;
  }
  static const auto arch = jarvis::perf::load_gpu_arch("H200");
  size_t folded = 0;
  for (const std::string& path : traces) {
    CAPTURE(path);
    const jarvis::Trace t = jarvis::load_trace(path);
    const jarvis::CallTree tree(t);
    const auto all = in::run_insights(in::make_context(t, tree, &arch));
    std::set<std::string> changes;
    for (const auto& i : all) {
      CAPTURE(i.title);
      if (!i.change.empty()) CHECK(changes.insert(i.change).second);  // each change once
      if (i.evidence.contains("symptoms")) folded += i.evidence["symptoms"].size();
      if (i.recoverable_us && i.time_us > 0) CHECK(*i.recoverable_us <= i.time_us * (1 + 1e-9));
    }
    // Sharing is told both ways: a finding that names a rule it shares time
    // with is named back by a finding of that rule.
    for (const auto& i : all)
      for (const std::string& rule : i.shares_time_with) {
        CAPTURE(i.title);
        CAPTURE(rule);
        CHECK(std::any_of(all.begin(), all.end(), [&](const auto& other) {
          return other.rule == rule &&
                 std::find(other.shares_time_with.begin(), other.shares_time_with.end(), i.rule) !=
                     other.shares_time_with.end();
        }));
      }
    // A symptom left beside its change: an old-arch finding over the GEMMs
    // that a padding finding covers.
    for (const auto& pad : all) {
      if (pad.rule != "gemm_unaligned_dims") continue;
      const std::set<Uid> ops(pad.uids.begin(), pad.uids.end());
      for (const auto& old : all) {
        if (old.rule != "old_arch_kernel" || old.uids.empty()) continue;
        const auto inside = std::count_if(old.uids.begin(), old.uids.end(),
                                          [&](Uid u) { return ops.count(u) > 0; });
        CHECK(2 * static_cast<size_t>(inside) < old.uids.size());
      }
    }
    // Findings linked by shared ops (op-scope findings whose UIDs are ops)
    // claim at most those ops' kernel time between them: one component at a
    // time, its kernel time summed from the raw GPU events under its ops.
    std::vector<size_t> op_findings;
    for (size_t k = 0; k < all.size(); ++k)
      if (all[k].recoverable_us && all[k].idle_claim_us.empty() && all[k].scope != "trace" &&
          !all[k].uids.empty() && std::all_of(all[k].uids.begin(), all[k].uids.end(), [&](Uid u) {
            return u < t.events.size();
          }))
        op_findings.push_back(k);
    std::vector<size_t> component(all.size());
    for (size_t k = 0; k < all.size(); ++k) component[k] = k;
    auto find = [&](size_t k) {
      while (component[k] != k) k = component[k] = component[component[k]];
      return k;
    };
    std::map<Uid, size_t> owner;
    for (size_t k : op_findings)
      for (Uid u : all[k].uids) {
        auto [it, fresh] = owner.emplace(u, k);
        if (!fresh) component[find(k)] = find(it->second);
      }
    std::map<size_t, std::vector<size_t>> groups;
    for (size_t k : op_findings) groups[find(k)].push_back(k);
    for (const auto& group : groups) {  // no structured binding: clang 14's CAPTURE
      const std::vector<size_t>& members = group.second;
      if (members.size() < 2) continue;
      double claimed = 0;
      std::set<Uid> ops, seen;
      for (size_t k : members) {
        claimed += *all[k].recoverable_us;
        ops.insert(all[k].uids.begin(), all[k].uids.end());
      }
      double kernel_us = 0;
      for (Uid u : ops) kernel_us += kernel_time_under(t, tree, u, seen);
      CAPTURE(all[members.front()].title);
      CHECK(claimed <= kernel_us * (1 + 1e-6) + 1.0);
    }
  }
  CHECK(folded > 0);  // the vocabulary and channels_last traces fold theirs
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
