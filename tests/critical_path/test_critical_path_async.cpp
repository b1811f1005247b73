// Critical path and what-if on asynchronous programs: a host that runs ahead
// of its GPU (docs/critical-path.md, "Iterations"). Expected values come from
// the raw events of the real traces in ../shared (kernels' ts / dur, the
// runtime calls' correlation ids, ProfilerStep annotations), never from the
// engine, or from tools/make_async_training_traces.py, which simulates an
// asynchronous training job and writes its truth.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>

#include <nlohmann/json.hpp>

#include "categories/category_analysis.h"
#include "categories/final_report.h"
#include "categories/findings.h"
#include "categories/prepare_trace.h"
#include "categories/what_if_impact.h"
#include "critical_path/critical_path.h"
#include "golden.h"
#include "pycompat/text.h"
#include "raw_timeline.h"
#include "test_analysis_support.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace cp = jarvis::critical_path;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using jarvis::testing::Intervals;
using jarvis::testing::union_length;

// The part of [a, b] inside [lo, hi].
double overlap(double a, double b, double lo, double hi) {
  return std::max(0.0, std::min(b, hi) - std::max(a, lo));
}

// A GEMM kernel by its name alone (cuBLAS / cuBLASLt / CUTLASS / hipBLASLt),
// not a convolution's implicit GEMM.
bool is_gemm_kernel(std::string_view name) {
  using jarvis::pycompat::ascii_icontains;
  if (ascii_icontains(name, "implicit_gemm")) return false;
  return ascii_icontains(name, "gemm") || name.starts_with("nvjet") ||
         ascii_icontains(name, "Cijk");
}

// Raw facts of one trace: GPU ops by (device, stream), the runtime calls by
// correlation, the ProfilerStep annotations.
struct Raw {
  jarvis::Trace trace;
  std::map<std::pair<int64_t, int64_t>, std::vector<jarvis::Uid>> streams;
  std::map<int64_t, jarvis::Uid> call_of;  // correlation -> runtime call
  std::vector<jarvis::Uid> steps;

  explicit Raw(const std::string& path) : trace(jarvis::load_trace(path)) {
    for (jarvis::Uid u = 0; u < trace.events.size(); ++u) {
      const auto& e = trace.events[u];
      if (e.is_runtime() && trace.correlation(e) != jarvis::kNoInt)
        call_of.emplace(trace.correlation(e), u);
      if (e.is_gpu() && e.has_ts() && e.has_dur())
        streams[{trace.device(e), trace.stream(e)}].push_back(u);
      if (e.cat == jarvis::Cat::UserAnnotation && trace.name(u).starts_with("ProfilerStep#"))
        steps.push_back(u);
    }
  }
  // When the runtime call that launched a GPU op started, if recorded.
  std::optional<double> launched_at(jarvis::Uid gpu) const {
    auto it = call_of.find(trace.correlation(trace.events[gpu]));
    if (it == call_of.end()) return std::nullopt;
    return trace.events[it->second].ts();
  }
  // GPU busy time of the busiest stream inside [lo, hi], with the durations
  // of the ops `scaled` picks multiplied by factor.
  double busiest_stream(double lo, double hi, const std::function<bool(jarvis::Uid)>& scaled = {},
                        double factor = 1) const {
    double best = 0;
    for (const auto& [key, ops] : streams) {
      double busy = 0;
      for (jarvis::Uid u : ops) {
        const auto& e = trace.events[u];
        busy += overlap(e.ts(), e.end(), lo, hi) * (scaled && scaled(u) ? factor : 1.0);
      }
      best = std::max(best, busy);
    }
    return best;
  }
  // GEMM kernel time on the GPU's busy timeline inside [lo, hi] (a single
  // stream: their clipped durations).
  double gemm_busy(double lo, double hi) const {
    Intervals v;
    for (const auto& [key, ops] : streams)
      for (jarvis::Uid u : ops)
        if (is_gemm_kernel(trace.name(u))) {
          const auto& e = trace.events[u];
          if (overlap(e.ts(), e.end(), lo, hi) > 0)
            v.emplace_back(std::max(e.ts(), lo), std::min(e.end(), hi));
        }
    return union_length(v);
  }
};

// The one ProfilerStep of a conformance trace as the engine must bound it:
// from its start until the host left it and the GPU ops launched inside it
// (by their runtime call's start) ended.
struct RawIteration {
  double start = 0, host_end = 0, gpu_end = -1e300;
  double end() const { return std::max(host_end, gpu_end); }
};

// A host window [start, host_end) and the end of the GPU work launched in it.
RawIteration raw_iteration(const Raw& raw, double start, double host_end) {
  RawIteration it{start, host_end};
  for (const auto& [key, ops] : raw.streams)
    for (jarvis::Uid u : ops)
      if (auto t = raw.launched_at(u); t && *t >= start && *t < host_end)
        it.gpu_end = std::max(it.gpu_end, raw.trace.events[u].end());
  return it;
}

RawIteration raw_iteration(const Raw& raw, jarvis::Uid step) {
  const auto& s = raw.trace.events[step];
  return raw_iteration(raw, s.ts(), s.end());
}

// The path's host-side categories (docs/critical-path.md).
bool is_host_side(const std::string& category) {
  return category == "host_gap" || category == "host_runtime" || category == "launch_latency" ||
         category == "sync";
}

std::string shared(const std::string& rel) {
  return jarvis::golden::shared_dir() + "/" + rel;
}

// Every trace in ../shared the engine is meant to take (one GPU each).
std::vector<std::string> shared_traces() {
  std::vector<std::string> out;
  for (const char* dir : {"conformance", "nccl", "legacy"})
    for (const auto& d : fs::directory_iterator(shared(dir)))
      if (fs::exists(d.path() / "trace.json.gz"))
        out.push_back((d.path() / "trace.json.gz").string());
  for (const auto& d : fs::directory_iterator(shared("hw_pairs")))
    for (const char* gpu : {"h100.json.gz", "h200.json.gz"})
      if (fs::exists(d.path() / gpu)) out.push_back((d.path() / gpu).string());
  std::sort(out.begin(), out.end());
  return out;
}

struct Job {
  std::string dir;
  int ranks = 0;
  json truth;
  std::vector<std::string> paths() const {
    std::vector<std::string> out;
    for (int r = 0; r < ranks; ++r) out.push_back(dir + "/rank" + std::to_string(r) + ".json.gz");
    return out;
  }
};

const Job& async_job(const std::string& name, int ranks, const std::string& args) {
  static jarvis::testing::TempDir root;
  static std::mutex mu;
  static std::map<std::string, Job> jobs;
  std::lock_guard lock(mu);
  if (auto it = jobs.find(name); it != jobs.end()) return it->second;
  Job j{root.path + "/" + name, ranks, {}};
  std::string cmd = "python3 '" + std::string(JARVIS_SOURCE_DIR) +
                    "/tools/make_async_training_traces.py' --out '" + j.dir + "' --ranks " +
                    std::to_string(ranks) + " " + args;
  REQUIRE_MESSAGE(std::system(cmd.c_str()) == 0, cmd);
  std::ifstream truth(j.dir + "/truth.json");
  j.truth = json::parse(truth);
  return jobs.emplace(name, std::move(j)).first->second;
}

// The generated jobs: one GPU with data-loader stalls, the same with its
// GEMMs in a CUDA graph, and four ranks with a straggler and no recorded
// cross-stream waits.
const Job& single_async() {
  return async_job("async1", 1, "--lead-us 500 --stall-us 2000 --stall-every 1");
}
const Job& graph_async() {
  return async_job("async1g", 1, "--lead-us 300 --cuda-graph --sync-every 2");
}
const Job& multi_async() {
  return async_job("async4", 4, "--gemm-us 50,50,80,52 --lead-us 800 --sync-every 3");
}

cp::Scenario gemm_scaled(double factor) {
  cp::Scenario sc;
  sc.select.category = "GEMM";
  sc.factor = factor;
  return sc;
}

// The same scenario on the trace's recorded host: the expectations computed
// from the raw events (and the simulator's truth) are of the recorded times.
cp::Scenario on_recorded(cp::Scenario sc) {
  sc.recorded_host = true;
  return sc;
}

cp::Scenario no_host_gaps() {
  cp::Scenario sc;
  sc.remove_launch_gaps = true;
  return sc;
}

// The invariants every replay must keep (issue 47), on one graph.
void check_invariants(const cp::Graph& g, const std::vector<const jarvis::Trace*>& traces) {
  const cp::Analysis measured = cp::analyse(g);
  const cp::Analysis unprofiled_analysis = cp::analyse_unprofiled(g);
  REQUIRE(!measured.iterations.empty());
  // The path's time adds up to each iteration's length, the contributors to
  // the step, and no piece of it is negative (a GPU op that starts before its
  // launch call, in a real trace, gave a sync a negative share), recorded or
  // without the profiler.
  for (const cp::Analysis* a : {&measured, &unprofiled_analysis}) {
    for (const auto& it : a->iterations)
      for (const auto& seg : it.path) CHECK(seg.dur_us >= 0);
    for (const auto& c : a->contributors) CHECK(c.time_us >= 0);
  }
  for (const auto& it : measured.iterations) {
    CAPTURE(it.name);
    CHECK(it.path_length_us == doctest::Approx(it.length_us).epsilon(1e-9));
    CHECK((it.bound_by == "gpu" || it.bound_by == "host" || it.bound_by == "communication"));
    CHECK(!it.bound_reason.empty());
  }
  double shares = 0;
  for (const auto& c : measured.contributors) shares += c.share;
  CHECK(shares == doctest::Approx(1.0).epsilon(1e-9));
  CHECK(!measured.summary.empty());
  const size_t n = measured.iterations.size();
  // Per stream, busy time of the ops inside the measured iterations: a
  // replay cannot run one stream's work in less (averaged over iterations,
  // as windows may shift between iterations). Only ops launched inside the
  // iterations: work queued before them (the GPU's backlog from before
  // profiling) is not the steps' own, and the un-profiled replay leaves it out.
  auto busiest = [&](double factor, bool gemm_only) {
    double best = 0;
    for (size_t r = 0; r < traces.size(); ++r) {
      const jarvis::Trace& t = *traces[r];
      const double off = g.clock_offset_us.at(g.ranks[r]);
      double first = 1e300;
      for (const auto& it : measured.iterations) first = std::min(first, it.start_us - off);
      std::map<int64_t, double> launched_at;  // correlation -> runtime call start
      for (const auto& e : t.events)
        if (e.is_runtime() && t.correlation(e) != jarvis::kNoInt)
          launched_at.emplace(t.correlation(e), e.ts());
      std::map<std::pair<int64_t, int64_t>, double> busy;
      for (jarvis::Uid u = 0; u < t.events.size(); ++u) {
        const auto& e = t.events[u];
        if (!e.is_gpu() || !e.has_ts() || !e.has_dur()) continue;
        const auto launch = launched_at.find(t.correlation(e));
        if (launch == launched_at.end() || launch->second < first) continue;
        double inside = 0;
        for (const auto& it : measured.iterations)
          inside += overlap(e.ts() + off, e.end() + off, it.start_us, it.end_us);
        busy[{t.device(e), t.stream(e)}] +=
            inside * (gemm_only && is_gemm_kernel(t.name(u)) ? factor : 1.0);
      }
      for (const auto& [key, b] : busy) best = std::max(best, b);
    }
    return best / static_cast<double>(n);
  };
  const double tol = 1e-6 * measured.step_time_us + 1e-6;
  // A factor < 1 never makes a step longer; the step stays above its busiest
  // stream's work after the change.
  for (double factor : {0.5, 0.1}) {
    CAPTURE(factor);
    cp::WhatIfResult r;
    try {
      r = cp::what_if(g, gemm_scaled(factor));
    } catch (const cp::CriticalPathError&) {
      continue;  // no GEMM in this trace
    }
    CHECK(r.predicted_step_time_us <= measured.step_time_us + tol);
    CHECK(!r.summary.empty());
    for (const auto& it : r.predicted.iterations)
      CHECK(it.path_length_us == doctest::Approx(it.length_us).epsilon(1e-9));
  }
  cp::Scenario all_gpu;
  all_gpu.select.kernel = "";  // every GPU op
  all_gpu.factor = 0.5;
  const auto halved = cp::what_if(g, all_gpu);
  CHECK(halved.predicted_step_time_us <= measured.step_time_us + tol);
  // A CUDA graph of the step (launch calls and host gaps removed, on the
  // un-profiled host): never longer than the un-profiled step, which is never
  // longer than the recorded one, and never below the busiest stream's busy
  // time (the kernels keep their durations); on the recorded host the same.
  const auto fast_host = cp::what_if(g, no_host_gaps());
  CHECK(fast_host.measured_step_time_us <= measured.step_time_us + tol);
  CHECK(fast_host.predicted_step_time_us <= fast_host.measured_step_time_us + tol);
  CHECK(fast_host.predicted_step_time_us >= busiest(1.0, false) - 0.01 * measured.step_time_us);
  CHECK(fast_host.predicted_profiled_step_time_us <= measured.step_time_us + tol);
  CHECK(fast_host.recorded_step_time_us == doctest::Approx(measured.step_time_us));
  // A step GPU-bound without the profiler gains at most the GPU idle time
  // inside its un-profiled iterations.
  const cp::Analysis unprofiled = cp::analyse_unprofiled(g);
  bool all_gpu_bound = true;
  double idle = 0;
  for (const auto& it : unprofiled.iterations) {
    all_gpu_bound &= it.bound_by == "gpu";
    double worst = 0;
    for (const auto& [rank, t] : it.gpu_idle_us) worst = std::max(worst, t);
    idle += worst / static_cast<double>(n);
  }
  if (all_gpu_bound)
    CHECK(fast_host.measured_step_time_us - fast_host.predicted_step_time_us <= idle + tol);
}

}  // namespace

TEST_SUITE("critical_path") {
  TEST_CASE("critical path async: invariants on every trace in ../shared") {
    const auto paths = shared_traces();
    REQUIRE(paths.size() >= 15);
    size_t checked = 0;
    for (const std::string& path : paths) {
      CAPTURE(path);
      cp::Loaded loaded;
      try {
        loaded = cp::load_graph({path});
      } catch (const cp::CriticalPathError& e) {
        MESSAGE("no graph: " << e.what());  // no GPU work (a host-only capture)
        continue;
      }
      check_invariants(loaded.graph, {loaded.traces[0].get()});
      ++checked;
    }
    CHECK(checked >= 14);
  }

  TEST_CASE("critical path async: invariants on the generated jobs") {
    for (const Job* j : {&single_async(), &graph_async(), &multi_async()}) {
      CAPTURE(j->dir);
      auto loaded = cp::load_graph(j->paths());
      std::vector<const jarvis::Trace*> traces;
      for (const auto& t : loaded.traces) traces.push_back(t.get());
      check_invariants(loaded.graph, traces);
    }
  }

  TEST_CASE("critical path async: an iteration ends when its GPU work does (Qwen, one step)") {
    const Raw raw(shared("conformance/h100_qwen1.5-0.5b/trace.json.gz"));
    REQUIRE(raw.steps.size() == 1);
    const RawIteration want = raw_iteration(raw, raw.steps[0]);
    REQUIRE(want.gpu_end > want.host_end);  // the GPU finishes 2.2 ms after the host's step
    auto loaded = cp::load_graph({shared("conformance/h100_qwen1.5-0.5b/trace.json.gz")});
    const cp::Analysis a = cp::analyse(loaded.graph);
    REQUIRE(a.iterations.size() == 1);
    const auto& it = a.iterations[0];
    CHECK(it.start_us == doctest::Approx(want.start).epsilon(1e-12));
    CHECK(it.end_us == doctest::Approx(want.end()).epsilon(1e-12));
    CHECK(it.host_end_us == doctest::Approx(want.host_end).epsilon(1e-12));
    CHECK(it.gpu_end_us == doctest::Approx(want.gpu_end).epsilon(1e-12));
    CHECK(it.bound_by == "gpu");
    CHECK(it.bound_reason.find("after the host's step end") != std::string::npos);
    // No change to launch gaps brings the step below the GPU's busy time in
    // the ProfilerStep (43.3 ms of 47.2 ms; one stream).
    const auto& s = raw.trace.events[raw.steps[0]];
    const double busy_in_step = raw.busiest_stream(s.ts(), s.end());
    CHECK(busy_in_step > 43000);
    const auto no_gaps = cp::what_if(loaded.graph, on_recorded(no_host_gaps()));
    CHECK(no_gaps.predicted_step_time_us >= busy_in_step);
    CHECK(no_gaps.predicted_step_time_us >= raw.busiest_stream(want.start, want.end()) - 1e-6);
  }

  TEST_CASE("critical path async: GEMM x 0.5 on Qwen (H100): what the GPU-bound part gains") {
    // One stream. The step opens with a cudaDeviceSynchronize that waits
    // 14 ms for earlier GPU work: every GEMM microsecond before it returns is
    // on the path (the host resumes that much earlier). After it the host
    // launches about as fast as the GPU runs: halved GEMMs there let the GPU
    // catch up with the host, and at least the GPU's lead at the end (its
    // work after the host's step end) is gained.
    const std::string path = shared("conformance/h100_qwen1.5-0.5b/trace.json.gz");
    const Raw raw(path);
    REQUIRE(raw.steps.size() == 1);
    const RawIteration it = raw_iteration(raw, raw.steps[0]);
    double sync_return = 0;
    for (jarvis::Uid u = 0; u < raw.trace.events.size(); ++u) {
      const auto& e = raw.trace.events[u];
      if (e.is_runtime() && raw.trace.name(u) == "cudaDeviceSynchronize" && e.ts() >= it.start &&
          e.ts() < it.host_end && sync_return == 0)
        sync_return = e.end();
    }
    REQUIRE(sync_return > it.start);
    const double gemm = raw.gemm_busy(it.start, it.end());
    const double gemm_before_sync = raw.gemm_busy(it.start, sync_return);
    REQUIRE(gemm > 0.2 * (it.end() - it.start));
    auto loaded = cp::load_graph({path});
    const auto r = cp::what_if(loaded.graph, on_recorded(gemm_scaled(0.5)));
    const double saved = r.measured_step_time_us - r.predicted_step_time_us;
    MESSAGE("Qwen: step " << r.measured_step_time_us << " us, GEMM " << gemm << " us ("
                          << gemm_before_sync << " before the sync returns), saved " << saved);
    CHECK(saved >= 0.5 * gemm_before_sync);
    CHECK(saved <= 0.5 * gemm + 1e-6);
    CHECK(r.summary.find("bound by gpu -> host") != std::string::npos);
  }

  TEST_CASE("critical path async: GPT-2 training is host-bound where its GPU catches up") {
    // No ProfilerStep: two optimizer steps. The GPU is idle 32% of its
    // span, the forward pass waits for launches and the loop ends with
    // optimizer kernels that start soon after they are launched: a faster GPU
    // cannot end it much earlier, removing host gaps can.
    const std::string path = shared("hw_pairs/gpt2_train/h100.json.gz");
    const Raw raw(path);
    double lo = 1e300, hi = -1e300;
    Intervals busy;
    jarvis::Uid last = jarvis::kNoUid;
    for (const auto& [key, ops] : raw.streams)
      for (jarvis::Uid u : ops) {
        const auto& e = raw.trace.events[u];
        lo = std::min(lo, e.ts());
        if (e.end() > hi) {
          hi = e.end();
          last = u;
        }
        busy.emplace_back(e.ts(), e.end());
      }
    const double idle_share = 1 - union_length(busy) / (hi - lo);
    REQUIRE(idle_share > 0.25);
    REQUIRE(raw.launched_at(last).has_value());
    const double lead_at_end = raw.trace.events[last].ts() - *raw.launched_at(last);
    auto loaded = cp::load_graph({path});
    const cp::Analysis a = cp::analyse(loaded.graph);
    // No ProfilerStep: the iterations are the optimizer's steps. Each ends
    // where an Optimizer.step# annotation ends and the GPU work launched
    // before it (on any thread: autograd's engine thread launches the
    // backward pass) ran; the first begins at the step thread's first op.
    CHECK(a.iterations_source == "optimizer_step");
    std::vector<jarvis::Uid> opt;
    for (jarvis::Uid u = 0; u < raw.trace.events.size(); ++u)
      if (raw.trace.events[u].cat == jarvis::Cat::UserAnnotation &&
          raw.trace.name(u).starts_with("Optimizer.step#"))
        opt.push_back(u);
    REQUIRE(opt.size() == 2);
    const auto& first_step = raw.trace.events[opt.front()];
    double first_op = first_step.ts();
    for (const auto& e : raw.trace.events)
      if (e.cat == jarvis::Cat::CpuOp && e.thread == first_step.thread)
        first_op = std::min(first_op, e.ts());
    REQUIRE(a.iterations.size() == 2);
    double start = first_op;
    for (size_t k = 0; k < opt.size(); ++k) {
      CAPTURE(k);
      const RawIteration want = raw_iteration(raw, start, raw.trace.events[opt[k]].end());
      CHECK(a.iterations[k].start_us == doctest::Approx(start).epsilon(1e-12));
      CHECK(a.iterations[k].end_us == doctest::Approx(want.end()).epsilon(1e-12));
      start = std::max(want.end(), raw.trace.events[opt[k]].end());
    }
    // Why host-bound although the GPU runs up to 9.8 ms behind inside the
    // backward pass: it has caught up before the optimizer's first launch
    // (the GPU waits for the host at the loop's turn), and the forward pass
    // after it waits for launches. A faster GPU cannot shorten that period.
    for (jarvis::Uid step : opt) {
      const auto& s = raw.trace.events[step];
      double first_launch = 1e300, done_before = -1e300;
      for (const auto& [key, ops] : raw.streams)
        for (jarvis::Uid u : ops)
          if (auto t = raw.launched_at(u); t && *t >= s.ts() && *t < s.end())
            first_launch = std::min(first_launch, *t);
      for (const auto& [key, ops] : raw.streams)
        for (jarvis::Uid u : ops)
          if (auto t = raw.launched_at(u); t && *t < first_launch)
            done_before = std::max(done_before, raw.trace.events[u].end());
      CHECK(done_before < first_launch);
    }
    // The step is the loop's period: within 5% of the host's period from one
    // optimizer step's start to the next.
    CHECK(a.iterations[1].length_us ==
          doctest::Approx(raw.trace.events[opt[1]].ts() - first_step.ts()).epsilon(0.05));
    for (const auto& it : a.iterations) CHECK(it.bound_by == "host");
    CHECK(a.summary.find("host-bound in 2 of 2") != std::string::npos);
    const auto gemm = cp::what_if(loaded.graph, on_recorded(gemm_scaled(0.5)));
    const double saved = gemm.measured_step_time_us - gemm.predicted_step_time_us;
    MESSAGE("GPT-2: step " << a.step_time_us << " us, GEMM x 0.5 saves " << saved
                           << " us; GPU lead at the end " << lead_at_end << " us");
    CHECK(saved >= -1e-6);
    CHECK(saved <= lead_at_end + 1e-6);
    const auto gaps = cp::what_if(loaded.graph, on_recorded(no_host_gaps()));
    CHECK(gaps.measured_step_time_us - gaps.predicted_step_time_us >
          0.5 * idle_share * gaps.measured_step_time_us);
    // The main thread waits in loss.backward() while autograd's engine
    // thread launches the backward pass: the path follows the launching
    // thread (hand-over edges), so no host gap on it spans another thread's
    // launches, and an ideal host leaves no untraced start behind.
    std::vector<double> launches;
    for (const auto& [key, ops] : raw.streams)
      for (jarvis::Uid u : ops)
        if (auto t = raw.launched_at(u)) launches.push_back(*t);
    std::sort(launches.begin(), launches.end());
    bool handed_over = false;
    for (const auto& it : a.iterations)
      for (const auto& seg : it.path) {
        handed_over |= seg.kind() == "host_handover";
        if (seg.category() != "host_gap") continue;
        const auto lo = std::upper_bound(launches.begin(), launches.end(), seg.start_us);
        const auto hi =
            std::lower_bound(launches.begin(), launches.end(), seg.start_us + seg.dur_us);
        CAPTURE(seg.start_us);
        CAPTURE(seg.dur_us);
        CHECK(std::distance(lo, hi) <= 1);
      }
    CHECK(handed_over);
    for (const auto& c : gaps.predicted.contributors) CHECK(c.category != "untraced");
    CHECK(gaps.predicted.iterations.back().bound_by == "gpu");
  }

  TEST_CASE("critical path async: generated jobs: iterations, bounds, step and what-ifs") {
    for (const Job* j : {&single_async(), &graph_async(), &multi_async()}) {
      CAPTURE(j->dir);
      const json& t = j->truth;
      auto loaded = cp::load_graph(j->paths());
      const cp::Analysis a = cp::analyse(loaded.graph);
      REQUIRE(a.iterations.size() == t["iterations"].size());
      for (size_t k = 0; k < a.iterations.size(); ++k) {
        const auto& got = a.iterations[k];
        const auto& want = t["iterations"][k];
        CAPTURE(got.name);
        CAPTURE(got.bound_reason);
        CHECK(got.name == want["name"]);
        CHECK(got.start_us == doctest::Approx(want["start_us"].get<double>()).epsilon(1e-12));
        CHECK(got.end_us == doctest::Approx(want["end_us"].get<double>()).epsilon(1e-12));
        CHECK(got.bound_by == want["bound_by"]);
        CHECK(got.path_length_us == doctest::Approx(got.length_us).epsilon(1e-9));
      }
      CHECK(a.step_time_us == doctest::Approx(t["step_time_us"].get<double>()).epsilon(1e-12));
      // The results explain themselves: one line each, and per iteration.
      const json summary = cp::analysis_json(a, 3);
      CHECK(summary["summary"].get<std::string>().starts_with("step "));
      CHECK(summary["summary"].get<std::string>().find("gpu-bound in") != std::string::npos);
      CHECK(summary["iterations"][0]["bound_by"] == a.iterations[0].bound_by);
      CHECK(summary["iterations"][0]["bound_reason"].get<std::string>().starts_with("path: "));
      CHECK(loaded.graph.launch_latency_us.at(0) ==
            doctest::Approx(t["launch_latency_us"].get<double>()));
      const auto half = cp::what_if(loaded.graph, on_recorded(gemm_scaled(0.5)));
      const json half_json = cp::what_if_json(half, gemm_scaled(0.5), 3);
      CHECK(half_json["summary"].get<std::string>().find("reaches the step time") !=
            std::string::npos);
      CHECK(half_json["removed_us"].get<double>() > 0);
      CHECK(half.predicted_step_time_us ==
            doctest::Approx(t["what_if_gemm_half"]["predicted_step_time_us"].get<double>())
                .epsilon(1e-9));
      const auto gaps = cp::what_if(loaded.graph, on_recorded(no_host_gaps()));
      CHECK(gaps.predicted_step_time_us ==
            doctest::Approx(t["what_if_no_host_gaps"]["predicted_step_time_us"].get<double>())
                .epsilon(1e-9));
      if (j->ranks > 1) {
        cp::Scenario fast;
        fast.select.rank = t["straggler"].get<int64_t>();
        fast.select.category = "GEMM";
        fast.factor = t["what_if_fastest_other"]["factor"].get<double>();
        CHECK(cp::what_if(loaded.graph, on_recorded(fast)).predicted_step_time_us ==
              doctest::Approx(t["what_if_fastest_other"]["predicted_step_time_us"].get<double>())
                  .epsilon(1e-9));
      }
    }
  }

  TEST_CASE("critical path async: a straggler behind unrecorded waits leads the path") {
    const Job& j = multi_async();
    auto loaded = cp::load_graph(j.paths());
    CHECK(loaded.graph.recorded_waits == 0);
    const cp::Analysis a = cp::analyse(loaded.graph);
    const int64_t straggler = j.truth["straggler"].get<int64_t>();
    REQUIRE(!a.contributors.empty());
    const auto& top = a.contributors.front();
    CHECK(top.rank == straggler);
    CHECK(top.category == "GEMM");
    for (const auto& c : a.contributors) {
      if (c.category == "GEMM") CHECK(c.rank == straggler);
      if (is_host_side(c.category)) CHECK(c.share < top.share);
    }
  }
}

TEST_SUITE("critical_path") {
  TEST_CASE("critical path async: impact_what_if finds kernels launched under child ops") {
    namespace an = jarvis::analysis;
    struct Case {
      const char* trace;
      const char* category;
    };
    // SDPA: aten::scaled_dot_product_attention launches its flash kernel two
    // ops down (_scaled_dot_product_flash_attention, _flash_attention_forward).
    for (const Case& c : {Case{"hw_pairs/gpt2_train/h100.json.gz", "gemm"},
                          Case{"hw_pairs/resnet50_train/h100.json.gz", "conv_fwd"},
                          Case{"conformance/h100_qwen1.5-0.5b/trace.json.gz", "sdpa_fwd"}}) {
      CAPTURE(c.trace);
      const Raw raw(shared(c.trace));
      jarvis::testing::TempDir tmp;
      an::TracePrepareOptions o;
      o.platform = "H100";
      o.output_dir = tmp.path;
      o.category = c.category;
      o.trace_path = shared(c.trace);
      an::prepare_from_trace(raw.trace, o);
      auto res = an::analyze_category(tmp.path, c.category);
      REQUIRE(res.status == "OK");
      const an::ojson w = an::what_if_impacts(res.metrics, an::prepared_trace_path(tmp.path));
      REQUIRE(w["method"] == "what_if");
      REQUIRE(!w["estimates"].empty());
      for (const auto& e : w["estimates"]) {
        const std::string op = e["operation"].get<std::string>();
        CAPTURE(op);
        // From the raw events: kernels whose launch call ran inside an op of
        // that name on the same thread (at any depth below it).
        std::vector<jarvis::Uid> ops;
        for (jarvis::Uid p = 0; p < raw.trace.events.size(); ++p)
          if (raw.trace.events[p].cat == jarvis::Cat::CpuOp && raw.trace.name(p) == op)
            ops.push_back(p);
        size_t raw_kernels = 0;
        for (jarvis::Uid u = 0; u < raw.trace.events.size(); ++u) {
          const auto& k = raw.trace.events[u];
          if (!k.is_gpu()) continue;
          auto call = raw.call_of.find(raw.trace.correlation(k));
          if (call == raw.call_of.end()) continue;
          const auto& rt = raw.trace.events[call->second];
          raw_kernels += std::any_of(ops.begin(), ops.end(), [&](jarvis::Uid p) {
            const auto& o2 = raw.trace.events[p];
            return raw.trace.tid(o2).value == raw.trace.tid(rt).value && o2.ts() <= rt.ts() &&
                   rt.end() <= o2.end();
          });
        }
        REQUIRE(raw_kernels > 0);
        CHECK(e["method"] == "what_if");
        CHECK(e["kernels"].get<size_t>() > 0);
        CHECK(e["kernels"].get<size_t>() <= raw_kernels);
        if (e["method"] != "what_if") continue;
        const double ideal = e["kernel_time_ms"].get<double>() * 1000 *
                             (1 - e["factor_high"].get<double>()) / w["iterations"].get<double>();
        if (e["saving_high_us"].get<double>() < 0.05 * ideal) {
          REQUIRE(e.contains("saving_reason"));
          const std::string why = e["saving_reason"].get<std::string>();
          CHECK((why.starts_with("host-bound: GPU idle ") ||
                 why.starts_with("off the critical path: ")));
        }
      }
    }
  }

  TEST_CASE("final report: a compute finding never ranks above what its what-if saves") {
    // Issue 48 point 3: GPT-2's GEMM finding ranked 12 ms recoverable while
    // the what-if on the dependency graph saved nothing. The draft records
    // the what-if saving of its ops; final_report caps the ranking by it.
    namespace an = jarvis::analysis;
    const std::string path = shared("hw_pairs/gpt2_train/h100.json.gz");
    const Raw raw(path);
    jarvis::testing::TempDir tmp;
    an::TracePrepareOptions o;
    o.platform = "H100";
    o.output_dir = tmp.path;
    o.category = "all";
    o.trace_path = path;
    an::prepare_from_trace(raw.trace, o);
    an::analyze_category(tmp.path, "cpu_idle");  // the total time
    auto res = an::analyze_category(tmp.path, "gemm");
    REQUIRE(res.status == "OK");
    res.impact_what_if = an::what_if_impacts(res.metrics, an::prepared_trace_path(tmp.path));
    REQUIRE(res.impact_what_if["method"] == "what_if");
    const std::string draft = an::draft_findings(res);
    an::write_findings(tmp.path, "gemm", draft);  // the check accepts the marker
    an::FinalReport r = an::build_final_report(tmp.path);
    REQUIRE_FALSE(r.ranked.empty());
    size_t with_what_if = 0;
    for (const auto& item : r.ranked) {
      CAPTURE(item.title);
      if (!item.what_if_saving_pct) continue;
      ++with_what_if;
      CHECK(item.recoverable_pct.value() <= *item.what_if_saving_pct + 1e-9);
      CHECK(item.recoverable_pct.value() <= item.impact_mid.value() + 1e-9);
      if (*item.what_if_saving_pct < *item.impact_mid)
        CHECK(item.recoverable_basis == "what-if cap");
    }
    CHECK(with_what_if >= 1);
    // The marker's value is the sum of the members' what-if highs (by hand
    // from the impact_what_if estimates of the first P-item's ops).
    const auto& f0 = res.metrics["category_findings"][0];
    double expect = 0;
    bool all = true;
    for (const auto& mem : f0["members"]) {
      bool found = false;
      for (const auto& e : res.impact_what_if["estimates"])
        if (e["operation"] == mem["operation"] &&
            std::abs(e["time_ms"].get<double>() - mem["time_ms"].get<double>()) <= 5e-4 &&
            e["method"] == "what_if") {
          expect += e["impact_high_pct"].get<double>();
          found = true;
          break;
        }
      all = all && found;
    }
    for (const auto& item : r.ranked)
      if (item.category == "gemm" && item.p_item == 1) {
        if (all)
          CHECK(item.what_if_saving_pct.value() == doctest::Approx(expect).epsilon(1e-3));
        else
          CHECK_FALSE(item.what_if_saving_pct.has_value());
      }
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
