// Op regimes (report/op_regime.h, categories/op_regimes.h): latency-bound /
// memory-bound / compute-bound per op in the single-trace analyses, the
// kernel-tuning headroom, the drafts' Regime lines and gemm_roofline's
// regime column. Expected values are computed here from TraceLens's own
// reference CSVs with the rule written out again, not with the engine's code.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "categories/category_analysis.h"
#include "categories/findings.h"
#include "categories/op_regimes.h"
#include "explore/gemm_roofline.h"
#include "report/op_regime.h"
#include "test_analysis_support.h"
#include "trace/loader.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using namespace jarvis;
using namespace jarvis::testing;

namespace {

double number(const Table& t, size_t r, const char* column) {
  return analysis::cell_number(analysis::cell_at(t, r, column));
}

// The floor, written out: the median of the shortest tenth (at least 3) of
// the positive mean per-call kernel times.
double expected_floor(const Table& unified) {
  std::vector<double> v;
  for (size_t r = 0; r < unified.rows.size(); ++r) {
    double x = number(unified, r, "Kernel Time (µs)_mean");
    if (x > 0) v.push_back(x);
  }
  std::sort(v.begin(), v.end());
  size_t n = v.size() / 10;
  if (n < 3) n = std::min<size_t>(3, v.size());
  if (n == 0) return 0;
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct ExpectedOp {
  std::string name, regime;
  double time_ms = 0;
  std::optional<double> headroom_ms;
};

ExpectedOp expected_op(const Table& ops, size_t r, double floor_us) {
  ExpectedOp e;
  e.name = analysis::cell_text(analysis::cell_at(ops, r, "name"));
  e.time_ms = number(ops, r, "Kernel Time (µs)_sum") / 1000;
  double roof = number(ops, r, "Roofline Time (µs)_first");
  std::string bound = analysis::cell_text(analysis::cell_at(ops, r, "Roofline Bound"));
  if (std::isnan(roof)) {
    e.regime = "unknown";
    return e;
  }
  bool latency = floor_us > 0 && roof < floor_us;
  e.regime = latency                    ? "latency-bound"
             : bound == "MEMORY_BOUND"  ? "memory-bound"
             : bound == "COMPUTE_BOUND" ? "compute-bound"
                                        : "unknown";
  double lowest = latency ? std::max(roof, floor_us) : roof;
  double mean = number(ops, r, "Kernel Time (µs)_mean");
  double count = number(ops, r, "operation_count");
  e.headroom_ms = std::max(0.0, mean - lowest) * count / 1000;
  return e;
}

// The category CSV's ops, largest kernel time first (ties: file order).
std::vector<ExpectedOp> expected_ops(const Table& ops, double floor_us) {
  std::vector<size_t> rows;
  for (size_t r = 0; r < ops.rows.size(); ++r)
    if (!std::isnan(number(ops, r, "Kernel Time (µs)_sum"))) rows.push_back(r);
  std::stable_sort(rows.begin(), rows.end(), [&](size_t a, size_t b) {
    return number(ops, a, "Kernel Time (µs)_sum") > number(ops, b, "Kernel Time (µs)_sum");
  });
  std::vector<ExpectedOp> out;
  for (size_t r : rows) out.push_back(expected_op(ops, r, floor_us));
  return out;
}

double e2e_ms(const std::string& dir, const std::string& category) {
  auto meta = analysis::read_json_file(dir + "/metadata/" + category + "_metadata.json");
  return meta["gpu_utilization"]["total_time_ms"].get<double>();
}

// The `<!-- tuning-headroom pct=X -->` values of a draft, in P-item order.
std::vector<double> headroom_markers(const std::string& draft) {
  std::vector<double> out;
  const std::string marker = "<!-- tuning-headroom pct=";
  for (size_t at = draft.find(marker); at != std::string::npos; at = draft.find(marker, at + 1))
    out.push_back(std::stod(draft.substr(at + marker.size())));
  return out;
}

}  // namespace

TEST_CASE("op regime: classifier, floor and headroom on constructed values") {
  CHECK(classify_op_regime(std::nullopt, 2, "MEMORY_BOUND") == OpRegime::Unknown);
  CHECK(classify_op_regime(1.0, 2.0, "MEMORY_BOUND") == OpRegime::LatencyBound);
  CHECK(classify_op_regime(1.0, 2.0, "COMPUTE_BOUND") == OpRegime::LatencyBound);
  CHECK(classify_op_regime(3.0, 2.0, "MEMORY_BOUND") == OpRegime::MemoryBound);
  CHECK(classify_op_regime(3.0, 2.0, "COMPUTE_BOUND") == OpRegime::ComputeBound);
  CHECK(classify_op_regime(0.1, 0, "COMPUTE_BOUND") == OpRegime::ComputeBound);  // no floor
  CHECK(regime_name(OpRegime::LatencyBound) == "latency-bound");

  // Latency-bound: tuning stops at the floor; otherwise at the roofline.
  CHECK(*tuning_headroom_us(10, 1, 2, OpRegime::LatencyBound) == doctest::Approx(8));
  CHECK(*tuning_headroom_us(10, 3, 2, OpRegime::MemoryBound) == doctest::Approx(7));
  CHECK(*tuning_headroom_us(1.5, 1, 2, OpRegime::LatencyBound) == 0);
  CHECK_FALSE(tuning_headroom_us(10, std::nullopt, 2, OpRegime::Unknown));

  // 40 ops of 1..40 us: the shortest tenth is 1..4, median 2.5; NaN and 0
  // rows do not count.
  Table t("unified_perf_summary", {"Kernel Time (µs)_mean"});
  for (int k = 40; k >= 1; --k) t.rows.push_back({Cell(static_cast<double>(k))});
  t.rows.push_back({Cell(0.0)});
  t.rows.push_back({Cell(std::nan(""))});
  CHECK(latency_floor_us(t) == doctest::Approx(2.5));
  t.rows.resize(5);  // 40..36: fewer than 30 ops, the shortest 3 (36, 37, 38): 37
  CHECK(latency_floor_us(t) == doctest::Approx(37));
  CHECK(latency_floor_us(Table("empty", {"Kernel Time (µs)_mean"})) == 0);
}

TEST_CASE("op regimes: every op of the category CSVs classified as the rule says (MI300, H100)") {
  for (const char* trace : {"mi300_qwen1.5-0.5b", "h100_qwen1.5-0.5b"}) {
    CAPTURE(trace);
    std::string ref = golden::shared_dir() + "/conformance/" + trace;
    TempDir tmp;
    prepare_from_reference(ref, tmp.path);
    Table unified = read_csv_typed(ref + "/perf_report_csvs/unified_perf_summary.csv");
    double floor_us = expected_floor(unified);
    REQUIRE(floor_us > 0);
    size_t latency_ops = 0, checked = 0;
    for (const char* category : {"gemm", "elementwise", "reduce", "sdpa_fwd", "other"}) {
      CAPTURE(category);
      std::string csv = tmp.path + "/category_data/" + category + "_ops.csv";
      if (!std::filesystem::exists(csv)) continue;
      analysis::ojson regimes = analysis::category_regimes(tmp.path, category);
      REQUIRE(regimes.is_object());
      CHECK(regimes["latency_floor_us"].get<double>() == doctest::Approx(floor_us));
      std::vector<ExpectedOp> want = expected_ops(read_csv_typed(csv), floor_us);
      REQUIRE(regimes["ops"].size() == want.size());
      std::map<std::string, double> time_by_regime;
      double headroom_total = 0;
      for (size_t k = 0; k < want.size(); ++k) {
        const auto& got = regimes["ops"][k];
        CHECK(got["name"] == want[k].name);
        CHECK(got["regime"] == want[k].regime);
        CHECK(got["time_ms"].get<double>() == doctest::Approx(want[k].time_ms));
        if (want[k].headroom_ms) {
          CHECK(got["tuning_headroom_ms"].get<double>() == doctest::Approx(*want[k].headroom_ms));
          headroom_total += *want[k].headroom_ms;
        } else {
          CHECK(got["tuning_headroom_ms"].is_null());
        }
        time_by_regime[want[k].regime] += want[k].time_ms;
        latency_ops += want[k].regime == "latency-bound";
        ++checked;
      }
      for (const auto& [regime, time] : time_by_regime)
        CHECK(regimes["by_regime"][regime]["time_ms"].get<double>() == doctest::Approx(time));
      CHECK(regimes["tuning_headroom_ms"].get<double>() == doctest::Approx(headroom_total));
      CHECK(regimes["tuning_headroom_pct"].get<double>() ==
            doctest::Approx(headroom_total / e2e_ms(tmp.path, category) * 100));
      // analyze_category carries the same block and a Regimes section.
      analysis::AnalyzeResult res = analysis::analyze_category(tmp.path, category);
      CHECK(res.regimes == regimes);
      CHECK(res.markdown.find("## Regimes (beyond TraceLens)") != std::string::npos);
    }
    CHECK(checked > 10);
    if (std::string(trace) == "mi300_qwen1.5-0.5b") CHECK(latency_ops >= 1);
  }
}

TEST_CASE("op regimes: each draft P-item's Regime line sums its members' tuning headroom") {
  std::string ref = golden::shared_dir() + "/conformance/mi300_qwen1.5-0.5b";
  TempDir tmp;
  prepare_from_reference(ref, tmp.path);
  double floor_us =
      expected_floor(read_csv_typed(ref + "/perf_report_csvs/unified_perf_summary.csv"));
  size_t latency_items = 0;
  for (const char* category : {"gemm", "elementwise", "reduce"}) {
    CAPTURE(category);
    analysis::AnalyzeResult res = analysis::analyze_category(tmp.path, category);
    std::string draft = analysis::draft_findings(res);
    std::vector<double> markers = headroom_markers(draft);
    const auto& groups = res.metrics["category_findings"];
    REQUIRE(markers.size() == groups.size());
    Table ops = read_csv_typed(tmp.path + "/category_data/" + category + "_ops.csv");
    std::vector<ExpectedOp> all = expected_ops(ops, floor_us);
    for (size_t g = 0; g < groups.size(); ++g) {
      // A member is the op of that name whose kernel time rounds to its time_ms.
      double headroom = 0;
      bool all_latency = true;
      for (const auto& member : groups[g]["members"]) {
        auto it = std::find_if(all.begin(), all.end(), [&](const ExpectedOp& e) {
          return e.name == member["operation"].get<std::string>() &&
                 std::fabs(e.time_ms - member["time_ms"].get<double>()) < 5e-4;
        });
        REQUIRE(it != all.end());
        headroom += it->headroom_ms.value_or(0);
        all_latency = all_latency && it->regime == "latency-bound";
      }
      CHECK(markers[g] ==
            doctest::Approx(headroom / e2e_ms(tmp.path, category) * 100).epsilon(1e-3));
      latency_items += all_latency;
    }
    CHECK(draft.find("- **Regime:** ") != std::string::npos);
  }
  CHECK(latency_items >= 1);  // this trace has a group of latency-bound ops
}

TEST_CASE("gemm_roofline: regime per shape against the trace's latency floor") {
  std::string dir = golden::shared_dir() + "/conformance/mi300_qwen1.5-0.5b";
  Table gemm = read_csv_file(dir + "/perf_report_csvs/GEMM.csv");
  Table unified = read_csv_file(dir + "/perf_report_csvs/unified_perf_summary.csv");
  analysis::GemmRooflineInputs in;
  in.gemm_sheet = &gemm;
  in.unified = &unified;
  in.arch = conformance_arch(dir).arch;
  auto rf = analysis::gemm_roofline(in);
  double floor_us = expected_floor(pandas_roundtrip(unified));
  CHECK(rf["latency_floor_us"].get<double>() == doctest::Approx(floor_us));
  REQUIRE(!rf["shapes"].empty());
  for (const auto& s : rf["shapes"]) {
    REQUIRE(s["roofline_time_us"].is_number());
    double roof = s["roofline_time_us"].get<double>();
    std::string tl = s["roofline_bound_tracelens"].get<std::string>();
    std::string want = roof < floor_us         ? "latency-bound"
                       : tl == "COMPUTE_BOUND" ? "compute-bound"
                       : tl == "MEMORY_BOUND"  ? "memory-bound"
                                               : "unknown";
    CHECK(s["regime"] == want);
    CHECK(s["tuning_headroom_us"].get<double>() >= 0);
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
