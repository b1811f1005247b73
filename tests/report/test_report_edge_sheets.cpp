// Report sheets in the corner cases TraceLens handles its own way, on
// constructed traces: a GPU-only trace's kernel_summary (no "Parent cpu_op"
// column), short_kernels_summary without short kernels (one empty line) and
// with short kernels whose every group key has a missing part (pandas's
// two-row MultiIndex header), and ties in ops_summary in NumPy's order.
#include <doctest/doctest.h>

#include <string>

#include "report/core_tables.h"
#include "report/report.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using namespace jarvis;

namespace {

std::string kernel(const std::string& name, double ts, double dur, int corr = -1) {
  std::string args = R"("stream":7)";
  if (corr >= 0) args += R"(,"correlation":)" + std::to_string(corr);
  return R"({"ph":"X","cat":"kernel","name":")" + name + R"(","pid":0,"tid":7,"ts":)" +
         std::to_string(ts) + R"(,"dur":)" + std::to_string(dur) + R"(,"args":{)" + args + "}}";
}

std::string launch(double ts, int corr) {
  return R"({"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":)" +
         std::to_string(ts) + R"(,"dur":2,"args":{"correlation":)" + std::to_string(corr) + "}}";
}

std::string cpu_op(const std::string& name, double ts, double dur, const std::string& args = "") {
  return R"({"ph":"X","cat":"cpu_op","name":")" + name + R"(","pid":1,"tid":1,"ts":)" +
         std::to_string(ts) + R"(,"dur":)" + std::to_string(dur) + R"(,"args":{)" + args + "}}";
}

std::string flow(int id, double ts, bool start) {
  return std::string(R"({"ph":")") + (start ? "s" : "f") + R"(","cat":"ac2g","name":"ac2g","id":)" +
         std::to_string(id) + R"(,"pid":)" + (start ? "1" : "0") + R"(,"tid":)" +
         (start ? "1" : "7") + R"(,"ts":)" + std::to_string(ts) + (start ? "" : R"(,"bp":"e")") +
         "}";
}

Trace load(const std::vector<std::string>& events) {
  std::string body;
  for (const auto& e : events) body += (body.empty() ? "" : ",") + e;
  return load_trace_from_json(R"({"traceEvents":[)" + body + "]}");
}

}  // namespace

TEST_CASE("kernel_summary: a GPU-only trace has no Parent cpu_op column") {
  Trace trace = load({kernel("k_a", 0, 5), kernel("k_b", 10, 20), kernel("k_a", 40, 5)});
  CallTree tree(trace);
  REQUIRE(report::is_gpu_only(trace));
  Table ks = report::kernel_summary_table(trace, tree, 0.045);
  CHECK(ks.col("Parent cpu_op") == -1);
  CHECK(ks.columns.front() == "Parent op category");
  REQUIRE(ks.rows.size() == 2);
  CHECK(ks.at(0, "Kernel name").text() == "k_b");
  CHECK(ks.at(1, "Kernel duration (µs)_count").number() == 2);
  CHECK(ks.at(1, "Parent op category").missing());
}

TEST_CASE("kernel_summary: launched kernels under a cpu_op keep the column") {
  Trace trace = load({cpu_op("aten::mm", 0, 10), launch(1, 5), flow(5, 1, true),
                      kernel("gemm", 20, 8, 5), flow(5, 20, false)});
  CallTree tree(trace);
  Table ks = report::kernel_summary_table(trace, tree, 0.008);
  REQUIRE(ks.col("Parent cpu_op") >= 0);
  CHECK(ks.at(0, "Parent cpu_op").text() == "aten::mm");
}

TEST_CASE("short_kernels_summary: the empty cases as pandas writes them") {
  // No kernel under 10 us: TraceLens returns a bare DataFrame().
  Trace long_only = load({kernel("k_long", 0, 50)});
  CallTree t1(long_only);
  CHECK(report::short_kernels_summary_table(long_only, t1, 10, 0.05).to_csv() == "\n");
  // Short kernels, but launched by no cpu_op: every group key has a missing
  // Parent cpu_op, pandas drops them all and TraceLens returns the empty
  // aggregation, whose header has two levels.
  Trace unlinked = load({cpu_op("aten::mm", 0, 10), launch(1, 5), flow(5, 1, true),
                         kernel("gemm", 20, 50, 5), flow(5, 20, false), kernel("orphan", 100, 3)});
  CallTree t2(unlinked);
  REQUIRE_FALSE(report::is_gpu_only(unlinked));
  CHECK(report::short_kernels_summary_table(unlinked, t2, 10, 0.1).to_csv() ==
        "Kernel duration (µs),Kernel duration (µs),Kernel duration (µs)\nsum,count,mean\n");
}

TEST_CASE("ops_summary: tied totals come out in pandas' (unstable) order") {
  // 20 ops (more than NumPy's 16-element insertion-sort cutoff) with direct
  // kernel times of 3 or 5 us. The expected order is what pandas 1.5.3 /
  // NumPy 1.24 give for groupby("name").agg(sum).sort_values(ascending=False)
  // on these values; it is not the stable order (00 would come last among
  // the 3s, 01 first among the 5s).
  const int times[20] = {3, 5, 3, 3, 5, 3, 3, 5, 3, 3, 5, 3, 3, 5, 3, 3, 5, 3, 3, 5};
  const char* expected[20] = {"10", "07", "16", "13", "01", "19", "04", "06", "05", "08",
                              "09", "11", "12", "03", "14", "15", "02", "17", "18", "00"};
  std::vector<std::string> ev;
  for (int i = 0; i < 20; ++i) {
    std::string name = "aten::op_" + std::string(i < 10 ? "0" : "") + std::to_string(i);
    double t = 100.0 * (i + 1);
    ev.push_back(cpu_op(name, t, 10));
    ev.push_back(launch(t + 1, i + 1));
    ev.push_back(flow(i + 1, t + 1, true));
    ev.push_back(kernel("k", t + 20, times[i], i + 1));
    ev.push_back(flow(i + 1, t + 20, false));
  }
  Trace trace = load(ev);
  CallTree tree(trace);
  Report r = build_report(trace, tree, ReportOptions{});
  const Table* ops = r.find("ops_summary");
  REQUIRE(ops);
  REQUIRE(ops->rows.size() == 20);
  for (size_t k = 0; k < 20; ++k) {
    CAPTURE(k);
    CHECK(ops->at(k, "name").text() == std::string("aten::op_") + expected[k]);
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
