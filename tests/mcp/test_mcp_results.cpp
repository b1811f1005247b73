// Lean tool results (issues 17 and 23): every tool's default result fits in
// 20 KB on a conformance trace, `limit` and `detail` are honoured with a
// truncation note, clients at 2025-06-18 or later get a short text summary
// (the data only in structuredContent) while older clients keep the full data
// in the text, integers print as integers, and results name the next calls.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "golden.h"
#include "mcp/result_shape.h"
#include "mcp_harness.h"
#include "test_analysis_support.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using jarvis::mcp::json;
using jarvis::mcp::testing::conformance_trace;
using jarvis::mcp::testing::Harness;

namespace {

constexpr size_t kMaxDefaultResultBytes = 20 * 1024;

struct ResultsHarness {
  jarvis::testing::TempDir scratch;
  std::unique_ptr<Harness> h;
  explicit ResultsHarness(const std::string& version = "2025-11-25") {
    jarvis::mcp::ServerOptions options;
    options.roots = {jarvis::golden::shared_dir(), scratch.path};
    h = std::make_unique<Harness>(options);
    h->initialize(version);
  }
  // The whole reply of a successful call.
  json call(int id, const std::string& tool, json args) {
    json reply = h->call_tool(id, tool, std::move(args));
    INFO(tool << ": " << reply.dump().substr(0, 2000));
    REQUIRE(reply.contains("result"));
    REQUIRE_FALSE(reply["result"].value("isError", false));
    return reply;
  }
};

// The first integral float in `v` (its path), or "" when there is none.
std::string integral_float(const json& v, const std::string& path = "") {
  if (v.is_number_float()) {
    double x = v.get<double>();
    return std::isfinite(x) && std::floor(x) == x ? path : "";
  }
  if (v.is_object())
    for (const auto& [key, child] : v.items())
      if (std::string p = integral_float(child, path + "/" + key); !p.empty()) return p;
  if (v.is_array())
    for (size_t k = 0; k < v.size(); ++k)
      if (std::string p = integral_float(v[k], path + "/" + std::to_string(k)); !p.empty())
        return p;
  return "";
}

}  // namespace

TEST_CASE("every tool's default result fits in 20 KB and prints integers as integers") {
  ResultsHarness r;
  const std::string trace = conformance_trace("h100_qwen1.5-0.5b");
  const std::string out = r.scratch.path + "/prepared";
  std::vector<std::pair<std::string, json>> replies;
  int id = 1;
  auto run = [&](const std::string& tool, json args) {
    json reply = r.call(id++, tool, std::move(args));
    replies.emplace_back(tool, reply);
    return reply["result"]["structuredContent"];
  };
  json loaded = run("load_trace", {{"path", trace}});
  const std::string handle = loaded["trace"].get<std::string>();
  run("list_traces", json::object());
  json ops = run("ops_summary", {{"trace", handle}});
  run("insights", {{"trace", handle}});
  run("gemm_roofline", {{"trace", handle}});
  run("parent_chain", {{"trace", handle}, {"op_name", ops["rows"][0]["name"]}});
  json prepared = run("category_filter", {{"trace", handle}, {"output_dir", out}});
  REQUIRE(prepared["categories"].size() >= 3);
  for (const auto& c : prepared["categories"])
    run("analyze_category", {{"output_dir", out}, {"category", c["name"]}});
  run("make_replay", {{"trace", handle},
                      {"output_dir", r.scratch.path + "/replay"},
                      {"op", ops["rows"][0]["name"]}});
  run("compare",
      {{"reference_trace", trace}, {"target_trace", conformance_trace("mi300_qwen1.5-0.5b")}});
  for (const auto& [tool, reply] : replies) {
    const std::string name = tool;  // structured bindings are not captured by INFO (clang 14)
    const size_t bytes = reply.dump().size();
    INFO(name << ": " << bytes << " bytes");
    CHECK(bytes <= kMaxDefaultResultBytes);
    const json& result = reply["result"];
    REQUIRE(result.contains("structuredContent"));
    // The text is a summary, not a second copy of the data (a result of at
    // most 1 KB may stand as its own summary).
    const std::string text = result["content"][0]["text"].get<std::string>();
    const std::string data = result["structuredContent"].dump();
    CHECK(text.size() < 4096);
    if (data.size() > 1024) CHECK(text.find(data) == std::string::npos);
    const std::string where = integral_float(result["structuredContent"]);
    INFO("integral float at " << where);
    CHECK(where.empty());
  }
}

TEST_CASE("limit and detail shape a tool's rows, with a truncation note") {
  ResultsHarness r;
  json loaded = r.h->tool_result(1, "load_trace", {{"path", conformance_trace("h100_bert-small")}});
  const std::string handle = loaded["trace"].get<std::string>();

  json full = r.h->tool_result(2, "ops_summary", {{"trace", handle}, {"detail", "full"}});
  const size_t matched = full["matched_rows"].get<size_t>();
  REQUIRE(matched > 5);
  CHECK(full["rows"].size() == matched);
  CHECK_FALSE(full.contains("truncated"));

  json reply = r.call(3, "ops_summary", {{"trace", handle}, {"limit", 3}});
  json three = reply["result"]["structuredContent"];
  CHECK(three["rows"].size() == 3);
  for (size_t k = 0; k < 3; ++k) CHECK(three["rows"][k]["name"] == full["rows"][k]["name"]);
  REQUIRE(three.contains("truncated"));
  CHECK(three["truncated"][0] == json{{"list", "/rows"}, {"shown", 3}, {"total", matched}});
  const std::string text = reply["result"]["content"][0]["text"].get<std::string>();
  CHECK(text.find(fmt::format("showing 3 of {} rows; pass limit", matched)) != std::string::npos);

  // The older name of limit still works; limit wins over it.
  CHECK(r.h->tool_result(4, "ops_summary", {{"trace", handle}, {"top_n", 4}})["rows"].size() == 4);
  CHECK(r.h->tool_result(5, "ops_summary", {{"trace", handle}, {"top_n", 4}, {"limit", 2}})["rows"]
            .size() == 2);

  json summary = r.h->tool_result(6, "ops_summary", {{"trace", handle}, {"detail", "summary"}});
  CHECK(summary["rows"].empty());
  CHECK(summary["matched_rows"] == matched);
  CHECK(summary["truncated"][0]["shown"] == 0);

  // The default: 20 rows at most.
  json plain = r.h->tool_result(7, "ops_summary", {{"trace", handle}});
  CHECK(plain["rows"].size() == std::min<size_t>(matched, jarvis::mcp::kDefaultRowLimit));

  // Results name the next useful calls, with arguments ready to send.
  REQUIRE(plain.contains("next"));
  CHECK(plain["next"][0]["tool"] == "parent_chain");
  CHECK(plain["next"][0]["arguments"]["op_name"] == full["rows"][0]["name"]);
  json pc = r.h->tool_result(8, "parent_chain", plain["next"][0]["arguments"]);
  CHECK(pc["event"]["name"] == full["rows"][0]["name"]);

  // insights: limit caps the list, insight_count keeps the total.
  json one = r.h->tool_result(9, "insights", {{"trace", handle}, {"limit", 1}});
  CHECK(one["insights"].size() <= 1);
  if (one["insight_count"].get<size_t>() > 1) CHECK(one["truncated"][0]["list"] == "/insights");
}

TEST_CASE("clients before 2025-06-18 keep the full data in the text") {
  for (const char* version : {"2025-03-26", "2024-11-05"}) {
    CAPTURE(version);
    ResultsHarness old(version);
    json reply = old.call(1, "load_trace", {{"path", conformance_trace("h100_bert-small")}});
    CHECK_FALSE(reply["result"].contains("structuredContent"));
    reply = old.call(2, "ops_summary", {{"trace", "t1"}, {"limit", 5}});
    CHECK_FALSE(reply["result"].contains("structuredContent"));
    const std::string text = reply["result"]["content"][0]["text"].get<std::string>();
    // A human summary, then the data as JSON (what clients without
    // structuredContent parse).
    size_t start = text.find("\n{");
    REQUIRE(start != std::string::npos);
    // After the trace's caveat lines (bert-small is a weak trace), the summary.
    size_t summary = 0;
    while (text.compare(summary, std::string("Caution — ").size(), "Caution — ") == 0)
      summary = text.find('\n', summary) + 1;
    CHECK(summary > 0);
    CHECK(text.compare(summary, 17, "ops_summary of t1") == 0);
    json data = json::parse(text.substr(start + 1));
    CHECK(data["rows"].size() == 5);
    CHECK(data["truncated"][0]["shown"] == 5);
    CHECK(data["next"].is_array());
  }
  // The same call at 2025-06-18: summary only, the data in structuredContent.
  ResultsHarness modern("2025-06-18");
  modern.call(1, "load_trace", {{"path", conformance_trace("h100_bert-small")}});
  json reply = modern.call(2, "ops_summary", {{"trace", "t1"}, {"limit", 5}});
  const std::string text = reply["result"]["content"][0]["text"].get<std::string>();
  CHECK(text.find("\n{") == std::string::npos);
  CHECK(reply["result"]["structuredContent"]["rows"].size() == 5);
}

TEST_CASE("integers_as_integers rewrites integral doubles only") {
  json v = {{"m", 4096.0},
            {"ms", 0.25},
            {"neg", -3.0},
            {"big", 1e300},
            {"nested", {1.0, 2.5, {{"k", 8.0}}}},
            {"s", "4096.0"}};
  jarvis::mcp::integers_as_integers(v);
  CHECK(v["m"].is_number_integer());
  CHECK(v["m"] == 4096);
  CHECK(v["ms"].is_number_float());
  CHECK(v["neg"] == -3);
  CHECK(v["neg"].is_number_integer());
  CHECK(v["big"].is_number_float());  // beyond 2^53: left as it is
  CHECK(v["nested"][0].is_number_integer());
  CHECK(v["nested"][1].is_number_float());
  CHECK(v["nested"][2]["k"].is_number_integer());
  CHECK(v["s"] == "4096.0");
  CHECK(v.dump() ==
        R"({"big":1e+300,"m":4096,"ms":0.25,"neg":-3,"nested":[1,2.5,{"k":8}],"s":"4096.0"})");
}

TEST_CASE(
    "final_report over MCP: drafts pass write_findings's check and rank by recoverable time") {
  ResultsHarness r;
  const std::string out = r.scratch.path + "/prepared";
  r.h->tool_result(1, "load_trace", {{"path", conformance_trace("h100_qwen1.5-0.5b")}});
  json prepared = r.h->tool_result(2, "category_filter", {{"trace", "t1"}, {"output_dir", out}});
  // category_filter suggests analysing the category with the most kernel time first.
  std::string biggest;
  double most = -1;
  for (const auto& c : prepared["categories"])
    if (c["tier"] != "system" && c["gpu_kernel_time_ms"].is_number() &&
        c["gpu_kernel_time_ms"].get<double>() > most) {
      most = c["gpu_kernel_time_ms"].get<double>();
      biggest = c["name"].get<std::string>();
    }
  REQUIRE(prepared["next"].size() >= 1);
  CHECK(prepared["next"][0]["tool"] == "analyze_category");
  CHECK(prepared["next"][0]["arguments"]["category"] == biggest);
  int id = 3;
  std::vector<double> impacts;  // every compute category_findings impact_score
  for (const auto& c : prepared["categories"]) {
    json a = r.h->tool_result(
        id++, "analyze_category",
        {{"output_dir", out}, {"category", c["name"]}, {"write_draft", true}, {"detail", "full"}});
    if (c["tier"] != "system" && a["metrics"].contains("category_findings"))
      for (const auto& f : a["metrics"]["category_findings"])
        impacts.push_back(f["impact_score"].get<double>());
    // Each draft, sent back through write_findings, passes the check.
    if (a["draft_findings_path"].is_string()) {
      std::ifstream in(a["draft_findings_path"].get<std::string>());
      std::stringstream md;
      md << in.rdbuf();
      json w =
          r.h->tool_result(id++, "write_findings",
                           {{"output_dir", out}, {"category", c["name"]}, {"markdown", md.str()}});
      CHECK(w["validation"]["valid"] == true);
    }
  }
  REQUIRE(impacts.size() >= 3);
  std::sort(impacts.rbegin(), impacts.rend());
  json report = r.h->tool_result(id++, "final_report", {{"output_dir", out}});
  CHECK(report["skipped"].empty());
  const double total_ms = report["total_time_ms"].get<double>();
  // Every draft's P-item is there; a compute item ranks by its impact mid
  // capped by the draft's tuning headroom and what-if saving, a system item
  // (a trace-level insight, issue 73 point 10) by its step saving's share of
  // the trace time; largest first, one order for both.
  std::vector<double> got;
  size_t system_items = 0;
  double previous = 1e300;
  for (size_t k = 0; k < report["ranked"].size(); ++k) {
    CAPTURE(k);
    const json& item = report["ranked"][k];
    CHECK(item["rank"] == k + 1);
    double expected = 0;
    if (item["tier"] == "system") {
      ++system_items;
      CHECK(item["impact_mid"].is_null());
      CHECK(item["recoverable_basis"] == "step saving");
      const double step_ms = item["step_saving_ms"].get<double>();
      expected = std::min(100.0, step_ms / total_ms * 100.0);
      CHECK(item["recoverable_ms"].get<double>() == doctest::Approx(step_ms));
    } else {
      got.push_back(item["impact_mid"].get<double>());
      expected = item["impact_mid"].get<double>();
      for (const char* cap : {"tuning_headroom_pct", "what_if_saving_pct"})
        if (item.contains(cap) && item[cap].is_number())
          expected = std::min(expected, item[cap].get<double>());
      CHECK(item["recoverable_ms"].get<double>() == doctest::Approx(expected / 100.0 * total_ms));
    }
    CHECK(item["recoverable_pct"].get<double>() == doctest::Approx(expected));
    CHECK(expected <= previous + 1e-9);
    previous = expected;
  }
  REQUIRE(report["ranked"].size() == impacts.size() + system_items);
  std::sort(got.rbegin(), got.rend());
  for (size_t k = 0; k < got.size(); ++k) CHECK(got[k] == doctest::Approx(impacts[k]));
  CHECK(std::filesystem::exists(out + "/final_report.md"));
  CHECK(std::filesystem::exists(out + "/final_report.json"));
}

TEST_CASE("every analysis of a weak trace carries its health warnings; a healthy trace none") {
  ResultsHarness r;
  const std::string weak = conformance_trace("h100_bert-small");  // GPU busy 8 %, one step
  json loaded = r.call(1, "load_trace", {{"path", weak}})["result"]["structuredContent"];
  const json health = loaded["health"];
  REQUIRE(health["confidence"] == "low");
  REQUIRE(health["warnings"].size() >= 2);
  const std::string handle = loaded["trace"].get<std::string>();
  const std::string out = r.scratch.path + "/prepared";
  int id = 2;
  auto check_caveats = [&](const std::string& tool, const json& args, const std::string& label) {
    json reply = r.call(id++, tool, args);
    INFO(tool);
    const json& sc = reply["result"]["structuredContent"];
    REQUIRE(sc.contains("trace_caveats"));
    REQUIRE(sc["trace_caveats"].size() == 1);
    CHECK(sc["trace_caveats"][0]["trace"] == label);
    CHECK(sc["trace_caveats"][0]["confidence"] == "low");
    CHECK(sc["trace_caveats"][0]["warnings"] == health["warnings"]);
    std::string text = reply["result"]["content"][0]["text"].get<std::string>();
    CHECK(text.starts_with("Caution — trace " + label +
                           " (confidence low): " + health["warnings"][0].get<std::string>()));
  };
  check_caveats("ops_summary", {{"trace", handle}}, handle);
  check_caveats("gemm_roofline", {{"trace", handle}}, handle);
  check_caveats("insights", {{"trace", handle}}, handle);
  check_caveats("category_filter", {{"trace", handle}, {"output_dir", out}}, handle);
  // Analyses of the prepared directory: the health travelled in insights.json.
  check_caveats("analyze_category",
                {{"output_dir", out}, {"category", "gemm"}, {"write_draft", true}}, out);
  check_caveats("final_report", {{"output_dir", out}}, out);
  check_caveats("critical_path", {{"traces", json::array({weak})}},
                std::filesystem::canonical(weak).string());
  CHECK(jarvis::testing::read_text(out + "/final_report.md")
            .find("> **Caution — trace confidence low:** " +
                  health["warnings"][0].get<std::string>()) != std::string::npos);

  // The HTA allreduce trace is healthy: no caveats anywhere.
  const std::string good =
      jarvis::golden::shared_dir() + "/nccl/hta_allreduce_2ranks_rank0/trace.json.gz";
  json good_loaded = r.call(id++, "load_trace", {{"path", good}})["result"]["structuredContent"];
  REQUIRE(good_loaded["health"]["warnings"].empty());
  json ops = r.call(id++, "ops_summary", {{"trace", good_loaded["trace"]}});
  CHECK_FALSE(ops["result"]["structuredContent"].contains("trace_caveats"));
  CHECK_FALSE(ops["result"]["content"][0]["text"].get<std::string>().starts_with("Caution"));
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
