// docs/mcp-tools.md keeps up with the tools' figures (issue 73 point 6): the
// tools whose figures an agent sizes fixes with run on a real trace of
// ../shared (GPT-2 training on H200, three ProfilerSteps), and every numeric
// field they return is named in the doc's units table (per step or total,
// profiled or un-profiled). Rule-specific insight evidence is described per
// rule in docs/insights.md and left out here. The totals these tools give
// are labelled: `scope` says what they cover, and `*_per_step` is the total
// over the steps counted from the raw ProfilerStep#N annotations.
#include <doctest/doctest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "golden.h"
#include "mcp_harness.h"
#include "test_analysis_support.h"
#include "trace/loader.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using jarvis::mcp::json;
using jarvis::mcp::testing::Harness;
namespace fs = std::filesystem;

// The names of the numeric leaves of `v` (the last key above each number),
// outside rule-specific evidence and suggested calls' arguments; a map keyed
// by data (ranks "0", priority names) counts under its own name.
void numeric_fields(const json& v, const std::string& key, std::set<std::string>& out) {
  if (key == "evidence" || key == "next") return;
  if (v.is_number()) {
    if (!key.empty()) out.insert(key);
    return;
  }
  if (v.is_array())
    for (const auto& child : v) numeric_fields(child, key, out);
  if (v.is_object())
    for (const auto& [k, child] : v.items()) {
      const bool data_key = (!k.empty() && std::isdigit(static_cast<unsigned char>(k[0]))) ||
                            key == "priority_counts";
      numeric_fields(child, data_key ? key : k, out);
    }
}

// A field is named in the table as `field`, as the end of a path
// (`what_if/factor`) or as a map (`clock_offset_us/*`).
bool named_in(const std::string& units, const std::string& field) {
  return units.find("`" + field + "`") != std::string::npos ||
         units.find("/" + field + "`") != std::string::npos ||
         units.find("`" + field + "/") != std::string::npos;
}

std::string units_section() {
  std::ifstream in(std::string(JARVIS_SOURCE_DIR) + "/docs/mcp-tools.md");
  std::stringstream s;
  s << in.rdbuf();
  const std::string doc = s.str();
  const size_t from = doc.find("<!-- units:begin -->"), to = doc.find("<!-- units:end -->");
  REQUIRE(from != std::string::npos);
  REQUIRE(to != std::string::npos);
  return doc.substr(from, to - from);
}

size_t raw_profiler_steps(const std::string& path) {
  const jarvis::Trace t = jarvis::load_trace(path);
  size_t n = 0;
  for (jarvis::Uid u = 0; u < t.events.size(); ++u)
    if (t.events[u].cat == jarvis::Cat::UserAnnotation && t.name(u).starts_with("ProfilerStep#"))
      ++n;
  return n;
}

TEST_CASE("docs/mcp-tools.md names every numeric field of the sizing tools, per step or total") {
  const std::string trace = jarvis::golden::shared_dir() + "/ab_pairs/s_tf32_B_tf32.json.gz";
  if (!fs::exists(trace)) {
    MESSAGE("skipped: " << trace << " is missing");
    return;
  }
  jarvis::testing::TempDir scratch;
  jarvis::mcp::ServerOptions options;
  options.roots = {jarvis::golden::shared_dir(), scratch.path};
  Harness h(options);
  h.initialize();
  const std::string out = scratch.path + "/prepared";
  std::set<std::string> fields;
  int id = 1;
  auto run = [&](const std::string& tool, json args) {
    json reply = h.call_tool(id++, tool, std::move(args));
    INFO(tool << ": " << reply.dump().substr(0, 1500));
    REQUIRE(reply.contains("result"));
    REQUIRE_FALSE(reply["result"].value("isError", false));
    numeric_fields(reply["result"]["structuredContent"], "", fields);
    return reply["result"];
  };
  const json loaded = run("load_trace", {{"path", trace}})["structuredContent"];
  const std::string handle = loaded["trace"].get<std::string>();
  const json ops = run("ops_summary", {{"trace", handle}});
  const json gemm = run("gemm_roofline", {{"trace", handle}});
  run("insights", {{"trace", handle}});
  run("critical_path", {{"traces", json::array({trace})}});
  run("category_filter", {{"trace", handle}, {"output_dir", out}});
  const json category =
      run("analyze_category", {{"output_dir", out}, {"category", "gemm"}, {"write_draft", true}});
  const json report = run("final_report", {{"output_dir", out}});

  const std::string units = units_section();
  for (const std::string& field : fields) {
    CAPTURE(field);
    CHECK(named_in(units, field));
  }

  // The totals are labelled, with the steps of the raw trace beside them.
  const size_t steps = raw_profiler_steps(trace);
  REQUIRE(steps == 3);
  const json& o = ops["structuredContent"];
  CHECK(o["scope"]["steps"].get<size_t>() == steps);
  CHECK(o["scope"]["total_direct_kernel_time_ms_per_step"].get<double>() ==
        doctest::Approx(o["total_direct_kernel_time_ms"].get<double>() / 3));
  CHECK(ops["content"][0]["text"].get<std::string>().find("over the whole trace's 3 steps") !=
        std::string::npos);
  const json& g = gemm["structuredContent"];
  CHECK(g["scope"]["gemm_time_ms_per_step"].get<double>() ==
        doctest::Approx(g["gemm_time_us"].get<double>() / 3e3));
  CHECK(gemm["content"][0]["text"].get<std::string>().find("over the whole trace's 3 steps") !=
        std::string::npos);
  const json& c = category["structuredContent"];
  CHECK(c["scope"]["steps"].get<size_t>() == steps);
  CHECK(category["content"][0]["text"].get<std::string>().find("totals over the whole trace") !=
        std::string::npos);
  CHECK(report["structuredContent"]["scope"]["steps"].get<size_t>() == steps);
  for (const auto& item : report["structuredContent"]["ranked"])
    if (item["recoverable_ms"].is_number())
      CHECK(item["recoverable_ms_per_step"].get<double>() ==
            doctest::Approx(item["recoverable_ms"].get<double>() / 3));
}

TEST_CASE("ops_summary: a roofline share above 100 % comes with its reason (ResNet-50 H100)") {
  const std::string trace = jarvis::golden::shared_dir() + "/hw_pairs/resnet50_train/h100.json.gz";
  if (!fs::exists(trace)) {
    MESSAGE("skipped: " << trace << " is missing");
    return;
  }
  Harness h;
  h.initialize();
  const json loaded = h.tool_result(1, "load_trace", {{"path", trace}});
  const json reply = h.call_tool(2, "ops_summary",
                                 {{"trace", loaded["trace"]}, {"limit", 500}, {"detail", "full"}});
  REQUIRE_FALSE(reply["result"].value("isError", false));
  const json& rows = reply["result"]["structuredContent"]["rows"];
  const std::string text = reply["result"]["content"][0]["text"].get<std::string>();
  size_t above = 0;
  for (const auto& row : rows) {
    if (!row["perf"].is_object() || !row["perf"]["pct_roofline"].is_number()) continue;
    CAPTURE(row["name"].get<std::string>());
    const bool over = row["perf"]["pct_roofline"].get<double>() > 100;
    CHECK(row["perf"]["pct_roofline_above_roof_reason"].is_string() == over);
    above += over;
  }
  // aten::clamp_min_ (in place: the model counts a read and a write of its
  // input, the kernel moves less) reads above the bandwidth roof here.
  CHECK(above >= 1);
  CHECK(text.find("of the roofline, above 100 %") != std::string::npos);
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
