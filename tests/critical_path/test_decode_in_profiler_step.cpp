// Decode steps inside ProfilerSteps (issue 73 point 10): a trace whose
// ProfilerStep#N each hold one generate() call (a prefill, then decode steps)
// has its decode steps as iterations, with the ProfilerSteps beside them;
// a trace whose ProfilerSteps are single steps keeps them as its iterations.
// Every expectation comes from the raw JSON events (nlohmann::json): the
// launch calls (runtime calls whose correlation id a GPU op carries), their
// GPU ops' names and ends, the ProfilerStep annotations.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "critical_path/critical_path.h"
#include "golden.h"
#include "raw_decode_steps.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace cp = jarvis::critical_path;
namespace fs = std::filesystem;
using namespace jarvis::testing::raw_decode;

struct Loaded {
  jarvis::Trace trace;
  std::unique_ptr<jarvis::CallTree> tree;
  cp::Graph graph;
};

std::unique_ptr<Loaded> load(const std::string& path) {
  auto l = std::make_unique<Loaded>();
  l->trace = jarvis::load_trace(path);
  l->tree = std::make_unique<jarvis::CallTree>(l->trace);
  l->graph = cp::build_graph({{&l->trace, l->tree.get(), -1}});
  return l;
}

TEST_CASE("decode steps inside each ProfilerStep are the iterations (s_generate A, raw events)") {
  const std::string path = jarvis::golden::shared_dir() + "/ab_pairs/s_generate_A_gpt2.json.gz";
  if (!fs::exists(path)) {
    MESSAGE("skipped: " << path << " is missing");
    return;
  }
  const RawTrace raw = read_raw(path);
  REQUIRE(raw.steps.size() == 3);
  // Per ProfilerStep from the raw launches: the decode copies, where each
  // begins and ends (the next copy, the launch after the last copy, or the
  // step's end), relative to the step's start.
  struct Expected {
    std::string name;
    double start_offset = 0, end_offset = 0;
  };
  std::vector<Expected> expected;
  std::vector<std::pair<double, double>> decode_windows, step_windows;
  std::vector<double> before;  // per step: its first copy's start - the step's start
  for (const RawStep& s : raw.steps) {
    CAPTURE(s.name);
    const auto seq = step_launches(raw, s.ts, s.end);
    const RawDecode d = trailing_copies(seq);
    REQUIRE(d.copies >= 3);
    CHECK(d.first > 0);  // a prefill before the copies
    // The copies are the decode steps: one per decode forward pass (the
    // token table's embedding over one position), the last token's a piece.
    size_t decodes = 0, prefills = 0;
    for (size_t k = 0; k < raw.embedding_ts.size(); ++k)
      if (raw.embedding_ts[k] >= s.ts && raw.embedding_ts[k] < s.end)
        (raw.embedding_positions[k] > 1 ? prefills : decodes) += 1;
    CHECK(prefills == 1);
    CHECK(d.copies <= decodes);
    CHECK(d.copies + 1 >= decodes);
    for (size_t k = 0; k < d.copies; ++k) {
      const size_t at = d.first + k * d.period, next = at + d.period;
      const double end = next < seq.size() ? seq[next]->ts : s.end;
      expected.push_back({fmt::format("{}/decode#{}", s.name, k), seq[at]->ts - s.ts, end - s.ts});
      decode_windows.emplace_back(seq[at]->ts, end);
    }
    step_windows.emplace_back(s.ts, s.end);
    before.push_back(seq[d.first]->ts - s.ts);
  }

  const auto l = load(path);
  const cp::Graph& g = l->graph;
  CHECK(g.iterations_source == cp::kFromDecodeStepsInProfilerStep);
  REQUIRE(g.iterations.size() == expected.size());
  REQUIRE(g.profiler_steps.size() == raw.steps.size());
  for (size_t s = 0; s < raw.steps.size(); ++s)
    CHECK(g.profiler_steps[s].name == raw.steps[s].name);
  for (size_t k = 0; k < expected.size(); ++k) {
    const cp::Iteration& it = g.iterations[k];
    CAPTURE(it.name);
    CHECK(it.name == expected[k].name);
    // The step it lies in, by name; offsets from that step's start (the
    // loader's clock origin drops out).
    const std::string step = it.name.substr(0, it.name.find('/'));
    const auto owner = std::find_if(g.profiler_steps.begin(), g.profiler_steps.end(),
                                    [&](const cp::Iteration& p) { return p.name == step; });
    REQUIRE(owner != g.profiler_steps.end());
    REQUIRE(it.host_ends.size() == 1);
    CHECK(it.start - owner->start == doctest::Approx(expected[k].start_offset).epsilon(1e-9));
    CHECK(g.nodes[it.host_ends[0]].start - owner->start ==
          doctest::Approx(expected[k].end_offset).epsilon(1e-9));
  }
  // Recorded: each decode step's and each ProfilerStep's length as the raw
  // windows give them, and the part of each step before its decode steps.
  const cp::Analysis recorded = cp::analyse(g);
  const auto decode_lengths = window_lengths(raw, decode_windows);
  for (size_t k = 0; k < decode_lengths.size(); ++k)
    CHECK(recorded.iterations[k].length_us == doctest::Approx(decode_lengths[k]).epsilon(1e-9));
  const auto step_lengths = window_lengths(raw, step_windows);
  REQUIRE(recorded.profiler_steps.size() == step_lengths.size());
  double mean = 0;
  for (size_t s = 0; s < step_lengths.size(); ++s) {
    CHECK(recorded.profiler_steps[s].length_us == doctest::Approx(step_lengths[s]).epsilon(1e-9));
    CHECK(recorded.profiler_steps[s].before_us == doctest::Approx(before[s]).epsilon(1e-9));
    CHECK(recorded.profiler_steps[s].iterations == expected.size() / raw.steps.size());
    mean += step_lengths[s] / static_cast<double>(step_lengths.size());
  }
  CHECK(recorded.profiler_step_us == doctest::Approx(mean).epsilon(1e-9));
  CHECK(recorded.summary.find("per ProfilerStep (one generate() call") != std::string::npos);
  // Un-profiled: every step is its part before the decode steps, the decode
  // steps and its tail (the iterations tile the step); the recorded figure
  // stands beside it.
  const cp::Analysis unprofiled = cp::analyse_unprofiled(g);
  CHECK(unprofiled.recorded_profiler_step_us == doctest::Approx(mean).epsilon(1e-9));
  CHECK(unprofiled.profiler_step_us < unprofiled.recorded_profiler_step_us);
  for (const cp::ProfilerStepResult& s : unprofiled.profiler_steps) {
    CAPTURE(s.name);
    double decode = 0;
    for (const auto& it : unprofiled.iterations)
      if (it.name.starts_with(s.name + "/")) decode += it.length_us;
    CHECK(s.before_us + decode + s.after_us == doctest::Approx(s.length_us).epsilon(1e-9));
    CHECK(s.before_us > 0);
  }
  CHECK(std::any_of(unprofiled.notes.begin(), unprofiled.notes.end(), [](const std::string& n) {
    return n.find("the decode steps are the iterations") != std::string::npos;
  }));
}

TEST_CASE(
    "ProfilerSteps that are single steps stay the iterations (decoder steps, sglang decode)") {
  const std::string dir = jarvis::golden::shared_dir();
  for (const std::string& path : {dir + "/ab_pairs/s_overhead_decode_plain.json.gz",
                                  dir + "/conformance/sglang_qwen3_decode_bs32/trace.json.gz"}) {
    CAPTURE(path);
    if (!fs::exists(path)) {
      MESSAGE("skipped: " << path << " is missing");
      continue;
    }
    const RawTrace raw = read_raw(path);
    REQUIRE(!raw.steps.empty());
    // Raw: no ProfilerStep holds three copies of a period after a prefix
    // that begins with the copies' first launch: each is one step.
    std::vector<std::pair<double, double>> windows;
    for (const RawStep& s : raw.steps) {
      windows.emplace_back(s.ts, s.end);
      const auto seq = step_launches(raw, s.ts, s.end);
      const RawDecode d = trailing_copies(seq);
      bool begins_as_prefix = false;
      for (size_t k = d.first; k < d.first + d.period && k < seq.size(); ++k)
        begins_as_prefix |= seq[k]->kernel == seq.front()->kernel;
      CAPTURE(s.name);
      CHECK_FALSE((d.copies >= 3 && d.first > 0 && 3 * (seq.size() - d.first) >= seq.size() &&
                   begins_as_prefix));
    }
    const auto l = load(path);
    const cp::Graph& g = l->graph;
    CHECK(g.iterations_source == cp::kFromProfilerStep);
    CHECK(g.profiler_steps.empty());
    REQUIRE(g.iterations.size() == raw.steps.size());
    const cp::Analysis recorded = cp::analyse(g);
    const auto lengths = window_lengths(raw, windows);
    for (size_t k = 0; k < raw.steps.size(); ++k) {
      CHECK(g.iterations[k].name == raw.steps[k].name);
      CHECK(recorded.iterations[k].length_us == doctest::Approx(lengths[k]).epsilon(1e-9));
    }
    CHECK(recorded.profiler_steps.empty());
    CHECK(recorded.profiler_step_us == 0);
    CHECK(recorded.summary.find("per ProfilerStep") == std::string::npos);
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
