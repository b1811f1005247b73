// summarize_kernels (the perf sheets' kernel summary straight from kernel
// UIDs) against summarize_kernel_details over the detail lists it replaces,
// on a real training trace's cpu_ops: equal groups of equal-length lists, and
// groups mixing lengths (a list of another length than the first non-empty
// one is skipped) and empty lists.
#include <doctest/doctest.h>

#include <map>
#include <span>
#include <vector>

#include "golden.h"
#include "report/kernel_details.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using namespace jarvis;
using namespace jarvis::report;

namespace {

void check_same(const Trace& trace, const std::vector<std::vector<Uid>>& lists) {
  std::vector<KernelDetailList> details;
  for (const auto& l : lists) details.push_back(kernel_details_of(trace, l));
  std::vector<const KernelDetailList*> detail_ptrs;
  for (const auto& d : details) detail_ptrs.push_back(&d);
  std::vector<std::span<const Uid>> spans(lists.begin(), lists.end());
  auto expected = summarize_kernel_details(detail_ptrs);
  auto actual = summarize_kernels(trace, spans);
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    CHECK(actual[i].name == expected[i].name);
    CHECK(actual[i].stream == expected[i].stream);
    CHECK(actual[i].count == expected[i].count);
    CHECK(actual[i].has_stats == expected[i].has_stats);
    for (auto field : {&KernelStat::total_duration_us, &KernelStat::mean, &KernelStat::median,
                       &KernelStat::std_dev, &KernelStat::min, &KernelStat::max})
      CHECK(actual[i].*field == expected[i].*field);
  }
  CHECK(kernel_stats_repr(actual) == kernel_stats_repr(expected));
}

}  // namespace

TEST_CASE("summarize_kernels equals summarize_kernel_details of the detail lists") {
  Trace trace = load_trace(golden::shared_dir() + "/hw_pairs/gpt2_train/h100.json.gz");
  CallTree tree(trace, TreeOptions{});
  std::map<std::string_view, std::vector<std::vector<Uid>>> by_name;
  for (Uid u = 0; u < trace.events.size(); ++u) {
    if (trace.events[u].cat != Cat::CpuOp) continue;
    auto kernels = tree.gpu_events(u);  // an op's kernels, as the perf sheets take them
    by_name[trace.name(u)].emplace_back(kernels.begin(), kernels.end());
  }
  REQUIRE(by_name.size() > 5);
  size_t multi_kernel = 0;
  std::vector<std::vector<Uid>> mixed{{}};  // an empty list first: not the template
  for (const auto& [name, lists] : by_name) {
    check_same(trace, lists);
    for (const auto& l : lists) multi_kernel += l.size() > 1;
    mixed.push_back(lists.front());
  }
  CHECK(multi_kernel > 0);
  check_same(trace, mixed);
  check_same(trace, {});
  check_same(trace, {{}, {}});
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
