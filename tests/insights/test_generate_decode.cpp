// Decode steps on a real generate() trace (../shared/ab_pairs/s_generate_A_gpt2:
// HF generate() on GPT-2, prompt 2 x 128, 32 new tokens per ProfilerStep):
// the decode steps inside each ProfilerStep are seen, and the decode rules run
// on them. Every expectation is counted from the loaded trace's events.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "golden.h"
#include "insights/insights.h"
#include "insights/trace_health.h"
#include "perf/gpu_arch.h"
#include "raw_decode_steps.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace in = jarvis::insights;
namespace fs = std::filesystem;

namespace {

std::vector<int64_t> dims_of(const jarvis::Trace& t, jarvis::Uid u, size_t input) {
  std::vector<int64_t> out;
  const auto* dims = t.arg(u, "Input Dims");
  if (!dims || !dims->is_seq() || dims->size() <= input || !(*dims)[input].is_seq()) return out;
  for (const auto& v : (*dims)[input].list)
    if (v.kind == jarvis::PyValue::Kind::Int) out.push_back(v.i);
  return out;
}

}  // namespace

TEST_CASE("generate(): decode steps inside each ProfilerStep, and the decode rules on them") {
  const std::string path = jarvis::golden::shared_dir() + "/ab_pairs/s_generate_A_gpt2.json.gz";
  if (!fs::exists(path)) {
    MESSAGE("skipped: " << path << " is missing");
    return;
  }
  const jarvis::Trace t = jarvis::load_trace(path);
  const jarvis::CallTree tree(t);
  // Raw: the last ProfilerStep, the forward passes in it (one aten::embedding
  // of the token table each: the largest embedding table), their batch x
  // positions.
  double from = -1, to = -1;
  for (jarvis::Uid u = 0; u < t.events.size(); ++u) {
    const auto& e = t.events[u];
    if (e.cat == jarvis::Cat::UserAnnotation && t.name(u).starts_with("ProfilerStep#") &&
        e.ts() > from) {
      from = e.ts();
      to = e.end();
    }
  }
  REQUIRE(from > 0);
  int64_t vocab = 0;
  for (jarvis::Uid u = 0; u < t.events.size(); ++u)
    if (t.events[u].cat == jarvis::Cat::CpuOp && t.name(u) == "aten::embedding")
      if (auto w = dims_of(t, u, 0); w.size() == 2) vocab = std::max(vocab, w[0]);
  REQUIRE(vocab > 4096);
  size_t prefills = 0, decodes = 0;
  for (jarvis::Uid u = 0; u < t.events.size(); ++u) {
    const auto& e = t.events[u];
    if (e.cat != jarvis::Cat::CpuOp || t.name(u) != "aten::embedding" || e.ts() < from ||
        e.ts() >= to)
      continue;
    if (dims_of(t, u, 0).empty() || dims_of(t, u, 0)[0] != vocab) continue;
    const auto ids = dims_of(t, u, 1);  // [batch, positions]
    REQUIRE(ids.size() == 2);
    (ids[1] > 1 ? prefills : decodes) += 1;
  }
  CHECK(prefills == 1);
  REQUIRE(decodes >= 8);

  // Trace health: the repeats of the last ProfilerStep are its decode steps.
  const auto health = in::trace_health(t, tree);
  CHECK(health.trailing_in_profiler_step);
  CHECK(health.trailing_iterations + 2 >= decodes);
  CHECK(health.trailing_iterations <= decodes);
  CHECK(std::any_of(health.warnings.begin(), health.warnings.end(), [](const std::string& w) {
    return w.find("decode steps") != std::string::npos;
  }));
  // The decode steps are the step model's iterations (issue 73 point 10):
  // per step figures are per decode step, and the health block gives the
  // generate() call (ProfilerStep) beside them, recorded as the raw windows
  // give it (each step's host window, or the GPU work launched in it).
  namespace rd = jarvis::testing::raw_decode;
  const rd::RawTrace raw = rd::read_raw(path);
  const auto decode_windows = rd::decode_windows(raw);
  REQUIRE(!decode_windows.empty());
  std::vector<std::pair<double, double>> step_windows;
  for (const auto& s : raw.steps) step_windows.emplace_back(s.ts, s.end);
  double raw_call = 0;
  for (double l : rd::window_lengths(raw, step_windows))
    raw_call += l / static_cast<double>(step_windows.size());
  CHECK(health.iterations_source == "decode_steps_in_profiler_step");
  CHECK(health.decode_steps_per_profiler_step ==
        doctest::Approx(static_cast<double>(decode_windows.size()) /
                        static_cast<double>(raw.steps.size())));
  REQUIRE(health.recorded_per_profiler_step_us);
  CHECK(*health.recorded_per_profiler_step_us == doctest::Approx(raw_call).epsilon(1e-9));
  REQUIRE(health.estimated_unprofiled_per_profiler_step_us);
  REQUIRE(health.estimated_unprofiled_step_us);
  // A call holds its decode steps and its prefill: longer than them together.
  CHECK(*health.estimated_unprofiled_per_profiler_step_us >
        health.decode_steps_per_profiler_step * *health.estimated_unprofiled_step_us);
  CHECK(health.unprofiled_before_decode_us_per_profiler_step > 0);
  const auto health_json = in::to_json(health);
  CHECK(health_json["per_profiler_step"]["estimated_unprofiled_us"].get<double>() ==
        doctest::Approx(*health.estimated_unprofiled_per_profiler_step_us));
  CHECK(std::any_of(health.warnings.begin(), health.warnings.end(), [](const std::string& w) {
    return w.find("per ProfilerStep (per generate() call)") != std::string::npos;
  }));

  static const auto arch = jarvis::perf::load_gpu_arch("H200");
  const auto context = in::make_context(t, tree, &arch);
  const auto all = in::run_insights(context);
  auto of = [&](std::string_view rule) {
    std::vector<in::Insight> out;
    for (const auto& i : all)
      if (i.rule == rule) out.push_back(i);
    return out;
  };
  // Full-vocabulary logits: generate() asks for the last position only
  // (logits_to_keep=1): no op produces [batch, positions > 1, vocab] logits.
  size_t full_logits = 0;
  for (jarvis::Uid u = 0; u < t.events.size(); ++u) {
    if (t.events[u].cat != jarvis::Cat::CpuOp) continue;
    for (size_t k = 0; k < 3; ++k) {
      const auto d = dims_of(t, u, k);
      full_logits += d.size() == 3 && d[1] > 1 && d[2] == vocab;
    }
  }
  CHECK(full_logits == 0);
  CHECK(of("full_vocab_logits").empty());
  // The KV cache grown by torch.cat: every aten::cat of a 4-D cache tensor
  // [B, H, L, D] whose positions grow from the prompt's length (the rule also
  // counts the attention mask's [B, L] cats grown beside it).
  size_t cache_cats = 0;
  for (jarvis::Uid u = 0; u < t.events.size(); ++u) {
    if (t.events[u].cat != jarvis::Cat::CpuOp || t.name(u) != "aten::cat") continue;
    const auto* dims = t.arg(u, "Input Dims");
    if (!dims || !dims->is_seq() || dims->size() == 0 || !(*dims)[0].is_seq()) continue;
    const auto& tensors = (*dims)[0].list;  // the list of tensors concatenated
    if (!tensors.empty() && tensors[0].is_seq() && tensors[0].size() == 4 &&
        tensors[0].list[2].kind == jarvis::PyValue::Kind::Int && tensors[0].list[2].i >= 128)
      ++cache_cats;
  }
  const auto kv = of("kv_cache_cat");
  REQUIRE(kv.size() == 1);
  REQUIRE(cache_cats > 0);
  CHECK(kv[0].evidence["calls"].get<size_t>() >= cache_cats);
  CHECK(kv[0].title.find(", L]") == std::string::npos);  // titled by the 4-D cache, not the mask
  // Batch-2 decode steps cost their launches: the step is host-bound without
  // the profiler too, and the launch-bound finding says so.
  const auto launch = of("launch_bound");
  REQUIRE(launch.size() == 1);
  CHECK(launch[0].title.starts_with("Host-bound step"));
  REQUIRE(context.step);
  CHECK(launch[0].step_saving_us.value_or(0) / static_cast<double>(launch[0].steps) <=
        context.step->measured.step_time_us);
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
