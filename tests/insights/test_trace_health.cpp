// Trace health (load_trace's confidence block) on real traces whose
// weaknesses are known, with counts taken from the raw events.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "critical_path/critical_path.h"
#include "golden.h"
#include "insights/trace_health.h"
#include "test_loader_support.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace {

struct Loaded {
  jarvis::Trace trace;
  jarvis::CallTree tree;
  explicit Loaded(const std::string& rel)
      : trace(jarvis::load_trace(jarvis::golden::shared_dir() + "/" + rel)), tree(trace) {}
};

size_t raw_count(const jarvis::Trace& t, bool (*pred)(const jarvis::Trace&, size_t)) {
  size_t n = 0;
  for (size_t u = 0; u < t.events.size(); ++u) n += pred(t, u);
  return n;
}

bool contains_warning(const jarvis::insights::TraceHealth& h, const std::string& needle) {
  for (const auto& w : h.warnings)
    if (w.find(needle) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("health: a vLLM graph-capture trace is flagged low confidence") {
  Loaded l("conformance/vllm_decode_graph_capture/trace.json.gz");
  auto h = jarvis::insights::trace_health(l.trace, l.tree);
  size_t gpu =
      raw_count(l.trace, [](const jarvis::Trace& t, size_t u) { return t.events[u].is_gpu(); });
  CHECK(h.gpu_events == gpu);
  CHECK(h.gpu_events < 50);
  CHECK(h.gpu_busy_share < 0.01);
  CHECK(h.confidence == "low");
  CHECK(contains_warning(h, "too few to rank"));
  CHECK(contains_warning(h, "GPU is busy"));
}

TEST_CASE("health: an older trace without flows, and ProfilerStep counts") {
  Loaded l("legacy/hta_noflow_rank1/trace.json.gz");
  auto h = jarvis::insights::trace_health(l.trace, l.tree);
  size_t steps = raw_count(l.trace, [](const jarvis::Trace& t, size_t u) {
    return t.name(static_cast<jarvis::Uid>(u)).starts_with("ProfilerStep#");
  });
  CHECK(h.profiler_steps == steps);
  CHECK(h.links_without_flows);
  CHECK(contains_warning(h, "correlation only"));
  CHECK(h.linked_gpu_events == h.gpu_events);
  CHECK(h.confidence == "high");  // the linking note is information, not a strike
  auto j = jarvis::insights::to_json(h);
  CHECK(j["profiler_steps"] == steps);
}

TEST_CASE("health: a trace without GPU events") {
  auto t = jarvis::load_trace_from_json(
      R"({"traceEvents":[{"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":0,"dur":1}]})");
  jarvis::CallTree tree(t);
  auto h = jarvis::insights::trace_health(t, tree);
  CHECK(h.gpu_events == 0);
  CHECK(h.confidence == "low");
  CHECK(contains_warning(h, "no GPU events"));
}

TEST_CASE("health: iterations without ProfilerStep come from the repeating launch sequence") {
  // Whatever the launch sequence shows, health reports it the way the critical
  // path finds it; these traces have at most one ProfilerStep#N and no
  // repeating sequence (a graph capture, one BERT step, a compile run).
  for (const char* rel : {"conformance/sglang_qwen3_decode_bs32/trace.json.gz",
                          "conformance/h100_bert-small/trace.json.gz",
                          "conformance/mi300_compile_triton/trace.json.gz"}) {
    CAPTURE(rel);
    Loaded l(rel);
    auto h = jarvis::insights::trace_health(l.trace, l.tree);
    auto repeats = jarvis::critical_path::detect_repeats(l.trace, l.tree);
    size_t expected = h.profiler_steps >= 2 || !repeats ? 0 : repeats->count;
    CHECK(h.detected_iterations == expected);
    if (h.profiler_steps < 2) {
      CHECK(contains_warning(h, "ProfilerStep annotation(s)"));
      bool stands_in = contains_warning(h, "stand in for them");
      CHECK(stands_in == (h.detected_iterations >= 2));
    }
    CHECK(jarvis::insights::to_json(h)["detected_iterations"] == h.detected_iterations);
  }
}

TEST_CASE("health: a real DDP trace without its ProfilerStep annotations keeps its confidence") {
  // HTA's allreduce trace has three ProfilerStep#N; with them removed, the
  // three repeats of its launch sequence stand in (a note, not a strike).
  jarvis::loader_test::TempDir tmp;
  const std::string src =
      jarvis::golden::shared_dir() + "/nccl/hta_allreduce_2ranks_rank0/trace.json.gz";
  const std::string stripped = jarvis::loader_test::strip_profiler_steps(src, tmp.path, "nostep");
  Loaded with("nccl/hta_allreduce_2ranks_rank0/trace.json.gz");
  auto h_with = jarvis::insights::trace_health(with.trace, with.tree);
  REQUIRE(h_with.profiler_steps == 3);
  CHECK(h_with.detected_iterations == 0);  // not looked for: the steps are there

  jarvis::Trace trace = jarvis::load_trace(stripped);
  jarvis::CallTree tree(trace);
  auto h = jarvis::insights::trace_health(trace, tree);
  CHECK(h.profiler_steps == 0);
  CHECK(h.detected_iterations == 3);
  CHECK(contains_warning(h, "3 iterations found as repeats of the launch sequence"));
  CHECK_FALSE(contains_warning(h, "steady state cannot be told"));
  CHECK(h.confidence == h_with.confidence);
}

TEST_CASE("health: Python stack tracing is named, and lowers confidence when it dominates") {
  struct Case {
    const char* trace;
    bool heavy;
  };
  for (const Case& c : {Case{"conformance/vllm_decode_graph_capture/trace.json.gz", true},
                        Case{"conformance/h100_bert-small/trace.json.gz", false},
                        Case{"hw_pairs/gpt2_train/h100.json.gz", false}}) {
    CAPTURE(c.trace);
    jarvis::Trace t = jarvis::load_trace(jarvis::golden::shared_dir() + "/" + c.trace);
    // From the raw events.
    size_t python = 0, ops = 0;
    for (const auto& e : t.events) {
      python += e.cat == jarvis::Cat::PythonFunction;
      ops += e.cat == jarvis::Cat::CpuOp;
    }
    jarvis::CallTree tree(t);
    auto h = jarvis::insights::trace_health(t, tree);
    CHECK(h.python_events == python);
    std::string named;
    for (const auto& w : h.warnings)
      if (w.find("Python stack tracing") != std::string::npos) named = w;
    if (python == 0) {
      CHECK(named.empty());
      continue;
    }
    CHECK(named.find(std::to_string(python) + " python_function events") != std::string::npos);
    bool heavy = static_cast<double>(python) / static_cast<double>(ops) >= 10.0;
    CHECK(heavy == c.heavy);
    CHECK((named.find("with_stack=False") != std::string::npos) == heavy);
  }
}

namespace {

// A Kineto trace of one launch per kernel name, in order: a cpu_op with its
// cudaLaunchKernel inside, the kernel linked by correlation id.
std::string launches_trace(const std::vector<std::string>& kernels) {
  std::string ev;
  double ts = 0;
  int64_t corr = 1;
  for (const std::string& k : kernels) {
    if (!ev.empty()) ev += ",";
    ev += fmt::format(
        R"({{"ph":"X","cat":"cpu_op","name":"op_{0}","pid":1,"tid":1,"ts":{1},"dur":8}},)"
        R"({{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{2},)"
        R"("dur":4,"args":{{"correlation":{3}}}}},)"
        R"({{"ph":"X","cat":"kernel","name":"{0}","pid":0,"tid":7,"ts":{4},"dur":5,)"
        R"("args":{{"correlation":{3},"stream":7,"device":0}}}})",
        k, ts, ts + 2, corr, ts + 20);
    ts += 10;
    ++corr;
  }
  return R"({"deviceProperties":[{"name":"NVIDIA H100 80GB HBM3"}],"traceEvents":[)" + ev + "]}";
}

// Embedding, `layers` x (norm, qkv, attention, o_proj, mlp), norm, head, sampling.
void forward_pass(std::vector<std::string>& out, int layers, const std::string& attention) {
  out.push_back("embedding_kernel");
  for (int l = 0; l < layers; ++l)
    for (const char* k : {"rms_norm_kernel", "gemm_qkv", "", "gemm_o_proj", "gemm_mlp"})
      out.push_back(*k ? k : attention);
  for (const char* k : {"rms_norm_kernel", "gemm_lm_head", "argmax_kernel"}) out.push_back(k);
}

}  // namespace

TEST_CASE("health: decode steps after a prefill are named; one forward's layers are not steps") {
  // Issue 48 point 5: a generate() trace without ProfilerStep: one prefill
  // (flash attention), then decode steps (paged attention) that repeat. The
  // whole sequence does not repeat (the prefill launches kernels no step
  // does), so only the trailing repeats can tell the steps.
  constexpr int kLayers = 4, kSteps = 6;
  std::vector<std::string> generate;
  forward_pass(generate, kLayers, "flash_fwd_kernel");
  for (int s = 0; s < kSteps; ++s) forward_pass(generate, kLayers, "paged_attention_kernel");
  const size_t step_launches = 1 + 5 * kLayers + 3;
  jarvis::Trace t = jarvis::load_trace_from_json(launches_trace(generate));
  jarvis::CallTree tree(t);
  CHECK_FALSE(jarvis::critical_path::detect_repeats(t, tree));
  auto h = jarvis::insights::trace_health(t, tree);
  CHECK(h.detected_iterations == 0);
  CHECK(h.trailing_iterations == kSteps);
  CHECK(h.trailing_period == step_launches);
  // The prefill's last launches (norm, head, sampling) are those of a step:
  // the repeats may begin inside it, never before it.
  CHECK(h.leading_launches <= step_launches);
  CHECK(h.leading_launches + kSteps * step_launches <= generate.size());
  CHECK(contains_warning(h, "repeats 6 times"));
  CHECK_FALSE(contains_warning(h, "steady state cannot be told"));
  CHECK(jarvis::insights::to_json(h)["trailing_iterations"] == kSteps);

  // A prefill alone: its 24 layers repeat to the end (the final norm starts
  // like a layer), but a layer does not begin as the pass does (embedding).
  std::vector<std::string> prefill;
  forward_pass(prefill, 24, "flash_fwd_kernel");
  prefill.pop_back();  // no sampling: the base model's trace ends after the head
  prefill.pop_back();
  jarvis::Trace p = jarvis::load_trace_from_json(launches_trace(prefill));
  jarvis::CallTree ptree(p);
  CHECK_FALSE(jarvis::critical_path::detect_trailing_repeats(p, ptree));
  auto hp = jarvis::insights::trace_health(p, ptree);
  CHECK(hp.trailing_iterations == 0);
  CHECK(contains_warning(hp, "steady state cannot be told"));
}

TEST_CASE("health: no real trace in ../shared is taken for decode steps") {
  // None of them is a generate() trace: the conformance inference traces are
  // one forward pass or a graph capture, the training traces repeat whole.
  for (const char* rel :
       {"conformance/h100_qwen1.5-0.5b/trace.json.gz",
        "conformance/mi300_qwen1.5-0.5b/trace.json.gz", "conformance/h100_bert-small/trace.json.gz",
        "conformance/mi300_falconsai-nsfw/trace.json.gz",
        "conformance/sglang_qwen3_decode_bs32/trace.json.gz",
        "hw_pairs/resnet50_train/h100.json.gz", "hw_pairs/gpt2_train/h100.json.gz"}) {
    CAPTURE(rel);
    Loaded l(rel);
    CHECK(jarvis::insights::trace_health(l.trace, l.tree).trailing_iterations == 0);
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
