// The compare MCP tool called in process: values against the TraceLens
// references, root confinement of inputs and output_dir, and argument errors.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "golden.h"
#include "mcp_harness.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using doctest::Approx;
using jarvis::mcp::json;
using jarvis::mcp::testing::conformance_trace;
using jarvis::mcp::testing::Harness;
namespace fs = std::filesystem;

namespace {

struct ScratchRoot {
  fs::path path = fs::temp_directory_path() / ("jarvis_compare_mcp_" + std::to_string(::getpid()));
  ScratchRoot() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~ScratchRoot() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

jarvis::mcp::ServerOptions roots_with(const fs::path& extra) {
  auto options = jarvis::mcp::testing::shared_root_options();
  options.roots.push_back(extra.string());
  return options;
}

std::string conformance_csv(const std::string& sub) {
  return jarvis::golden::shared_dir() + "/conformance/" + sub;
}

}  // namespace

TEST_CASE("compare tool: qwen H100 vs MI300X side by side, gaps and written sheets") {
  ScratchRoot scratch;
  Harness h(roots_with(scratch.path));
  h.initialize();
  fs::path out = scratch.path / "cmp";
  json r = h.tool_result(1, "compare",
                         {{"reference_trace", conformance_trace("h100_qwen1.5-0.5b")},
                          {"target_trace", conformance_trace("mi300_qwen1.5-0.5b")},
                          {"arch_reference", "H100"},
                          {"arch_target", "MI300X"},
                          {"reference_tag", "h100"},
                          {"target_tag", "mi300"},
                          {"output_dir", out.string()},
                          {"top_n", 3}});
  CHECK(r["reference"]["arch"] == "H100");
  CHECK(r["target"]["arch"] == "MI300X");
  CHECK(r["reference"]["handle"] == "t1");
  CHECK(r["target"]["handle"] == "t2");

  // gpu_timeline side by side equals the two TraceLens gpu_timeline sheets.
  REQUIRE(r["gpu_timeline"].size() == 8);
  CHECK(r["gpu_timeline"][0]["type"] == "computation_time");
  CHECK(r["gpu_timeline"][0]["reference_ms"].get<double>() == Approx(31.903115234375));
  CHECK(r["gpu_timeline"][0]["target_ms"].get<double>() == Approx(29.74316796875));
  CHECK(r["gpu_timeline"][1]["diff_pct"].is_null());  // exposed_comm_time: 0 on the reference

  // Top ops by the larger of the two times: mm (8.66 ms on MI300), mul, copy_.
  REQUIRE(r["ops_summary"].size() == 3);
  CHECK(r["ops_summary"][0]["name"] == "aten::mm");
  CHECK(r["ops_summary"][0]["diff_ms"].get<double>() == Approx(1.99493359375));
  CHECK(r["ops_summary"][1]["name"] == "aten::mul");
  CHECK(r["ops_summary"][2]["name"] == "aten::copy_");

  const json& gaps = r["hardware_gaps"];
  CHECK(gaps["matched_ops"] == 35);
  CHECK(gaps["hbm_time_ratio"].get<double>() == Approx(3350.0 / 5300.0));
  CHECK(gaps["flagged"].size() <= 3);
  CHECK(gaps["flagged_count"].get<int>() >= static_cast<int>(gaps["flagged"].size()));
  for (const auto& op : gaps["flagged"]) {
    CHECK(op["gap"].get<double>() > 1.2);
    CHECK(op["target_share_pct"].get<double>() >= 1.0);
  }

  // The written sheets are the TraceLens comparison.
  auto check = jarvis::golden::compare_csv_files(
      conformance_csv("compare_qwen_h100_vs_mi300/ops_summary.csv"),
      (out / "ops_summary.csv").string());
  INFO(check.summary());
  CHECK(check.ok());
  CHECK(fs::exists(out / "hardware_gap_analysis.json"));
  CHECK(r["files"].size() == 23);  // 21 sheets + gap csv/json
}

TEST_CASE("compare tool: handles, report directories, and no arch") {
  Harness h;
  h.initialize();
  h.tool_result(1, "load_trace", {{"path", conformance_trace("h100_bert-small")}});
  h.tool_result(2, "load_trace", {{"path", conformance_trace("mi300_bert-small")}});
  json r = h.tool_result(3, "compare",
                         {{"reference_trace", "t1"},
                          {"target_trace", "t2"},
                          {"arch_reference", "none"},
                          {"sheets", json::array({"gpu_timeline", "ops_summary"})}});
  CHECK(r["reference"]["handle"] == "t1");
  CHECK(r["reference"]["arch"].is_null());
  CHECK(r["hardware_gaps"].is_null());
  CHECK(r["notes"].size() == 1);
  CHECK(r["sheets"].size() == 2);
  CHECK(r["files"].empty());

  json d = h.tool_result(4, "compare",
                         {{"reference_trace", "conformance/h100_qwen1.5-0.5b/perf_report_csvs"},
                          {"target_trace", "conformance/mi300_qwen1.5-0.5b/perf_report_csvs"},
                          {"arch_reference", "H100"},
                          {"arch_target", "MI300X"},
                          {"sheets", json::array({"ops_summary", "ops_all", "roofline"})}});
  CHECK(d["reference"]["handle"].is_null());
  CHECK(d["gpu_timeline"].is_null());
  CHECK(d["hardware_gaps"]["matched_ops"] == 35);
}

TEST_CASE("compare tool: errors the agent can act on") {
  Harness h;
  h.initialize();
  auto error_text = [&](int id, json args) {
    json reply = h.call_tool(id, "compare", std::move(args));
    REQUIRE(reply.contains("result"));
    CHECK(reply["result"]["isError"] == true);
    return reply["result"]["content"][0]["text"].get<std::string>();
  };
  std::string outside = error_text(1, {{"reference_trace", "/etc/passwd"}, {"target_trace", "t9"}});
  CHECK_FALSE(outside.empty());
  std::string same = error_text(2, {{"reference_trace", conformance_trace("h100_bert-small")},
                                    {"target_trace", conformance_trace("mi300_bert-small")},
                                    {"reference_tag", "x"},
                                    {"target_tag", "x"}});
  CHECK(same.find("must differ") != std::string::npos);
  std::string arch = error_text(3, {{"reference_trace", conformance_trace("h100_bert-small")},
                                    {"target_trace", conformance_trace("mi300_bert-small")},
                                    {"arch_reference", "NoSuchGPU"}});
  CHECK(arch.find("bundled") != std::string::npos);
  // Writing outside the roots is refused before any work.
  std::string write = error_text(4, {{"reference_trace", conformance_trace("h100_bert-small")},
                                     {"target_trace", conformance_trace("mi300_bert-small")},
                                     {"output_dir", "/etc/jarvis_compare"}});
  CHECK_FALSE(write.empty());
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
