// Crafted trace contents that used to crash or corrupt jarvis (issue 18):
// deep literals in Concrete Inputs, 100k-character Triton and kernel names,
// shapes whose FLOPs overflow int64, out-of-range numbers. Each must end in a
// clear error or a correct value: the CLI exits with a status (no signal) and
// the MCP server answers the next call.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <string>

#include "categories/fusion_candidates.h"
#include "categories/kernel_details_text.h"
#include "mcp_harness.h"
#include "perf/perf_model.h"
#include "report/report.h"
#include "sanitizer.h"
#include "test_loader_support.h"
#include "trace/loader.h"
#include "trace/numeric.h"
#include "tree/call_tree.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using namespace jarvis;
using namespace jarvis::loader_test;
using json = nlohmann::json;

namespace {

std::string nested_list(int depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

// One cpu_op launching one kernel, in a minimal Kineto trace.
std::string op_with_kernel(const std::string& op, const std::string& args,
                           const std::string& kernel, int corr, double ts) {
  return fmt::format(
      R"({{"ph":"X","cat":"cpu_op","name":"{}","pid":1,"tid":1,"ts":{},"dur":5,"args":{{{}}}}},)"
      R"({{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{},)"
      R"("dur":1,"args":{{"correlation":{}}}}},)"
      R"({{"ph":"s","cat":"ac2g","name":"ac2g","id":{},"pid":1,"tid":1,"ts":{}}},)"
      R"({{"ph":"X","cat":"kernel","name":"{}","pid":0,"tid":7,"ts":{},"dur":3,)"
      R"("args":{{"correlation":{},"stream":7,"device":0}}}},)"
      R"({{"ph":"f","bp":"e","cat":"ac2g","name":"ac2g","id":{},"pid":0,"tid":7,"ts":{}}})",
      op, ts, args, ts + 1, corr, corr, ts + 1, kernel, ts + 2, corr, corr, ts + 2);
}

const std::string kDeepLiteralOp = "aten::replication_pad1d";
std::string deep_literal_args() {
  return R"("Input Dims":[[1,4,8],[]],"Input type":["float","ScalarList"],)"
         R"("Input Strides":[[32,8,1],[]],"Concrete Inputs":["",")" +
         nested_list(20000) + R"("])";
}
std::string long_triton_name() {
  return "triton_poi_fused_" + std::string(100000, 'a') + "_0";
}
std::string long_triton_op_name() {
  std::string name = "triton_poi_fused_";
  for (int i = 0; i < 25000; ++i) name += "add_";
  return name + "0";
}
// Walks the ".*" fusion-candidate rules ("rsqrt.*mean.*pow") to the end without a match.
std::string long_kernel_name() {
  return "rsqrt_" + std::string(100000, 'x') + "_mean";
}

std::string crafted_trace() {
  // append() rather than "," + ...: GCC 12 warns falsely (-Wrestrict) on the latter.
  std::string events = op_with_kernel(kDeepLiteralOp, deep_literal_args(), "pad_kernel", 1, 0);
  events.append(",").append(op_with_kernel(long_triton_op_name(), "", long_triton_name(), 2, 20));
  events.append(",").append(op_with_kernel(
      "aten::mul",
      R"("Input Dims":[[4,4],[4,4]],"Input type":["float","float"],"Input Strides":[[4,1],[4,1]],"Concrete Inputs":["",""])",
      long_kernel_name(), 3, 40));
  std::string trace = R"({"deviceProperties":[{"name":"NVIDIA H100 80GB HBM3"}],"traceEvents":[)";
  trace.append(events).append("]}");
  return trace;
}

struct OneOp {
  Trace trace;
  perf::OpInput op;
  OneOp(const std::string& name, const std::string& args) {
    trace = load_trace_from_json(R"({"traceEvents":[{"ph":"X","cat":"cpu_op","name":")" + name +
                                 R"(","pid":1,"tid":1,"ts":0,"dur":1,"args":{)" + args + "}}]}");
    op = perf::op_input_from_event(trace, 0);
  }
};

}  // namespace

TEST_CASE("crafted: a Concrete Inputs literal nested 20000 deep is a perf-model error") {
  OneOp one(kDeepLiteralOp, deep_literal_args());
  try {
    auto model = perf::make_perf_model(one.op);
    FAIL("the model accepted a 20000-deep literal");
  } catch (const perf::PerfModelError& e) {
    CHECK(std::string(e.what()).find("nested deeper than 100 levels") != std::string::npos);
  }
}

TEST_CASE("crafted: an unparsable 100k literal is quoted only in part") {
  OneOp one(kDeepLiteralOp, R"("Input Dims":[[1,4,8],[]],"Input type":["float","ScalarList"],)"
                            R"("Input Strides":[[32,8,1],[]],"Concrete Inputs":["","[)" +
                                std::string(100000, 'z') + R"(]"])");
  try {
    auto model = perf::make_perf_model(one.op);
    FAIL("the model accepted a garbage literal");
  } catch (const perf::PerfModelError& e) {
    std::string message = e.what();
    CHECK(message.size() < 400);
    CHECK(message.find("(100002 chars)") != std::string::npos);
  }
}

TEST_CASE("crafted: GEMM FLOPs and bytes past int64 are Python's values, not wrapped") {
  const int64_t big = int64_t{1} << 40;
  OneOp one("aten::mm",
            fmt::format(R"("Input Dims":[[{0},{0}],[{0},{0}]],)"
                        R"("Input type":["c10::BFloat16","c10::BFloat16"],)"
                        R"("Input Strides":[[{0},1],[{0},1]],"Concrete Inputs":["",""])",
                        big));
  auto model = perf::make_perf_model(one.op);
  REQUIRE(model);
  // 2·M·N·K = 2^121 and (MK + KN + MN)·2 bytes = 3·2^81, both exact in a double.
  CHECK(model->flops() == std::ldexp(1.0, 121));
  CHECK(*model->bytes() == 3 * std::ldexp(1.0, 81));
}

TEST_CASE("crafted: FLOPs past 2^127 are a perf-model error") {
  const int64_t huge = int64_t{1} << 62;
  OneOp one("aten::mm",
            fmt::format(R"("Input Dims":[[{0},{0}],[{0},{0}]],)"
                        R"("Input type":["float","float"],)"
                        R"("Input Strides":[[{0},1],[{0},1]],"Concrete Inputs":["",""])",
                        huge));
  auto model = perf::make_perf_model(one.op);
  REQUIRE(model);
  CHECK_THROWS_AS(model->flops(), perf::PerfModelError);
}

TEST_CASE("crafted: SDPA and convolution FLOPs do not wrap") {
  // SDPA forward: 4·B·H·N_Q·N_KV·d = 4·2^64 with B = H = 1, N = 2^30, d = 2^4.
  const int64_t n = int64_t{1} << 30;
  OneOp sdpa(
      "aten::_scaled_dot_product_flash_attention",
      fmt::format(R"("Input Dims":[[1,1,{0},16],[1,1,{0},16],[1,1,{0},16],[],[],[],[]],)"
                  R"("Input type":["c10::BFloat16","c10::BFloat16","c10::BFloat16","","","",""],)"
                  R"("Input Strides":[[],[],[],[],[],[],[]],)"
                  R"("Concrete Inputs":["","","","0.0","False","False",""])",
                  n));
  auto m = perf::make_perf_model(sdpa.op);
  REQUIRE(m);
  CHECK(m->flops() == 4.0 * std::ldexp(1.0, 64));
}

TEST_CASE("crafted: a 100k-character Triton op name is parsed in linear time") {
  OneOp one(long_triton_op_name(), "");
  // No metadata: the model is unmodelled or fails cleanly; it must not crash.
  try {
    auto model = perf::make_perf_model(one.op);
    if (model) (void)model->params();
  } catch (const perf::PerfModelError&) {
  }
  CHECK(true);
}

TEST_CASE("crafted: 100k-character kernel names through the kernel rules and cell scanner") {
  CHECK(analysis::classify_kernel_type(long_kernel_name()) == "Unknown");
  // A long name that does match a ".*" rule at its ends.
  CHECK(analysis::classify_kernel_type("rsqrt_" + std::string(100000, 'x') + "_mean_pow") ==
        "RMSNorm (fused triton)");
  std::string cell = "[{'name': '" + std::string(100000, 'k') +
                     "', 'stream': 7, 'mean_duration_us': 2.5}, {'name': 'b', "
                     "'mean_duration_us': 1.0}]";
  auto names = analysis::kernel_detail_names(cell);
  REQUIRE(names.size() == 2);
  CHECK(names[0].size() == 100000);
  auto means = analysis::kernel_detail_means(cell);
  REQUIRE(means.size() == 2);
  CHECK(means[0].mean_us == 2.5);
  CHECK(means[1].name == "b");
}

TEST_CASE("crafted: numbers outside int64 are refused, not cast") {
  CHECK(exact_int64(1e300) == std::nullopt);
  CHECK(exact_int64(-1e300) == std::nullopt);
  CHECK(exact_int64(std::nan("")) == std::nullopt);
  CHECK(exact_int64(9223372036854775808.0) == std::nullopt);
  CHECK(exact_int64(-9223372036854775808.0) == INT64_MIN);
  CHECK(exact_int64(2.5) == std::nullopt);
  CHECK(truncate_to_int64(-2.5) == -2);
  CHECK(truncate_to_int64(INFINITY) == std::nullopt);
  // A flow id of 1e300 is not an integer id: the loader reports it.
  std::string trace =
      R"({"traceEvents":[{"ph":"s","cat":"ac2g","name":"ac2g","id":1e300,"pid":1,"tid":1,"ts":1},)"
      R"({"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":0,"dur":1}]})";
  try {
    Trace t = load_trace_from_json(trace);
    CHECK(t.events.size() >= 1);
  } catch (const TraceError& e) {
    CHECK(std::string(e.what()).find("id") != std::string::npos);
  }
}

TEST_CASE("crafted: the CLI survives the crafted trace (report and prepare)") {
  TempDir dir;
  write_file(dir.path / "crafted.json", crafted_trace());
  auto report = run_jarvis("report " + shell_quote((dir.path / "crafted.json").string()) +
                           " --out " + shell_quote((dir.path / "report").string()));
  INFO(report.output.substr(0, 2000));
  CHECK(report.exit_code == 0);
  CHECK(fs::exists(dir.path / "report"));
  auto prepare =
      run_jarvis("prepare " + shell_quote((dir.path / "crafted.json").string()) +
                 " --platform MI300X --out " + shell_quote((dir.path / "prepared").string()));
  INFO(prepare.output.substr(0, 2000));
  CHECK(prepare.exit_code == 0);
}

TEST_CASE("crafted: the MCP server answers ops_summary on the crafted trace and stays up") {
  TempDir dir;
  write_file(dir.path / "crafted.json", crafted_trace());
  mcp::ServerOptions options;
  options.roots = {dir.path.string()};
  mcp::testing::Harness h(options);
  h.initialize();
  json loaded = h.tool_result(1, "load_trace", {{"path", (dir.path / "crafted.json").string()}});
  std::string handle = loaded["trace"];
  json summary = h.call_tool(2, "ops_summary", {{"trace", handle}});
  REQUIRE(summary.contains("result"));
  CHECK_FALSE(summary["result"].value("isError", false));
  json next = h.request(3, "tools/list");
  CHECK(next.contains("result"));
}

namespace {

// python_function frames nested `depth` deep (each with its own name) over
// two ops that launch one kernel each.
std::string deep_stack_trace(int depth) {
  std::string ev;
  for (int i = 0; i < depth; ++i)
    ev += fmt::format(
        R"({{"ph":"X","cat":"python_function","name":"frame_{0}.py(1): f{0}","pid":1,"tid":1,)"
        R"("ts":{1},"dur":{2}}},)",
        i, i * 0.001, 1e6 - i * 0.002);
  double t = depth * 0.001 + 1;
  ev += op_with_kernel("aten::add",
                       R"("Input Dims":[[4],[4]],"Input type":["float","float"],)"
                       R"("Input Strides":[[1],[1]],"Concrete Inputs":["",""])",
                       "elementwise_kernel_add", 1, t);
  ev.append(",").append(op_with_kernel("aten::mul",
                                       R"("Input Dims":[[4],[4]],"Input type":["float","float"],)"
                                       R"("Input Strides":[[1],[1]],"Concrete Inputs":["",""])",
                                       "elementwise_kernel_mul", 2, t + 10));
  std::string trace = R"({"deviceProperties":[{"name":"NVIDIA H100 80GB HBM3"}],"traceEvents":[)";
  trace.append(ev).append("]}");
  return trace;
}

// Sanitizer builds run several times slower and hold shadow memory.
constexpr double kSlowdown = JARVIS_ASAN ? 3 : 1;

long children_max_rss_kb() {
  struct rusage usage {};
  getrusage(RUSAGE_CHILDREN, &usage);
  return usage.ru_maxrss;
}

// CPU time (user + system) of the finished children: unlike the wall clock
// it does not grow when other jobs share the machine.
double children_cpu_seconds() {
  struct rusage usage {};
  getrusage(RUSAGE_CHILDREN, &usage);
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

}  // namespace

TEST_CASE("crafted: 50,000 nested frames prepare in bounded time and memory") {
  // The fusion-candidate pass was quadratic in the stack depth (8,000 frames:
  // 21.7 s and 2.1 GB; 50,000: > 9 GB). Generous bounds; figures in bench/.
  TempDir dir;
  write_file(dir.path / "deep.json", deep_stack_trace(50000));
  const double cpu_before = children_cpu_seconds();
  auto prepare = run_jarvis("prepare " + shell_quote((dir.path / "deep.json").string()) +
                            " --platform H100 --out " + shell_quote((dir.path / "out").string()));
  const double cpu_seconds = children_cpu_seconds() - cpu_before;
  INFO(prepare.output.substr(0, 2000));
  CHECK(prepare.exit_code == 0);
  // 10 s on two cores; CPU time, not wall time, so a loaded machine does not fail it.
  CHECK(cpu_seconds < 20.0 * kSlowdown);
  CHECK(children_max_rss_kb() < 1024 * 1024 * kSlowdown);
}

TEST_CASE("crafted: negative durations are clamped to 0 and counted") {
  std::string trace =
      R"({"traceEvents":[)" +
      op_with_kernel("aten::add", R"("Input Dims":[[4],[4]])", "k_neg", 1, 0) + "," +
      op_with_kernel("aten::add", R"("Input Dims":[[4],[4]])", "k_ok", 2, 100) + "]}";
  // Make the first kernel's duration negative.
  size_t at = trace.find(R"("name":"k_neg","pid":0,"tid":7,"ts":2,"dur":3)");
  REQUIRE(at != std::string::npos);
  trace.replace(trace.find(R"("dur":3)", at), 7, R"("dur":-500)");
  Trace t = load_trace_from_json(trace);
  CHECK(t.clamped_negative_durations == 1);
  for (const Event& e : t.events)
    if (e.has_dur()) CHECK(e.dur() >= 0);
}

TEST_CASE("crafted: a uid past 2^32 is refused, not wrapped to another event") {
  TempDir dir;
  write_file(dir.path / "t.json", deep_stack_trace(3));
  mcp::ServerOptions options;
  options.roots = {dir.path.string()};
  mcp::testing::Harness h(options);
  h.initialize();
  std::string handle =
      h.tool_result(1, "load_trace", {{"path", (dir.path / "t.json").string()}})["trace"];
  json reply = h.call_tool(2, "parent_chain", {{"trace", handle}, {"uid", (1ULL << 32) + 1}});
  REQUIRE(reply.contains("result"));
  CHECK(reply["result"].value("isError", false));
  CHECK(reply["result"].dump().find("out of range") != std::string::npos);
  json ok = h.call_tool(3, "parent_chain", {{"trace", handle}, {"uid", 1}});
  CHECK_FALSE(ok["result"].value("isError", false));
}

TEST_CASE("crafted: perf-model failures skip the op as TraceLens does and are reported") {
  // A GEMM whose first operand is 1-D: TraceLens's model raises, the op
  // leaves the GEMM sheet with a printed warning. jarvis keeps the sheet
  // equal and records the reason (it used to swallow it).
  std::string events =
      op_with_kernel("aten::mm",
                     R"("Input Dims":[[64],[32,16]],"Input type":["float","float"],)"
                     R"("Input Strides":[[1],[16,1]],"Concrete Inputs":["",""])",
                     "sm90_xmma_gemm_bf16", 1, 0);
  events.append(",").append(
      op_with_kernel("aten::mm",
                     R"("Input Dims":[[64,32],[32,16]],"Input type":["float","float"],)"
                     R"("Input Strides":[[32,1],[16,1]],"Concrete Inputs":["",""])",
                     "sm90_xmma_gemm_f32", 2, 20));
  std::string text =
      R"({"deviceProperties":[{"name":"NVIDIA H100 80GB HBM3"}],"traceEvents":[)" + events + "]}";
  Trace trace = load_trace_from_json(text);
  CallTree tree(trace);
  Report report = build_report(trace, tree, ReportOptions{});
  REQUIRE(report.model_failures.size() == 1);
  CHECK(report.model_failures[0].op == "aten::mm");
  CHECK(report.model_failures[0].count == 1);
  CHECK(report.model_failures[0].reason.find("not 2-D") != std::string::npos);
  const Table* gemm = report.find("GEMM");
  REQUIRE(gemm);
  CHECK(gemm->rows.size() == 1);  // the fp32 GEMM only

  TempDir dir;
  write_file(dir.path / "mixed.json", text);
  auto r = run_jarvis("report " + shell_quote((dir.path / "mixed.json").string()) +
                      " --no-xlsx --out " + shell_quote((dir.path / "out").string()));
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("warning: perf model failed for 1 op(s) of aten::mm") != std::string::npos);

  // The agent sees the same over MCP, in ops_summary.
  mcp::ServerOptions options;
  options.roots = {dir.path.string()};
  mcp::testing::Harness h(options);
  h.initialize();
  json loaded = h.tool_result(1, "load_trace", {{"path", (dir.path / "mixed.json").string()}});
  json summary = h.tool_result(2, "ops_summary", {{"trace", loaded["trace"]}});
  REQUIRE(summary.contains("model_failures"));
  REQUIRE(summary["model_failures"].size() == 1);
  CHECK(summary["model_failures"][0]["op"] == "aten::mm");
  CHECK(summary["model_failures"][0]["count"] == 1);
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
