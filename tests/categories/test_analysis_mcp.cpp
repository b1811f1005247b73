// The agent-workflow MCP tools in process: category_filter -> analyze_category
// -> write_findings, parent_chain and gemm_roofline, with their errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "categories/category_analysis_common.h"
#include "golden.h"
#include "mcp_harness.h"
#include "test_analysis_support.h"
#include "test_loader_support.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using jarvis::mcp::json;
using jarvis::mcp::testing::conformance_trace;
using jarvis::mcp::testing::Harness;
namespace fs = std::filesystem;

namespace {

struct AgentHarness {
  jarvis::testing::TempDir scratch;
  std::unique_ptr<Harness> h;
  AgentHarness() {
    jarvis::mcp::ServerOptions options;
    options.roots = {jarvis::golden::shared_dir(), scratch.path};
    h = std::make_unique<Harness>(options);
    h->initialize();
    h->tool_result(1, "load_trace", {{"path", conformance_trace("mi300_qwen1.5-0.5b")}});
  }
  std::string error_text(int id, const std::string& tool, json args) {
    json reply = h->call_tool(id, tool, std::move(args));
    if (reply.contains("error")) return "protocol error: " + reply["error"].dump();
    REQUIRE(reply["result"]["isError"] == true);
    return reply["result"]["content"][0]["text"].get<std::string>();
  }
};

}  // namespace

TEST_CASE("MCP agent workflow: category_filter, analyze_category, write_findings") {
  AgentHarness a;
  std::string out = a.scratch.path + "/analysis";
  json prep = a.h->tool_result(2, "category_filter",
                               {{"trace", "t1"}, {"output_dir", out}, {"arch", "MI300X"}});
  CHECK(prep["categories"][0]["name"] == "cpu_idle");
  CHECK(prep["categories"][1]["name"] == "gemm");
  CHECK(prep["categories"][1]["gpu_kernel_time_ms"].get<double>() == doctest::Approx(11.646));
  CHECK(fs::exists(out + "/category_data/gemm_tree_data.json"));

  json gemm = a.h->tool_result(3, "analyze_category",
                               {{"output_dir", out},
                                {"category", "gemm"},
                                {"max_operations", 2},
                                {"write_draft", true},
                                {"detail", "full"}});
  CHECK(gemm["status"] == "OK");
  CHECK(gemm["metrics"]["operations"].size() == 2);
  CHECK(gemm["metrics"]["operations_omitted"] == 3);
  CHECK(gemm["metrics"]["category_findings"][0]["impact_score"].get<double>() ==
        doctest::Approx(10.09));
  CHECK(gemm["markdown"].get<std::string>().find("## Operations breakdown") != std::string::npos);
  CHECK(gemm["draft_findings_path"].is_string());
  // The trace category_filter prepared from is inside the roots: the impact
  // ranges come from the critical-path what-if, and the draft says so.
  CHECK(gemm["impact_what_if"]["method"] == "what_if");
  CHECK(gemm["impact_what_if"]["estimates"].size() == gemm["metrics"]["impact_estimates"].size());
  CHECK(gemm["impact_what_if"]["estimates"][0]["method"] == "what_if");
  CHECK(jarvis::testing::read_text(gemm["draft_findings_path"].get<std::string>())
            .find("what-if on the critical-path graph") != std::string::npos);
  json plain = a.h->tool_result(9, "analyze_category",
                                {{"output_dir", out}, {"category", "gemm"}, {"what_if", false}});
  CHECK(plain["impact_what_if"].is_null());
  json idle =
      a.h->tool_result(10, "analyze_category", {{"output_dir", out}, {"category", "cpu_idle"}});
  CHECK(idle["impact_what_if"].is_null());

  // Findings are checked before they are stored: free text is refused with
  // the rules it breaks, our own draft passes, force writes anyway.
  const std::string draft =
      jarvis::testing::read_text(gemm["draft_findings_path"].get<std::string>());
  std::string refused =
      a.error_text(40, "write_findings",
                   {{"output_dir", out}, {"category", "gemm"}, {"markdown", "# GEMM\nok\n"}});
  CHECK(refused.find("S1: missing the section `## Recommendations`") != std::string::npos);
  CHECK(jarvis::testing::read_text(out + "/category_findings/gemm_findings.md") == draft);
  json checked = a.h->tool_result(41, "write_findings",
                                  {{"output_dir", out}, {"category", "gemm"}, {"markdown", draft}});
  CHECK(checked["validation"]["valid"] == true);
  CHECK(checked["validation"]["p_items"].get<size_t>() ==
        gemm["metrics"]["category_findings"].size());
  CHECK(checked["validation"]["data_rows_checked"].get<size_t>() > 0);
  json w = a.h->tool_result(
      4, "write_findings",
      {{"output_dir", out}, {"category", "gemm"}, {"markdown", "# GEMM\nok\n"}, {"force", true}});
  CHECK(w["bytes"] == 10);
  CHECK(w["validation"]["valid"] == false);
  CHECK(jarvis::testing::read_text(out + "/category_findings/gemm_findings.md") == "# GEMM\nok\n");

  CHECK(a.error_text(5, "write_findings",
                     {{"output_dir", out}, {"category", "../x"}, {"markdown", "x"}}) != "");
  CHECK(a.error_text(6, "analyze_category", {{"output_dir", "/etc"}, {"category", "gemm"}})
            .find("root") != std::string::npos);
  CHECK(
      a.error_text(7, "category_filter",
                   {{"trace", "t1"}, {"output_dir", out}, {"category", "nope"}, {"arch", "MI300X"}})
          .find("not in this trace") != std::string::npos);
  CHECK(a.error_text(8, "category_filter", {{"trace", "t9"}, {"output_dir", out}})
            .find("load_trace") != std::string::npos);
}

TEST_CASE("MCP parent_chain and gemm_roofline") {
  AgentHarness a;
  json pc = a.h->tool_result(2, "parent_chain",
                             {{"trace", "t1"}, {"op_name", "aten::mm"}, {"subtree_depth", 1}});
  CHECK(pc["event"]["name"] == "aten::mm");
  CHECK_FALSE(pc.contains("text"));  // the content text carries it; structured at detail=full
  json full = a.h->tool_result(
      4, "parent_chain",
      {{"trace", "t1"}, {"op_name", "aten::mm"}, {"subtree_depth", 1}, {"detail", "full"}});
  CHECK(full["text"].get<std::string>().starts_with("Node:\n"));
  CHECK(a.error_text(3, "parent_chain", {{"trace", "t1"}}).find("exactly one") !=
        std::string::npos);
  CHECK(a.error_text(4, "parent_chain", {{"trace", "t1"}, {"op_name", "aten::nope"}})
            .find("no event") != std::string::npos);

  std::string svg = a.scratch.path + "/roofline.svg";
  json rf = a.h->tool_result(5, "gemm_roofline",
                             {{"trace", "t1"}, {"arch", "MI300X"}, {"svg_path", svg}});
  CHECK(rf["shape_count"] == 5);
  CHECK(rf["shapes"][0]["op"] == "aten::mm");
  CHECK(rf["shapes"][0]["bound"] == "compute");
  CHECK(fs::exists(svg));
  CHECK(a.error_text(6, "gemm_roofline", {{"trace", "t1"}, {"arch", "NoSuchGPU"}}) != "");
}

TEST_CASE("GEMM time under autocast: one total in ops_summary, gemm_roofline, category_filter") {
  // GPT-2 training under bf16 autocast: aten::addmm ops recorded with fp32
  // inputs run cast kernels inside them. Each tool's GEMM total counts every
  // kernel once, under the op that launched it.
  std::string path = jarvis::golden::shared_dir() + "/hw_pairs/gpt2_train/h100.json.gz";
  jarvis::testing::TempDir scratch;
  jarvis::mcp::ServerOptions options;
  options.roots = {jarvis::golden::shared_dir(), scratch.path};
  Harness h(options);
  h.initialize();
  h.tool_result(1, "load_trace", {{"path", path}});

  json ops =
      h.tool_result(2, "ops_summary", {{"trace", "t1"}, {"category", "GEMM"}, {"top_n", 10000}});
  double ops_us = 0;
  for (const auto& row : ops["rows"]) ops_us += row["total_direct_kernel_time_us"].get<double>();
  json roof = h.tool_result(3, "gemm_roofline", {{"trace", "t1"}});
  json prep =
      h.tool_result(4, "category_filter", {{"trace", "t1"}, {"output_dir", scratch.path + "/a"}});
  double filter_ms = -1;
  for (const auto& c : prep["categories"])
    if (c["name"] == "gemm") filter_ms = c["direct_kernel_time_ms"].get<double>();
  double roof_us = roof["gemm_time_us"].get<double>();
  CHECK(roof_us == doctest::Approx(ops_us).epsilon(1e-9));
  CHECK(filter_ms * 1000 == doctest::Approx(ops_us).epsilon(1e-9));
  // The sheet's subtree total also holds the casts: strictly larger here.
  CHECK(roof["gemm_sheet_kernel_time_us"].get<double>() > roof_us + 100);

  // Independently from the raw events: the GEMM library kernels (nvjet /
  // CUTLASS) are all launched by GEMM ops, which launch nothing else but
  // cuBLAS's memsets.
  json events = json::parse(jarvis::loader_test::gunzip_file(path))["traceEvents"];
  double gemm_kernels = 0, memsets = 0;
  for (const auto& e : events) {
    std::string name = e.value("name", "");
    std::string cat = e.value("cat", "");
    if (cat == "kernel" && (name.starts_with("nvjet") || name.find("gemm") != std::string::npos))
      gemm_kernels += e["dur"].get<double>();
    if (cat == "gpu_memset") memsets += e["dur"].get<double>();
  }
  REQUIRE(gemm_kernels > 1000);
  CHECK(roof_us >= gemm_kernels - 1e-6);
  CHECK(roof_us <= gemm_kernels + memsets + 1e-6);
}

// Issue 23's scripted session: the performance-analysis skill's workflow on
// three conformance traces. Category names work in any case and an unknown one
// is an error listing the valid names (never 0 rows); every draft passes the
// findings check when written back; the final report ranks by recoverable time
// and its markdown lists the top three items with their numbers.
TEST_CASE("MCP skill workflow on three conformance traces: names, checked findings, final report") {
  int id = 100;
  for (const char* name : {"h100_qwen1.5-0.5b", "mi300_bert-small", "h100_falconsai-nsfw"}) {
    CAPTURE(name);
    jarvis::testing::TempDir scratch;
    jarvis::mcp::ServerOptions options;
    options.roots = {jarvis::golden::shared_dir(), scratch.path};
    Harness h(options);
    h.initialize();
    json loaded = h.tool_result(id++, "load_trace", {{"path", conformance_trace(name)}});
    const std::string trace = loaded["trace"].get<std::string>();

    // One vocabulary: any case; an unknown name is an isError naming the valid ones.
    json upper = h.tool_result(id++, "ops_summary", {{"trace", trace}, {"category", "GEMM"}});
    json lower = h.tool_result(id++, "ops_summary", {{"trace", trace}, {"category", "gemm"}});
    CHECK(upper["matched_rows"].get<size_t>() > 0);
    CHECK(lower["matched_rows"] == upper["matched_rows"]);
    json bad = h.call_tool(id++, "ops_summary", {{"trace", trace}, {"category", "gemmm"}});
    REQUIRE(bad["result"]["isError"] == true);
    CHECK(bad["result"]["content"][0]["text"].get<std::string>().find("GEMM") != std::string::npos);

    const std::string out = scratch.path + "/analysis";
    json prep = h.tool_result(id++, "category_filter", {{"trace", trace}, {"output_dir", out}});
    size_t written = 0;
    for (const auto& c : prep["categories"]) {
      const std::string category = c["name"].get<std::string>();
      CAPTURE(category);
      json analyzed = h.tool_result(
          id++, "analyze_category",
          {{"output_dir", out}, {"category", category}, {"write_draft", true}, {"what_if", false}});
      if (!analyzed["draft_findings_path"].is_string()) continue;
      // The agent's step: read the draft, write it back through the check.
      std::string draft =
          jarvis::testing::read_text(analyzed["draft_findings_path"].get<std::string>());
      json w = h.tool_result(id++, "write_findings",
                             {{"output_dir", out}, {"category", category}, {"markdown", draft}});
      CHECK(w["validation"]["valid"] == true);
      ++written;
    }
    CHECK(written >= 4);

    json report = h.tool_result(id++, "final_report", {{"output_dir", out}, {"detail", "full"}});
    CHECK(report["skipped"].empty());
    REQUIRE(report["ranked"].size() >= 3);
    const double total_ms = report["total_time_ms"].get<double>();
    const std::string md = jarvis::testing::read_text(out + "/final_report.md");
    for (size_t k = 0; k < report["ranked"].size(); ++k) {
      const json& item = report["ranked"][k];
      const double pct = item["recoverable_pct"].get<double>();
      if (item["tier"] == "system") {
        // A trace-level insight's step saving (issue 73 point 10): no impact.
        CHECK(item["impact_mid"].is_null());
        CHECK(item["recoverable_basis"] == "step saving");
        const double step_ms = item["step_saving_ms"].get<double>();
        CHECK(item["recoverable_ms"].get<double>() == doctest::Approx(step_ms));
        CHECK(pct == doctest::Approx(std::min(100.0, step_ms / total_ms * 100)));
      } else {
        CHECK(pct <= item["impact_mid"].get<double>() + 1e-9);
        CHECK(item["recoverable_ms"].get<double>() == doctest::Approx(pct / 100 * total_ms));
      }
      if (k > 0) CHECK(report["ranked"][k - 1]["recoverable_pct"].get<double>() >= pct);
      if (k < 3) {
        std::string row =
            fmt::format("| {} | {} | P{}: ", k + 1, item["category"].get<std::string>(),
                        item["p_item"].get<int>());
        size_t at = md.find(row);
        REQUIRE(at != std::string::npos);
        std::string line = md.substr(at, md.find('\n', at) - at);
        CHECK(line.find(fmt::format("{:.3f}", item["recoverable_ms"].get<double>())) !=
              std::string::npos);
        CHECK(line.find(fmt::format("{:.2f}", pct)) != std::string::npos);
      }
    }
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
