// write_findings safety and the rule-based findings draft.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "categories/category_analysis.h"
#include "categories/category_analysis_internal.h"
#include "categories/final_report.h"
#include "categories/findings.h"
#include "categories/findings_check.h"
#include "test_analysis_support.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace fs = std::filesystem;
using namespace jarvis;
using namespace jarvis::testing;

TEST_CASE("findings: atomic write inside the output dir only") {
  TempDir tmp;
  std::string path = analysis::write_findings(tmp.path, "gemm", "# GEMM\n");
  CHECK(path == tmp.path + "/category_findings/gemm_findings.md");
  CHECK(read_text(path) == "# GEMM\n");
  CHECK(analysis::write_findings(tmp.path, "cpu_idle", "x") ==
        tmp.path + "/system_findings/cpu_idle_findings.md");
  CHECK_THROWS_AS(analysis::write_findings(tmp.path, "../gemm", "x"), std::invalid_argument);
  CHECK_THROWS_AS(analysis::write_findings(tmp.path, "GEMM", "x"), std::invalid_argument);
  CHECK_THROWS_AS(analysis::write_findings(tmp.path, "gemm/x", "x"), std::invalid_argument);
  CHECK_THROWS_AS(analysis::write_findings(tmp.path, "gemm", "  \n"), std::invalid_argument);
  CHECK_THROWS_AS(analysis::write_findings(tmp.path + "/missing", "gemm", "x"),
                  std::invalid_argument);
  CHECK_THROWS_AS(analysis::write_findings(tmp.path, "gemm", std::string((1 << 20) + 1, 'x')),
                  std::invalid_argument);
  // A symlinked findings directory pointing elsewhere is refused.
  TempDir other;
  TempDir out2;
  fs::create_directory_symlink(other.path, out2.path + "/category_findings");
  CHECK_THROWS_WITH_AS(analysis::write_findings(out2.path, "gemm", "x"),
                       doctest::Contains("outside"), std::invalid_argument);
  CHECK_FALSE(fs::exists(other.path + "/gemm_findings.md"));
  CHECK(read_text(path) == "# GEMM\n");  // earlier file untouched
}

TEST_CASE("findings: draft follows the template with the metrics' numbers") {
  std::string dir = golden::shared_dir() + "/conformance/mi300_qwen1.5-0.5b";
  TempDir tmp;
  prepare_from_reference(dir, tmp.path);
  auto res = analysis::analyze_category(tmp.path, "gemm");
  std::string md = analysis::draft_findings("gemm", res.metrics, "GEMM");
  CHECK(md.starts_with(
      "# GEMM Analysis Summary\n\n## Overview\nGEMM accounts for 35.15% of GPU time (11.65 ms"));
  CHECK(md.find("## Recommendations\n\n### P1: ") != std::string::npos);
  CHECK(md.find("## Detailed Analysis\n\n<!-- reasoning-candidate tier=compute rank=1 -->") !=
        std::string::npos);
  // P1 is category_findings[0] (4 Tensile ops at 60-100 % efficiency), led by its
  // largest member, with the group's impact numbers verbatim.
  CHECK(
      md.find("### P1: aten::mm (8944,1024) bf16<br>(1024,2816) bf16: compute-bound at 60-100% "
              "efficiency (4 ops) (Tensile)\n- **Time:** 5.31 ms (16.02% of compute, 48 calls)") !=
      std::string::npos);
  CHECK(md.find("<!-- impact-begin kind=p_item low=8.65 mid=10.09 high=11.53 -->") !=
        std::string::npos);
  CHECK(md.find("| aten::mm | (8944,1024) bf16<br>(1024,2816) bf16 | Tensile (vendor) | \u2014 | "
                "5.308 | 16.02 | 48 | 692.77 | 65.94% of 708 TFLOPS | compute-bound |") !=
        std::string::npos);
  CHECK(md.find("- **Efficiency:** 65.94% of 708.00 TFLOPS MAF") != std::string::npos);
  CHECK(md.find("- **Priority:** High") != std::string::npos);
  CHECK(md.find("- **Path A:**") != std::string::npos);
  CHECK(md.find("- **Path B:**") != std::string::npos);
  CHECK(md.find("## Additional Notes\n- Missing perf models: 0\n- Quantized GEMMs detected: 0") !=
        std::string::npos);
  auto mk = analysis::analyze_category(tmp.path, "multi_kernel");
  CHECK(analysis::draft_findings("multi_kernel", mk.metrics).find("Memcpy: 1 transfers") !=
        std::string::npos);
}

namespace {

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

bool has_problem(const analysis::FindingsValidation& v, const std::string& part) {
  for (const auto& p : v.problems)
    if (p.find(part) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("findings check: our drafts pass for every category of two conformance traces") {
  for (const char* trace : {"mi300_qwen1.5-0.5b", "h100_bert-small"}) {
    CAPTURE(trace);
    TempDir tmp;
    prepare_from_reference(golden::shared_dir() + "/conformance/" + trace, tmp.path);
    auto manifest = analysis::read_json_file(tmp.path + "/category_data/category_manifest.json");
    size_t checked = 0;
    for (const auto& c : manifest["categories"]) {
      const std::string cat = c["name"].get<std::string>();
      CAPTURE(cat);
      auto res = analysis::analyze_category(tmp.path, cat);
      std::string md = analysis::draft_findings(res);
      auto v = analysis::validate_findings_in(tmp.path, cat, md);
      INFO(md.substr(0, 3000));
      for (const auto& p : v.problems) INFO(p);
      CHECK(v.valid());
      if (res.metrics.contains("category_findings"))
        CHECK(v.p_items == res.metrics["category_findings"].size());
      ++checked;
    }
    CHECK(checked >= 5);
  }
}

TEST_CASE("findings check: each rule names what is wrong") {
  TempDir tmp;
  prepare_from_reference(golden::shared_dir() + "/conformance/mi300_qwen1.5-0.5b", tmp.path);
  auto res = analysis::analyze_category(tmp.path, "gemm");
  const analysis::ojson& m = res.metrics;
  REQUIRE(m["category_findings"].size() >= 1);
  const std::string md = analysis::draft_findings("gemm", m, "GEMM");
  REQUIRE(analysis::validate_findings("gemm", md, m).valid());
  CHECK(analysis::validate_findings("gemm", md, m).data_rows_checked >=
        m["category_findings"][0]["members"].size());

  // S1: the sections TraceLens's validator requires.
  auto v =
      analysis::validate_findings("gemm", replaced(md, "## Recommendations", "## Bottlenecks"), m);
  CHECK(has_problem(v, "S1: missing the section `## Recommendations`"));
  CHECK(has_problem(analysis::validate_findings("gemm", "# GEMM\nok\n", m),
                    "`## Detailed Analysis`"));

  // N1: impact numbers copied verbatim from category_findings (0.005 tolerance).
  const std::string mid = m["category_findings"][0]["impact_score"].dump();
  v = analysis::validate_findings("gemm", replaced(md, "mid=" + mid + " ", "mid=99.5 "), m);
  CHECK(has_problem(v, "N1: P1 mid=99.5 but category_findings[0].impact_score is " + mid));
  double shifted = m["category_findings"][0]["impact_score"].get<double>() + 0.004;
  v = analysis::validate_findings(
      "gemm", replaced(md, "mid=" + mid + " ", "mid=" + std::to_string(shifted) + " "), m);
  CHECK(v.valid());  // within the marker tolerance

  // S3: a P-item needs its Insight.
  v = analysis::validate_findings("gemm", replaced(md, "**Insight**", "**Observation**"), m);
  CHECK(has_problem(v, "S3: P1 has no **Insight** line"));

  // S3: every bullet of TraceLens's compute template (issue 48 point 7).
  {
    size_t at = md.find("- **Path B");
    REQUIRE(at != std::string::npos);
    std::string no_b = md;
    no_b.erase(at, md.find('\n', at) + 1 - at);
    v = analysis::validate_findings("gemm", no_b, m);
    CHECK(has_problem(v, "S3: P1 has no `- **Path B` line"));
  }
  // N1: the Time line's numbers are the data's: an invented one is named,
  // both its time and its share.
  {
    size_t at = md.find("- **Time:**");
    REQUIRE(at != std::string::npos);
    std::string invented_time = md;
    invented_time.replace(at, md.find('\n', at) - at, "- **Time:** 25.0 ms (40.0 % of total)");
    v = analysis::validate_findings("gemm", invented_time, m);
    CHECK(has_problem(v, "P1's Time line cites 25.0 ms"));
    CHECK(has_problem(v, "P1's Time line cites 40.0 %"));
    // The members' total time and the finding's share are what a writer may cite.
    double total = 0;
    std::string first_op;
    for (const auto& mem : m["category_findings"][0]["members"]) {
      total += mem["time_ms"].get<double>();
      if (first_op.empty()) first_op = mem["operation"].get<std::string>();
    }
    double share = -1;
    for (const auto& o : m["operations"])
      if (o["name"] == first_op && o["percent_of_total"].is_number() && share < 0)
        share = o["percent_of_total"].get<double>();
    REQUIRE(share >= 0);
    std::string honest = md;
    honest.replace(at, md.find('\n', at) - at,
                   fmt::format("- **Time:** {:.3f} ms ({:.2f} % of total)", total, share));
    v = analysis::validate_findings("gemm", honest, m);
    for (const auto& p : v.problems) INFO(p);
    CHECK(v.valid());
  }

  // N1 + S2: an invented P-item beyond category_findings.
  const size_t n = m["category_findings"].size();
  std::string invented = replaced(
      md, "## Detailed Analysis",
      "### P" + std::to_string(n + 1) +
          ": made up\n**Insight**: x\n**Action**: y\n<!-- impact-begin kind=p_item low=1 mid=2 "
          "high=3 -->\n<!-- impact-end -->\n\n## Detailed Analysis");
  v = analysis::validate_findings("gemm", invented, m);
  CHECK(has_problem(v, "has no entry in gemm_metrics.json's category_findings"));
  CHECK(has_problem(v, "reasoning-candidate block(s) for"));

  // N2: Data-table numbers must exist in the category's data.
  const analysis::ojson& top = m["operations"][0];
  std::string time = top["time_ms"].dump();
  std::string row_start = "| " + top["name"].get<std::string>() + " | ";
  size_t row = md.find(row_start);
  REQUIRE(row != std::string::npos);
  size_t time_at = md.find(" | " + time + " | ", row);
  REQUIRE(time_at != std::string::npos);
  std::string wrong_time = md;
  wrong_time.replace(time_at, time.size() + 6, " | 123.456 | ");
  v = analysis::validate_findings("gemm", wrong_time, m);
  CHECK(has_problem(v, "Time (ms) 123.456 matches none of its rows"));
  // A wrong time does not hide a wrong %E2E on the same row.
  {
    std::string pct = top["percent_of_total"].dump();
    size_t pct_at = wrong_time.find(" | 123.456 | " + pct + " | ");
    REQUIRE(pct_at != std::string::npos);
    std::string both = wrong_time;
    both.replace(pct_at, 13 + pct.size() + 3, " | 123.456 | 77.77 | ");
    v = analysis::validate_findings("gemm", both, m);
    CHECK(has_problem(v, "Time (ms) 123.456 matches none of its rows"));
    CHECK(has_problem(v, "%E2E 77.77 matches no row of the data"));
  }
  v = analysis::validate_findings("gemm", replaced(md, row_start, "| aten::not_an_op | "), m);
  CHECK(has_problem(v, "operation `aten::not_an_op` is not in gemm_metrics.json"));

  // E1: Status: ERROR only for a failed analysis.
  v = analysis::validate_findings("gemm", md + "\nStatus: ERROR\n", m);
  CHECK(has_problem(v, "E1:"));

  // System tier: impact is not quantifiable.
  auto idle = analysis::analyze_category(tmp.path, "cpu_idle");
  std::string sys =
      "# cpu_idle\n\n## Recommendations\n\n### P1: GPU idle between kernels\n**Insight**: x\n"
      "**Action**: y\n<!-- impact-begin kind=p_item low=1 mid=2 high=3 -->\n**Impact**: z\n"
      "<!-- impact-end -->\n\n## Detailed Analysis\n\n<!-- reasoning-candidate tier=system "
      "rank=1 -->\n#### GPU idle between kernels\n**Identification:** a\n**Data:** b\n"
      "**Reasoning for Slowdown:** c\n**Resolution:** d\n**Impact estimate:** Not quantifiable\n";
  v = analysis::validate_findings("cpu_idle", sys, idle.metrics);
  CHECK(has_problem(v, "system findings write low=null"));
  sys = replaced(sys, "low=1 mid=2 high=3", "low=null mid=null high=null");
  CHECK(analysis::validate_findings("cpu_idle", sys, idle.metrics).valid());
}

TEST_CASE("final report: checked findings ranked by recoverable time, with evidence") {
  TempDir tmp;
  prepare_from_reference(golden::shared_dir() + "/conformance/mi300_qwen1.5-0.5b", tmp.path);
  analysis::analyze_category(tmp.path, "cpu_idle");  // the total time comes from its metrics
  CHECK_THROWS_WITH_AS(analysis::build_final_report(tmp.path), doctest::Contains("no findings"),
                       std::invalid_argument);
  // Drafts of gemm and elementwise (checked), one free-text file (left out).
  std::vector<double> mids;
  for (const char* cat : {"gemm", "elementwise"}) {
    auto res = analysis::analyze_category(tmp.path, cat);
    analysis::write_findings(tmp.path, cat, analysis::draft_findings(res));
    for (const auto& f : res.metrics["category_findings"])
      mids.push_back(f["impact_score"].get<double>());
  }
  analysis::write_findings(tmp.path, "reduce", "# reduce\nfree text\n");
  auto idle = analysis::read_json_file(tmp.path + "/category_data/cpu_idle_metrics.json");
  const double total_ms = idle["gpu_utilization"]["total_time_ms"].get<double>();

  analysis::FinalReport r = analysis::build_final_report(tmp.path);
  CHECK(r.findings_files == 3);
  REQUIRE(r.ranked.size() == mids.size());
  // Every P-item of the drafts is there; the ranking value is the impact mid,
  // capped by the tuning headroom of the draft's Regime line (the headroom
  // itself is checked against the CSVs in test_op_regimes.cpp).
  std::vector<double> got_mids;
  for (const auto& item : r.ranked) got_mids.push_back(item.impact_mid.value());
  std::sort(mids.begin(), mids.end());
  std::sort(got_mids.begin(), got_mids.end());
  for (size_t k = 0; k < mids.size(); ++k) CHECK(got_mids[k] == doctest::Approx(mids[k]));
  size_t capped = 0;
  for (size_t k = 0; k < r.ranked.size(); ++k) {
    const auto& item = r.ranked[k];
    REQUIRE(item.tuning_headroom_pct.has_value());  // every draft P-item has a Regime line
    double expected = std::min(*item.impact_mid, *item.tuning_headroom_pct);
    capped += *item.tuning_headroom_pct < *item.impact_mid;
    CHECK(item.recoverable_pct.value() == doctest::Approx(expected));
    CHECK(item.recoverable_ms.value() == doctest::Approx(expected / 100.0 * total_ms));
    if (k > 0) CHECK(r.ranked[k - 1].recoverable_pct.value() >= expected);
    CHECK(fs::exists(tmp.path + "/" + item.evidence[1]));
  }
  CHECK(capped >= 1);  // a latency-bound group of this MI300 trace is capped
  CHECK(r.ranked[0].evidence[0].ends_with("_findings.md"));
  REQUIRE(r.skipped.size() == 1);
  CHECK(r.skipped[0].category == "reduce");
  CHECK(r.markdown.find("## Ranked recommendations") != std::string::npos);
  CHECK(r.markdown.find("| 1 | " + r.ranked[0].category + " | P" +
                        std::to_string(r.ranked[0].p_item)) != std::string::npos);
  auto files = analysis::write_final_report(r);
  CHECK(read_text(files[0]) == r.markdown);
  CHECK(analysis::read_json_file(files[1])["ranked"].size() == mids.size());
}

TEST_CASE("digest: near-identical rows (batch / sequence dimensions) collapse with their count") {
  // Decode attention over growing KV lengths: the same op and head shapes, the
  // sequence dimension differing row to row; one aten::mm row stays as it is.
  analysis::ojson ops = analysis::ojson::array();
  const double times[] = {0.5, 0.4, 0.3, 0.2, 0.1};
  for (int k = 0; k < 5; ++k)
    ops.push_back({{"name", "aten::_scaled_dot_product_flash_attention"},
                   {"args", "(32,8," + std::to_string(100 + k) + ",128) bf16"},
                   {"count", 2},
                   {"time_ms", times[k]},
                   {"percent_of_category", 10.0 * (5 - k)},
                   {"percent_of_total", 1.0 * (5 - k)},
                   {"efficiency",
                    {{"efficiency_percent", 20.0 + k},
                     {"bound_type", "memory"},
                     {"flops_per_byte", 2.0},
                     {"resolved_peak_hbm_bw", 3.35}}},
                   {"library", nullptr}});
  ops.insert(
      ops.begin() + 1,
      analysis::ojson{
          {"name", "aten::mm"},
          {"args", "(32,8,100,128) bf16"},
          {"count", 1},
          {"time_ms", 0.45},
          {"percent_of_category", 45.0},
          {"percent_of_total", 4.5},
          {"efficiency",
           {{"efficiency_percent", nullptr}, {"bound_type", nullptr}, {"flops_per_byte", nullptr}}},
          {"library", nullptr}});
  analysis::ojson m = {{"category", "sdpa_fwd"},
                       {"status", "OK"},
                       {"total_time_ms", 1.95},
                       {"percent_of_compute", 19.5},
                       {"operation_count", 11},
                       {"operations", ops},
                       {"category_findings", analysis::ojson::array()},
                       {"category_specific", analysis::ojson::object()}};
  std::string md = analysis::detail::compute_markdown(m);
  INFO(md);
  CHECK(md.find("| 1 | aten::_scaled_dot_product_flash_attention | (*,8,*,128) bf16 (5 "
                "near-identical rows, largest (32,8,100,128) bf16) | 10 | 1.500 | 150.00 | 15.00 | "
                "2.00 | 20.00\u201324.00% | memory | \u2014 |") != std::string::npos);
  CHECK(md.find("| 2 | aten::mm | (32,8,100,128) bf16 | 1 | 0.450 |") != std::string::npos);
  CHECK(md.find("| 3 |") == std::string::npos);
  CHECK(md.find("(6 (op, shape) rows shown as 2: 5 rows differing only in batch / sequence "
                "dimensions are merged)") != std::string::npos);
  // Fewer than four such rows stay one line each.
  m["operations"].erase(m["operations"].begin() + 3, m["operations"].end());
  md = analysis::detail::compute_markdown(m);
  CHECK(md.find("near-identical") == std::string::npos);
  CHECK(md.find("| 3 | aten::_scaled_dot_product_flash_attention | (32,8,101,128) bf16 |") !=
        std::string::npos);
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
