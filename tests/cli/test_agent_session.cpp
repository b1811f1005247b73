// examples/agent_session.sh: the scripted agent session of the
// performance-analysis skill, run against the real binary into a temp dir.
// Checks that every step got a result, that the output directory is complete
// and that values agree across tools (timeline sums, categories, top GEMM,
// findings quoting this run's impact scores).
#include <doctest/doctest.h>

#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pycompat/repr.h"
#include "pycompat/value.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

json read_json(const fs::path& path) {
  return json::parse(read_text(path));
}

// session_responses.jsonl: one JSON-RPC reply per line, in request order.
std::vector<json> read_replies(const fs::path& path) {
  std::vector<json> replies;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) replies.push_back(json::parse(line));
  return replies;
}

struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "jarvis_agent_XXXXXX").string();
    REQUIRE(mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// A JSON number as Python's json.load + str() prints it.
std::string py_number(const json& v) {
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  return jarvis::pycompat::py_float_repr(v.get<double>());
}

bool close_to(double a, double b, double rel = 1e-9) {
  return std::fabs(a - b) <= rel * std::max({1.0, std::fabs(a), std::fabs(b)});
}

}  // namespace

TEST_CASE("agent_session: scripted performance-analysis workflow over MCP stdio") {
  TempDir tmp;
  const fs::path out = tmp.path / "run";
  const std::string cmd = std::string("JARVIS='") + JARVIS_BINARY + "' bash '" + JARVIS_SOURCE_DIR +
                          "/examples/agent_session.sh' '" + out.string() + "' > '" +
                          (tmp.path / "log.txt").string() + "' 2>&1";
  int rc = std::system(cmd.c_str());
  INFO("script log:\n" << read_text(tmp.path / "log.txt"));
  REQUIRE(rc == 0);

  const json manifest = read_json(out / "category_data/category_manifest.json");
  std::set<std::string> manifest_categories;
  for (const auto& c : manifest.at("categories")) manifest_categories.insert(c.at("name"));
  REQUIRE(manifest_categories.count("gemm") == 1);

  // initialize, tools/list, load, ops_summary, gemm_roofline, category_filter,
  // one analyze_category per manifest category, parent_chain, write_findings,
  // make_replay, unload_trace; ids 1..n in order, each with a clean result.
  const std::vector<json> replies = read_replies(out / "session_responses.jsonl");
  REQUIRE(replies.size() == 11 + manifest_categories.size());
  for (size_t k = 0; k < replies.size(); ++k) {
    const json& r = replies[k];
    INFO("reply " << k << ": " << r.dump().substr(0, 400));
    CHECK(r.at("id") == static_cast<int>(k + 1));
    CHECK_FALSE(r.contains("error"));
    REQUIRE(r.contains("result"));
    CHECK_FALSE(r["result"].value("isError", false));
  }
  auto structured = [&](size_t k) { return replies.at(k).at("result").at("structuredContent"); };
  CHECK(replies[0]["result"]["serverInfo"]["name"].is_string());
  CHECK(replies[1]["result"]["tools"].size() >= 11);

  // load_trace: the GPU timeline parts add up to the traced window.
  const json load = structured(2);
  const json& tl = load.at("gpu_timeline");
  auto ms = [&](const char* key) { return tl.at(key).at("time_ms").get<double>(); };
  auto pct = [&](const char* key) { return tl.at(key).at("percent").get<double>(); };
  CHECK(close_to(ms("computation_time") + ms("exposed_comm_time") + ms("exposed_memcpy_time") +
                     ms("idle_time"),
                 ms("total_time")));
  CHECK(close_to(pct("computation_time") + pct("exposed_comm_time") + pct("exposed_memcpy_time") +
                     pct("idle_time"),
                 100.0));
  CHECK(load.at("platform") == "CUDA");

  // The top op of ops_summary is the op of the top GEMM shape, and the
  // parent chain / replay were made for that shape's UID.
  const json ops = structured(3);
  const json roof = structured(4);
  const std::string top_op = ops.at("rows").at(0).at("name");
  const json& top_shape = roof.at("shapes").at(0);
  const int64_t top_uid = static_cast<int64_t>(top_shape.at("uid").get<double>());
  CHECK(top_shape.at("op") == top_op);
  const size_t n = replies.size();
  const json chain = structured(n - 5);
  // The final report ranks the checked findings (every draft and the session's
  // gemm file pass write_findings's check).
  const json final_report = structured(n - 3);
  CHECK(final_report.at("skipped").empty());
  REQUIRE_FALSE(final_report.at("ranked").empty());
  CHECK(final_report.at("ranked").at(0).at("rank") == 1);
  CHECK(chain.at("event").at("uid") == top_uid);
  CHECK(chain.at("event").at("name") == top_op);
  const json replay = structured(n - 2);
  CHECK(replay.at("ops").at(0).at("example_uid") == top_uid);
  CHECK(replay.at("replayable_count") == 1);

  // category_filter's categories are in the manifest, and every manifest
  // category (including system ones the manifest adds) was analysed.
  std::set<std::string> analysed;
  const json filtered = structured(5);  // the range below must not outlive a temporary
  for (const auto& c : filtered.at("categories"))
    CHECK(manifest_categories.count(c.at("name").get<std::string>()) == 1);
  for (size_t k = 6; k < 6 + manifest_categories.size(); ++k)
    analysed.insert(structured(k).at("category").get<std::string>());
  CHECK(analysed == manifest_categories);

  // The output directory is complete.
  for (const char* rel : {"category_data/category_manifest.json", "category_data/gemm_ops.csv",
                          "category_data/gemm_tree_data.json", "category_data/gemm_metrics.json",
                          "metadata/gemm_metadata.json", "category_findings/gemm_findings.md",
                          "perf_report_csvs/ops_summary.csv", "replay/replay_package.zip",
                          "replay/replay_ir.json", "final_report.md", "final_report.json"}) {
    INFO(rel);
    REQUIRE(fs::exists(out / rel));
    CHECK(fs::file_size(out / rel) > 0);
  }
  CHECK(read_text(out / "replay/replay_package.zip").substr(0, 2) == "PK");

  // GEMM subtree time agrees between gemm_roofline (us) and the metrics file (ms, 3 dp).
  const json metrics = read_json(out / "category_data/gemm_metrics.json");
  CHECK(std::fabs(metrics.at("total_time_ms").get<double>() -
                  roof.at("gemm_sheet_kernel_time_us").get<double>() / 1000.0) <= 0.0005 + 1e-9);

  // The findings were written from this run's analysis: title, every impact
  // range verbatim, and the top op's call site from parent_chain.
  const std::string findings = read_text(out / "category_findings/gemm_findings.md");
  CHECK(findings.rfind("# GEMM findings", 0) == 0);
  REQUIRE_FALSE(metrics.at("category_findings").empty());
  for (const auto& g : metrics.at("category_findings")) {
    const std::string range = py_number(g.at("impact_score_low")) + " / " +
                              py_number(g.at("impact_score")) + " / " +
                              py_number(g.at("impact_score_high"));
    INFO(range);
    CHECK(findings.find(range) != std::string::npos);
  }
  const std::string caller = chain.at("parent_chain").at(0).at("name");
  CHECK(findings.find("called from " + caller) != std::string::npos);
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
