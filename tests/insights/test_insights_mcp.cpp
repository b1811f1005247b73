// Insights over MCP: the insights tool, and the same judgments beside the
// numbers in ops_summary, gemm_roofline and analyze_category (digest and
// findings draft), on the real GPT-2 H100 trace.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "insights/insights.h"

#include "golden.h"
#include "mcp_harness.h"
#include "test_analysis_support.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using jarvis::mcp::json;
using jarvis::mcp::testing::Harness;

TEST_CASE("MCP insights: tool, ops_summary, gemm_roofline and analyze_category agree") {
  jarvis::testing::TempDir scratch;
  jarvis::mcp::ServerOptions options;
  options.roots = {jarvis::golden::shared_dir(), scratch.path};
  Harness h(options);
  h.initialize();
  h.tool_result(1, "load_trace",
                {{"path", jarvis::golden::shared_dir() + "/hw_pairs/gpt2_train/h100.json.gz"}});

  // Every insight (a default result keeps to 16 KB and may list fewer).
  json all = h.tool_result(2, "insights", {{"trace", "t1"}, {"limit", 1000}});
  REQUIRE(all["insights"].size() > 0);
  CHECK(all["rules"].size() == 27);
  // The LM head's three unaligned GEMMs and their sm75 kernels: one change,
  // one finding, the others its symptoms.
  size_t unaligned = 0, symptoms = 0;
  for (const auto& i : all["insights"])
    if (i["rule"] == "gemm_unaligned_dims") {
      ++unaligned;
      CHECK(i["change"] == "pad 50257 to 50304");
      symptoms += i["evidence"]["symptoms"].size();
    }
  CHECK(unaligned == 1);
  CHECK(symptoms >= 3);
  json one_rule = h.tool_result(3, "insights", {{"trace", "t1"}, {"rule", "old_arch_kernel"}});
  for (const auto& i : one_rule["insights"]) CHECK(i["rule"] == "old_arch_kernel");

  json ops = h.tool_result(4, "ops_summary", {{"trace", "t1"}, {"top_n", 3}});
  REQUIRE(ops["insights"].size() == 5);
  CHECK(ops["insights"][0]["title"] == all["insights"][0]["title"]);  // same ranking

  json gemm = h.tool_result(5, "gemm_roofline", {{"trace", "t1"}, {"limit", 1000}});
  size_t gemm_insights = 0;
  for (const auto& i : all["insights"]) gemm_insights += i["category"] == "GEMM";
  CHECK(gemm["insights"].size() == gemm_insights);
  // Dimensions and counts are integers for agents (M=4096, x2; not 4096.0).
  for (const char* key : {"M", "N", "K", "batch", "count"}) {
    CAPTURE(key);
    CHECK(gemm["shapes"][0][key].is_number_integer());
  }

  std::string out = scratch.path + "/prep";
  h.tool_result(6, "category_filter", {{"trace", "t1"}, {"output_dir", out}, {"arch", "H100"}});
  CHECK(std::filesystem::exists(out + "/category_data/insights.json"));
  json analyzed = h.tool_result(
      7, "analyze_category",
      {{"output_dir", out}, {"category", "gemm"}, {"write_draft", true}, {"detail", "full"}});
  CHECK(analyzed["insights"].size() == gemm_insights);
  CHECK(analyzed["markdown"].get<std::string>().find("## Insights (beyond TraceLens)") !=
        std::string::npos);
  REQUIRE(analyzed["draft_findings_path"].is_string());
  std::ifstream draft(analyzed["draft_findings_path"].get<std::string>());
  std::stringstream text;
  text << draft.rdbuf();
  CHECK(text.str().find("50304") != std::string::npos);  // the padded vocabulary
}

TEST_CASE("MCP ops_summary: categories case-insensitive, unknown ones an error that lists them") {
  jarvis::mcp::ServerOptions options;
  options.roots = {jarvis::golden::shared_dir()};
  Harness h(options);
  h.initialize();
  h.tool_result(
      1, "load_trace",
      {{"path", jarvis::golden::shared_dir() + "/conformance/h100_qwen1.5-0.5b/trace.json.gz"}});
  json upper = h.tool_result(2, "ops_summary", {{"trace", "t1"}, {"category", "GEMM"}});
  json lower = h.tool_result(3, "ops_summary", {{"trace", "t1"}, {"category", "gemm"}});
  REQUIRE(upper["rows"].size() > 0);
  CHECK(lower["rows"] == upper["rows"]);
  json bad = h.call_tool(5, "ops_summary", {{"trace", "t1"}, {"category", "gemmm"}});
  REQUIRE(bad["result"]["isError"] == true);
  std::string text = bad["result"]["content"][0]["text"];
  CHECK(text.find("unknown category 'gemmm'") != std::string::npos);
  CHECK(text.find("GEMM") != std::string::npos);
  CHECK(text.find("elementwise") != std::string::npos);
  // The server answers the next request.
  CHECK(h.tool_result(6, "ops_summary", {{"trace", "t1"}, {"top_n", 1}})["rows"].size() == 1);
}

TEST_CASE("MCP insights: the schema's rule filter lists every rule the engine runs") {
  std::ifstream in(std::filesystem::path(JARVIS_SOURCE_DIR) / "tools_schema" / "insights.json");
  REQUIRE(in);
  const auto schema = nlohmann::json::parse(in);
  std::vector<std::string> listed =
      schema["inputSchema"]["properties"]["rule"]["enum"].get<std::vector<std::string>>();
  std::vector<std::string> rules = jarvis::insights::rule_ids();
  std::sort(listed.begin(), listed.end());
  std::sort(rules.begin(), rules.end());
  CHECK(listed == rules);
}

TEST_CASE("issue 64 point 4: insights list uids and kernel names at detail=full, count them else") {
  jarvis::mcp::ServerOptions options;
  options.roots = {jarvis::golden::shared_dir()};
  Harness h(options);
  h.initialize();
  h.tool_result(1, "load_trace",
                {{"path", jarvis::golden::shared_dir() + "/hw_pairs/gpt2_train/h100.json.gz"}});
  json full = h.tool_result(2, "insights", {{"trace", "t1"}, {"detail", "full"}});
  json brief = h.tool_result(3, "insights", {{"trace", "t1"}});
  REQUIRE_FALSE(full["insights"].empty());
  // The default reply keeps to its 16 KB of structured data; without the
  // lists more insights fit there than the full rows would let in.
  size_t fit_with_lists = 0, bytes = 0;
  for (const json& row : full["insights"]) {
    bytes += row.dump().size() + 1;
    if (bytes > 16 * 1024) break;
    ++fit_with_lists;
  }
  MESSAGE(brief["insights"].size(), " of ", full["insights"].size(),
          " insights in the default reply; ", fit_with_lists, " would fit with their lists");
  CHECK(brief["insights"].size() > fit_with_lists);
  CHECK(brief.dump().size() <= 16 * 1024);
  CHECK(brief["insight_count"] == full["insight_count"]);
  // The text lists what the default reply carries, one line each (issue 73
  // point 8): no row the text names is missing, none it omits is shown.
  {
    const json reply = h.call_tool(30, "insights", {{"trace", "t1"}});
    const std::string text = reply["result"]["content"][0]["text"].get<std::string>();
    size_t listed = 0;
    for (size_t at = text.find("\n["); at != std::string::npos; at = text.find("\n[", at + 1))
      ++listed;
    CHECK(listed == brief["insights"].size());
    for (const json& row : brief["insights"])
      CHECK(text.find(row["title"].get<std::string>()) != std::string::npos);
  }
  for (size_t k = 0; k < brief["insights"].size(); ++k) {
    const json& b = brief["insights"][k];
    const json& f = full["insights"][k];
    CAPTURE(f["rule"]);
    CHECK(b["title"] == f["title"]);
    CHECK_FALSE(b.contains("uids"));
    CHECK_FALSE(b.contains("kernel_names"));
    CHECK(b["uid_count"] == f["uids"].size());
    CHECK(b["kernel_count"] == f["kernel_names"].size());
  }
  CHECK(brief.dump().size() < full.dump().size());
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
