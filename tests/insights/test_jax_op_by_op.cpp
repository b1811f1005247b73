// A JAX step run op by op (issue 73 point 5): the real disable_jit profile of
// ../shared/ab_pairs (s_jax A: a conv-net SGD step, every primitive its own
// XLA executable) is found as op by op and sized as jax.jit of the whole
// step saves it (the step minus the GPU work it keeps and one dispatch), not
// as a CUDA graph of the same launches; its jitted re-run (s_jax B: one
// executable a step) and the shared JAX samples are not. Counts come from the
// loaded XPlane's events by another event than the rule reads (the PjRt
// runtime's "CommonPjRtLoadedExecutable::Execute (<module>)" per execution,
// where the rule reads "<module>:XLA GPU module").
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "explore/input_format.h"
#include "golden.h"
#include "insights/insights.h"
#include "perf/gpu_arch.h"
#include "raw_timeline.h"
#include "tree/call_tree.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace in = jarvis::insights;
namespace fs = std::filesystem;
using nlohmann::json;

std::string shared(const std::string& rel) {
  return jarvis::golden::shared_dir() + "/" + rel;
}

struct JaxRun {
  jarvis::Trace trace;
  std::vector<in::Insight> insights;
};

JaxRun run_on(const std::string& path) {
  JaxRun r{jarvis::load_any_trace(path), {}};
  const jarvis::CallTree tree(r.trace);
  static const auto arch = jarvis::perf::load_gpu_arch("H200");
  r.insights = in::run_insights(in::make_context(r.trace, tree, &arch));
  return r;
}

const in::Insight* op_by_op_finding(const JaxRun& r) {
  for (const auto& i : r.insights)
    if (i.rule == "launch_bound" && i.evidence.contains("op_by_op")) return &i;
  return nullptr;
}

// Executions per XLA module from the PjRt runtime's own events.
std::map<std::string, size_t> runtime_executions(const jarvis::Trace& t) {
  const std::string prefix = "CommonPjRtLoadedExecutable::Execute (";
  std::map<std::string, size_t> out;
  for (jarvis::Uid u = 0; u < t.events.size(); ++u) {
    const std::string name(t.name(u));
    if (name.starts_with(prefix) && name.ends_with(")"))
      ++out[name.substr(prefix.size(), name.size() - prefix.size() - 1)];
  }
  return out;
}

TEST_CASE("JAX op by op: disable_jit's step is found and sized as jax.jit of the step (s_jax)") {
  const std::string dir = shared("ab_pairs");
  if (!fs::exists(dir + "/truth.json")) {
    MESSAGE("skipped: " << dir << "/truth.json is missing");
    return;
  }
  std::ifstream truth_file(dir + "/truth.json");
  const json truth = json::parse(truth_file)["s_jax"];
  const JaxRun a = run_on(dir + "/" + truth["A_op_by_op"]["trace"].get<std::string>());
  const in::Insight* f = op_by_op_finding(a);
  REQUIRE(f != nullptr);
  const json& ev = f->evidence["op_by_op"];
  // Every execution of the profile is one primitive's program: jit_<op>.
  const auto executions = runtime_executions(a.trace);
  size_t total = 0;
  for (const auto& execution : executions) {
    const auto& module = execution.first;  // no structured binding in CAPTURE (clang 14)
    CAPTURE(module);
    CHECK(module.starts_with("jit_"));
    total += execution.second;
  }
  const double steps = static_cast<double>(f->steps);
  REQUIRE(steps >= 1);
  CHECK(ev["programs"].get<size_t>() == executions.size());
  CHECK(ev["executions"].get<size_t>() <= total);
  CHECK(ev["executions"].get<size_t>() >= total * 9 / 10);  // the steps hold nearly all of them
  for (const auto& m : ev["modules"]) {
    const std::string module = m["module"].get<std::string>();
    CAPTURE(module);
    REQUIRE(executions.count(module) == 1);
    CHECK(m["executions_per_step"].get<double>() * steps <=
          static_cast<double>(executions.at(module)) + 1e-9);
  }
  // The GPU work the jitted step keeps: at most the trace's GPU busy time
  // (union of its kernels, copies and memsets) per step.
  std::vector<std::pair<double, double>> spans;
  for (const auto& e : a.trace.events)
    if (e.is_gpu() && e.has_ts() && e.has_dur()) spans.emplace_back(e.ts(), e.end());
  const double busy = jarvis::testing::union_length(spans);
  CHECK(ev["gpu_us_per_step"].get<double>() > 0);
  CHECK(ev["gpu_us_per_step"].get<double>() <= busy / steps + 1e-6);
  CHECK(ev["jit_step_us"].get<double>() ==
        doctest::Approx(ev["gpu_us_per_step"].get<double>() + ev["dispatch_us"].get<double>()));
  // The saving is the step minus that jitted step, per step.
  const double per_step_ms = *f->step_saving_us / steps / 1e3;
  CHECK(per_step_ms ==
        doctest::Approx((ev["step_us"].get<double>() - ev["jit_step_us"].get<double>()) / 1e3)
            .epsilon(1e-9));
  // Against the re-run: A - B of the in-process timings (no clean runs).
  const double measured = truth["A_op_by_op"]["step_ms_median"].get<double>() -
                          truth["B_jit"]["step_ms_median"].get<double>();
  MESSAGE("s_jax A: jit of the step saves "
          << per_step_ms << " ms/step (measured " << measured << "); jitted step "
          << ev["jit_step_us"].get<double>() / 1e3 << " ms (measured "
          << truth["B_jit"]["step_ms_median"].get<double>() << ")");
  CHECK(per_step_ms >= 0.5 * measured);
  CHECK(per_step_ms <= 2 * measured);
  CHECK(ev["jit_step_us"].get<double>() / 1e3 <=
        2 * truth["B_jit"]["step_ms_median"].get<double>());
  CHECK(f->title.starts_with("Host-bound step run op by op"));
  CHECK(f->action_model.find("jax.jit") != std::string::npos);
  CHECK(f->action_model.find("torch") == std::string::npos);
  CHECK(f->what_if.is_null());  // no what-if replays a jit

  // The jitted re-run: one execution a step, not op by op.
  const JaxRun b = run_on(dir + "/" + truth["B_jit"]["trace"].get<std::string>());
  const auto b_exec = runtime_executions(b.trace);
  REQUIRE(b_exec.size() == 1);
  CHECK(b_exec.begin()->second <= 5);
  CHECK(op_by_op_finding(b) == nullptr);
}

// Runs `check` on each of the jitted JAX samples of ../shared that is there,
// the file captured.
void for_each_shared_jax_sample(const std::function<void(const JaxRun&)>& check) {
  for (const std::string rel :
       {"jax/jax_conv_minimal_legacy/trace.xplane.pb", "jax/jax_conv_minimal_08/tw003.xplane.pb",
        "jax/te_fused_attn/934987a2fc2f.xplane.pb"}) {
    CAPTURE(rel);
    if (fs::exists(shared(rel))) check(run_on(shared(rel)));
  }
}

TEST_CASE("JAX op by op: the shared jitted samples are not op by op") {
  for_each_shared_jax_sample([](const JaxRun& r) { CHECK(op_by_op_finding(r) == nullptr); });
}

TEST_CASE("JAX host-bound titles name the ops on the path, and none when no op records it") {
  size_t checked = 0;
  for_each_shared_jax_sample([&checked](const JaxRun& r) {
    for (const auto& i : r.insights) {
      if (i.rule != "launch_bound" || !i.evidence.contains("critical_path")) continue;
      ++checked;
      // The distinct named ops of the evidence, in its order (XLA dispatch
      // outside any op has an empty name).
      std::vector<std::string> named;
      for (const json& o : i.evidence["critical_path"]["host_ops_on_path"]) {
        const std::string op = o["op"].get<std::string>();
        if (!op.empty() && std::find(named.begin(), named.end(), op) == named.end())
          named.push_back(op);
      }
      const std::string marker = " Host time on the path: ";
      const size_t at = i.title.find(marker);
      if (named.empty()) {
        CHECK(at == std::string::npos);
        CHECK(i.title.ends_with(")."));
      } else {
        REQUIRE(at != std::string::npos);
        std::string expected;
        for (const auto& op : named) expected += (expected.empty() ? "" : ", ") + op;
        CHECK(i.title.substr(at + marker.size()) == expected);
      }
    }
  });
  if (checked == 0) MESSAGE("skipped: no host-bound JAX sample in ../shared/jax");
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
