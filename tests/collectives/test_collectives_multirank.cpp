// Multi-rank collective report on rank sets derived from the real 2-rank
// allreduce trace by tools/make_multirank_traces.py, which injects known
// per-rank arrival delays and clock offsets: the report must recover the
// skews, last ranks and waits exactly, and bandwidths from hand-computed
// values; inconsistent sets must fail with errors naming rank and collective.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>

#include <nlohmann/json.hpp>

#include "collectives/collectives.h"
#include "golden.h"
#include "mcp_harness.h"
#include "report/table.h"
#include "test_analysis_support.h"
#include "trace/loader.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace co = jarvis::collectives;
namespace fs = std::filesystem;

namespace {

std::string source_trace() {
  return jarvis::golden::shared_dir() + "/nccl/hta_allreduce_2ranks_rank0/trace.json.gz";
}

// Generated sets, made once per test run under one temp dir.
struct RankSet {
  std::string dir;
  int ranks = 0;
  nlohmann::json truth;
  std::vector<std::string> paths() const {
    std::vector<std::string> out;
    for (int r = 0; r < ranks; ++r) out.push_back(dir + "/rank" + std::to_string(r) + ".json.gz");
    return out;
  }
};

const RankSet& rank_set(const std::string& name, int ranks, const std::string& extra = "") {
  static jarvis::testing::TempDir root;
  static std::mutex mu;
  static std::map<std::string, RankSet> sets;
  std::lock_guard lock(mu);
  auto it = sets.find(name);
  if (it != sets.end()) return it->second;
  RankSet set;
  set.dir = root.path + "/" + name;
  set.ranks = ranks;
  std::string cmd = "python3 '" + std::string(JARVIS_SOURCE_DIR) +
                    "/tools/make_multirank_traces.py' --src '" + source_trace() + "' --out '" +
                    set.dir + "' --ranks " + std::to_string(ranks) + " " + extra;
  REQUIRE_MESSAGE(std::system(cmd.c_str()) == 0, cmd);
  std::ifstream truth(set.dir + "/truth.json");
  set.truth = nlohmann::json::parse(truth);
  return sets.emplace(name, std::move(set)).first->second;
}

int64_t lowest_argmax(const std::vector<double>& v) {
  return static_cast<int64_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

double hand_bus_factor(const std::string& collective, int n) {
  if (collective == "allreduce") return 2.0 * (n - 1) / n;
  if (collective == "broadcast") return 1.0;
  return (n - 1.0) / n;
}

double dtype_size(const std::string& dtype) {
  return dtype == "Long" ? 8.0 : 4.0;
}

void check_recovers_injection(const RankSet& set) {
  auto result = co::collective_report(set.paths());
  const auto& report = result.report;
  const auto& truth = set.truth;
  REQUIRE(report.ranks.size() == static_cast<size_t>(set.ranks));
  // The generator records both what it added to each rank's clock and the
  // offset in jarvis's convention (minus the shift, relative to rank 0).
  const auto& offsets = truth["clock_offset_us"];
  const auto& shifts = truth["clock_shift_us"];
  for (int r = 0; r < set.ranks; ++r) {
    CHECK(offsets[r].get<double>() == shifts[0].get<double>() - shifts[r].get<double>());
    CHECK(report.clock_offset_us.at(r) == doctest::Approx(offsets[r].get<double>()).epsilon(1e-12));
  }
  REQUIRE(report.instances.size() == truth["instances"].size());
  for (size_t k = 0; k < report.instances.size(); ++k) {
    const auto& m = report.instances[k];
    const auto& t = truth["instances"][k];
    auto delays = t["delays_us"].get<std::vector<double>>();
    const double max_d = *std::max_element(delays.begin(), delays.end());
    const double min_d = *std::min_element(delays.begin(), delays.end());
    const double dur = t["dur_us"].get<double>();
    INFO("instance " << k << " " << t.dump());
    CHECK(m.seq == t["seq"].get<int64_t>());
    CHECK(m.collective == t["collective"].get<std::string>());
    CHECK(m.start_skew_us == doctest::Approx(max_d - min_d).epsilon(1e-9));
    CHECK(m.last_rank == lowest_argmax(delays));
    CHECK(m.end_skew_us == doctest::Approx(0.0).epsilon(1e-9));
    CHECK(m.dur_us_min == doctest::Approx(dur).epsilon(1e-9));
    CHECK(m.dur_us_max == doctest::Approx(dur + max_d - min_d).epsilon(1e-9));
    for (int r = 0; r < set.ranks; ++r)
      CHECK(m.wait_us[static_cast<size_t>(r)] == doctest::Approx(max_d - delays[r]).epsilon(1e-9));
    const double mib = t["in_msg_nelems"].get<double>() * dtype_size(t["dtype"]) / (1 << 20);
    const double algbw = mib / 1024.0 / (dur / 1e6);
    CHECK(m.bw.algbw_gbps == doctest::Approx(algbw).epsilon(1e-9));
    CHECK(m.bw.busbw_gbps ==
          doctest::Approx(algbw * hand_bus_factor(t["collective"], set.ranks)).epsilon(1e-9));
  }
}

std::string error_of(const std::vector<std::string>& paths) {
  try {
    co::collective_report(paths);
  } catch (const co::CollectiveError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("collectives multi-rank: 2 ranks (full traces) recover the injected delays") {
  check_recovers_injection(rank_set("full2", 2));
}

TEST_CASE("collectives multi-rank: 4, 8 and 16 ranks recover the injected delays") {
  check_recovers_injection(rank_set("gpu4", 4, "--gpu-only --seed 4"));
  check_recovers_injection(rank_set("gpu8", 8, "--gpu-only --seed 8"));
  check_recovers_injection(rank_set("gpu16", 16, "--gpu-only --seed 16"));
}

TEST_CASE("collectives multi-rank: tables and ranks are consistent") {
  const RankSet& set = rank_set("gpu4", 4, "--gpu-only --seed 4");
  auto result = co::collective_report(set.paths());
  REQUIRE(result.tables.size() == 3);
  const auto& inst = result.tables[0];
  CHECK(inst.name == "collective_instances");
  CHECK(inst.rows.size() == 21);
  CHECK(inst.col("wait_us_rank3") >= 0);
  // Every instance counts once as "last" for some rank.
  const auto& ranks = result.tables[2];
  int64_t last = 0;
  for (size_t r = 0; r < ranks.rows.size(); ++r)
    last += std::get<int64_t>(ranks.at(r, "times_last").v);
  CHECK(last == 21);
  const auto& summary = result.tables[1];
  int64_t count = 0;
  for (size_t r = 0; r < summary.rows.size(); ++r)
    count += std::get<int64_t>(summary.at(r, "count").v);
  CHECK(count == 21);
  CHECK(summary.rows.size() == 7);  // the coll_analysis groups of the source trace
}

// The per-rank stage's wire form (what an MPI rank sends rank 0) gives the
// merge the values it would have had in one process: the same table bytes.
TEST_CASE("collectives multi-rank: the per-rank stage survives its wire form") {
  const RankSet& set = rank_set("gpu4", 4, "--gpu-only --seed 4");
  co::CollectiveReportOptions options;
  options.overlap = true;
  auto direct = co::collective_report(set.paths(), options);
  std::vector<co::RankAnalysis> shipped;
  for (size_t k = 0; k < set.paths().size(); ++k) {
    auto a = co::analyse_rank(set.paths()[k], static_cast<int64_t>(k), true);
    shipped.push_back(co::rank_analysis_from_text(co::rank_analysis_to_text(a)));
  }
  // Values the traces may not have: non-finite doubles, an int-valued
  // double, bools; each comes back as the same alternative.
  co::RankAnalysis edge = shipped.front();
  edge.overlap_tables.front().add_row() = {NAN, INFINITY, -INFINITY, 3.0, true, int64_t{7}, ""};
  edge.trace.instances.front().bw.busbw_gbps = NAN;
  edge = co::rank_analysis_from_text(co::rank_analysis_to_text(edge));
  const auto& row = edge.overlap_tables.front().rows.back();
  CHECK(std::isnan(std::get<double>(row[0].v)));
  CHECK(std::get<double>(row[1].v) == INFINITY);
  CHECK(std::get<double>(row[2].v) == -INFINITY);
  CHECK(row[3].is_double());
  CHECK(row[4].is_bool());
  CHECK(row[5].is_int());
  CHECK(row[6].is_text());
  CHECK(std::isnan(edge.trace.instances.front().bw.busbw_gbps));
  auto merged = co::merge_ranks(std::move(shipped), options.alignment);
  REQUIRE(merged.tables.size() == direct.tables.size());
  CHECK(merged.tables.size() == 3 + 2 * 4);
  for (size_t k = 0; k < direct.tables.size(); ++k) {
    CAPTURE(direct.tables[k].name);
    CHECK(merged.tables[k].name == direct.tables[k].name);
    CHECK(merged.tables[k].to_csv() == direct.tables[k].to_csv());
  }
  CHECK_THROWS(co::rank_analysis_from_text("{\"rank\": 1}"));
}

TEST_CASE("collectives multi-rank: a rank missing an instance is named with its collective") {
  // seq 4 of process group 0 is an allreduce (the next one differs in size) of the source trace.
  const RankSet& set = rank_set("drop3", 3, "--gpu-only --drop 2:0:4");
  REQUIRE(set.truth["instances"][4]["collective"] == "allreduce");
  std::string err = error_of(set.paths());
  INFO(err);
  CHECK(err.find("rank 2 is missing an instance of allreduce") != std::string::npos);
  CHECK(err.find("process group '0'") != std::string::npos);
  CHECK(err.find("seq 4") != std::string::npos);
}

TEST_CASE("collectives multi-rank: mismatched world sizes, duplicates, no collectives") {
  const RankSet& two = rank_set("gpu2", 2, "--gpu-only");
  const RankSet& four = rank_set("gpu4", 4, "--gpu-only --seed 4");
  std::string err = error_of({two.paths()[0], four.paths()[1]});
  CHECK(err.find("mismatched world sizes") != std::string::npos);
  err = error_of({two.paths()[0], two.paths()[0]});
  CHECK(err.find("rank 0 appears twice") != std::string::npos);
  std::vector<co::RankTrace> only_rank0 = {co::rank_trace(jarvis::load_trace(two.paths()[0]), 0)};
  CHECK_THROWS_WITH_AS(co::match_ranks(only_rank0),
                       doctest::Contains("no trace was given for rank 1"), co::CollectiveError);
  const std::string plain = jarvis::golden::conformance_dirs().front() + "/trace.json.gz";
  err = error_of({plain, plain});
  CHECK(err.find("has no collective kernels") != std::string::npos);
}

TEST_CASE("collectives multi-rank: without alignment the clock offsets show up as skew") {
  const RankSet& set = rank_set("gpu2", 2, "--gpu-only");
  co::CollectiveReportOptions options;
  options.alignment = co::TimeAlignment::None;
  auto result = co::collective_report(set.paths(), options);
  const double offset = set.truth["clock_shift_us"][1].get<double>();
  const auto& m = result.report.instances.front();
  CHECK(m.end_skew_us == doctest::Approx(offset).epsilon(1e-9));
}

TEST_CASE("collectives multi-rank: jarvis collectives CLI writes the report") {
  const RankSet& set = rank_set("gpu2", 2, "--gpu-only");
  jarvis::testing::TempDir out;
  std::string cmd = std::string(JARVIS_BINARY) + " collectives " + set.paths()[1] + " " +
                    set.paths()[0] + " --out " + out.path + "/coll --overlap > /dev/null";
  REQUIRE(std::system(cmd.c_str()) == 0);
  auto inst = jarvis::read_csv_file(out.path + "/coll/collective_instances.csv");
  CHECK(inst.rows.size() == 21);
  CHECK(fs::exists(out.path + "/coll/collective_summary.csv"));
  CHECK(fs::exists(out.path + "/coll/collective_ranks.csv"));
  CHECK(fs::exists(out.path + "/coll/rank0_collective_overlap_by_op.csv"));
  CHECK(fs::exists(out.path + "/coll/rank1_collective_overlap_by_category.csv"));
  // One trace: its collectives with per-kernel bandwidths and the overlap tables.
  cmd = std::string(JARVIS_BINARY) + " collectives " + set.paths()[1] + " --out " + out.path +
        "/one > /dev/null";
  REQUIRE(std::system(cmd.c_str()) == 0);
  CHECK(jarvis::read_csv_file(out.path + "/one/rank_collectives.csv").rows.size() == 21);
  CHECK(fs::exists(out.path + "/one/rank1_collective_overlap_by_category.csv"));
  CHECK(!fs::exists(out.path + "/one/collective_instances.csv"));
  // A usage error writes nothing.
  cmd = std::string(JARVIS_BINARY) + " collectives " + set.paths()[0] + " --align sideways --out " +
        out.path + "/bad 2> /dev/null";
  CHECK(std::system(cmd.c_str()) != 0);
  CHECK(!fs::exists(out.path + "/bad"));
}

TEST_CASE("collectives multi-rank: collective_report MCP tool") {
  const RankSet& set = rank_set("gpu2", 2, "--gpu-only");
  const RankSet& dropped = rank_set("drop3", 3, "--gpu-only --drop 2:0:4");
  auto options = jarvis::mcp::testing::shared_root_options();
  const std::string root = fs::path(set.dir).parent_path().string();
  options.roots.push_back(root);
  jarvis::mcp::testing::Harness h(options);
  h.initialize();
  auto paths = set.paths();
  auto r = h.tool_result(
      1, "collective_report",
      {{"traces", {paths[1], paths[0]}}, {"output_dir", root + "/mcp_out"}, {"top_n", 2}});
  CHECK(r["ranks"] == nlohmann::json::array({0, 1}));
  CHECK(r["instance_count"] == 21);
  CHECK(r["summary"].size() == 7);
  CHECK(r["worst_skew"].size() == 2);
  CHECK(r["files"].size() == 3);
  CHECK(fs::exists(root + "/mcp_out/collective_summary.csv"));
  // The generator's truth and jarvis report offsets in one convention.
  CHECK(r["clock_offset_us"]["1"].get<double>() ==
        doctest::Approx(set.truth["clock_offset_us"][1].get<double>()).epsilon(1e-12));
  // The largest skew comes first and equals the largest injected delay spread.
  double max_spread = 0;
  for (const auto& t : set.truth["instances"]) {
    auto d = t["delays_us"].get<std::vector<double>>();
    max_spread = std::max(
        max_spread, *std::max_element(d.begin(), d.end()) - *std::min_element(d.begin(), d.end()));
  }
  CHECK(r["worst_skew"][0]["start_skew_us"].get<double>() ==
        doctest::Approx(max_spread).epsilon(1e-9));

  auto reply = h.call_tool(2, "collective_report", {{"traces", dropped.paths()}});
  REQUIRE(reply.contains("result"));
  CHECK(reply["result"]["isError"] == true);
  CHECK(reply["result"]["content"][0]["text"].get<std::string>().find(
            "rank 2 is missing an instance of allreduce") != std::string::npos);
  reply = h.call_tool(3, "collective_report", {{"traces", {paths[0]}}});
  CHECK(!(reply.contains("result") && !reply["result"].value("isError", false)));
}

TEST_CASE("collectives: load_trace and ops_summary mention collectives when present") {
  jarvis::mcp::testing::Harness h;
  h.initialize();
  auto loaded = h.tool_result(
      1, "load_trace",
      {{"path", jarvis::golden::shared_dir() + "/nccl/hta_allreduce_2ranks_rank0/trace.json.gz"}});
  REQUIRE(loaded.contains("collectives"));
  CHECK(loaded["collectives"]["count"] == 21);
  CHECK(loaded["collectives"]["top"][0]["collective"] == "allreduce");
  CHECK(loaded["collectives"]["total_us"].get<double>() ==
        doctest::Approx(loaded["gpu_timeline"]["total_comm_time"]["time_ms"].get<double>() * 1e3));
  auto ops = h.tool_result(2, "ops_summary", {{"trace", loaded["trace"]}});
  CHECK(ops["collectives"]["count"] == 21);
  auto plain = h.tool_result(
      3, "load_trace", {{"path", jarvis::mcp::testing::conformance_trace("h100_bert-small")}});
  CHECK(!plain.contains("collectives"));
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
