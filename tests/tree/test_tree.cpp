// Call-tree tests: TraceLens's tree-building rules on small synthetic traces,
// then tree facts checked against the conformance reference CSVs.
#include <doctest/doctest.h>

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "golden.h"
#include "report/core_tables.h"
#include "report_fixture.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using jarvis::CallTree;
using jarvis::kNoUid;
using jarvis::Trace;
using jarvis::Uid;

namespace {

// A complete event on CPU thread 1/1 (or the given pid/tid).
std::string op(const char* cat, const char* name, double ts, double dur, std::string args = "",
               std::string pidtid = "\"pid\":1,\"tid\":1") {
  return fmt::format(R"({{"ph":"X","cat":"{}","name":"{}",{},"ts":{},"dur":{}{}}})", cat, name,
                     pidtid, ts, dur, args.empty() ? "" : ",\"args\":{" + args + "}");
}
std::string kernel(const char* name, double ts, double dur, int corr, int stream = 7) {
  return op("kernel", name, ts, dur, fmt::format(R"("correlation":{},"stream":{})", corr, stream),
            fmt::format(R"("pid":0,"tid":{})", stream));
}
std::string flow(char ph, int id, std::string pidtid) {
  return fmt::format(R"({{"ph":"{}","cat":"ac2g","name":"ac2g","id":{},{},"ts":0}})", ph, id,
                     pidtid);
}
// A launch at ts with its flow pair and the kernel it starts.
std::vector<std::string> launch(const char* kname, double ts, double kts, double kdur, int corr) {
  return {op("cuda_runtime", "cudaLaunchKernel", ts, 2, fmt::format(R"("correlation":{})", corr)),
          flow('s', corr, "\"pid\":1,\"tid\":1"), kernel(kname, kts, kdur, corr),
          flow('f', corr, "\"pid\":0,\"tid\":7")};
}

Trace make_trace(const std::vector<std::string>& events) {
  std::string json = "{\"traceEvents\":[";
  for (size_t k = 0; k < events.size(); ++k) json += (k ? "," : "") + events[k];
  return jarvis::load_trace_from_json(json + "]}");
}

std::vector<Uid> as_vec(std::span<const Uid> s) {
  return {s.begin(), s.end()};
}

}  // namespace

TEST_CASE("tree: nesting, touching siblings and cpu_op roots") {
  Trace t = make_trace({
      op("cpu_op", "aten::linear", 0, 100),  // 0
      op("cpu_op", "aten::addmm", 10, 40),   // 1 child of 0
      op("cpu_op", "aten::mul", 50, 10),     // 2 touches 1 -> sibling
      op("cpu_op", "aten::add", 200, 10),    // 3 new root
  });
  CallTree tree(t);
  CHECK(tree.parent(0) == kNoUid);
  CHECK(tree.parent(1) == 0);
  CHECK(tree.parent(2) == 0);
  CHECK(as_vec(tree.children(0)) == std::vector<Uid>{1, 2});
  CHECK(tree.cpu_root_nodes() == std::vector<Uid>{0, 3});
  CHECK(tree.is_cpu_op_root(0));
  CHECK_FALSE(tree.is_cpu_op_root(1));
  CHECK(tree.parent_chain(1) == std::vector<Uid>{0});
}

TEST_CASE("tree: threads interleaved and out of ts order in the file; roots in (ts, uid) order") {
  auto on = [](int tid) { return fmt::format(R"("pid":1,"tid":{})", tid); };
  Trace t = make_trace({
      op("cpu_op", "A", 100, 50, "", on(1)),               // 0 root
      op("cpu_op", "B", 0, 100, "", on(2)),                // 1 root
      op("cpu_op", "C", 0, 40, "", on(1)),                 // 2 root
      op("cpu_op", "D", 10, 20, "", on(2)),                // 3 in I (the inner of 1 and 9)
      op("cpu_op", "E", 110, 10, "", on(1)),               // 4 in A
      op("cpu_op", "F", 5, 30, "", on(3)),                 // 5 root
      op("cpu_op", "G", 5, 10, "", on(1)),                 // 6 in C
      op("cpu_op", "H", 50, 10, "", on(2)),                // 7 in I
      op("cuda_runtime", "cudaMalloc", 10, 5, "", on(3)),  // 8 in F
      op("cpu_op", "I", 0, 100, "", on(2)),                // 9 B's span: the later uid nests
  });
  CallTree tree(t);
  const std::vector<Uid> parents{kNoUid, kNoUid, kNoUid, 9, 0, kNoUid, 2, 9, 5, 1};
  for (Uid u = 0; u < parents.size(); ++u) CHECK_MESSAGE(tree.parent(u) == parents[u], u);
  CHECK(as_vec(tree.children(1)) == std::vector<Uid>{9});
  CHECK(as_vec(tree.children(9)) == std::vector<Uid>{3, 7});
  CHECK(as_vec(tree.children(2)) == std::vector<Uid>{6});
  CHECK(as_vec(tree.children(0)) == std::vector<Uid>{4});
  CHECK(as_vec(tree.children(5)) == std::vector<Uid>{8});
  // Roots across threads by (ts, uid): B and C at 0, F at 5, A at 100.
  CHECK(tree.cpu_root_nodes() == std::vector<Uid>{1, 2, 5, 0});
}

TEST_CASE("tree: bleed rule") {
  // Stack [0, 1]; event 2 starts inside 1 and ends 0.5us after it: pop 1,
  // attach 2 to 0.
  Trace small = make_trace({
      op("cpu_op", "outer", 0, 100),
      op("cpu_op", "a", 10, 20),
      op("cpu_op", "b", 29.5, 10),
  });
  CallTree t1(small);
  CHECK(t1.parent(2) == 0);
  CHECK_FALSE(t1.is_bleed_skipped(2));

  // Overlap >= 1us: event skipped; its would-be child attaches to the top.
  Trace big = make_trace({
      op("cpu_op", "outer", 0, 100), op("cpu_op", "a", 10, 20),
      op("cpu_op", "b", 25, 20),  // overlap 5us -> skipped
      op("cpu_op", "c", 26, 1),   // inside a and b -> child of a
  });
  CallTree t2(big);
  CHECK(t2.is_bleed_skipped(2));
  CHECK(t2.parent(2) == kNoUid);
  CHECK(t2.parent(3) == 1);
  CHECK(std::find(t2.cpu_root_nodes().begin(), t2.cpu_root_nodes().end(), 2u) ==
        t2.cpu_root_nodes().end());

  // A single element on the stack: even a tiny bleed skips the event.
  Trace single = make_trace({
      op("cpu_op", "a", 0, 20),
      op("cpu_op", "b", 19.9, 10),
  });
  CallTree t3(single);
  CHECK(t3.is_bleed_skipped(1));
  CHECK(t3.parent(1) == kNoUid);
}

TEST_CASE("tree: python frames are optional and transparent for roots") {
  Trace t = make_trace({
      op("python_function", "nn.Module: Linear_4", 0, 100),
      op("cpu_op", "aten::linear", 10, 50),
  });
  CallTree without(t);
  CHECK(without.parent(1) == kNoUid);
  CHECK(without.is_cpu_op_root(1));
  CallTree with(t, jarvis::TreeOptions{true});
  CHECK(with.parent(1) == 0);
  CHECK(with.is_cpu_op_root(1));  // python frames do not count as cpu_ops
  auto mods = with.nn_module_stack(1);
  REQUIRE(mods.size() == 1);
  CHECK(mods[0] == "nn.Module: Linear");
  CHECK(without.nn_module_stack(1) == std::vector<std::string_view>{"root"});
}

TEST_CASE("tree: GPU attachment, propagation order and launchers") {
  std::vector<std::string> ev = {op("cpu_op", "aten::outer", 0, 100)};  // 0
  ev.push_back(op("cpu_op", "aten::inner", 1, 50));                     // 1
  for (auto& e : launch("k_late", 2, 300, 10, 11)) ev.push_back(e);     // 2..5
  for (auto& e : launch("k_early", 60, 200, 10, 12)) ev.push_back(e);   // 6..9
  Trace t = make_trace(ev);
  CallTree tree(t);
  CHECK(tree.linking_key() == "correlation");
  CHECK(tree.parent(2) == 1);
  CHECK(tree.parent(6) == 0);
  CHECK(tree.parent(4) == 2);  // kernel under its launch
  CHECK(tree.is_linked(4));
  CHECK(tree.is_linked(8));
  // Runtime-UID order, not kernel start order.
  CHECK(as_vec(tree.gpu_events(0)) == std::vector<Uid>{4, 8});
  CHECK(as_vec(tree.gpu_events(1)) == std::vector<Uid>{4});
  CHECK(tree.launcher(4) == 1);
  CHECK(tree.launcher(8) == 0);
  CHECK(tree.launchers() == std::vector<Uid>{0, 1});  // ts order
  CHECK(as_vec(tree.direct_kernels(0)) == std::vector<Uid>{8});
  CHECK(tree.nearest_cpu_op(4) == 1);
  CHECK(tree.busy_time(tree.gpu_events(0)) == doctest::Approx(20.0));
}

TEST_CASE("tree: execute is skipped for launchers but not for nearest cpu_op") {
  std::vector<std::string> ev = {op("cpu_op", "conv_bn_fused", 0, 100),
                                 op("cpu_op", "execute", 1, 50)};
  for (auto& e : launch("k", 2, 10, 5, 21)) ev.push_back(e);
  Trace t = make_trace(ev);
  CallTree tree(t);
  CHECK(tree.launcher(4) == 0);
  CHECK(tree.nearest_cpu_op(4) == 1);
}

TEST_CASE("tree: only the last GPU event per (pid, tid, correlation) links") {
  std::vector<std::string> ev = {
      op("cpu_op", "aten::x", 0, 100),
      op("cuda_runtime", "cudaLaunchKernel", 1, 2, R"("correlation":5)"),
      flow('s', 5, "\"pid\":1,\"tid\":1"),
      kernel("first", 10, 1, 5),
      kernel("second", 20, 1, 5),
      flow('f', 5, "\"pid\":0,\"tid\":7"),
      kernel("orphan", 30, 1, 99),  // no launch
  };
  Trace t = make_trace(ev);
  CallTree tree(t);
  CHECK_FALSE(tree.is_linked(3));
  CHECK(tree.is_linked(4));
  CHECK_FALSE(tree.is_linked(6));
  CHECK(tree.launcher(6) == kNoUid);
}

TEST_CASE("tree: the last flow end per id names the stream, the last event there links") {
  // Flow id 5 ends twice: on stream 7, then on stream 9. The last end wins,
  // so the kernel on stream 9 links and the one on stream 7 does not. On
  // stream 11 a later non-GPU event with the same link hides the kernel.
  std::vector<std::string> ev = {
      op("cpu_op", "aten::x", 0, 100),
      op("cuda_runtime", "cudaLaunchKernel", 1, 2, R"("correlation":5)"),
      flow('s', 5, "\"pid\":1,\"tid\":1"),
      kernel("on7", 10, 1, 5, 7),
      flow('f', 5, "\"pid\":0,\"tid\":7"),
      kernel("on9", 20, 1, 5, 9),
      flow('f', 5, "\"pid\":0,\"tid\":9"),
      op("cuda_runtime", "cudaLaunchKernel", 3, 2, R"("correlation":6)"),
      flow('s', 6, "\"pid\":1,\"tid\":1"),
      kernel("on11", 30, 1, 6, 11),
      op("user_annotation", "marker", 31, 1, R"("correlation":6)", "\"pid\":0,\"tid\":11"),
      flow('f', 6, "\"pid\":0,\"tid\":11"),
  };
  Trace t = make_trace(ev);
  CallTree tree(t);
  CHECK_FALSE(tree.is_linked(3));
  CHECK(tree.is_linked(5));
  CHECK(tree.parent(5) == 1);
  CHECK_FALSE(tree.is_linked(9));
  CHECK(as_vec(tree.gpu_events(0)) == std::vector<Uid>{5});
}

TEST_CASE("tree: graph launches take every GPU event with their link") {
  std::vector<std::string> ev = {
      op("cpu_op", "aten::x", 0, 100),
      op("cuda_runtime", "cudaGraphLaunch", 1, 2, R"("correlation":8)"),
      kernel("g1", 10, 1, 8),
      kernel("g2", 20, 1, 8, 3),
  };
  Trace t = make_trace(ev);
  CallTree tree(t);
  CHECK(as_vec(tree.gpu_events(1)) == std::vector<Uid>{2, 3});
  CHECK(as_vec(tree.gpu_events(0)) == std::vector<Uid>{2, 3});
  CHECK(tree.parent(3) == 1);
}

TEST_CASE("tree: External id linking key when launches carry no correlation") {
  std::vector<std::string> ev = {
      op("cuda_runtime", "cudaLaunchKernel", 1, 2, R"("External id":3)"),
      flow('s', 3, "\"pid\":1,\"tid\":1"),
      op("kernel", "k", 10, 1, R"("External id":3,"stream":7)", "\"pid\":0,\"tid\":7"),
      flow('f', 3, "\"pid\":0,\"tid\":7"),
  };
  Trace t = make_trace(ev);
  CallTree tree(t);
  CHECK(tree.linking_key() == "External id");
  CHECK(tree.parent(2) == 0);
}

TEST_CASE("tree: forward/backward linking by sequence number") {
  std::vector<std::string> ev = {
      op("cpu_op", "aten::linear", 0, 100, R"("Sequence number":7)"),  // 0 fwd outer
      op("cpu_op", "aten::addmm", 10, 50, R"("Sequence number":7)"),   // 1 fwd leaf
      op("cpu_op", "autograd::engine::evaluate_function: AddmmBackward0", 500, 50,
         R"("Sequence number":7)", "\"pid\":1,\"tid\":2"),  // 2 bwd
      op("cpu_op", "AddmmBackward0", 510, 30, R"("Sequence number":7)",
         "\"pid\":1,\"tid\":2"),  // 3 same thread
  };
  Trace t = make_trace(ev);
  CallTree tree(t);
  CHECK(tree.fwd_event(2) == 1);
  CHECK(as_vec(tree.bwd_events(1)) == std::vector<Uid>{2});
  CHECK(tree.fwd_event(3) == kNoUid);
  CHECK(tree.subtree_bwd_events(0) == std::vector<Uid>{2});
}

TEST_CASE("tree: busy time is the union length") {
  Trace t = make_trace({kernel("a", 0, 10, 1), kernel("b", 5, 10, 2, 8), kernel("c", 15, 5, 3),
                        kernel("d", 30, 1, 4)});
  std::vector<Uid> all{0, 1, 2, 3};
  CHECK(jarvis::busy_time(t, all) == doctest::Approx(21.0));
  CHECK(jarvis::busy_time(t, {}) == 0.0);
}

TEST_CASE("tree: subtree walk and depth limit") {
  Trace t = make_trace({op("cpu_op", "a", 0, 100), op("cpu_op", "b", 1, 50),
                        op("cpu_op", "c", 2, 10), op("cpu_op", "d", 60, 10)});
  CallTree tree(t);
  auto all = tree.subtree(0);
  std::vector<Uid> order;
  for (auto n : all) order.push_back(n.uid);
  CHECK(order == std::vector<Uid>{0, 1, 2, 3});
  CHECK(tree.subtree(0, 1).size() == 3);
}

// ---- against the conformance references ---------------------------------

TEST_CASE("tree: ops_unique_args ex_UIDs are launchers with the reference args") {
  for (const auto& dir : jarvis::golden::conformance_dirs()) {
    const auto& fx = jarvis::testing::report_fixture(dir);
    auto ref = jarvis::read_csv_file(dir + "/perf_report_csvs/ops_unique_args.csv");
    INFO(dir);
    std::set<Uid> launchers(fx.tree.launchers().begin(), fx.tree.launchers().end());
    for (size_t r = 0; r < ref.rows.size(); ++r) {
      auto uid = static_cast<Uid>(std::stoul(ref.at(r, "ex_UID").text()));
      CHECK(launchers.count(uid) == 1);
      CHECK(fx.trace.name(uid) == ref.at(r, "name").text());
      std::string dims = ref.at(r, "Input Dims").missing() ? "" : ref.at(r, "Input Dims").text();
      jarvis::Cell ours = jarvis::report::arg_cell(fx.trace, uid, "Input Dims");
      CHECK(jarvis::golden::cells_equal(dims, ours.missing() ? "" : ours.text()));
      // Every ancestor sees the launcher's GPU work.
      auto mine = fx.tree.gpu_events(uid);
      for (Uid p : fx.tree.parent_chain(uid)) {
        auto theirs = fx.tree.gpu_events(p);
        std::set<Uid> s(theirs.begin(), theirs.end());
        for (Uid g : mine) CHECK(s.count(g) == 1);
      }
    }
  }
}

TEST_CASE("tree: a node's GPU event list holds the kernels the children walk reaches") {
  // The perf sheets read an op's kernels from gpu_events() and walk the
  // children (TraceLens's order) only when two kernels share a ts: the two
  // must hold the same kernels, each as often.
  for (const auto& dir : jarvis::golden::conformance_dirs()) {
    const auto& fx = jarvis::testing::report_fixture(dir);
    INFO(dir);
    size_t checked = 0;
    for (size_t u = 0; u < fx.trace.events.size(); ++u) {
      if (fx.trace.events[u].is_gpu() || !fx.tree.in_tree(static_cast<Uid>(u))) continue;
      std::vector<Uid> walked;
      std::vector<Uid> stack{static_cast<Uid>(u)};
      while (!stack.empty()) {
        Uid n = stack.back();
        stack.pop_back();
        if (fx.trace.events[n].is_gpu()) {
          walked.push_back(n);
          continue;
        }
        for (Uid c : fx.tree.children(n)) stack.push_back(c);
      }
      auto listed_span = fx.tree.gpu_events(static_cast<Uid>(u));
      std::vector<Uid> listed(listed_span.begin(), listed_span.end());
      std::sort(walked.begin(), walked.end());
      std::sort(listed.begin(), listed.end());
      CHECK(walked == listed);
      checked += walked.empty() ? 0 : 1;
    }
    CHECK(checked > 0);
  }
}

TEST_CASE("tree: kernel attribution matches ops_summary and kernel_summary") {
  for (const auto& dir : jarvis::golden::conformance_dirs()) {
    const auto& fx = jarvis::testing::report_fixture(dir);
    const Trace& t = fx.trace;
    INFO(dir);
    // ops_summary: per-name sum of direct busy time and launcher count.
    auto ops = jarvis::read_csv_file(dir + "/perf_report_csvs/ops_summary.csv");
    std::map<std::string, std::pair<double, size_t>> by_name;
    for (Uid l : fx.tree.launchers()) {
      auto& acc = by_name[std::string(t.name(l))];
      acc.first += fx.tree.busy_time(fx.tree.direct_kernels(l));
      acc.second += 1;
    }
    CHECK(by_name.size() == ops.rows.size());
    for (size_t r = 0; r < ops.rows.size(); ++r) {
      const auto& acc = by_name[ops.at(r, "name").text()];
      double ref_sum = std::stod(ops.at(r, "total_direct_kernel_time_sum").text());
      CHECK(acc.first == doctest::Approx(ref_sum).epsilon(1e-9));
      CHECK(acc.second == std::stoul(ops.at(r, "Count").text()));
    }
    // kernel_summary: kernel time per Parent cpu_op (launcher name when none).
    auto ks = jarvis::read_csv_file(dir + "/perf_report_csvs/kernel_summary.csv");
    std::map<std::string, double> ref_by_parent, ours_by_parent;
    for (size_t r = 0; r < ks.rows.size(); ++r) {
      const auto& parent = ks.at(r, "Parent cpu_op");
      ref_by_parent[parent.missing() ? "" : parent.text()] +=
          std::stod(ks.at(r, "Kernel duration (µs)_sum").text());
    }
    for (size_t u = 0; u < t.events.size(); ++u) {
      if (t.events[u].cat != jarvis::Cat::Kernel) continue;
      Uid cpu = fx.tree.nearest_cpu_op(static_cast<Uid>(u));
      Uid launch = fx.tree.parent(static_cast<Uid>(u));
      std::string parent = cpu != kNoUid      ? std::string(t.name(cpu))
                           : launch != kNoUid ? std::string(t.name(launch))
                                              : "";
      ours_by_parent[parent] += t.events[u].dur();
    }
    CHECK(ours_by_parent.size() == ref_by_parent.size());
    for (const auto& [parent_name, sum] : ref_by_parent) {
      const auto& parent = parent_name;  // clang 14 cannot capture a binding
      INFO(parent);
      CHECK(ours_by_parent[parent] == doctest::Approx(sum).epsilon(1e-9));
    }
  }
}

TEST_CASE("tree: gpu_event_uids lists every GPU event once in UID order; cat() is each event's") {
  // The GPU-event passes (launchers, timeline, kernel facts, left-over
  // kernels, short kernels, collectives) walk this list instead of the array,
  // and the tree walks read categories from cat().
  for (const auto& dir : jarvis::golden::conformance_dirs()) {
    const auto& fx = jarvis::testing::report_fixture(dir);
    INFO(dir);
    std::vector<Uid> expected;
    size_t cat_mismatches = 0;
    for (size_t u = 0; u < fx.trace.events.size(); ++u) {
      if (fx.trace.events[u].is_gpu()) expected.push_back(static_cast<Uid>(u));
      if (fx.tree.cat(static_cast<Uid>(u)) != fx.trace.events[u].cat) ++cat_mismatches;
    }
    CHECK(!expected.empty());
    CHECK(fx.tree.gpu_event_uids() == expected);
    CHECK(cat_mismatches == 0);
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
