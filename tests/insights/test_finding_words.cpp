// What a finding says agrees with its figures and with where its time is
// (the blind run of ../shared/evals/blind-run on the A arms of
// ../shared/ab_pairs logged each of these as a contradiction): a CUDA graph's
// saving on a step that syncs with the host names the syncs; a folded
// change's title says what its joint figure covers; the advice for host time
// no op records follows where the stretch lies; an attention kernel is named
// by its family; load_trace puts the GPU's busy share beside the path's
// shares; GPU work queued before profiling is the work with no launch.
// Expectations come from the raw trace events, read here with nlohmann::json.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "golden.h"
#include "insights/insights.h"
#include "insights/trace_health.h"
#include "mcp_harness.h"
#include "perf/gpu_arch.h"
#include "raw_decode_steps.h"
#include "raw_timeline.h"
#include "test_loader_support.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace in = jarvis::insights;
using nlohmann::json;

std::string ab(const std::string& file) {
  return jarvis::golden::shared_dir() + "/ab_pairs/" + file;
}

bool have(const std::string& file) {
  if (std::filesystem::exists(ab(file))) return true;
  MESSAGE("skipped: " << ab(file) << " is missing");
  return false;
}

// One complete ('X') event of the raw trace.
struct RawEvent {
  std::string cat, name, thread;
  double ts = 0, end = 0;
  long long corr = -1;
  json args;
  bool gpu() const { return cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset"; }
  bool runtime() const { return cat == "cuda_runtime" || cat == "cuda_driver"; }
};

struct RawTrace {
  std::vector<RawEvent> events;
  std::vector<std::pair<double, double>> steps;     // host ProfilerStep#N ranges, by start
  std::map<long long, std::vector<size_t>> gpu_of;  // correlation -> GPU events
  std::map<long long, size_t> launch_of;            // correlation -> runtime call
  double first_step() const { return steps.front().first; }
  double last_step_end() const { return steps.back().second; }
};

RawTrace raw_trace(const std::string& file) {
  const json raw = json::parse(jarvis::loader_test::gunzip_file(ab(file)));
  RawTrace t;
  for (const auto& e : raw["traceEvents"]) {
    if (e.value("ph", "") != "X" || !e.contains("dur") || !e.contains("ts")) continue;
    RawEvent r;
    r.cat = e.value("cat", "");
    r.name = e.value("name", "");
    r.ts = e["ts"].get<double>();
    r.end = r.ts + e["dur"].get<double>();
    r.thread = e["pid"].dump() + "/" + e["tid"].dump();
    if (e.contains("args")) {
      r.args = e["args"];
      if (r.args.contains("correlation") && r.args["correlation"].is_number())
        r.corr = r.args["correlation"].get<long long>();
    }
    if (r.cat == "user_annotation" && r.name.starts_with("ProfilerStep#"))
      t.steps.emplace_back(r.ts, r.end);
    t.events.push_back(std::move(r));
  }
  std::sort(t.steps.begin(), t.steps.end());
  for (size_t k = 0; k < t.events.size(); ++k) {
    const RawEvent& r = t.events[k];
    if (r.corr < 0) continue;
    if (r.gpu()) t.gpu_of[r.corr].push_back(k);
    if (r.runtime()) t.launch_of[r.corr] = k;
  }
  return t;
}

// The cpu_ops of `call`'s thread around it: the outermost (longest) and the
// innermost (shortest); "" when none.
std::pair<std::string, std::string> ops_around(const RawTrace& t, const RawEvent& call) {
  const RawEvent *outer = nullptr, *inner = nullptr;
  for (const RawEvent& o : t.events) {
    if (o.cat != "cpu_op" || o.thread != call.thread || o.ts > call.ts || o.end < call.end)
      continue;
    if (!outer || o.end - o.ts > outer->end - outer->ts) outer = &o;
    if (!inner || o.end - o.ts < inner->end - inner->ts) inner = &o;
  }
  return {outer ? outer->name : "", inner ? inner->name : ""};
}

// The host syncs a CUDA graph of the step cannot hold, by the op around them
// (outermost cpu_op; calls outside any op left out): a synchronise call, or a
// copy call to the host that waited for its GPU side to end, with GPU work
// launched in its ProfilerStep both before and after it.
std::map<std::string, size_t> raw_mid_step_syncs_in_ops(const RawTrace& t) {
  std::vector<double> launches;
  for (const RawEvent& c : t.events)
    if (c.runtime() && t.gpu_of.count(c.corr)) launches.push_back(c.ts);
  std::sort(launches.begin(), launches.end());
  const auto launched_in = [&](double from, double to) {
    auto it = std::lower_bound(launches.begin(), launches.end(), from);
    return it != launches.end() && *it < to;
  };
  std::map<std::string, size_t> out;
  for (const RawEvent& c : t.events) {
    if (!c.runtime()) continue;
    bool sync = c.name.find("Synchronize") != std::string::npos;
    if (!sync && c.name.find("Memcpy") != std::string::npos && t.gpu_of.count(c.corr))
      for (size_t g : t.gpu_of.at(c.corr))
        sync = sync || (t.events[g].end >= c.ts && t.events[g].end <= c.end + 2.0 &&
                        t.events[g].name.find("DtoH") != std::string::npos);
    if (!sync) continue;
    bool mid_step = false;
    for (const auto& [from, to] : t.steps)
      if (c.ts >= from && c.ts < to) mid_step = launched_in(from, c.ts) && launched_in(c.end, to);
    if (!mid_step) continue;
    const std::string outer = ops_around(t, c).first;
    if (!outer.empty()) ++out[outer];
  }
  return out;
}

const in::Insight* find_rule(const std::vector<in::Insight>& all, const std::string& rule) {
  for (const auto& i : all)
    if (i.rule == rule) return &i;
  return nullptr;
}

struct Analysed {
  jarvis::Trace trace;
  std::unique_ptr<jarvis::CallTree> tree;
  std::vector<in::Insight> found;
};

std::unique_ptr<Analysed> analyse(const std::string& file) {
  static const auto arch = jarvis::perf::load_gpu_arch("H200");
  auto a = std::make_unique<Analysed>();
  a->trace = jarvis::load_trace(ab(file));
  a->tree = std::make_unique<jarvis::CallTree>(a->trace);
  a->found = in::run_insights(in::make_context(a->trace, *a->tree, &arch));
  return a;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST_SUITE("insights") {
  TEST_CASE("a CUDA graph's saving on a step that syncs with the host names the syncs") {
    // s_mask_sync A: boolean indexing (aten::index -> aten::nonzero) syncs
    // in the forward and backward; s_adam A syncs in no op, s_loader A only
    // in its pageable input's copy to the device (before a graph's replay),
    // a decode step at its end (its token's copy to the host).
    size_t with_syncs = 0;
    for (const std::string file :
         {"s_mask_sync_A_boolean_index.json.gz", "s_adam_A_foreach.json.gz",
          "s_loader_A_workers0.json.gz", "s_overhead_decode_plain.json.gz"}) {
      if (!have(file)) return;
      CAPTURE(file);
      const RawTrace raw = raw_trace(file);
      const auto syncs = raw_mid_step_syncs_in_ops(raw);
      const auto a = analyse(file);
      const in::Insight* lb = find_rule(a->found, "launch_bound");
      REQUIRE(lb);
      REQUIRE(lb->what_if.is_object());  // sized by the graph's what-if
      CAPTURE(lb->title);
      const double steps = static_cast<double>(raw.steps.size());
      if (syncs.empty()) {
        CHECK_FALSE(lb->evidence.contains("host_syncs"));
        CHECK_FALSE(has(lb->title, "cannot capture"));
        continue;
      }
      ++with_syncs;
      REQUIRE(lb->evidence.contains("host_syncs"));
      CHECK(lb->evidence["graph_capturable"] == false);
      std::map<std::string, double> per_step;
      for (const auto& s : lb->evidence["host_syncs"])
        per_step[s["op"].get<std::string>()] = s["syncs_per_step"].get<double>();
      CHECK(per_step.size() == syncs.size());
      size_t calls = 0;
      for (const auto& entry : syncs) {
        // Named copies: clang 14 cannot capture a structured binding (CAPTURE).
        const std::string op = entry.first;
        const auto n = entry.second;
        CAPTURE(op);
        REQUIRE(per_step.count(op));
        CHECK(per_step[op] == doctest::Approx(static_cast<double>(n) / steps));
        calls += n;
        CHECK(has(lb->action_model, op));
      }
      // The title, the note and the action say the graph needs them gone.
      CHECK(has(lb->title, "once its host syncs are gone"));
      CHECK(
          has(lb->title, fmt::format("{:.1f} syncs per step", static_cast<double>(calls) / steps)));
      CHECK(has(lb->step_saving_note, "needs the host syncs removed first"));
      CHECK(has(lb->step_saving_note, "host_sync"));
      CHECK(lb->action_model.starts_with("First take the host syncs out of the step"));
      CHECK(find_rule(a->found, "host_sync"));
    }
    CHECK(with_syncs == 1);
  }

  TEST_CASE("a folded change's title says what its joint figure covers (s_layout A)") {
    const std::string file = "s_layout_A_nchw.json.gz";
    if (!have(file)) return;
    const RawTrace raw = raw_trace(file);
    double conversions = 0, batch_norms = 0;
    for (const RawEvent& e : raw.events) {
      if (e.cat != "kernel") continue;
      if (has(e.name, "nchwToNhwc") || has(e.name, "nhwcToNchw")) conversions += e.end - e.ts;
      if (has(e.name, "batch_norm")) batch_norms += e.end - e.ts;
    }
    const auto a = analyse(file);
    const in::Insight* f = find_rule(a->found, "conv_layout_transposes");
    REQUIRE(f);
    CAPTURE(f->title);
    CHECK(f->change == "channels_last");
    const double own = f->evidence["own_part"]["time_us"].get<double>();
    CHECK(own == doctest::Approx(conversions).epsilon(1e-6));
    // The joint figure: the conversions and the NCHW batch norms' kernels
    // the folded findings name, never more than all of them.
    CHECK(f->time_us > conversions + 1000);
    CHECK(f->time_us <= conversions + batch_norms + 1.0);
    CHECK(*f->recoverable_us <= f->time_us);
    CHECK(f->title.starts_with(
        fmt::format("One change, channels_last: {:.2f} ms of kernel time over the trace's {} steps",
                    f->time_us / 1e3, raw.steps.size())));
    CHECK(has(f->title, fmt::format("of which this finding's {:.2f} ms and {:.2f} ms on the ops of "
                                    "the folded findings",
                                    conversions / 1e3, (f->time_us - own) / 1e3)));
    CHECK(has(f->title, "the recoverable time and step saving are the whole change's. "));
    // The conversions' own figure follows, as their own finding said it.
    CHECK(has(f->title, f->evidence["own_part"]["title"].get<std::string>()));
  }

  TEST_CASE("a folded change's title and fields agree (s_vocab A: the LM head's padding)") {
    const std::string file = "s_vocab_A_vocab32001.json.gz";
    if (!have(file)) return;
    const RawTrace raw = raw_trace(file);
    const auto a = analyse(file);
    const in::Insight* f = find_rule(a->found, "gemm_unaligned_dims");
    REQUIRE(f);
    CAPTURE(f->title);
    REQUIRE(f->change == "pad 32001 to 32064");
    const auto m = f->evidence["M"].get<long long>(), n = f->evidence["N"].get<long long>(),
               k = f->evidence["K"].get<long long>();
    // The finding's own GEMM: the aten::mm calls of [M, K] x [K, N], and the
    // GPU work their launch calls queued.
    const json dims = {{m, k}, {k, n}};
    double own = 0;
    size_t calls = 0;
    for (const RawEvent& op : raw.events) {
      if (op.cat != "cpu_op" || op.name != "aten::mm" || !op.args.contains("Input Dims") ||
          op.args["Input Dims"] != dims)
        continue;
      ++calls;
      for (const RawEvent& c : raw.events)
        if (c.runtime() && c.thread == op.thread && c.ts >= op.ts && c.end <= op.end &&
            raw.gpu_of.count(c.corr))
          for (size_t g : raw.gpu_of.at(c.corr)) own += raw.events[g].end - raw.events[g].ts;
    }
    // The change's GEMMs (forward and both backward) run the sm75 fallback.
    double fallback = 0;
    for (const RawEvent& e : raw.events)
      if (e.cat == "kernel" && has(e.name, "cutlass_75")) fallback += e.end - e.ts;
    CHECK(calls == 3);
    CHECK(f->evidence["own_part"]["time_us"].get<double>() == doctest::Approx(own).epsilon(1e-6));
    CHECK(f->time_us == doctest::Approx(fallback).epsilon(1e-3));
    // 19 % is the forward GEMM's share, 44 % the change's: each says which.
    const double kernel_time = f->time_us / f->share;  // all kernel time (the shares' base)
    CHECK(has(f->title, fmt::format("({:.2f} ms, {:.1f}% of kernel time; {} calls in the trace)",
                                    own / 1e3, 100 * own / kernel_time, calls)));
    CHECK(
        f->title.starts_with(fmt::format("One change, pad 32001 to 32064: {:.2f} ms of kernel "
                                         "time over the trace's {} steps ({:.1f}% of kernel time)",
                                         f->time_us / 1e3, raw.steps.size(), 100 * f->share)));
  }

  TEST_CASE("host time no op records: the advice follows where the stretch lies") {
    // Each finding's stretches found in the raw events (between two recorded
    // host events of a ProfilerStep, 100 us or more), and where they lie:
    // inside the optimizer's step annotation, at the step's start before its
    // first launch when that copies host to device, or elsewhere.
    size_t optimizer = 0, findings = 0;
    for (const std::string file :
         {"s_adam_A_foreach.json.gz", "s_mask_sync_A_boolean_index.json.gz",
          "s_loader_A_workers0.json.gz", "s_generate_A_gpt2.json.gz"}) {
      if (!have(file)) return;
      CAPTURE(file);
      const RawTrace raw = raw_trace(file);
      const auto a = analyse(file);
      std::vector<const RawEvent*> host, launches;
      for (const RawEvent& e : raw.events) {
        const bool loader =
            e.cat == "user_annotation" && has(e.name, "DataLoader") && has(e.name, "__next__");
        if (e.cat == "cpu_op" || e.runtime() || loader) host.push_back(&e);
        if (e.runtime() && raw.gpu_of.count(e.corr)) launches.push_back(&e);
      }
      const auto by_ts = [](const RawEvent* x, const RawEvent* y) { return x->ts < y->ts; };
      std::sort(host.begin(), host.end(), by_ts);
      std::sort(launches.begin(), launches.end(), by_ts);
      for (const in::Insight& f : a->found) {
        if (f.rule != "unrecorded_host_time") continue;
        ++findings;
        CAPTURE(f.title);
        const std::string after = f.evidence["after"], before = f.evidence["before"];
        size_t inside_optimizer = 0, before_input = 0, stretches = 0;
        // s_generate A: a generate() call per ProfilerStep, whose decode
        // steps (found in the raw launches) are the iterations (issue 73
        // point 10): the stretches are those inside them.
        const auto windows = file == "s_generate_A_gpt2.json.gz"
                                 ? jarvis::testing::raw_decode::decode_windows(
                                       jarvis::testing::raw_decode::read_raw(ab(file)))
                                 : raw.steps;
        REQUIRE(!windows.empty());
        for (const auto& [from, to] : windows) {
          const RawEvent* last = nullptr;
          double last_end = -1e300;
          for (const RawEvent* h : host) {
            if (h->ts >= to || h->end <= from) continue;
            if (last && h->ts - last_end >= 100 && last_end >= from) {
              const auto name_of = [&](const RawEvent* e) {
                const std::string outer = ops_around(raw, *e).first;
                return outer.empty() ? e->name : outer;
              };
              if (name_of(last) == after && name_of(h) == before) {
                ++stretches;
                bool in_opt = false;
                for (const RawEvent& u : raw.events)
                  in_opt = in_opt ||
                           (u.cat == "user_annotation" && u.name.starts_with("Optimizer.step") &&
                            u.thread == h->thread && u.ts <= last_end && u.end >= h->ts);
                inside_optimizer += in_opt;
                bool launched_before = false;
                const RawEvent* next = nullptr;
                for (const RawEvent* l : launches) {
                  launched_before = launched_before || (l->ts >= from && l->ts < last_end);
                  if (!next && l->ts >= h->ts) next = l;
                }
                bool h2d = false;
                if (next)
                  for (size_t g : raw.gpu_of.at(next->corr))
                    h2d = h2d || has(raw.events[g].name, "HtoD");
                before_input += !launched_before && h2d;
              }
            }
            if (h->end > last_end) {
              last_end = h->end;
              last = h;
            }
          }
        }
        REQUIRE(stretches > 0);
        CHECK(f.evidence["stretches"].get<size_t>() == stretches);
        const std::string where = inside_optimizer > 0           ? "optimizer_step"
                                  : 2 * before_input > stretches ? "step_start_before_input_copy"
                                                                 : "elsewhere";
        CHECK(f.evidence["where_in_step"] == where);
        CHECK(has(f.action_model, "DataLoader") == (where == "step_start_before_input_copy"));
        CHECK(has(f.action_model, "fused=True") == (where == "optimizer_step"));
        if (where == "optimizer_step") {
          ++optimizer;
          CHECK(has(f.title, "(inside Optimizer.step#"));
        }
      }
    }
    CHECK(findings >= 4);
    CHECK(optimizer >= 2);  // s_adam A and s_mask_sync A: AdamW's state set-up
  }

  TEST_CASE("old_arch_kernel names an attention kernel's family from its name (s_tf32 A)") {
    const std::string file = "s_tf32_A_fp32.json.gz";
    if (!have(file)) return;
    const RawTrace raw = raw_trace(file);
    std::set<std::string> mem_eff;  // PyTorch's memory-efficient SDPA kernels, built for sm80
    for (const RawEvent& e : raw.events)
      if (e.cat == "kernel" && has(e.name, "PyTorchMemEffAttention") && has(e.name, "sm80"))
        mem_eff.insert(e.name);
    REQUIRE(mem_eff.size() == 2);  // forward and backward, fp32
    const auto a = analyse(file);
    const in::Insight* f = nullptr;
    for (const auto& i : a->found)
      if (i.rule == "old_arch_kernel" &&
          std::set<std::string>(i.kernel_names.begin(), i.kernel_names.end()) == mem_eff)
        f = &i;
    REQUIRE(f);
    CAPTURE(f->title);
    CHECK(
        f->title.starts_with("PyTorch memory-efficient attention (CUTLASS fmha) kernels (sm80, "
                             "fp32)"));
    CHECK_FALSE(has(f->title, "FlashAttention"));
    CHECK(f->evidence["math_dtype"] == "f32");
    CHECK(has(f->action_model, "torch.autocast"));
    CHECK(has(f->action_model, "Padding the shapes does not change it"));
    CHECK_FALSE(has(f->action_model, "multiples of 64"));
  }

  TEST_CASE("unfused_attention lists the kernels it is about (s_attn A)") {
    const std::string file = "s_attn_A_eager_attention.json.gz";
    if (!have(file)) return;
    const RawTrace raw = raw_trace(file);
    std::set<std::string> gpu_names, softmax;
    for (const RawEvent& e : raw.events)
      if (e.gpu()) {
        gpu_names.insert(e.name);
        if (has(e.name, "softmax_warp_forward") || has(e.name, "softmax_warp_backward"))
          softmax.insert(e.name);
      }
    REQUIRE_FALSE(softmax.empty());
    const auto a = analyse(file);
    const in::Insight* f = find_rule(a->found, "unfused_attention");
    REQUIRE(f);
    REQUIRE_FALSE(f->kernel_names.empty());
    for (const auto& name : f->kernel_names) CHECK(gpu_names.count(name));
    for (const auto& name : softmax)
      CHECK(std::find(f->kernel_names.begin(), f->kernel_names.end(), name) !=
            f->kernel_names.end());
  }

  TEST_CASE("load_trace: the GPU's busy share of the step beside the path's shares (s_adam A)") {
    const std::string file = "s_adam_A_foreach.json.gz";
    if (!have(file)) return;
    const RawTrace raw = raw_trace(file);
    // The GPU work the steps launched (launch call inside them), its busy time.
    jarvis::testing::Intervals spans;
    for (const auto& [corr, gpu] : raw.gpu_of) {
      if (!raw.launch_of.count(corr)) continue;
      const RawEvent& call = raw.events[raw.launch_of.at(corr)];
      if (call.ts < raw.first_step() || call.ts >= raw.last_step_end()) continue;
      for (size_t g : gpu) spans.emplace_back(raw.events[g].ts, raw.events[g].end);
    }
    const double busy =
        jarvis::testing::union_length(spans) / static_cast<double>(raw.steps.size());
    jarvis::mcp::testing::Harness h;
    h.initialize();
    const json reply = h.call_tool(1, "load_trace", {{"path", ab(file)}});
    const json& health = reply["result"]["structuredContent"]["health"];
    const std::string text = reply["result"]["content"][0]["text"];
    CAPTURE(text);
    CHECK(health["gpu_busy_us_per_step"].get<double>() == doctest::Approx(busy).epsilon(0.01));
    const double step = health["estimated_unprofiled_step_us"].get<double>();
    const double share = health["unprofiled_step_gpu_busy_share"].get<double>();
    CHECK(share == doctest::Approx(std::min(1.0, busy / step)).epsilon(0.01));
    CHECK(health["unprofiled_bound_by"] == "host");
    CHECK(share > 0.6);  // host-bound, and still the GPU works most of the step
    CHECK(has(text, "of its critical path, the chain of work the step waits for,"));
    CHECK(
        has(text, fmt::format("the GPU is busy {:.2f} ms per step, {:.0f}% of the un-profiled step",
                              health["gpu_busy_us_per_step"].get<double>() / 1e3, 100 * share)));
  }

  TEST_CASE("health: host interference far above the fastest iteration lowers confidence") {
    size_t struck = 0;
    for (const std::string file :
         {"s_adam_A_foreach.json.gz", "s_vocab_A_vocab32001.json.gz", "s_tf32_B_tf32.json.gz"}) {
      if (!have(file)) return;
      CAPTURE(file);
      const jarvis::Trace t = jarvis::load_trace(ab(file));
      const jarvis::CallTree tree(t);
      const in::TraceHealth h = in::trace_health(t, tree);
      double ratio = 0;  // read back from the notes' own words
      for (const std::string& note : h.interference) {
        const size_t at = note.find("with gaps ");
        REQUIRE(at != std::string::npos);
        ratio = std::max(ratio, std::strtod(note.c_str() + at + 10, nullptr));
      }
      CHECK(h.interference_max_ratio == doctest::Approx(ratio));
      const bool strike = ratio >= in::kInterferenceStrikeRatio;
      bool warned = false;
      for (const auto& w : h.warnings) warned = warned || has(w, "lowers confidence");
      CHECK(warned == strike);
      if (strike) {
        ++struck;
        CHECK(h.confidence != "high");
      }
    }
    CHECK(struck >= 2);  // s_adam A 1.80x, s_vocab A 1.77x (the blind run's)
  }

  TEST_CASE("GPU work queued before profiling is the work with no launch (s_tf32 A)") {
    const std::string file = "s_tf32_A_fp32.json.gz";
    if (!have(file)) return;
    const RawTrace raw = raw_trace(file);
    double unlaunched = 0;
    jarvis::testing::Intervals launched;
    for (const auto& [corr, gpu] : raw.gpu_of)
      for (size_t g : gpu) {
        if (raw.launch_of.count(corr))
          launched.emplace_back(raw.events[g].ts, raw.events[g].end);
        else
          unlaunched += raw.events[g].end - raw.events[g].ts;
      }
    jarvis::mcp::testing::Harness h;
    h.initialize();
    const json loaded = h.tool_result(1, "load_trace", {{"path", ab(file)}});
    // Left out of every per-step figure, once: the work no launch of the trace queued.
    CHECK(loaded["health"]["gpu_backlog_left_out_us_total"].get<double>() ==
          doctest::Approx(unlaunched).epsilon(0.01));
    // The timeline's busy time is the union over streams of the launched work.
    CHECK(loaded["gpu_timeline"]["busy_time"]["time_ms"].get<double>() * 1e3 ==
          doctest::Approx(jarvis::testing::union_length(launched)).epsilon(1e-4));
    // insights' total_kernel_time_us: a sum over the perf rows of each row's
    // kernel time, not a busy time. The rows hold each launched kernel once
    // (here one stream: their time is the busy time); the sum is larger where
    // a row's time is not its own kernels' (TraceLens's sole backward op
    // carries its forward op's backward kernel time: the fp32 attention's).
    const json found = h.tool_result(2, "insights", {{"trace", loaded["trace"]}, {"limit", 1}});
    static const auto arch = jarvis::perf::load_gpu_arch("H200");
    const jarvis::Trace t = jarvis::load_trace(ab(file));
    const jarvis::CallTree tree(t);
    const auto c = in::make_context(t, tree, &arch);
    std::set<jarvis::Uid> kernels;
    double sum = 0;
    for (const auto& r : c.rows) {
      sum += r.kernel_time_us;
      for (jarvis::Uid u : r.kernels) CHECK(kernels.insert(u).second);
    }
    double own = 0;
    for (jarvis::Uid u : kernels) own += t.events[u].dur();
    CHECK(found["total_kernel_time_us"].get<double>() == doctest::Approx(sum));
    CHECK(own == doctest::Approx(jarvis::testing::union_length(launched)).epsilon(1e-4));
    CHECK(sum > own + 1000);
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
