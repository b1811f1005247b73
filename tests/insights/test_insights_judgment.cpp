// Issue 48's judgment on real traces, each expectation computed here from the
// raw events (or TraceLens's reference CSVs), never from jarvis's output:
// the host-bound finding sized by the idle the host opened and claimed once
// beside the optimizer finding; attention and fused-projection GEMMs judged
// against the trace's own GEMM rate; compiled kernels' headroom; the host
// cost of a graph capture, with nothing claimed per step.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "explore/input_format.h"
#include "golden.h"
#include "insight_rules.h"
#include "insights/insights.h"
#include "perf/gpu_arch.h"
#include "raw_launches.h"
#include "report/table.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using doctest::Approx;
using jarvis::CallTree;
using jarvis::Event;
using jarvis::Trace;
using jarvis::Uid;
using jarvis::testing::launched_inside;
using jarvis::testing::rule_of;
namespace in = jarvis::insights;

namespace {

std::vector<in::Insight> insights_of(const Trace& t, const CallTree& tree, const char* arch_name) {
  auto arch = jarvis::perf::load_gpu_arch(arch_name);
  return in::run_insights(in::make_context(t, tree, &arch));
}

std::vector<int64_t> dims_of(const Trace& t, Uid u, size_t input) {
  std::vector<int64_t> out;
  const auto* dims = t.arg(u, "Input Dims");
  if (!dims || dims->list.size() <= input) return out;
  for (const auto& d : dims->list[input].list) out.push_back(d.i);
  return out;
}

// Kernel time launched from inside one host event (its correlation-linked
// kernels whose launch call lies in it).
double kernel_us_inside(const Trace& t, const Event& op) {
  return launched_inside(t, {&op}, true).time_us;
}

// The GPU idle the host opened, from the raw events: gaps of the union of GPU
// activity closed by an op whose launch call started after the gap began,
// with no synchronising call (or .item()) ending inside the gap; longer than
// 20 us whole, shorter ones the wait before the launch.
// `inside(launch)` selects the gaps whose closing launch lies in a window.
struct HostIdle {
  double total_us = 0, selected_us = 0;
};

template <class Select>
HostIdle host_opened_idle(const Trace& t, Select inside) {
  std::map<int64_t, const Event*> launch_of;
  std::vector<const Event*> syncs;
  for (const auto& e : t.events) {
    // .item() and friends block the host until the GPU has drained.
    if (e.cat == jarvis::Cat::CpuOp && t.str(e.name) == "aten::_local_scalar_dense")
      syncs.push_back(&e);
    if (!e.is_runtime()) continue;
    launch_of[t.correlation(e)] = &e;
    std::string_view n = t.str(e.name);
    if (n.find("Synchronize") != std::string_view::npos || n == "cudaMemcpy" || n == "hipMemcpy" ||
        n == "hipMemcpyWithStream")
      syncs.push_back(&e);
  }
  std::vector<const Event*> gpu;
  for (const auto& e : t.events)
    if (e.is_gpu() && e.has_ts() && e.has_dur()) gpu.push_back(&e);
  std::sort(gpu.begin(), gpu.end(), [](auto* a, auto* b) { return a->ts() < b->ts(); });
  HostIdle out;
  double end = -1e300;
  for (const Event* e : gpu) {
    if (end > -1e300 && e->ts() > end) {
      const double gap = e->ts() - end;
      auto it = launch_of.find(t.correlation(*e));
      bool synced = std::any_of(syncs.begin(), syncs.end(), [&](const Event* s) {
        return s->end() > end && s->end() <= e->ts();
      });
      if (it != launch_of.end() && it->second->ts() > end && !synced) {
        // A long gap counts whole; a short one its wait before the launch.
        const double us = gap > 20.0 ? gap : std::min(gap, it->second->ts() - end);
        out.total_us += us;
        if (inside(*it->second)) out.selected_us += us;
      }
    }
    end = std::max(end, e->end());
  }
  return out;
}

}  // namespace

TEST_CASE("judgment: a host-bound step claims the idle the host opened, once (GPT-2, ResNet)") {
  for (const char* name : {"gpt2_train", "resnet50_train"}) {
    CAPTURE(name);
    Trace t =
        jarvis::load_trace(jarvis::golden::shared_dir() + "/hw_pairs/" + name + "/h100.json.gz");
    std::vector<const Event*> optimizer;  // Optimizer.step# annotations on the host
    for (const auto& e : t.events)
      if (e.cat == jarvis::Cat::UserAnnotation && t.str(e.name).starts_with("Optimizer.step#"))
        optimizer.push_back(&e);
    const HostIdle raw = host_opened_idle(t, [&](const Event& launch) {
      return std::any_of(optimizer.begin(), optimizer.end(), [&](const Event* w) {
        return w->thread == launch.thread && launch.ts() >= w->ts() && launch.ts() < w->end();
      });
    });
    REQUIRE(raw.total_us > 0);
    CallTree tree(t);
    const auto all = insights_of(t, tree, "H100");
    const auto host = rule_of(all, "launch_bound");
    // GPT-2 on H100 is GPU-bound without the profiler's host cost (the
    // recorded host 36.5 ms a step, the GPU busy 24.7 ms): no host-bound
    // finding there (tests/insights/test_insights.cpp says why).
    if (std::string(name) == "gpt2_train") {
      for (const auto& i : host) CHECK_FALSE(i.title.starts_with("Host-bound step"));
      continue;
    }
    REQUIRE(host.size() == 1);
    const in::Insight& h = host.front();
    CHECK(h.title.starts_with("Host-bound step"));
    CHECK(h.evidence["host_idle_us"].get<double>() == Approx(raw.total_us).epsilon(1e-6));
    REQUIRE(h.recoverable_us.has_value());
    // Never more than the idle the host opened, nor than an ideal host saves.
    CHECK(*h.recoverable_us <= raw.total_us * (1 + 1e-9));
    CHECK(*h.recoverable_us <= h.step_saving_us.value() * (1 + 1e-9));
    const auto opt = rule_of(all, "foreach_optimizer");
    if (!optimizer.empty() && !opt.empty()) {
      // GPT-2's AdamW: the optimizer finding keeps the waits inside its step,
      // and the two claims together stay within the idle the host opened.
      REQUIRE(raw.selected_us > 0);
      CHECK(opt[0].evidence["host_idle_in_step_us"].get<double>() ==
            Approx(raw.selected_us).epsilon(1e-6));
      CHECK(*h.recoverable_us + raw.selected_us <= raw.total_us * (1 + 1e-9));
      CHECK(std::find(h.shares_time_with.begin(), h.shares_time_with.end(), "foreach_optimizer") !=
            h.shares_time_with.end());
    }
    // Where the host made the GPU wait, by the outermost place: ResNet's
    // backward nodes lead (autograd's evaluate_function frames).
    REQUIRE_FALSE(h.evidence["host_idle_by_place"].empty());
    if (std::string(name) == "resnet50_train") {
      bool backward = false;
      for (const auto& p : h.evidence["host_idle_by_place"])
        backward = backward || p["place"].get<std::string>().find("Backward0") != std::string::npos;
      CHECK(backward);
    }
  }
}

TEST_CASE("judgment: attention judged against the trace's own GEMM rate (MI300X compile trace)") {
  Trace t = jarvis::load_trace(jarvis::golden::shared_dir() +
                               "/conformance/mi300_compile_triton/trace.json.gz");
  double gemm_flops = 0, gemm_us = 0, attn_flops = 0, attn_us = 0;
  for (Uid u = 0; u < t.events.size(); ++u) {
    const Event& e = t.events[u];
    if (e.cat != jarvis::Cat::CpuOp) continue;
    std::string_view n = t.name(u);
    if (n == "aten::mm") {
      auto a = dims_of(t, u, 0), b = dims_of(t, u, 1);
      REQUIRE(a.size() == 2);
      const double flops = 2.0 * static_cast<double>(a[0] * a[1] * b[1]);
      if (flops < 10e9) continue;
      gemm_flops += flops;
      gemm_us += kernel_us_inside(t, e);
    } else if (n == "aten::_scaled_dot_product_flash_attention") {
      auto q = dims_of(t, u, 0);  // B, H, S, D; non-causal here
      REQUIRE(q.size() == 4);
      attn_flops += 4.0 * static_cast<double>(q[0] * q[1] * q[2] * q[2] * q[3]);
      attn_us += kernel_us_inside(t, e);
    }
  }
  REQUIRE(gemm_us > 0);
  REQUIRE(attn_us > 0);
  const double gemm_tflops = gemm_flops / gemm_us / 1e6;
  const double attainable = 0.85 * gemm_tflops;
  const double expected = attn_us - attn_flops / attainable / 1e6;
  CallTree tree(t);
  const auto all = insights_of(t, tree, "MI300X");
  const auto attn = rule_of(all, "attention_efficiency");
  REQUIRE(attn.size() == 1);
  CHECK(attn[0].evidence["trace_gemm_tflops_per_s"].get<double>() ==
        Approx(gemm_tflops).epsilon(1e-6));
  CHECK(attn[0].recoverable_us.value() == Approx(expected).epsilon(1e-6));
  CHECK(all.front().rule == "attention_efficiency");  // the largest saving in this trace

  // A 559-token prefill (Qwen on H100) is below the sequence length where
  // flash kernels reach their rate: not judged.
  Trace qwen = jarvis::load_trace(jarvis::golden::shared_dir() +
                                  "/conformance/h100_qwen1.5-0.5b/trace.json.gz");
  int64_t longest = 0;
  for (Uid u = 0; u < qwen.events.size(); ++u)
    if (qwen.events[u].cat == jarvis::Cat::CpuOp &&
        qwen.name(u).find("scaled_dot_product") != std::string_view::npos) {
      auto q = dims_of(qwen, u, 0);
      if (q.size() == 4) longest = std::max(longest, q[2]);
    }
  REQUIRE(longest > 0);
  REQUIRE(longest < 1024);
  CallTree qwen_tree(qwen);
  CHECK(rule_of(insights_of(qwen, qwen_tree, "H100"), "attention_efficiency").empty());
}

TEST_CASE("judgment: Q/K/V projections as three GEMMs on one input (MI300X compile trace)") {
  Trace t = jarvis::load_trace(jarvis::golden::shared_dir() +
                               "/conformance/mi300_compile_triton/trace.json.gz");
  struct Mm {
    double flops, us, ts;
    std::vector<int64_t> a;
  };
  std::vector<Mm> mms;
  for (Uid u = 0; u < t.events.size(); ++u)
    if (t.events[u].cat == jarvis::Cat::CpuOp && t.name(u) == "aten::mm") {
      auto a = dims_of(t, u, 0), b = dims_of(t, u, 1);
      mms.push_back({2.0 * static_cast<double>(a[0] * a[1] * b[1]),
                     kernel_us_inside(t, t.events[u]), t.events[u].ts(), a});
    }
  std::sort(mms.begin(), mms.end(), [](const Mm& x, const Mm& y) { return x.ts < y.ts; });
  // The first three GEMMs of the block share their input shape (Q, K, V);
  // the fourth (the output projection) comes after the attention.
  REQUIRE(mms.size() >= 4);
  REQUIRE(mms[0].a == mms[1].a);
  REQUIRE(mms[1].a == mms[2].a);
  const double run_flops = mms[0].flops + mms[1].flops + mms[2].flops;
  const double run_us = mms[0].us + mms[1].us + mms[2].us;
  double ref_flops = 0, ref_us = 0;  // the GEMMs at least as large as the fused one
  for (const auto& m : mms)
    if (m.flops >= run_flops) ref_flops += m.flops, ref_us += m.us;
  REQUIRE(ref_us > 0);
  const double expected = run_us - run_flops / (ref_flops / ref_us);
  CallTree tree(t);
  const auto found = rule_of(insights_of(t, tree, "MI300X"), "gemm_shared_input");
  // Only the Q/K/V run: the gate/up pair would be a GEMM larger than any
  // measured here, so there is no rate to time it at.
  REQUIRE(found.size() == 1);
  CHECK(found[0].evidence["gemms_per_run"] == 3);
  CHECK(found[0].evidence["input_dims"] == nlohmann::json(mms[0].a));
  CHECK(found[0].recoverable_us.value() == Approx(expected).epsilon(1e-6));
  // Its kernel names: those of the kernels the runs' GEMMs launched (by the
  // raw correlation ids), each once.
  std::map<int64_t, const Event*> launch_of;
  for (const auto& e : t.events)
    if (e.is_runtime()) launch_of[t.correlation(e)] = &e;
  std::set<std::string> launched;
  for (Uid k = 0; k < t.events.size(); ++k) {
    const Event& e = t.events[k];
    auto it = e.cat == jarvis::Cat::Kernel ? launch_of.find(t.correlation(e)) : launch_of.end();
    if (it == launch_of.end()) continue;
    for (Uid op : found[0].uids)
      if (it->second->thread == t.events[op].thread && it->second->ts() >= t.events[op].ts() &&
          it->second->ts() < t.events[op].end())
        launched.insert(std::string(t.name(k)));
  }
  const auto& names = found[0].kernel_names;
  REQUIRE_FALSE(names.empty());
  CHECK(std::set<std::string>(names.begin(), names.end()) == launched);
  CHECK(std::set<std::string>(names.begin(), names.end()).size() == names.size());
}

TEST_CASE("judgment: compiled Triton kernels' headroom against TraceLens's triton sheet") {
  const std::string dir = jarvis::golden::shared_dir() + "/conformance/mi300_compile_triton";
  const jarvis::Table ref = jarvis::read_csv_file(dir + "/category_data/triton_ops.csv");
  // 80 % of MI300X's 5.3 TB/s, the traffic TraceLens's Triton model counts.
  const double sustained_bytes_per_us = 0.8 * 5300e9 / 1e6;
  double expected = 0, time_us = 0;
  for (size_t r = 0; r < ref.rows.size(); ++r) {
    const double us = std::stod(ref.at(r, "Kernel Time (µs)_sum").text());
    const double bytes = std::stod(ref.at(r, "Data Moved (MB)").text()) * 1048576.0;
    time_us += us;
    expected += std::max(0.0, us - bytes / sustained_bytes_per_us);
  }
  REQUIRE(ref.rows.size() == 4);
  Trace t = jarvis::load_trace(dir + "/trace.json.gz");
  CallTree tree(t);
  const auto found = rule_of(insights_of(t, tree, "MI300X"), "compiled_kernel_headroom");
  REQUIRE(found.size() == 1);
  CHECK(found[0].evidence["calls"] == 4);
  CHECK(found[0].time_us == Approx(time_us).epsilon(1e-6));
  CHECK(found[0].recoverable_us.value() == Approx(expected).epsilon(1e-6));
  CHECK(found[0].title.starts_with("Compiled Triton kernels are already fused"));
}

TEST_CASE("judgment: a graph capture's host time by top-level op, nothing claimed per step") {
  for (const char* name : {"vllm_decode_graph_capture", "sglang_qwen3_decode_bs32"}) {
    CAPTURE(name);
    Trace t = jarvis::load_trace(jarvis::golden::shared_dir() + "/conformance/" + name +
                                 "/trace.json.gz");
    // Top-level cpu_ops from the raw events: not inside another cpu_op of
    // the same thread.
    std::map<uint32_t, std::vector<const Event*>> by_thread;
    for (const auto& e : t.events)
      if (e.cat == jarvis::Cat::CpuOp && e.has_dur()) by_thread[e.thread].push_back(&e);
    std::map<std::string, double> host_us;
    for (auto& [thread, ops] : by_thread) {
      std::sort(ops.begin(), ops.end(), [](auto* a, auto* b) {
        return a->ts() != b->ts() ? a->ts() < b->ts() : a->dur() > b->dur();
      });
      double open_end = -1e300;
      for (const Event* e : ops) {
        if (e->ts() < open_end) continue;  // nested in the op still open
        host_us[std::string(t.str(e->name))] += e->dur();
        open_end = e->end();
      }
    }
    auto top = std::max_element(host_us.begin(), host_us.end(),
                                [](auto& a, auto& b) { return a.second < b.second; });
    REQUIRE(top != host_us.end());
    CallTree tree(t);
    auto arch = jarvis::perf::load_gpu_arch("MI300X");
    const auto found =
        rule_of(in::run_insights(in::make_context(t, tree, &arch)), "capture_host_cost");
    REQUIRE(found.size() == 1);
    const auto& largest = found[0].evidence["largest"];
    REQUIRE_FALSE(largest.empty());
    CHECK(largest[0]["op"] == top->first);
    CHECK(largest[0]["host_us"].get<double>() == Approx(top->second).epsilon(1e-6));
    CHECK(found[0].recoverable_us.value_or(-1) == 0);  // one-time: no step claim
    CHECK(found[0].title.find("one-time startup cost") != std::string::npos);
  }
}

TEST_CASE("judgment: GPT-2's written-out tanh-GELU, forward and backward (raw events)") {
  // Forward: the top-level pointwise ops on the MLP's hidden activation
  // [8, 512, 3072] (in this model only the GELU touches it between the two
  // MLP GEMMs); backward: the autograd nodes carrying the Sequence number of
  // one of those ops or of an op nested in them (the autocast casts). Their
  // kernels through the raw correlation links.
  Trace t = jarvis::load_trace(jarvis::golden::shared_dir() + "/hw_pairs/gpt2_train/h100.json.gz");
  const std::vector<int64_t> hidden = {8, 512, 3072};
  std::map<uint32_t, std::vector<const Event*>> by_thread;
  for (const auto& e : t.events)
    if (e.cat == jarvis::Cat::CpuOp && e.has_dur()) by_thread[e.thread].push_back(&e);
  std::vector<const Event*> forward;
  std::set<int64_t> seqs;
  for (auto& [thread, ops] : by_thread) {
    std::sort(ops.begin(), ops.end(), [](auto* a, auto* b) {
      return a->ts() != b->ts() ? a->ts() < b->ts() : a->dur() > b->dur();
    });
    double open_end = -1e300;
    const Event* open = nullptr;
    for (const Event* e : ops) {
      if (e->ts() < open_end) {  // nested: its sequence number belongs to the open op's call
        if (open && std::find(forward.begin(), forward.end(), open) != forward.end() &&
            t.sequence_number(*e) != jarvis::kNoInt)
          seqs.insert(t.sequence_number(*e));
        continue;
      }
      open = e;
      open_end = e->end();
      const std::string_view n = t.str(e->name);
      const Uid u = static_cast<Uid>(e - t.events.data());
      if ((n == "aten::mul" || n == "aten::add" || n == "aten::pow" || n == "aten::tanh") &&
          dims_of(t, u, 0) == hidden) {
        forward.push_back(e);
        if (t.sequence_number(*e) != jarvis::kNoInt) seqs.insert(t.sequence_number(*e));
      }
    }
  }
  std::vector<const Event*> backward;
  for (const auto& e : t.events) {
    const std::string_view n = t.str(e.name);
    if (e.cat == jarvis::Cat::CpuOp && !n.starts_with("autograd::") && n.ends_with("Backward0") &&
        seqs.count(t.sequence_number(e)))
      backward.push_back(&e);
  }
  const auto fwd = launched_inside(t, forward, false);
  const auto bwd = launched_inside(t, backward, false);
  REQUIRE(forward.size() == 12 * 8);  // 12 layers, 8 pointwise ops each
  REQUIRE(bwd.count > 0);
  CallTree tree(t);
  const auto found = rule_of(insights_of(t, tree, "H100"), "unfused_gelu");
  REQUIRE(found.size() == 1);
  CHECK(found[0].evidence["calls"] == 12);
  CHECK(found[0].evidence["forward_kernels"] == fwd.count);
  CHECK(found[0].evidence["backward_kernels"] == bwd.count);
  CHECK(found[0].time_us == Approx(fwd.time_us + bwd.time_us).epsilon(1e-9));
  // A fused GELU's traffic: 12 calls x (2 + 3) passes of the bf16 tensor.
  const double fused_us = 12 * 5 * 2.0 * 8 * 512 * 3072 / (3350.0 * 1e3);
  CHECK(found[0].recoverable_us.value() <= found[0].time_us - fused_us * (1 - 1e-6));
}

TEST_CASE("judgment: GetCaptureInfo alone is no graph capture (Nsight export of a training job)") {
  // PyTorch asks cudaStreamGetCaptureInfo in plain steps; only a capture
  // begins one (or instantiates a graph). Counted from the raw runtime names.
  Trace t = jarvis::load_any_trace(jarvis::golden::shared_dir() + "/nsys/mfu_2gpu_before.sqlite");
  size_t asks = 0, begins = 0;
  for (const auto& e : t.events) {
    if (!e.is_runtime()) continue;
    const std::string_view n = t.str(e.name);
    asks += n.find("GetCaptureInfo") != std::string_view::npos;
    begins += n.find("BeginCapture") != std::string_view::npos ||
              n.find("GraphInstantiate") != std::string_view::npos;
  }
  REQUIRE(asks > 0);
  REQUIRE(begins == 0);
  CallTree tree(t);
  const auto all = insights_of(t, tree, "H100");
  CHECK(rule_of(all, "capture_host_cost").empty());
  for (const auto& i : rule_of(all, "launch_bound"))
    CHECK_FALSE(i.title.starts_with("Graph capture"));
}

TEST_CASE("judgment: autocast addmm rated at the dtype its inner GEMM runs (GPT-2, raw events)") {
  // Issue 48 point 4. Under autocast each fp32 `aten::addmm` casts its inputs
  // and calls `aten::addmm` again in bf16 (cuBLAS's nvjet kernel names carry
  // no dtype). From the raw events: the outer calls whose first matrix is
  // fp32 and that hold a bf16 addmm of the same dims, their kernel time
  // (correlation links), FLOPs 2*M*N*K + M*N (bias) per call; peaks from the
  // bundled arch.
  Trace t = jarvis::load_trace(jarvis::golden::shared_dir() + "/hw_pairs/gpt2_train/h100.json.gz");
  struct Expect {
    std::vector<const Event*> calls;
    double flops = 0;
  };
  std::map<std::vector<int64_t>, Expect> by_shape;  // (M, K, N)
  for (Uid u = 0; u < t.events.size(); ++u) {
    const Event& e = t.events[u];
    if (e.cat != jarvis::Cat::CpuOp || t.name(u) != "aten::addmm") continue;
    const auto* types = t.arg(u, "Input type");
    if (!types || types->list.size() < 3 || types->list[1].str() != "float") continue;
    bool inner_bf16 = false;
    for (Uid v = u + 1; v < t.events.size(); ++v) {
      const Event& f = t.events[v];
      if (f.cat != jarvis::Cat::CpuOp || t.name(v) != "aten::addmm" || f.thread != e.thread ||
          !(f.ts() > e.ts() && f.end() <= e.end()))
        continue;
      const auto* inner = t.arg(v, "Input type");
      inner_bf16 |= inner && inner->list.size() > 1 && inner->list[1].str() == "c10::BFloat16" &&
                    t.arg(v, "Input Dims")->repr() == t.arg(u, "Input Dims")->repr();
    }
    if (!inner_bf16) continue;
    const auto a = dims_of(t, u, 1), b = dims_of(t, u, 2);
    REQUIRE(a.size() == 2);
    REQUIRE(b.size() == 2);
    Expect& x = by_shape[{a[0], a[1], b[1]}];
    x.calls.push_back(&e);
    x.flops += 2.0 * a[0] * a[1] * b[1] + 1.0 * a[0] * b[1];
  }
  REQUIRE(by_shape.size() >= 3);
  CallTree tree(t);
  auto arch = jarvis::perf::load_gpu_arch("H100");
  const double bf16_peak = arch.peak_tflops("matrix_bf16").value();
  const auto found = rule_of(insights_of(t, tree, "H100"), "autocast_dtype");
  REQUIRE(found.size() == by_shape.size());
  for (const auto& [shape, x] : by_shape) {
    const std::string label =
        fmt::format("({}, {}) x ({}, {})", shape[0], shape[1], shape[1], shape[2]);
    CAPTURE(label);
    auto it = std::find_if(found.begin(), found.end(), [&](const in::Insight& i) {
      return i.title.find(label) != std::string::npos;
    });
    REQUIRE(it != found.end());
    const double kernel_us = launched_inside(t, x.calls, false).time_us;  // memsets too
    const double tflops = x.flops / kernel_us / 1e6;
    CHECK(it->evidence["kernel_dtype"] == "bf16");
    CHECK(it->evidence["calls"] == x.calls.size());
    CHECK(it->time_us == Approx(kernel_us).epsilon(1e-5));
    CHECK(it->evidence["achieved_tflops"].get<double>() == Approx(tflops).epsilon(1e-3));
    CHECK(it->evidence["efficiency_vs_kernel_dtype_pct"].get<double>() ==
          Approx(100 * tflops / bf16_peak).epsilon(1e-3));
    // Between a third and a half of the bf16 peak, where the fp32 rating said 65-88 %.
    CHECK(it->evidence["efficiency_vs_kernel_dtype_pct"].get<double>() <
          it->evidence["efficiency_tracelens_pct"].get<double>() / 1.5);
    CHECK(it->recoverable_us.value() <= it->time_us);
  }
}

TEST_CASE("judgment: a host-bound JAX step gets XLA's remedies, not PyTorch's (XPlane sample)") {
  // The legacy conv sample's GPU is idle most of its span (kernels of a few
  // microseconds between dispatches); the remedy is jit / scan, not
  // torch.compile or torch.cuda.graphs.
  Trace t = jarvis::load_any_trace(jarvis::golden::shared_dir() +
                                   "/jax/jax_conv_minimal_legacy/trace.xplane.pb");
  CallTree tree(t);
  const auto found = rule_of(insights_of(t, tree, "MI300X"), "launch_bound");
  REQUIRE(found.size() == 1);
  CHECK(found[0].action_model.find("jit") != std::string::npos);
  CHECK(found[0].action_model.find("lax.scan") != std::string::npos);
  for (const std::string* text :
       {&found[0].action_model, &found[0].action_kernel, &found[0].verify})
    CHECK(text->find("torch") == std::string::npos);
  // A PyTorch step host-bound without the profiler too (GPT-2 training on an
  // H200: 14.8 ms re-run without the profiler, the GPU busy 10.9 ms).
  Trace gpt2 =
      jarvis::load_trace(jarvis::golden::shared_dir() + "/ab_pairs/s_overhead_gpt2_shapes.json.gz");
  CallTree gpt2_tree(gpt2);
  const auto pytorch = rule_of(insights_of(gpt2, gpt2_tree, "H200"), "launch_bound");
  REQUIRE(pytorch.size() == 1);
  CHECK(pytorch[0].action_model.find("torch.cuda.graphs") != std::string::npos);
}

TEST_CASE("judgment: two rules on one vocabulary GEMM claim its kernel time once (s_vocab A)") {
  // old_arch_kernel (a pre-Hopper CUTLASS kernel) and gemm_unaligned_dims
  // (N / K / M = 32001) are about the same nine aten::mm calls: together they
  // recover at most those calls' GPU time, read from the raw launches.
  Trace t =
      jarvis::load_trace(jarvis::golden::shared_dir() + "/ab_pairs/s_vocab_A_vocab32001.json.gz");
  CallTree tree(t);
  std::set<Uid> vocab_ops;
  std::vector<const Event*> frames;
  for (Uid u = 0; u < t.events.size(); ++u) {
    if (t.events[u].cat != jarvis::Cat::CpuOp || t.name(u) != "aten::mm") continue;
    bool vocab = false;
    for (size_t k = 0; k < 2; ++k)
      for (int64_t d : dims_of(t, u, k)) vocab |= d == 32001;
    if (!vocab) continue;
    vocab_ops.insert(u);
    frames.push_back(&t.events[u]);
  }
  REQUIRE(vocab_ops.size() == 9);
  std::set<Uid> vocab_kernels;
  for (Uid op : vocab_ops)
    for (Uid k : tree.gpu_events(op)) vocab_kernels.insert(k);
  // Every GPU op they launch (a GEMM's kernels and its memsets).
  const double kernel_us = launched_inside(t, frames, false).time_us;
  REQUIRE(kernel_us > 0);
  double claimed = 0;
  std::set<std::string> rules;
  for (const auto& i : insights_of(t, tree, "H200")) {
    if (i.uids.empty() || !i.recoverable_us) continue;
    const bool on_vocab = std::all_of(i.uids.begin(), i.uids.end(), [&](Uid u) {
      return vocab_ops.count(u) || vocab_kernels.count(u);
    });
    if (!on_vocab) continue;
    CAPTURE(i.rule);
    claimed += *i.recoverable_us;
    rules.insert(i.rule);
    // Each finding's what-if saving stands on its own recoverable time.
    if (i.step_saving_us) CHECK(*i.step_saving_us <= *i.recoverable_us + 1.0);
  }
  // One change (pad 32001 to 32064): the old-arch kernels are its symptom,
  // folded in, so the vocabulary GEMMs are claimed by one finding.
  CHECK(rules.count("old_arch_kernel") == 0);
  CHECK(rules.count("gemm_unaligned_dims") == 1);
  CHECK(claimed <= kernel_us + 1.0);
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
