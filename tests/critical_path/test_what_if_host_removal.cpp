// What-if of the host fixes an agent proposes (issue 64 point 5): host ops
// taken out by name, uid or python frame, or only their syncs' waits; each
// host finding names the what_if arguments that size it. Expectations come
// from the raw events of ../shared/ab_pairs traces, read here with
// nlohmann::json, never from the engine's own tables.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "critical_path/critical_path.h"
#include "golden.h"
#include "insights/insights.h"
#include "mcp_harness.h"
#include "perf/gpu_arch.h"
#include "raw_timeline.h"
#include "test_loader_support.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace cp = jarvis::critical_path;
using nlohmann::json;

namespace {

std::string ab(const std::string& file) {
  return jarvis::golden::shared_dir() + "/ab_pairs/" + file;
}

struct Loaded1 {
  jarvis::Trace trace;
  std::unique_ptr<jarvis::CallTree> tree;
  cp::Graph graph;
  std::vector<cp::RankInput> inputs() const { return {{&trace, tree.get(), -1}}; }
};

std::unique_ptr<Loaded1> load(const std::string& file) {
  auto l = std::make_unique<Loaded1>();
  l->trace = jarvis::load_trace(ab(file));
  l->tree = std::make_unique<jarvis::CallTree>(l->trace);
  l->graph = cp::build_graph(l->inputs());
  return l;
}

// The raw trace's complete host events named `name`: their count and the
// union of their spans per (pid, tid).
struct RawMatch {
  size_t events = 0;
  double union_us = 0;
};

RawMatch raw_named(const std::string& file, const std::string& name) {
  const json raw = json::parse(jarvis::loader_test::gunzip_file(ab(file)));
  std::map<std::string, jarvis::testing::Intervals> by_thread;
  RawMatch m;
  for (const auto& e : raw["traceEvents"]) {
    if (e.value("ph", "") != "X" || e.value("name", "") != name || !e.contains("dur")) continue;
    const std::string cat = e.value("cat", "");
    if (cat != "cpu_op" && cat != "user_annotation" && cat != "python_function" &&
        cat != "cuda_runtime" && cat != "cuda_driver")
      continue;
    ++m.events;
    const double ts = e["ts"].get<double>(), dur = e["dur"].get<double>();
    by_thread[e["pid"].dump() + "/" + e["tid"].dump()].emplace_back(ts, ts + dur);
  }
  for (const auto& [thread, spans] : by_thread) m.union_us += jarvis::testing::union_length(spans);
  return m;
}

cp::HostRemoval removal_of(const json& args) {
  cp::HostRemoval rm;
  if (args.contains("remove_ops")) rm.ops = args["remove_ops"].get<std::vector<std::string>>();
  if (args.contains("remove_uids")) rm.uids = args["remove_uids"].get<std::vector<jarvis::Uid>>();
  rm.python_frame = args.value("remove_python_frame", "");
  rm.waits_only = args.value("remove_waits_only", false);
  return rm;
}

double saving_per_step(const cp::WhatIfResult& r) {
  return r.measured_step_time_us - r.predicted_step_time_us;
}

}  // namespace

TEST_SUITE("critical_path") {
  TEST_CASE("what-if host removal: the matched events and their time are the raw trace's") {
    auto l = load("s_mask_sync_A_boolean_index.json.gz");
    for (const std::string name : {"aten::nonzero", "aten::index", "cudaStreamSynchronize"}) {
      CAPTURE(name);
      const RawMatch raw = raw_named("s_mask_sync_A_boolean_index.json.gz", name);
      if (raw.events == 0) continue;
      cp::Scenario sc;
      cp::HostRemoval rm;
      rm.ops = {name};
      const cp::HostRemovalMatch m = cp::add_host_removal(l->inputs(), l->graph, rm, sc);
      CHECK(m.events == raw.events);
      CHECK(m.host_us == doctest::Approx(raw.union_us).epsilon(1e-6));
      const cp::WhatIfResult r = cp::what_if(l->graph, sc);
      // Removing host work never lengthens the step. It may save more than
      // it removes: without a sync the host runs ahead, and its later work
      // overlaps the GPU's. removed_us (host gaps, calls and GPU work taken
      // out, the syncs' recorded waits) stays within the step.
      CHECK(r.predicted_step_time_us <= r.measured_step_time_us + 1e-6);
      CHECK(r.removed_us > 0);
      CHECK(r.removed_us <= r.measured_step_time_us);
      CHECK(r.changes.front().find("host event(s) matching") != std::string::npos);
    }
    // The boolean index's nonzero syncs: keeping the ops but not their
    // waits saves time on this step, and less than removing the ops whole.
    cp::Scenario waits, whole;
    cp::HostRemoval rm;
    rm.ops = {"aten::nonzero"};
    const auto mw = [&] {
      cp::HostRemoval w = rm;
      w.waits_only = true;
      return cp::add_host_removal(l->inputs(), l->graph, w, waits);
    }();
    CHECK(mw.syncs > 0);
    CHECK(waits.remove_host.empty());
    CHECK(waits.remove_gpu.empty());
    cp::add_host_removal(l->inputs(), l->graph, rm, whole);
    const cp::WhatIfResult rw = cp::what_if(l->graph, waits);
    const double w = saving_per_step(rw);
    // A wait taken out removes its own lag, never more than the step holds.
    CHECK(rw.removed_us > 0);
    CHECK(rw.removed_us <= rw.measured_step_time_us);
    const double o = saving_per_step(cp::what_if(l->graph, whole));
    CHECK(w > 0);
    CHECK(o >= w - 1.0);
  }

  TEST_CASE("what-if host removal: each host finding's what_if arguments give its saving") {
    static const auto arch = jarvis::perf::load_gpu_arch("H200");
    size_t checked = 0;
    for (const std::string file :
         {"s_mask_sync_A_boolean_index.json.gz", "s_loader_A_workers0.json.gz",
          "s_overhead_gpt2_shapes.json.gz"}) {
      CAPTURE(file);
      auto l = load(file);
      const auto found =
          jarvis::insights::run_insights(jarvis::insights::make_context(l->trace, *l->tree, &arch));
      for (const auto& i : found) {
        // Host time no op records replays through remove_host_gaps
        // (tests/insights/test_one_figure.cpp replays every finding's).
        if (i.what_if.is_null() || i.what_if.contains("remove_host_gaps")) continue;
        CAPTURE(i.rule);
        CAPTURE(i.what_if.dump());
        REQUIRE(i.step_saving_us);
        cp::Scenario sc;
        if (i.what_if.contains("kernel_uids")) {  // a GPU finding: its kernels scaled
          sc.select.gpu_uids = i.what_if["kernel_uids"].get<std::vector<jarvis::Uid>>();
          sc.factor = i.what_if["factor"].get<double>();
        } else {
          sc.remove_launch_gaps = i.what_if.value("remove_launch_gaps", false);
          cp::add_host_removal(l->inputs(), l->graph, removal_of(i.what_if), sc);
        }
        const cp::WhatIfResult r = cp::what_if(l->graph, sc);
        const double per_step =
            *i.step_saving_us / static_cast<double>(std::max<size_t>(1, i.steps));
        // The finding's own scenario counts the syncs / loader calls inside
        // the steps; the tool's arguments name them over the whole trace.
        CHECK(std::max(0.0, saving_per_step(r)) ==
              doctest::Approx(per_step).epsilon(0.05).scale(r.measured_step_time_us * 0.01));
        ++checked;
      }
    }
    CHECK(checked >= 3);  // host_sync, dataloader_main_process, launch_bound
  }

  TEST_CASE("GPU findings name their what_if too: kernel_uids and factor, over MCP (s_tf32 A)") {
    // fp32_gemm_simt on the fp32 run: its what_if arguments are the GPU work
    // of its GEMM ops (every SIMT kernel the finding names, counted here from
    // the raw trace, among them) at the factor its recoverable time leaves
    // them; the what_if tool called with them saves per step what the
    // finding says it saves.
    jarvis::mcp::testing::Harness h;
    h.initialize();
    const std::string path = ab("s_tf32_A_fp32.json.gz");
    json loaded = h.tool_result(1, "load_trace", {{"path", path}});
    json full =
        h.tool_result(2, "insights",
                      {{"trace", loaded["trace"]}, {"rule", "fp32_gemm_simt"}, {"detail", "full"}});
    REQUIRE(full["insights"].size() == 1);
    const json& finding = full["insights"][0];
    const json& args = finding["what_if"];
    REQUIRE(args.is_object());
    const auto uids = args["kernel_uids"].get<std::vector<jarvis::Uid>>();
    const double factor = args["factor"].get<double>();
    CHECK(factor > 0);
    CHECK(factor < 1);
    const std::set<std::string> names = finding["kernel_names"].get<std::set<std::string>>();
    const auto raw = json::parse(jarvis::loader_test::gunzip_file(path));
    size_t raw_kernels = 0;
    for (const auto& e : raw["traceEvents"])
      if (e.value("cat", "") == "kernel" && names.count(e.value("name", ""))) ++raw_kernels;
    REQUIRE(raw_kernels > 0);
    auto l = load("s_tf32_A_fp32.json.gz");
    // The finding's kernels inside the profiled steps: at most the raw ones
    // (warm-up launches sit outside), their time the finding's time.
    size_t named = 0;
    double named_us = 0;
    for (jarvis::Uid u : uids) {
      REQUIRE(u < l->trace.events.size());
      CHECK(l->trace.events[u].is_gpu());
      if (names.count(std::string(l->trace.name(u)))) ++named, named_us += l->trace.events[u].dur();
    }
    CHECK(named > 0);
    CHECK(named <= raw_kernels);
    CHECK(named_us == doctest::Approx(finding["time_us"].get<double>()).epsilon(0.001));
    // The arguments go to what_if as they are: the trace is the handle.
    CHECK(args["trace"] == loaded["trace"]);
    json call = args;
    call["detail"] = "summary";
    json r = h.tool_result(3, "what_if", call);
    CHECK(r["saved_us"].get<double>() ==
          doctest::Approx(finding["step_saving_us_per_step"].get<double>()).epsilon(0.01));
    CHECK(r["saved_us"].get<double>() > 1000);  // the 10 ms a TF32 re-run saves, in part
    // The default reply counts the kernels and leaves the list to detail=full.
    json rows =
        h.tool_result(4, "insights", {{"trace", loaded["trace"]}, {"rule", "fp32_gemm_simt"}});
    CHECK(rows["insights"][0]["what_if"].contains("factor"));
    CHECK(!rows["insights"][0]["what_if"].contains("kernel_uids"));
  }

  TEST_CASE("a blocking wait at a step's end is named as the GPU's backlog (s_tf32 A)") {
    // The fp32 run's host queues its three steps ahead of the GPU; one
    // cudaDeviceSynchronize after the last host step waits for the backlog.
    // host_sync names that wait (from the raw events) and saves nothing.
    const std::string file = "s_tf32_A_fp32.json.gz";
    const json raw = json::parse(jarvis::loader_test::gunzip_file(ab(file)));
    double first_step = 1e300, sync_us = 0;
    for (const auto& e : raw["traceEvents"])
      if (e.value("cat", "") == "user_annotation" &&
          e.value("name", "").rfind("ProfilerStep#", 0) == 0)
        first_step = std::min(first_step, e["ts"].get<double>());
    size_t steps = 0;
    for (const auto& e : raw["traceEvents"]) {
      steps += e.value("cat", "") == "user_annotation" &&
               e.value("name", "").rfind("ProfilerStep#", 0) == 0;
      if (e.value("cat", "") == "cuda_runtime" && e.value("name", "") == "cudaDeviceSynchronize" &&
          e["ts"].get<double>() >= first_step)
        sync_us += e["dur"].get<double>();
    }
    REQUIRE(steps == 3);
    REQUIRE(sync_us > 10'000);
    static const auto arch = jarvis::perf::load_gpu_arch("H200");
    auto l = load(file);
    const auto found =
        jarvis::insights::run_insights(jarvis::insights::make_context(l->trace, *l->tree, &arch));
    const auto it = std::find_if(found.begin(), found.end(),
                                 [](const auto& i) { return i.rule == "host_sync"; });
    REQUIRE(it != found.end());
    CHECK(it->evidence["wait_us_recorded"].get<double>() == doctest::Approx(sync_us));
    REQUIRE(it->step_saving_us);
    CHECK(*it->step_saving_us == 0);
    CHECK(it->step_saving_note.find(
              fmt::format("the host ran ahead of the GPU: these syncs wait {:.2f} ms per step",
                          sync_us / static_cast<double>(steps) / 1e3)) != std::string::npos);
  }

  TEST_CASE("what-if host removal: python frames of a with_stack trace; refusals say why") {
    auto l = load("s_overhead_gpt2_shapes_stack.json.gz");
    cp::Scenario sc;
    cp::HostRemoval rm;
    rm.python_frame = "forward";
    const auto m = cp::add_host_removal(l->inputs(), l->graph, rm, sc);
    CHECK(m.events > 0);
    CHECK(m.gpu_ops > 0);  // the forward pass launches kernels
    const auto r = cp::what_if(l->graph, sc);
    CHECK(r.predicted_step_time_us < r.measured_step_time_us);

    auto plain = load("s_mask_sync_A_boolean_index.json.gz");
    auto refusal = [&](const cp::HostRemoval& bad) {
      cp::Scenario s;
      try {
        cp::add_host_removal(plain->inputs(), plain->graph, bad, s);
      } catch (const cp::CriticalPathError& e) {
        return std::string(e.what());
      }
      return std::string("(accepted)");
    };
    cp::HostRemoval frame;
    frame.python_frame = "forward";
    CHECK(refusal(frame).find("no python frames (profile with with_stack=True)") !=
          std::string::npos);
    cp::HostRemoval unknown;
    unknown.ops = {"aten::no_such_op"};
    CHECK(refusal(unknown).find("no host event matches 'aten::no_such_op'") != std::string::npos);
    // A kernel is not a host event.
    cp::HostRemoval kernel;
    for (jarvis::Uid u = 0; u < plain->trace.events.size(); ++u)
      if (plain->trace.events[u].cat == jarvis::Cat::Kernel) {
        kernel.uids = {u};
        break;
      }
    REQUIRE(!kernel.uids.empty());
    CHECK(refusal(kernel).find("is not a host event") != std::string::npos);
  }

  TEST_CASE("what-if host removal over MCP: remove_ops, remove_waits_only, refusals") {
    jarvis::mcp::testing::Harness h;
    h.initialize();
    const std::string trace = ab("s_mask_sync_A_boolean_index.json.gz");
    json r = h.tool_result(1, "what_if",
                           {{"traces", json::array({trace})},
                            {"remove_ops", json::array({"aten::nonzero"})},
                            {"remove_waits_only", true},
                            {"detail", "summary"}});
    auto l = load("s_mask_sync_A_boolean_index.json.gz");
    cp::Scenario sc;
    cp::HostRemoval rm;
    rm.ops = {"aten::nonzero"};
    rm.waits_only = true;
    cp::add_host_removal(l->inputs(), l->graph, rm, sc);
    const auto expected = cp::what_if(l->graph, sc);
    CHECK(r["predicted_step_time_us"].get<double>() ==
          doctest::Approx(expected.predicted_step_time_us));
    json bad =
        h.call_tool(2, "what_if", {{"traces", json::array({trace})}, {"remove_waits_only", true}});
    CHECK(bad["result"]["isError"] == true);
    CHECK(bad["result"]["content"][0]["text"].get<std::string>().find("remove_waits_only needs") !=
          std::string::npos);
    json none = h.call_tool(
        3, "what_if", {{"traces", json::array({trace})}, {"remove_ops", json::array({"x::y"})}});
    CHECK(none["result"]["isError"] == true);
    CHECK(none["result"]["content"][0]["text"].get<std::string>().find("no host event matches") !=
          std::string::npos);
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
