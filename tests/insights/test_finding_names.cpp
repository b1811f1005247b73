// What a finding names is what its calls are (issue 73 point 9), on a real
// prefill + decode trace (../shared/ab_pairs/s_generate_A_gpt2: HF generate()
// on GPT-2, prompt 2 x 128, then decode steps of one position): the unfused
// GELU runs on the prefill shape [2, 128, 3072] a few times and on the decode
// shape [2, 1, 3072] for most calls. The finding names the shape holding most
// of its time, with the split by shape beside it; the calls per shape and the
// tanh kernels' time per shape are recounted from the raw events (correlation
// ids). Severity follows the ranking on the same trace and on a conformance
// trace.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "golden.h"
#include "insights/insights.h"
#include "perf/gpu_arch.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace in = jarvis::insights;
namespace fs = std::filesystem;

std::vector<int64_t> first_dims(const jarvis::Trace& t, jarvis::Uid u) {
  std::vector<int64_t> out;
  const auto* dims = t.arg(u, "Input Dims");
  if (!dims || !dims->is_seq() || dims->size() == 0 || !(*dims)[0].is_seq()) return out;
  for (const auto& v : (*dims)[0].list)
    if (v.kind == jarvis::PyValue::Kind::Int) out.push_back(v.i);
  return out;
}

int level(const std::string& severity) {
  return severity == "high" ? 2 : severity == "medium" ? 1 : 0;
}

// No finding is rated above one ranked before it that saves more; a rule's
// higher rating is kept with its reason.
void check_severity_follows_ranking(const std::vector<in::Insight>& found) {
  for (size_t k = 0; k < found.size(); ++k) {
    CAPTURE(found[k].rule);
    for (size_t above = 0; above < k; ++above)
      if (in::ranking_saving_us(found[above]) > in::ranking_saving_us(found[k]))
        CHECK(level(found[k].severity) <= level(found[above].severity));
    if (found[k].evidence.contains("rule_severity")) {
      CHECK(level(found[k].evidence["rule_severity"].get<std::string>()) >
            level(found[k].severity));
      CHECK(found[k].evidence["severity_note"].get<std::string>().find("ranked below") !=
            std::string::npos);
    }
  }
}

TEST_CASE("finding names: the unfused GELU of a prefill + decode trace names its decode shape") {
  const std::string path = jarvis::golden::shared_dir() + "/ab_pairs/s_generate_A_gpt2.json.gz";
  if (!fs::exists(path)) {
    MESSAGE("skipped: " << path << " is missing");
    return;
  }
  const jarvis::Trace t = jarvis::load_trace(path);
  const jarvis::CallTree tree(t);
  static const auto arch = jarvis::perf::load_gpu_arch("H200");
  const auto found = in::run_insights(in::make_context(t, tree, &arch));

  // Raw: the tanh ops by input shape, and their kernels' time (launch calls
  // inside the op on its thread, matched to kernels by correlation id).
  std::map<int64_t, const jarvis::Event*> launch_of;
  for (const auto& e : t.events)
    if (e.is_runtime()) launch_of[t.correlation(e)] = &e;
  std::map<std::vector<int64_t>, size_t> calls;
  std::map<std::vector<int64_t>, double> tanh_kernel_us;
  std::vector<std::pair<const jarvis::Event*, std::vector<int64_t>>> tanh_ops;
  for (jarvis::Uid u = 0; u < t.events.size(); ++u)
    if (t.events[u].cat == jarvis::Cat::CpuOp && t.name(u) == "aten::tanh") {
      ++calls[first_dims(t, u)];
      tanh_ops.emplace_back(&t.events[u], first_dims(t, u));
    }
  for (const auto& e : t.events) {
    if (e.cat != jarvis::Cat::Kernel) continue;
    auto it = launch_of.find(t.correlation(e));
    if (it == launch_of.end()) continue;
    for (const auto& [op, dims] : tanh_ops)
      if (op->thread == it->second->thread && it->second->ts() >= op->ts() &&
          it->second->ts() < op->end()) {
        tanh_kernel_us[dims] += e.dur();
        break;
      }
  }
  REQUIRE(calls.size() >= 2);  // prefill and decode shapes
  std::vector<int64_t> most_time;
  for (const auto& [dims, us] : tanh_kernel_us)
    if (most_time.empty() || us > tanh_kernel_us[most_time]) most_time = dims;
  REQUIRE(most_time.size() == 3);
  CHECK(most_time[1] == 1);  // a decode position holds most of the time

  auto gelu = std::find_if(found.begin(), found.end(),
                           [](const in::Insight& i) { return i.rule == "unfused_gelu"; });
  REQUIRE(gelu != found.end());
  const auto& ev = gelu->evidence;
  CHECK(ev["dims"].get<std::vector<int64_t>>() == most_time);
  CHECK(gelu->title.find(fmt::format("on [{}]", fmt::join(most_time, ", "))) != std::string::npos);
  CHECK(gelu->title.find(fmt::format("{} shapes", calls.size())) != std::string::npos);
  // The split by shape: every shape with its calls, most time first, summing
  // to the finding's time.
  REQUIRE(ev["by_shape"].size() == calls.size());
  double sum = 0, previous = 1e300;
  for (const auto& s : ev["by_shape"]) {
    const auto dims = s["dims"].get<std::vector<int64_t>>();
    CAPTURE(fmt::format("[{}]", fmt::join(dims, ", ")));
    CHECK(s["calls"].get<size_t>() == calls[dims]);
    CHECK(s["time_us"].get<double>() <= previous);
    previous = s["time_us"].get<double>();
    sum += previous;
  }
  CHECK(sum == doctest::Approx(gelu->time_us).epsilon(1e-6));
  check_severity_follows_ranking(found);
}

TEST_CASE("finding names: one shape reads as before; severity follows the ranking (Qwen H100)") {
  const std::string path =
      jarvis::golden::shared_dir() + "/conformance/h100_qwen1.5-0.5b/trace.json.gz";
  if (!fs::exists(path)) {
    MESSAGE("skipped: " << path << " is missing");
    return;
  }
  const jarvis::Trace t = jarvis::load_trace(path);
  const jarvis::CallTree tree(t);
  static const auto arch = jarvis::perf::load_gpu_arch("H100");
  const auto found = in::run_insights(in::make_context(t, tree, &arch));
  // Raw: the rsqrt of each RMSNorm runs on one hidden-state shape here.
  std::map<std::vector<int64_t>, size_t> rsqrt_rows;
  for (jarvis::Uid u = 0; u < t.events.size(); ++u)
    if (t.events[u].cat == jarvis::Cat::CpuOp && t.name(u) == "aten::rsqrt")
      ++rsqrt_rows[first_dims(t, u)];
  auto norm = std::find_if(found.begin(), found.end(),
                           [](const in::Insight& i) { return i.rule == "unfused_rmsnorm"; });
  REQUIRE(norm != found.end());
  REQUIRE(norm->evidence["by_shape"].size() == 1);
  const auto dims = norm->evidence["dims"].get<std::vector<int64_t>>();
  REQUIRE(rsqrt_rows.size() == 1);
  auto stat = rsqrt_rows.begin()->first;  // [.., 1]: the per-row statistic
  stat.back() = dims.back();
  CHECK(stat == dims);
  CHECK(norm->evidence["by_shape"][0]["calls"].get<size_t>() == rsqrt_rows.begin()->second);
  CHECK(norm->title.find("shapes;") == std::string::npos);
  check_severity_follows_ranking(found);
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
