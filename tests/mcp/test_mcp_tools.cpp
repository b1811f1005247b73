// The first MCP tools (load_trace, list_traces, unload_trace, ops_summary)
// called in process, values checked against the TraceLens references.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <string>

#include "golden.h"
#include "mcp_harness.h"
#include "report/table.h"
#include "trace/loader.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using jarvis::mcp::json;
using jarvis::mcp::testing::conformance_trace;
using jarvis::mcp::testing::Harness;
namespace fs = std::filesystem;

namespace {

bool close_to(double expected, double actual) {
  return std::fabs(expected - actual) <= 1e-5 * std::max(1.0, std::fabs(expected));
}

}  // namespace

TEST_SUITE("mcp_tools") {
  TEST_CASE("load_trace summarises, reuses unchanged files, list and unload") {
    Harness h;
    h.initialize();
    json first = h.tool_result(1, "load_trace", {{"path", conformance_trace("h100_bert-small")}});
    CHECK(first["trace"] == "t1");
    CHECK(first["reused"] == false);
    CHECK(first["platform"] == "CUDA");
    CHECK(first["gpu_name"].get<std::string>().find("H100") != std::string::npos);
    CHECK(first["events"]["kernel"].get<int>() > 0);
    // The events by category: the trace's own "cat" texts counted here.
    {
      const jarvis::Trace raw = jarvis::load_trace(conformance_trace("h100_bert-small"));
      std::map<std::string, int64_t> by_cat;
      for (const char* cat :
           {"cpu_op", "python_function", "user_annotation", "gpu_user_annotation", "cuda_runtime",
            "cuda_driver", "kernel", "gpu_memcpy", "gpu_memset", "other"})
        by_cat[cat] = 0;
      for (jarvis::Uid u = 0; u < raw.events.size(); ++u) {
        const std::string cat(raw.cat_name(u));
        ++by_cat[by_cat.count(cat) && cat != "other" ? cat : "other"];
      }
      for (const auto& entry : by_cat) {
        CAPTURE(entry.first);
        CHECK(first["events"][entry.first].get<int64_t>() == entry.second);
      }
      CHECK(first["events"]["total"].get<int64_t>() == static_cast<int64_t>(raw.events.size()));
    }
    // GPU timeline equals TraceLens's gpu_timeline.csv.
    auto reference =
        jarvis::read_csv_file(jarvis::golden::shared_dir() +
                              "/conformance/h100_bert-small/perf_report_csvs/gpu_timeline.csv");
    REQUIRE(first.contains("gpu_timeline"));
    for (size_t r = 0; r < reference.rows.size(); ++r) {
      std::string type = reference.at(r, "type").text();
      INFO(type);
      CHECK(close_to(std::stod(reference.at(r, "time ms").text()),
                     first["gpu_timeline"][type]["time_ms"].get<double>()));
      CHECK(close_to(std::stod(reference.at(r, "percent").text()),
                     first["gpu_timeline"][type]["percent"].get<double>()));
    }

    json again =
        h.tool_result(2, "load_trace", {{"path", "conformance/h100_bert-small/trace.json.gz"}});
    CHECK(again["trace"] == "t1");
    CHECK(again["reused"] == true);

    json second = h.tool_result(3, "load_trace", {{"path", conformance_trace("mi300_bert-small")}});
    CHECK(second["trace"] == "t2");
    CHECK(second["platform"] == "ROCm");

    json list = h.tool_result(4, "list_traces", json::object());
    REQUIRE(list["traces"].size() == 2);
    CHECK(list["traces"][0]["trace"] == "t1");
    CHECK(list["traces"][1]["trace"] == "t2");

    json gone = h.tool_result(5, "unload_trace", {{"trace", "t1"}});
    CHECK(gone["remaining"] == 1);
    json unknown = h.call_tool(6, "unload_trace", {{"trace", "t1"}});
    CHECK(unknown["result"]["isError"] == true);
    json ops_unknown = h.call_tool(7, "ops_summary", {{"trace", "t1"}});
    CHECK(ops_unknown["result"]["isError"] == true);
    CHECK(ops_unknown["result"]["content"][0]["text"].get<std::string>().find("load_trace") !=
          std::string::npos);
  }

  TEST_CASE("load_trace of a file that is not a trace is a tool error") {
    Harness h;
    h.initialize();
    json reply =
        h.call_tool(1, "load_trace", {{"path", "conformance/h100_bert-small/COMMANDS.txt"}});
    REQUIRE(reply.contains("result"));
    CHECK(reply["result"]["isError"] == true);
    CHECK(h.session->traces().size() == 0);
  }

  TEST_CASE("ops_summary rows equal TraceLens ops_summary.csv") {
    for (const std::string& dir : jarvis::golden::conformance_dirs()) {
      std::string csv = dir + "/perf_report_csvs/ops_summary.csv";
      if (!fs::exists(csv)) continue;
      INFO(dir);
      Harness h;
      h.initialize();
      json loaded = h.tool_result(1, "load_trace", {{"path", dir + "/trace.json.gz"}});
      json result = h.tool_result(2, "ops_summary", {{"trace", loaded["trace"]}, {"top_n", 10000}});
      auto reference = jarvis::read_csv_file(csv);
      CHECK(result["total_rows"] == reference.rows.size());
      REQUIRE(result["rows"].size() == reference.rows.size());
      std::map<std::string, json> by_name;
      for (const auto& row : result["rows"]) by_name[row["name"]] = row;
      for (size_t r = 0; r < reference.rows.size(); ++r) {
        std::string name = reference.at(r, "name").text();
        INFO(name);
        REQUIRE(by_name.count(name));
        const json& row = by_name[name];
        CHECK(close_to(std::stod(reference.at(r, "total_direct_kernel_time_sum").text()),
                       row["total_direct_kernel_time_us"].get<double>()));
        CHECK(close_to(std::stod(reference.at(r, "total_subtree_kernel_time_sum").text()),
                       row["total_subtree_kernel_time_us"].get<double>()));
        CHECK(std::stoll(reference.at(r, "Count").text()) == row["count"].get<int64_t>());
        CHECK(close_to(std::stod(reference.at(r, "Percentage (%)").text()),
                       row["percent"].get<double>()));
        std::string categories = "[";
        for (size_t k = 0; k < row["categories"].size(); ++k)
          categories += (k ? ", '" : "'") + row["categories"][k].get<std::string>() + "'";
        categories += "]";
        CHECK(jarvis::golden::cells_equal(reference.at(r, "Categories").text(), categories));
      }
    }
  }

  TEST_CASE("ops_summary filters, sorts and cuts") {
    Harness h;
    h.initialize();
    json loaded =
        h.tool_result(1, "load_trace", {{"path", conformance_trace("h100_qwen1.5-0.5b")}});
    json top3 = h.tool_result(2, "ops_summary", {{"trace", "t1"}, {"top_n", 3}});
    REQUIRE(top3["rows"].size() == 3);
    CHECK(top3["rows"][0]["percent"].get<double>() >= top3["rows"][1]["percent"].get<double>());
    json gemm =
        h.tool_result(3, "ops_summary", {{"trace", "t1"}, {"category", "GEMM"}, {"top_n", 1000}});
    CHECK(gemm["matched_rows"].get<int>() > 0);
    for (const auto& row : gemm["rows"]) {
      auto cats = row["categories"].get<std::vector<std::string>>();
      CHECK(std::find(cats.begin(), cats.end(), "GEMM") != cats.end());
    }
    json big =
        h.tool_result(4, "ops_summary", {{"trace", "t1"}, {"min_percent", 5.0}, {"top_n", 1000}});
    for (const auto& row : big["rows"]) CHECK(row["percent"].get<double>() >= 5.0);
    json by_count =
        h.tool_result(5, "ops_summary", {{"trace", "t1"}, {"sort_by", "count"}, {"top_n", 1000}});
    for (size_t k = 1; k < by_count["rows"].size(); ++k)
      CHECK(by_count["rows"][k - 1]["count"].get<int64_t>() >=
            by_count["rows"][k]["count"].get<int64_t>());
    json bad_arch = h.call_tool(6, "ops_summary", {{"trace", "t1"}, {"arch", "NoSuchGPU"}});
    CHECK(bad_arch["result"]["isError"] == true);
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
