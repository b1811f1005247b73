// Issue 64 points 1 and 4: the text of a reply says what its structured
// result holds (load_trace's idle share, query_sql's rows, insights' count
// when filtered, detail=full never told to pass detail=full), and a healthy
// trace's notes are given once a session, then referred to. The blind run
// (../shared/evals/blind-run): each insight's line leads with its saving per
// step, says when it is not additive, and a line says what the figures are.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include <fmt/format.h>

#include "golden.h"
#include "mcp_harness.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using jarvis::mcp::json;
using jarvis::mcp::testing::Harness;

namespace {

std::string text_of(const json& reply) {
  return reply["result"]["content"][0]["text"].get<std::string>();
}

const std::string kExample = std::string(JARVIS_SOURCE_DIR) + "/examples/example_trace.json.gz";

jarvis::mcp::ServerOptions example_root() {
  jarvis::mcp::ServerOptions options;
  options.roots = {std::string(JARVIS_SOURCE_DIR) + "/examples"};
  return options;
}

}  // namespace

TEST_CASE("text equals data: load_trace's GPU timeline, query_sql's rows, insights' count") {
  Harness h(example_root());
  h.initialize();
  const json loaded = h.call_tool(1, "load_trace", {{"path", kExample}});
  const json& t = loaded["result"]["structuredContent"]["gpu_timeline"];
  const std::string text = text_of(loaded);
  CHECK(text.find(fmt::format("idle {:.1f}% ({:.2f} ms)", t["idle_time"]["percent"].get<double>(),
                              t["idle_time"]["time_ms"].get<double>())) != std::string::npos);
  CHECK(text.find(
            fmt::format("computation {:.1f}%", t["computation_time"]["percent"].get<double>())) !=
        std::string::npos);
  const std::string handle = loaded["result"]["structuredContent"]["trace"];

  const json sql = h.call_tool(
      2, "query_sql",
      {{"trace", handle},
       {"sql",
        "SELECT name, count(*) AS n FROM kernels GROUP BY name ORDER BY n DESC, name LIMIT 4"}});
  const json& rows = sql["result"]["structuredContent"]["rows"];
  REQUIRE(rows.size() == 4);
  const std::string sql_text = text_of(sql);
  CHECK(sql_text.find("name | n\n") != std::string::npos);
  for (const json& row : rows) {
    std::string name = row[0].get<std::string>();
    if (name.size() > 48) name = name.substr(0, 45) + "...";
    CHECK(sql_text.find(fmt::format("{} | {}\n", name, row[1].get<int64_t>())) !=
          std::string::npos);
  }

  // Filtered to one rule, the count is that rule's, beside the trace's total.
  const json all = h.call_tool(3, "insights", {{"trace", handle}});
  const json& found = all["result"]["structuredContent"]["insights"];
  REQUIRE(found.size() > 0);
  const std::string rule = found[0]["rule"];
  size_t of_rule = 0;
  for (const json& i : found) of_rule += i["rule"] == rule;
  const json one = h.call_tool(4, "insights", {{"trace", handle}, {"rule", rule}});
  CHECK(one["result"]["structuredContent"]["insight_count"] == of_rule);
  CHECK(text_of(one).find(fmt::format("{} {} insight", of_rule, rule)) != std::string::npos);
}

TEST_CASE("detail=full is every row, and its text never asks for detail=full") {
  Harness h(example_root());
  h.initialize();
  const std::string handle =
      h.tool_result(1, "load_trace", {{"path", kExample}})["trace"].get<std::string>();
  const json rows = h.call_tool(2, "ops_summary", {{"trace", handle}});
  const json full = h.call_tool(3, "ops_summary", {{"trace", handle}, {"detail", "full"}});
  const json& sc = full["result"]["structuredContent"];
  CHECK(text_of(full).find("detail=\"full\"") == std::string::npos);
  CHECK_FALSE(sc.contains("truncated"));
  CHECK(sc["rows"].size() >= rows["result"]["structuredContent"]["rows"].size());
}

TEST_CASE("a healthy trace's notes are given once a session, then referred to") {
  Harness h(example_root());
  h.initialize();
  const json loaded = h.tool_result(1, "load_trace", {{"path", kExample}});
  const json& health = loaded["health"];
  REQUIRE(health["confidence"] == "high");
  REQUIRE_FALSE(health["warnings"].empty());  // Python stack tracing on
  const std::string handle = loaded["trace"];
  const std::string note = health["warnings"][0].get<std::string>();
  const json first = h.call_tool(2, "ops_summary", {{"trace", handle}});
  CHECK(text_of(first).find(note) != std::string::npos);
  CHECK(first["result"]["structuredContent"]["trace_caveats"][0]["warnings"] == health["warnings"]);
  for (int id : {3, 4}) {
    const json again = h.call_tool(id, id == 3 ? "insights" : "ops_summary", {{"trace", handle}});
    const std::string text = text_of(again);
    CHECK(text.find(note) == std::string::npos);
    CHECK(text.find("its notes were given earlier in this session") != std::string::npos);
    CHECK(again["result"]["structuredContent"]["trace_caveats"][0]["given_before"] == true);
  }
  // A new session is told again.
  Harness other(example_root());
  other.initialize();
  const std::string h2 = other.tool_result(1, "load_trace", {{"path", kExample}})["trace"];
  CHECK(text_of(other.call_tool(2, "ops_summary", {{"trace", h2}})).find(note) !=
        std::string::npos);
}

TEST_CASE("a JAX profile is told XProf's switch, a PyTorch trace PyTorch's (issue 64 point 3)") {
  const std::string shared = std::string(JARVIS_SHARED_DIR) + "/ab_pairs";
  const std::string jax = shared + "/s_jax_A_op_by_op.xplane.pb";
  const std::string torch = shared + "/s_overhead_gpt2_shapes_stack.json.gz";
  if (!std::filesystem::exists(jax) || !std::filesystem::exists(torch)) {
    MESSAGE("skipped: " << shared << " is missing");
    return;
  }
  jarvis::mcp::ServerOptions options;
  options.roots = {shared};
  Harness h(options);
  h.initialize();
  auto python_warning = [&](int id, const std::string& path) {
    const json loaded = h.tool_result(id, "load_trace", {{"path", path}});
    for (const json& w : loaded["health"]["warnings"])
      if (w.get<std::string>().find("Python stack tracing") != std::string::npos)
        return w.get<std::string>();
    return std::string();
  };
  const std::string on_jax = python_warning(1, jax);
  REQUIRE_FALSE(on_jax.empty());
  CHECK(on_jax.find("python_tracer_level=0") != std::string::npos);
  CHECK(on_jax.find("with_stack") == std::string::npos);
  const std::string on_torch = python_warning(2, torch);
  REQUIRE_FALSE(on_torch.empty());
  CHECK(on_torch.find("python_tracer_level") == std::string::npos);
}

TEST_CASE("insights' lines lead with the saving per step their row carries") {
  const std::string dir = jarvis::golden::shared_dir() + "/ab_pairs";
  if (!std::filesystem::exists(dir + "/s_loader_A_workers0.json.gz")) return;  // fresh clone
  jarvis::mcp::ServerOptions options;
  options.roots = {dir};
  Harness h(options);
  h.initialize();
  const json loaded = h.tool_result(1, "load_trace", {{"path", "s_loader_A_workers0.json.gz"}});
  const std::string handle = loaded["trace"];
  const double unprofiled_us = loaded["health"]["estimated_unprofiled_step_us"].get<double>();
  const json reply = h.call_tool(2, "insights", {{"trace", handle}, {"limit", 8}});
  const std::string text = text_of(reply);
  const json& rows = reply["result"]["structuredContent"]["insights"];
  REQUIRE(rows.size() == 8);
  // What the figures are: the un-profiled step load_trace estimated, the
  // steps the totals cover.
  CHECK(text.find(fmt::format("Un-profiled step {:.2f} ms", unprofiled_us / 1e3)) !=
        std::string::npos);
  CHECK(text.find(fmt::format("{} step(s)", rows[0]["steps"].get<size_t>())) != std::string::npos);
  size_t not_additive = 0;
  for (const json& row : rows) {
    const std::string head = fmt::format(
        "[{}] {} saves {:.2f} ms/step alone", row["severity"].get<std::string>(),
        row["rule"].get<std::string>(), row["step_saving_us_per_step"].get<double>() / 1e3);
    const size_t at = text.find(head);
    CHECK_MESSAGE(at != std::string::npos, head);
    if (at == std::string::npos) continue;
    const std::string line = text.substr(at, text.find('\n', at) - at);
    CHECK(line.ends_with(row["title"].get<std::string>()));
    const bool shares = !row["shares_time_with"].empty();
    CHECK((line.find("not additive") != std::string::npos) == shares);
    not_additive += shares;
  }
  // The host-bound loader step: the CUDA graph and the loader share its idle.
  CHECK(not_additive > 0);
  // The plan: its changes name rows of the ranking, add up, and the text
  // lists each with the step after it.
  const json& plan = reply["result"]["structuredContent"]["plan"];
  REQUIRE(plan["changes"].size() >= 2);
  CHECK(plan["step_before_us"].get<double>() == doctest::Approx(unprofiled_us));
  CHECK(text.find("The changes in order") != std::string::npos);
  double saved = 0;
  for (const json& change : plan["changes"]) {
    const size_t rank = change["rank"].get<size_t>();
    REQUIRE(rank >= 1);
    if (rank <= rows.size()) CHECK(rows[rank - 1]["rule"] == change["rule"]);
    saved += change["saving_us_per_step"].get<double>();
  }
  CHECK(saved == doctest::Approx(plan["step_before_us"].get<double>() -
                                 plan["step_after_us"].get<double>()));
  const json& first = plan["changes"][0];
  // The text's lines name the finding each change is (its rank in the rows).
  CHECK(text.find(fmt::format("1. {} (finding {})", first["rule"].get<std::string>(),
                              first["rank"].get<size_t>())) != std::string::npos);
  // detail=summary: no rows, and its text lists none (the plan is the summary).
  const json summary = h.call_tool(3, "insights", {{"trace", handle}, {"detail", "summary"}});
  const std::string summary_text = text_of(summary);
  CHECK(summary["result"]["structuredContent"]["insights"].empty());
  CHECK(summary_text.find("The changes in order") != std::string::npos);
  CHECK(summary_text.find("saves ") == std::string::npos);
  CHECK(summary_text.find("in the structured result") == std::string::npos);
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
