// The sweep HTML pages (issue 13): built from the MI300 TraceLens report
// sweeps; marks counted against the tables they draw, no external resource.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include <fmt/format.h>

#include "charts/html.h"
#include "golden.h"
#include "sweep/sweep.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using namespace jarvis;

namespace {

size_t count_of(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

sweep::Sweep mi300(const std::string& which) {
  sweep::LoadOptions options;
  options.pattern = "{threads}thread/perf_*_perf_report_csvs";
  options.cache_dir = "none";
  return sweep::load_sweep(golden::shared_dir() + "/sweeps/tracelens_mi300_nccl_sweep/" + which,
                           options);
}

void offline(const std::string& html) {
  CHECK(html.find("src=\"http") == std::string::npos);
  CHECK(html.find("href=\"http") == std::string::npos);
  CHECK(html.find("<script src") == std::string::npos);
  CHECK(html.find("@import") == std::string::npos);
}

}  // namespace

TEST_CASE("sweep pages: the sweep page draws the timeline of every config") {
  sweep::Sweep s = mi300("compare_test");
  auto tables = sweep::sweep_tables(s, 5);
  std::string html = sweep::sweep_html_page(s, tables);
  offline(html);
  const Table* summary = nullptr;
  for (const Table& t : tables)
    if (t.name == "gpu_timeline_Summary_By_Config") summary = &t;
  REQUIRE(summary);
  REQUIRE(summary->rows.size() >= 2);
  // Stacked bars: one mark per config and part with a positive time.
  size_t expected = 0;
  for (size_t r = 0; r < summary->rows.size(); ++r)
    for (const char* c : {"computation_time_ms", "exposed_comm_time_ms", "exposed_memcpy_time_ms",
                          "idle_time_ms"}) {
      double v = summary->at(r, c).number();
      if (std::isfinite(v) && v > 0) ++expected;
    }
  CHECK(count_of(html, "class=\"mark\"") >= expected);
  CHECK(html.find("GPU timeline by configuration") != std::string::npos);
  // NCCL statistics when collectives exist, else the reason there are none.
  bool has_nccl = false;
  for (const Table& t : tables)
    has_nccl = has_nccl || (t.name == "nccl_by_config" && !t.rows.empty());
  CHECK(html.find("Collectives by configuration") != std::string::npos);
  CHECK((html.find("None (nccl_by_config.csv has no rows): " +
                   charts::html_escape(sweep::nccl_empty_reason(s))) != std::string::npos) ==
        !has_nccl);
  // The page leads with what changes across configurations: the part of the
  // GPU time with the largest range over the configurations, lowest to highest.
  size_t changes = html.find("<section id=\"changes\">");
  REQUIRE(changes != std::string::npos);
  CHECK(changes < html.find("<section id=\"variance\">"));
  // Per step when every configuration knows its steps, as the page says.
  bool per_step = summary->col("steps") >= 0;
  for (size_t r = 0; per_step && r < summary->rows.size(); ++r) {
    double steps = summary->at(r, "steps").is_number() ? summary->at(r, "steps").number() : NAN;
    per_step = std::isfinite(steps) && steps > 0;
  }
  std::string top;
  double top_lo = 0, top_hi = 0, top_range = -1;
  for (const auto& [c, label] : {std::pair{"computation_time_ms", "Computation"},
                                 {"exposed_comm_time_ms", "Exposed communication"},
                                 {"exposed_memcpy_time_ms", "Exposed memcpy"},
                                 {"idle_time_ms", "Idle"}}) {
    double lo = INFINITY, hi = -INFINITY;
    for (size_t r = 0; r < summary->rows.size(); ++r) {
      double v = summary->at(r, c).number();
      if (per_step) v /= summary->at(r, "steps").number();
      lo = std::min(lo, v), hi = std::max(hi, v);
    }
    if (hi - lo > top_range) top = label, top_lo = lo, top_hi = hi, top_range = hi - lo;
  }
  auto ms = [](double v) {
    return std::fabs(v) >= 100 ? fmt::format("{:.0f}", v) : fmt::format("{:.3g}", v);
  };
  std::string lead = fmt::format(
      "<b>{} changes most: {} &rarr; {} {} across the {} configurations", top, ms(top_lo),
      ms(top_hi), per_step ? "ms per step" : "ms over the profiled window", summary->rows.size());
  CHECK_MESSAGE(html.find(lead) != std::string::npos, lead);
  // One run per configuration: the page says noise cannot be judged.
  std::map<std::string, size_t> runs;
  for (const auto& run : s.runs) ++runs[s.config_label(run)];
  size_t most = 0;
  for (const auto& [config, n] : runs) most = std::max(most, n);
  CHECK((html.find("Noise cannot be judged: one run per configuration.") != std::string::npos) ==
        (most == 1));
  // Report runs carry no trace, so no health verdict and no health section.
  CHECK(html.find("Trace health per run") == std::string::npos);
}

TEST_CASE("sweep pages: the comparison page has both sweeps and the total-time bars") {
  sweep::Sweep base = mi300("compare_test"), cand = mi300("compare_test_ops");
  auto comparison = sweep::compare_sweeps(base, cand);
  std::string html = sweep::sweep_compare_html_page(base, cand, comparison, "ROCm A", "ROCm B");
  offline(html);
  CHECK(html.find("Sweep comparison: ROCm A vs ROCm B") != std::string::npos);
  size_t totals = 0;
  const Table& timeline = comparison.front();
  for (size_t r = 0; r < timeline.rows.size(); ++r)
    if (timeline.at(r, "type").to_csv_text(false) == "total_time") ++totals;
  REQUIRE(totals >= 2);
  CHECK(html.find("Total GPU time per step by configuration") != std::string::npos);
  CHECK(count_of(html, "class=\"mark\"") >= 2 * totals);
}

TEST_CASE("sweep pages: the page leads with what changed and the kernels that changed") {
  sweep::LoadOptions options;
  options.cache_dir = "none";
  sweep::Sweep s = sweep::load_sweep(golden::shared_dir() + "/sweeps/h100_gpt2_ddp", options);
  auto tables = sweep::sweep_tables(s, 5);
  const Table* k = nullptr;
  for (const Table& t : tables)
    if (t.name == "what_changed_kernels") k = &t;
  REQUIRE(k);
  REQUIRE(!k->rows.empty());
  std::string html = sweep::sweep_html_page(s, tables);
  offline(html);
  size_t summary = html.find("<section id=\"summary\">");
  size_t changed = html.find("<section id=\"what-changed\">");
  size_t kernels = html.find("<section id=\"what-changed-kernels\">");
  size_t timeline = html.find("<section id=\"timeline\">");
  REQUIRE(kernels != std::string::npos);
  REQUIRE(changed != std::string::npos);
  // Right after the summary, before the variance and timeline sections.
  CHECK(summary < changed);
  CHECK(changed < kernels);
  CHECK(kernels < timeline);
  CHECK(kernels < html.find("<section id=\"variance\">"));
  std::string section = html.substr(kernels, html.find("</section>", kernels) - kernels);
  CHECK(section.find(charts::html_escape(sweep::kernel_changes_summary(*k))) != std::string::npos);
  // The verdict counts are the table's: one run of two steps a side on this
  // sweep, so every row is "cannot tell".
  size_t cannot = 0;
  for (size_t r = 0; r < k->rows.size(); ++r) cannot += k->at(r, "verdict").text() == "cannot tell";
  CHECK(cannot == k->rows.size());
  CHECK(section.find(std::to_string(cannot) + " cannot tell") != std::string::npos);
  // Every row is drawn, with its kernel name.
  for (size_t r = 0; r < k->rows.size(); ++r)
    CHECK(section.find(charts::html_escape(k->at(r, "kernel_name").text())) != std::string::npos);
}

TEST_CASE("sweep pages: report sweeps say why no kernel changes are shown") {
  sweep::Sweep s = mi300("compare_test");
  std::string why = sweep::kernel_changes_empty_reason(s);
  REQUIRE(!why.empty());
  std::string html = sweep::sweep_html_page(s, sweep::sweep_tables(s, 5));
  size_t kernels = html.find("<section id=\"what-changed-kernels\">");
  REQUIRE(kernels != std::string::npos);
  CHECK(html.find(charts::html_escape(why), kernels) != std::string::npos);
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
