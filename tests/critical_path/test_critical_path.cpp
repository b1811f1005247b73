// Critical path and what-if. Expected values come from the generators
// (tools/make_critical_path_traces.py simulates an N-rank data-parallel job and
// writes its truth; tools/make_multirank_traces.py injects known collective
// delays into a real 2-rank trace) or from the raw events of real traces.
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
#include "categories/findings.h"
#include "categories/what_if_impact.h"
#include "critical_path/critical_path.h"
#include "golden.h"
#include "mcp_harness.h"
#include "raw_timeline.h"
#include "report/table.h"
#include "test_analysis_support.h"
#include "test_loader_support.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace cp = jarvis::critical_path;
using jarvis::loader_test::strip_profiler_steps;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

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

// Generated once per test run under one temp dir.
const Job& job(const std::string& name, const std::string& tool, int ranks,
               const std::string& args) {
  static jarvis::testing::TempDir root;
  static std::mutex mu;
  static std::map<std::string, Job> jobs;
  std::lock_guard lock(mu);
  if (auto it = jobs.find(name); it != jobs.end()) return it->second;
  Job j{root.path + "/" + name, ranks, {}};
  std::string cmd = "python3 '" + std::string(JARVIS_SOURCE_DIR) + "/tools/" + tool + "' --out '" +
                    j.dir + "' --ranks " + std::to_string(ranks) + " " + args;
  REQUIRE_MESSAGE(std::system(cmd.c_str()) == 0, cmd);
  std::ifstream truth(j.dir + "/truth.json");
  j.truth = json::parse(truth);
  return jobs.emplace(name, std::move(j)).first->second;
}

const Job& dp_job(int ranks, const std::string& gemm_us) {
  return job("dp" + std::to_string(ranks), "make_critical_path_traces.py", ranks,
             "--gemm-us " + gemm_us);
}

// DDP-style bucket: the allreduce waits through a recorded event for GEMM 6
// of 8 while GEMMs 7 and 8 still run.
const Job& record_wait_job(bool records) {
  return job(records ? "dprec4" : "dprec4_norecords", "make_critical_path_traces.py", 4,
             std::string("--gemm-us 50,50,80,52 --record-wait-after 6 --transfer-us 250") +
                 (records ? "" : " --no-sync-records"));
}

const Job& hta_pair() {
  return job(
      "hta2", "make_multirank_traces.py", 2,
      "--src '" + jarvis::golden::shared_dir() + "/nccl/hta_allreduce_2ranks_rank0/trace.json.gz'");
}

const cp::Contributor* find_contributor(const cp::Analysis& a, int64_t rank,
                                        const std::string& category) {
  for (const auto& c : a.contributors)
    if (c.rank == rank && c.category == category) return &c;
  return nullptr;
}

void check_dp_job(const Job& j) {
  auto loaded = cp::load_graph(j.paths());
  cp::Analysis a = cp::analyse(loaded.graph);
  const json& t = j.truth;
  const int64_t straggler = t["straggler"].get<int64_t>();
  INFO("job " << j.dir);
  REQUIRE(a.iterations.size() == t["iterations"].get<size_t>());
  CHECK(a.step_time_us == doctest::Approx(t["step_time_us"].get<double>()).epsilon(1e-12));
  for (const auto& it : a.iterations) {
    CHECK(it.path_length_us == doctest::Approx(it.length_us).epsilon(1e-12));
    CHECK(!it.differs);
  }
  // Clocks: every rank aligned back onto rank 0's.
  for (int r = 0; r < j.ranks; ++r)
    CHECK(a.clock_offset_us.at(r) ==
          doctest::Approx(t["clock_offset_us"][r].get<double>()).epsilon(1e-12));
  // The straggler's GEMMs lead, with exactly their share of the step.
  REQUIRE(!a.contributors.empty());
  const auto& top = a.contributors.front();
  CHECK(top.rank == straggler);
  CHECK(top.category == "GEMM");
  CHECK(top.op == "aten::mm");
  CHECK(top.time_us == doctest::Approx(t["straggler_gemm_us"].get<double>()).epsilon(1e-12));
  CHECK(top.share == doctest::Approx(t["straggler_share"].get<double>()).epsilon(1e-12));
  // No other rank's GEMMs are on the path.
  for (int r = 0; r < j.ranks; ++r)
    if (r != straggler) CHECK(find_contributor(a, r, "GEMM") == nullptr);
  double shares = 0;
  for (const auto& c : a.contributors) shares += c.share;
  CHECK(shares == doctest::Approx(1.0).epsilon(1e-12));
  // Every other rank waits for the straggler, as long as the simulation says.
  std::map<std::string, double> waits;
  for (const auto& w : a.waits)
    waits[std::to_string(w.rank) + ":" + std::to_string(w.waiting_for_rank)] = w.time_us;
  CHECK(waits.size() == t["waits_us"].size());
  for (const auto& item : t["waits_us"].items()) {
    const std::string key = item.key();
    const auto& value = item.value();
    CAPTURE(key);
    REQUIRE(waits.count(key) == 1);
    CHECK(waits[key] == doctest::Approx(value.get<double>()).epsilon(1e-12));
  }
}

cp::WhatIfResult straggler_what_if(const cp::Graph& g, const json& truth, double factor,
                                   bool median) {
  cp::Scenario sc;
  sc.select.rank = truth["straggler"].get<int64_t>();
  sc.select.category = "gemm";  // names GEMM, case-insensitive
  sc.factor = factor;
  sc.median_rank = median;
  // The simulator's truth has no profiler: replay its recorded host.
  sc.recorded_host = true;
  return cp::what_if(g, sc);
}

// GPU idle time in [lo, hi] from raw events: the window minus the union of
// the GPU events.
double raw_gpu_idle(const jarvis::Trace& t, double lo, double hi) {
  jarvis::testing::Intervals busy;
  for (const auto& e : t.events)
    if (e.is_gpu() && e.has_ts() && e.has_dur() && e.end() > lo && e.ts() < hi)
      busy.emplace_back(std::max(e.ts(), lo), std::min(e.end(), hi));
  return (hi - lo) - jarvis::testing::union_length(busy);
}

// Every GPU event in the window has a runtime call with its correlation id:
// then the host issued all of them, and any idle gap is the host's doing.
bool all_gpu_linked(const jarvis::Trace& t, double lo, double hi) {
  std::set<int64_t> launched;
  for (const auto& e : t.events)
    if (e.is_runtime() && t.correlation(e) != jarvis::kNoInt) launched.insert(t.correlation(e));
  for (const auto& e : t.events)
    if (e.is_gpu() && e.has_ts() && e.end() > lo && e.ts() < hi &&
        !launched.count(t.correlation(e)))
      return false;
  return true;
}

}  // namespace

TEST_SUITE("critical_path") {
  TEST_CASE("critical path: recorded stream waits (cuda_sync) link the allreduce to its GEMM") {
    // The loader keeps the cuda_sync args the graph needs, and only there.
    auto t = jarvis::load_trace_from_json(
        R"({"traceEvents":[{"ph":"X","cat":"cuda_sync","name":"Stream Wait Event","pid":0,)"
        R"("tid":13,"ts":1,"dur":1,"args":{"cuda_sync_kind":"Stream Wait Event","stream":13,)"
        R"("correlation":5,"wait_on_stream":7,"wait_on_cuda_event_record_corr_id":4,)"
        R"("wait_on_cuda_event_id":2}},{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,)"
        R"("ts":1,"dur":1,"args":{"stream":7,"device":0,"wait_on_stream":3}}]})");
    REQUIRE(t.arg(0, "wait_on_cuda_event_record_corr_id") != nullptr);
    CHECK(t.arg(0, "wait_on_cuda_event_record_corr_id")->i == 4);
    CHECK(t.arg(0, "wait_on_stream")->i == 7);
    CHECK(t.arg(0, "cuda_sync_kind")->s == "Stream Wait Event");
    CHECK(t.arg(0, "wait_on_cuda_event_id") == nullptr);
    CHECK(t.stream(t.events[0]) == 13);
    CHECK(t.correlation(t.events[0]) == 5);
    CHECK(t.arg(1, "wait_on_stream") == nullptr);

    const Job& j = record_wait_job(true);
    check_dp_job(j);  // the straggler's first 6 GEMMs, exactly, then the allreduce
    auto loaded = cp::load_graph(j.paths());
    // One recorded wait per rank and iteration (half of them name their stream
    // only through a cuda_event record).
    CHECK(loaded.graph.recorded_waits == 4 * 3);
    cp::Analysis a = cp::analyse(loaded.graph);
    const int64_t straggler = j.truth["straggler"].get<int64_t>();
    // The path goes from GEMM 6 through the wait (a zero-lag edge: no segment
    // of its own) straight into the allreduce.
    for (const auto& it : a.iterations) {
      CAPTURE(it.name);
      size_t gemms = 0;
      for (size_t k = 0; k < it.path.size(); ++k)
        if (it.path[k].rank == straggler && it.path[k].category() == "GEMM") {
          ++gemms;
          if (gemms == 6) {
            REQUIRE(k + 1 < it.path.size());
            CHECK(it.path[k + 1].category() == "communication");
            CHECK(it.path[k].start_us + it.path[k].dur_us ==
                  doctest::Approx(it.path[k + 1].start_us).epsilon(1e-12));
          }
        }
      CHECK(gemms == 6);
    }
    // Every rank's allreduce starts through its recorded wait.
    std::vector<double> dur, lag;
    for (const auto& n : loaded.graph.nodes) dur.push_back(n.dur);
    for (const auto& e : loaded.graph.edges) lag.push_back(e.lag);
    const cp::Schedule sched = cp::propagate(loaded.graph, dur, lag);
    size_t bound_by_wait = 0, arrivals = 0;
    for (uint32_t n = 0; n < loaded.graph.nodes.size(); ++n) {
      if (loaded.graph.nodes[n].kind != cp::NodeKind::CollArrive) continue;
      ++arrivals;
      REQUIRE(sched.binding[n] != cp::Schedule::kNone);
      bound_by_wait += loaded.graph.edges[sched.binding[n]].kind == cp::EdgeKind::EventWait;
    }
    CHECK(arrivals == 4 * 3);
    CHECK(bound_by_wait == arrivals);
    // What-if through the recorded wait: the straggler's GEMMs at the others' speed.
    auto fast = straggler_what_if(loaded.graph, j.truth,
                                  j.truth["what_if_fastest_other"]["factor"].get<double>(), false);
    CHECK(fast.predicted_step_time_us ==
          doctest::Approx(j.truth["what_if_fastest_other"]["predicted_step_time_us"].get<double>())
              .epsilon(1e-9));
    auto median = straggler_what_if(loaded.graph, j.truth, 1.0, true);
    CHECK(median.predicted_step_time_us ==
          doctest::Approx(j.truth["what_if_median"]["predicted_step_time_us"].get<double>())
              .epsilon(1e-9));

    // The same job without the records: the inference (the last op launched
    // before the allreduce, GEMM 8, ran alongside it) misses the wait, so the
    // straggler's GEMMs are not charged as they should be.
    const Job& bare = record_wait_job(false);
    auto inferred = cp::load_graph(bare.paths());
    CHECK(inferred.graph.recorded_waits == 0);
    cp::Analysis b = cp::analyse(inferred.graph);
    CHECK(b.step_time_us == doctest::Approx(j.truth["step_time_us"].get<double>()).epsilon(1e-12));
    const auto* gemm = find_contributor(b, straggler, "GEMM");
    CHECK((gemm == nullptr || gemm->share < j.truth["straggler_share"].get<double>() - 0.1));
  }

  TEST_CASE("critical path: iterations detected as repeats when ProfilerStep is absent") {
    const Job& j = job("dp4_nostep", "make_critical_path_traces.py", 4,
                       "--gemm-us 50,50,80,52 --no-profiler-step");
    auto loaded = cp::load_graph(j.paths());
    CHECK(loaded.graph.iterations_source == "detected_repeats");
    cp::Analysis a = cp::analyse(loaded.graph);
    CHECK(a.iterations_source == "detected_repeats");
    const auto& bounds = j.truth["iteration_bounds_us"];
    REQUIRE(a.iterations.size() == bounds.size());
    for (size_t k = 0; k < a.iterations.size(); ++k) {
      CAPTURE(k);
      const auto& it = a.iterations[k];
      CHECK(it.name == "iteration#" + std::to_string(k));
      CHECK(it.start_us == doctest::Approx(bounds[k][0].get<double>()).epsilon(1e-12));
      CHECK(it.end_us == doctest::Approx(bounds[k][1].get<double>()).epsilon(1e-12));
      CHECK(it.path_length_us == doctest::Approx(it.length_us).epsilon(1e-12));
    }
    bool noted = false;
    for (const auto& n : a.notes) noted |= n.find("detected as repeats") != std::string::npos;
    CHECK(noted);
    // The summary says how the iterations were found.
    CHECK(cp::analysis_json(a, 3)["iterations_source"] == "detected_repeats");
    CHECK(cp::analysis_json(cp::analyse(cp::load_graph(dp_job(4, "50,50,80,52").paths()).graph),
                            3)["iterations_source"] == "profiler_step");
  }

  TEST_CASE("critical path: real traces without ProfilerStep keep their iteration count") {
    jarvis::testing::TempDir tmp;
    // Three ProfilerSteps of a DDP job: three repeats of its launch sequence.
    const std::string hta =
        jarvis::golden::shared_dir() + "/nccl/hta_allreduce_2ranks_rank0/trace.json.gz";
    auto with = cp::analyse(cp::load_graph({hta}).graph);
    REQUIRE(with.iterations.size() == 3);
    CHECK(with.iterations_source == "profiler_step");
    // Without ProfilerStep the optimizer's steps bound the iterations; each
    // ends where its Optimizer.step# annotation ends (or later, with the GPU
    // work launched in it).
    auto without = cp::analyse(cp::load_graph({strip_profiler_steps(hta, tmp.path, "hta")}).graph);
    CHECK(without.iterations_source == "optimizer_step");
    REQUIRE(without.iterations.size() == with.iterations.size());
    {
      const jarvis::Trace raw = jarvis::load_trace(hta);
      std::vector<double> step_ends;
      for (jarvis::Uid u = 0; u < raw.events.size(); ++u)
        if (raw.events[u].cat == jarvis::Cat::UserAnnotation &&
            raw.name(u).starts_with("Optimizer.step#"))
          step_ends.push_back(raw.events[u].end());
      std::sort(step_ends.begin(), step_ends.end());
      REQUIRE(step_ends.size() == without.iterations.size());
      for (size_t k = 0; k < step_ends.size(); ++k) {
        CAPTURE(k);
        CHECK(without.iterations[k].end_us >= step_ends[k] - 1e-6);
        if (k > 0) CHECK(without.iterations[k].start_us >= step_ends[k - 1] - 1e-6);
      }
    }
    // Without either: three repeats of its launch sequence.
    auto bare =
        cp::analyse(cp::load_graph({strip_profiler_steps(hta, tmp.path, "hta_bare",
                                                         {"ProfilerStep#", "Optimizer.step#"})})
                        .graph);
    CHECK(bare.iterations_source == "detected_repeats");
    CHECK(bare.iterations.size() == with.iterations.size());
    for (const auto* run : {&without, &bare})
      for (const auto& it : run->iterations)
        CHECK(it.path_length_us == doctest::Approx(it.length_us).epsilon(1e-9));
    // One ProfilerStep of a model whose layers repeat: the layers are not
    // iterations (the embedding and head launch kernels the layers never do).
    for (const char* name : {"h100_bert-small", "h100_falconsai-nsfw", "h100_qwen1.5-0.5b",
                             "mi300_qwen1.5-0.5b", "sglang_qwen3_decode_bs32"}) {
      CAPTURE(name);
      auto one = cp::analyse(
          cp::load_graph(
              {strip_profiler_steps(jarvis::mcp::testing::conformance_trace(name), tmp.path, name)})
              .graph);
      CHECK(one.iterations.size() == 1);
      CHECK(one.iterations_source == "whole_trace");
    }
  }

  TEST_CASE("critical path: 4-rank DP job: step time, straggler share, waits") {
    check_dp_job(dp_job(4, "50,50,80,52"));
  }

  TEST_CASE("critical path: 8-rank DP job with a different straggler") {
    check_dp_job(dp_job(8, "40,41,42,43,44,45,46,90"));
  }

  TEST_CASE("critical path: what-if predictions match the simulated job") {
    const Job& j = dp_job(4, "50,50,80,52");
    auto loaded = cp::load_graph(j.paths());
    const json& t = j.truth;
    const double measured = t["step_time_us"].get<double>();
    // Replaying without a change reproduces the measured times exactly.
    auto same = straggler_what_if(loaded.graph, t, 1.0, false);
    CHECK(same.predicted_step_time_us == doctest::Approx(measured).epsilon(1e-12));
    // The straggler's GEMMs at the fastest other rank's speed.
    auto fast = straggler_what_if(loaded.graph, t,
                                  t["what_if_fastest_other"]["factor"].get<double>(), false);
    CHECK(fast.measured_step_time_us == doctest::Approx(measured).epsilon(1e-12));
    CHECK(fast.predicted_step_time_us ==
          doctest::Approx(t["what_if_fastest_other"]["predicted_step_time_us"].get<double>())
              .epsilon(1e-9));
    CHECK(fast.selected_nodes == 8 * 3);  // 8 GEMMs x 3 iterations on one rank
    // The next bottleneck is the slowest of the others (rank 3 at 52 us).
    REQUIRE(!fast.predicted.contributors.empty());
    CHECK(fast.predicted.contributors.front().rank == 3);
    CHECK(fast.predicted.contributors.front().category == "GEMM");
    auto partial = straggler_what_if(loaded.graph, t, 0.9, false);
    CHECK(partial.predicted_step_time_us ==
          doctest::Approx(t["what_if_partial"]["predicted_step_time_us"].get<double>())
              .epsilon(1e-9));
    CHECK(partial.predicted.contributors.front().rank == t["straggler"].get<int64_t>());
    auto median = straggler_what_if(loaded.graph, t, 1.0, true);
    CHECK(
        median.predicted_step_time_us ==
        doctest::Approx(t["what_if_median"]["predicted_step_time_us"].get<double>()).epsilon(1e-9));
    // Perfect overlap removes the transfer (100 us per iteration) from the path.
    cp::Scenario overlap;
    overlap.overlap_collective = "allreduce";
    overlap.recorded_host = true;
    CHECK(cp::what_if(loaded.graph, overlap).predicted_step_time_us ==
          doctest::Approx(measured - 100.0).epsilon(1e-12));
    // The GPU-bound job gains only the host gaps still on the path: the 20 us
    // before the first launch and the 15 us tail after the sync.
    cp::Scenario no_gaps;
    no_gaps.recorded_host = true;
    no_gaps.remove_launch_gaps = true;
    CHECK(cp::what_if(loaded.graph, no_gaps).predicted_step_time_us ==
          doctest::Approx(measured - 35.0).epsilon(1e-12));
  }

  TEST_CASE("critical path: 2-rank set from the HTA trace shows the injected delays as waits") {
    const Job& j = hta_pair();
    auto loaded = cp::load_graph(j.paths());
    cp::Analysis a = cp::analyse(loaded.graph);
    REQUIRE(a.iterations.size() == 3);  // ProfilerStep#4..6 on both ranks
    // Its cudaStreamWaitEvent calls carry no cuda_sync records: inferred waits.
    CHECK(loaded.graph.recorded_waits == 0);
    // Rank 0's clock: which instances fall inside the iterations.
    auto rank0 = jarvis::load_trace(j.paths()[0]);
    std::vector<std::pair<double, double>> steps;
    std::vector<double> coll_ts;
    for (jarvis::Uid u = 0; u < rank0.events.size(); ++u) {
      const auto& e = rank0.events[u];
      if (e.cat == jarvis::Cat::UserAnnotation && rank0.name(u).starts_with("ProfilerStep#"))
        steps.emplace_back(e.ts(), e.end());
      if (e.cat == jarvis::Cat::Kernel && rank0.name(u).starts_with("nccl"))
        coll_ts.push_back(e.ts());
    }
    std::sort(coll_ts.begin(), coll_ts.end());
    REQUIRE(coll_ts.size() == j.truth["instances"].size());
    std::map<std::pair<int64_t, int64_t>, double> expected;
    for (size_t k = 0; k < coll_ts.size(); ++k) {
      // Rank 0 arrives delays[0] after the earliest moment; the last rank at max.
      auto d = j.truth["instances"][k]["delays_us"].get<std::vector<double>>();
      const double start = coll_ts[k] + (*std::max_element(d.begin(), d.end()) - d[0]);
      const bool inside = std::any_of(steps.begin(), steps.end(), [&](auto s) {
        return start >= s.first && start <= s.second;
      });
      if (!inside) continue;
      const auto last = static_cast<int64_t>(std::max_element(d.begin(), d.end()) - d.begin());
      for (int64_t r = 0; r < 2; ++r)
        if (r != last && d[last] > d[r]) expected[{r, last}] += (d[last] - d[r]) / 3.0;
    }
    REQUIRE(!expected.empty());
    CHECK(a.waits.size() == expected.size());
    for (const auto& w : a.waits) {
      CAPTURE(w.rank);
      CAPTURE(w.waiting_for_rank);
      REQUIRE(expected.count({w.rank, w.waiting_for_rank}) == 1);
      CHECK(w.time_us == doctest::Approx(expected[{w.rank, w.waiting_for_rank}]).epsilon(1e-9));
    }
    for (const auto& it : a.iterations)
      CHECK(it.path_length_us == doctest::Approx(it.length_us).epsilon(1e-9));
    // The last rank's delay is charged to the collective, not to the early rank's compute.
    CHECK(a.step_time_us > 0);
  }

  TEST_CASE("critical path: single-rank real traces: path = the step and its GPU work") {
    for (const char* name :
         {"h100_bert-small", "h100_falconsai-nsfw", "h100_qwen1.5-0.5b", "mi300_bert-small",
          "mi300_falconsai-nsfw", "mi300_qwen1.5-0.5b", "sglang_qwen3_decode_bs32"}) {
      CAPTURE(name);
      const std::string path = jarvis::mcp::testing::conformance_trace(name);
      auto trace = jarvis::load_trace(path);
      double lo = 0, hi = 0;
      for (jarvis::Uid u = 0; u < trace.events.size(); ++u)
        if (trace.events[u].cat == jarvis::Cat::UserAnnotation &&
            trace.name(u).starts_with("ProfilerStep#")) {
          lo = trace.events[u].ts();
          hi = trace.events[u].end();
        }
      REQUIRE(hi > lo);
      // The iteration lasts until the GPU ops launched inside the step (by
      // their runtime call's start) ended too: a host that runs ahead leaves
      // the step before its GPU work is done (h100_qwen1.5-0.5b: 2.2 ms).
      std::map<int64_t, double> launched_at;
      for (const auto& e : trace.events)
        if (e.is_runtime() && trace.correlation(e) != jarvis::kNoInt)
          launched_at.emplace(trace.correlation(e), e.ts());
      const double host_end = hi;
      for (const auto& e : trace.events)
        if (e.is_gpu() && e.has_ts() && e.has_dur())
          if (auto l = launched_at.find(trace.correlation(e));
              l != launched_at.end() && l->second >= lo && l->second < host_end)
            hi = std::max(hi, e.end());
      auto loaded = cp::load_graph({path});
      cp::Analysis a = cp::analyse(loaded.graph);
      REQUIRE(a.iterations.size() == 1);
      const auto& it = a.iterations[0];
      CHECK(std::abs(it.path_length_us - (hi - lo)) <= 0.01 * (hi - lo));
      // Nothing assumed; the only note says how much GPU work queued before
      // profiling ran in the step (test_gpu_backlog.cpp checks its size).
      for (const auto& note : a.notes)
        CHECK(note.find("queued before profiling") != std::string::npos);
      const double idle = raw_gpu_idle(trace, lo, hi);
      CHECK(it.gpu_idle_us.at(0) == doctest::Approx(idle).epsilon(1e-9));
      // Idle time with the path on the host: all of it when the host issued
      // every GPU op; never more than the idle time.
      CHECK(it.idle_host_us.at(0) <= idle + 1e-6);
      if (all_gpu_linked(trace, lo, hi))
        CHECK(std::abs(it.idle_host_us.at(0) - idle) <= 0.01 * (hi - lo));
    }
  }

  TEST_CASE("critical path: says what the trace lacks, rejects what it cannot use") {
    // No ProfilerStep: the whole trace is one iteration, and a note says so.
    auto loaded = cp::load_graph({jarvis::mcp::testing::conformance_trace("mi300_compile_triton")});
    cp::Analysis a = cp::analyse(loaded.graph);
    REQUIRE(a.iterations.size() == 1);
    CHECK(a.iterations[0].name == "trace");
    REQUIRE(!a.notes.empty());
    CHECK(a.notes[0].find("ProfilerStep") != std::string::npos);
    // No launch links: kernels only.
    auto kernels_only = jarvis::load_trace_from_json(
        R"({"traceEvents":[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":10,"dur":5,)"
        R"("args":{"device":0,"stream":7}},{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,)"
        R"("ts":20,"dur":5,"args":{"device":0,"stream":7}}]})");
    jarvis::CallTree tree(kernels_only);
    cp::Graph g = cp::build_graph({{&kernels_only, &tree, -1}});
    cp::Analysis k = cp::analyse(g);
    bool says_no_links = false;
    for (const auto& n : k.notes) says_no_links |= n.find("no launch links") != std::string::npos;
    CHECK(says_no_links);
    CHECK(k.iterations[0].length_us == doctest::Approx(15.0));
    // No GPU work at all.
    auto host_only = jarvis::load_trace_from_json(
        R"({"traceEvents":[{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":0,"dur":5}]})");
    jarvis::CallTree host_tree(host_only);
    CHECK_THROWS_AS(cp::build_graph({{&host_only, &host_tree, -1}}), cp::CriticalPathError);
    // What-ifs that change nothing or select nothing are errors, not guesses.
    const Job& j = dp_job(4, "50,50,80,52");
    auto dp = cp::load_graph(j.paths());
    CHECK_THROWS_AS(cp::what_if(dp.graph, cp::Scenario{}), cp::CriticalPathError);
    cp::Scenario none;
    none.select.category = "SDPA_fwd";
    none.factor = 0.5;
    CHECK_THROWS_WITH_AS(cp::what_if(dp.graph, none), doctest::Contains("no GPU operation matches"),
                         cp::CriticalPathError);
    cp::Scenario bad_rank;
    bad_rank.select.rank = 9;
    bad_rank.factor = 0.5;
    CHECK_THROWS_WITH_AS(cp::what_if(dp.graph, bad_rank), doctest::Contains("rank 9"),
                         cp::CriticalPathError);
    cp::Scenario bad_factor;
    bad_factor.select.category = "GEMM";
    bad_factor.factor = -1;
    CHECK_THROWS_AS(cp::what_if(dp.graph, bad_factor), cp::CriticalPathError);
    // Two ranks, one without collectives: the ranks cannot be joined.
    CHECK_THROWS_WITH_AS(
        cp::load_graph({j.paths()[0], jarvis::mcp::testing::conformance_trace("h100_bert-small")}),
        doctest::Contains("collectives"), cp::CriticalPathError);
  }

  TEST_CASE("critical path: CLI writes the summary, path CSVs and what_if.json") {
    const Job& j = dp_job(4, "50,50,80,52");
    jarvis::testing::TempDir out;
    std::string traces;
    for (const auto& p : j.paths()) traces += " '" + p + "'";
    // The simulator's truth has no profiler: its recorded host is the model.
    std::string cmd = std::string(JARVIS_BINARY) + " critical-path" + traces +
                      " --recorded-host --out " + out.path + "/cp > /dev/null";
    REQUIRE(std::system(cmd.c_str()) == 0);
    std::ifstream in(out.path + "/cp/critical_path_summary.json");
    json summary = json::parse(in);
    CHECK(summary["step_time_us"].get<double>() ==
          doctest::Approx(j.truth["step_time_us"].get<double>()).epsilon(1e-12));
    CHECK(summary["iterations"].size() == 3);
    const auto& top = summary["contributors"][0];
    CHECK(top["rank"] == j.truth["straggler"]);
    CHECK(top["share"].get<double>() ==
          doctest::Approx(j.truth["straggler_share"].get<double>()).epsilon(1e-12));
    for (size_t k = 1; k < summary["contributors"].size(); ++k)
      CHECK(summary["contributors"][k - 1]["share"].get<double>() >=
            summary["contributors"][k]["share"].get<double>());
    CHECK(summary["waits"].size() == 3);
    CHECK(summary["waits"][0]["waiting_for_rank"] == j.truth["straggler"]);
    auto path = jarvis::read_csv_file(out.path + "/cp/path_iteration1.csv");
    double total = 0;
    for (size_t r = 0; r < path.rows.size(); ++r) {
      const auto& cell = path.at(r, "dur_us");
      total += cell.is_number() ? cell.number() : std::stod(cell.text());
    }
    CHECK(total == doctest::Approx(j.truth["step_time_us"].get<double>()).epsilon(1e-9));

    cmd = std::string(JARVIS_BINARY) + " what-if" + traces + " --rank 2 --category GEMM --factor " +
          std::to_string(j.truth["what_if_fastest_other"]["factor"].get<double>()) +
          " --recorded-host --out " + out.path + "/wi > /dev/null";
    REQUIRE(std::system(cmd.c_str()) == 0);
    std::ifstream wi_in(out.path + "/wi/what_if.json");
    json wi = json::parse(wi_in);
    CHECK(wi["measured_step_time_us"].get<double>() ==
          doctest::Approx(j.truth["step_time_us"].get<double>()).epsilon(1e-12));
    CHECK(wi["predicted_step_time_us"].get<double>() ==
          doctest::Approx(j.truth["what_if_fastest_other"]["predicted_step_time_us"].get<double>())
              .epsilon(1e-9));
    // A selector that matches nothing fails with a message, writing nothing.
    cmd = std::string(JARVIS_BINARY) + " what-if" + traces +
          " --category SDPA --factor 0.5 --out " + out.path + "/bad 2> /dev/null";
    CHECK(std::system(cmd.c_str()) != 0);
    CHECK(!fs::exists(out.path + "/bad/what_if.json"));
  }

  TEST_CASE("critical path: critical_path and what_if MCP tools") {
    const Job& j = dp_job(4, "50,50,80,52");
    auto options = jarvis::mcp::testing::shared_root_options();
    const std::string root = fs::path(j.dir).parent_path().string();
    options.roots.push_back(root);
    jarvis::mcp::testing::Harness h(options);
    h.initialize();
    json traces = j.paths();
    auto r = h.tool_result(1, "critical_path",
                           {{"traces", traces},
                            {"output_dir", root + "/mcp_cp"},
                            {"top_n", 3},
                            {"recorded_host", true}});
    CHECK(r["step_time_us"].get<double>() ==
          doctest::Approx(j.truth["step_time_us"].get<double>()).epsilon(1e-12));
    CHECK(r["contributors"].size() == 3);
    CHECK(r["contributors"][0]["rank"] == j.truth["straggler"]);
    CHECK(fs::exists(root + "/mcp_cp/critical_path_summary.json"));
    auto w = h.tool_result(2, "what_if",
                           {{"traces", traces},
                            {"rank", j.truth["straggler"]},
                            {"category", "GEMM"},
                            {"median_rank", true},
                            {"recorded_host", true}});
    CHECK(w["predicted_step_time_us"].get<double>() ==
          doctest::Approx(j.truth["what_if_median"]["predicted_step_time_us"].get<double>())
              .epsilon(1e-9));
    CHECK(w["files"].empty());
    auto reply = h.call_tool(3, "what_if",
                             {{"traces", traces}, {"kernel", "no_such_kernel"}, {"factor", 0.5}});
    REQUIRE(reply.contains("result"));
    CHECK(reply["result"]["isError"] == true);
    CHECK(reply["result"]["content"][0]["text"].get<std::string>().find("no GPU operation") !=
          std::string::npos);
    reply = h.call_tool(4, "what_if", {{"traces", traces}, {"factor", 0.5}, {"median_rank", true}});
    CHECK(reply["result"]["isError"] == true);
    // Kernel uids are of one rank's trace: on several, the rank is required.
    reply = h.call_tool(5, "what_if",
                        {{"traces", traces}, {"kernel_uids", json::array({0})}, {"factor", 0.5}});
    CHECK(reply["result"]["isError"] == true);
    CHECK(reply["result"]["content"][0]["text"].get<std::string>().find(
              "give the rank they belong to") != std::string::npos);
  }

  TEST_CASE("critical path: category impact ranges come from the what-if engine") {
    namespace an = jarvis::analysis;
    const std::string dir = jarvis::golden::shared_dir() + "/conformance/mi300_qwen1.5-0.5b";
    jarvis::testing::TempDir tmp;
    jarvis::testing::prepare_from_reference(dir, tmp.path);  // records trace_path trace.json.gz
    // No trace beside the prepared files: the trace time share stands, and says why.
    auto res = an::analyze_category(tmp.path, "gemm");
    REQUIRE(res.status == "OK");
    CHECK(an::prepared_trace_path(tmp.path).empty());
    an::ojson none = an::what_if_impacts(res.metrics, an::prepared_trace_path(tmp.path));
    CHECK(none["method"] == "trace_time_share");
    CHECK(none["reason"].get<std::string>().find("not available") != std::string::npos);
    res.impact_what_if = none;
    CHECK(an::draft_findings(res).find("% of GPU time (trace time share") != std::string::npos);

    fs::copy_file(dir + "/trace.json.gz", tmp.path + "/trace.json.gz");
    const std::string trace_path = an::prepared_trace_path(tmp.path);
    REQUIRE(trace_path == tmp.path + "/trace.json.gz");
    an::ojson w = an::what_if_impacts(res.metrics, trace_path);
    REQUIRE(w["method"] == "what_if");
    const auto& estimates = res.metrics["impact_estimates"];
    REQUIRE(w["estimates"].size() == estimates.size());
    REQUIRE(!estimates.empty());

    // The same what-ifs, called directly: each estimate's op (name and shapes)
    // selects the kernels it launched, scaled to the estimate's two targets.
    auto loaded = cp::load_graph({dir + "/trace.json.gz"});
    const jarvis::Trace& trace = *loaded.traces[0];
    const jarvis::CallTree& tree = *loaded.trees[0];
    // Savings are shares of the un-profiled step, the what-if's base.
    const double step = *cp::analyse_unprofiled(loaded.graph).estimated_unprofiled_step_us;
    CHECK(w["step_time_us"].get<double>() == doctest::Approx(step).epsilon(1e-12));
    CHECK(w["recorded_step_time_us"].get<double>() ==
          doctest::Approx(cp::analyse(loaded.graph).step_time_us).epsilon(1e-12));
    size_t checked = 0;
    for (size_t k = 0; k < estimates.size(); ++k) {
      const auto& est = estimates[k];
      const auto& got = w["estimates"][k];
      CAPTURE(k);
      CHECK(got["operation"] == est["operation"]);
      CHECK(got["trace_time_impact_high"] == est["impact_score_high"]);
      if (est["estimate_method"] != "quantified") continue;
      const an::ojson* op = nullptr;
      for (const auto& o : res.metrics["operations"])
        if (o["name"] == est["operation"] && o["time_ms"] == est["time_ms"]) op = &o;
      REQUIRE(op != nullptr);
      cp::Selector sel;
      double kernel_us = 0;
      for (jarvis::Uid u = 0; u < trace.events.size(); ++u) {
        const jarvis::Uid l = trace.events[u].is_gpu() ? tree.launcher(u) : jarvis::kNoUid;
        if (l == jarvis::kNoUid || trace.name(l) != est["operation"].get<std::string>()) continue;
        const auto* dims = trace.arg(l, "Input Dims");
        if (op->contains("Input Dims") &&
            (!dims || dims->repr_tuple() != (*op)["Input Dims"].get<std::string>()))
          continue;
        sel.gpu_uids.push_back(u);
        kernel_us += trace.events[u].dur();
      }
      REQUIRE(!sel.gpu_uids.empty());
      // The kernels are the ones TraceLens's table counted for this op.
      CHECK(kernel_us / 1000 == doctest::Approx(est["time_ms"].get<double>()).epsilon(1e-3));
      CHECK(got["kernels"] == sel.gpu_uids.size());
      const double gap = 1 - est["efficiency_pct"].get<double>() / 100;
      cp::Scenario sc;
      sc.select = sel;
      sc.factor = 1 - 0.75 * gap;
      const double low = step - cp::what_if(loaded.graph, sc).predicted_step_time_us;
      sc.factor = 1 - gap;
      const double high = step - cp::what_if(loaded.graph, sc).predicted_step_time_us;
      CHECK(got["method"] == "what_if");
      CHECK(got["factor_high"].get<double>() == doctest::Approx(1 - gap).epsilon(1e-12));
      CHECK(got["saving_low_us"].get<double>() == doctest::Approx(low).epsilon(1e-9));
      CHECK(got["saving_high_us"].get<double>() == doctest::Approx(high).epsilon(1e-9));
      CHECK(got["impact_high_pct"].get<double>() ==
            doctest::Approx(high / step * 100).epsilon(1e-9));
      CHECK(high >= low);
      CHECK(low >= 0);
      ++checked;
    }
    CHECK(checked >= 2);
    // The draft names the method with the what-if's numbers.
    res.impact_what_if = w;
    const std::string draft = an::draft_findings(res);
    CHECK(draft.find("% of the step time (what-if on the critical-path graph") !=
          std::string::npos);
    CHECK(draft.find("Impact estimates of the key bottlenecks: what-if") != std::string::npos);
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
