// The agent-workflow MCP tools in process: category_filter -> analyze_category
// -> write_findings, parent_chain and gemm_roofline, with their errors.
#include <doctest/doctest.h>

#include <filesystem>

#include "categories/category_analysis_common.h"
#include "golden.h"
#include "mcp_harness.h"
#include "test_analysis_support.h"

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
  CHECK(pc["text"].get<std::string>().starts_with("Node:\n"));
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
