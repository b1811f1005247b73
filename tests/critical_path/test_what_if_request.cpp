// The what_if tool's arguments are read in one place (critical_path::
// parse_what_if_request) for the MCP tool and for insights' replays: a
// finding's `what_if` handed to the tool is the change insights sized.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "critical_path/what_if_request.h"

using jarvis::critical_path::CriticalPathError;
using jarvis::critical_path::join_gpu_change;
using jarvis::critical_path::parse_what_if_request;
using jarvis::critical_path::Scenario;
using nlohmann::json;

TEST_CASE("what_if request: every field lands where the tool and insights read it") {
  const json args = {{"rank", 1},
                     {"kernel", "gemm"},
                     {"kernel_uids", {7, 9}},
                     {"factor", 0.5},
                     {"remove_launch_gaps", true},
                     {"remove_ops", {"aten::item"}},
                     {"remove_uids", {3}},
                     {"remove_waits_only", true},
                     {"remove_host_gaps", {{"after", "a"}, {"before", "b"}, {"min_us", 50}}}};
  const auto req = parse_what_if_request(args);
  CHECK(req.scenario.select.rank == 1);
  CHECK(req.scenario.select.kernel == "gemm");
  CHECK(req.scenario.select.gpu_uids == std::vector<jarvis::Uid>{7, 9});
  CHECK(req.scenario.factor == 0.5);
  CHECK(req.scenario.remove_launch_gaps);
  CHECK(!req.scenario.median_rank);
  CHECK(req.removal.rank == 1);
  CHECK(req.removal.ops == std::vector<std::string>{"aten::item"});
  CHECK(req.removal.uids == std::vector<jarvis::Uid>{3});
  CHECK(req.removal.waits_only);
  REQUIRE(req.host_gaps);
  CHECK(req.host_gaps->rank == 1);
  CHECK(req.host_gaps->after == "a");
  CHECK(req.host_gaps->before == "b");
  CHECK(req.host_gaps->min_us == 50);
}

TEST_CASE("what_if request: defaults, and contradictions refused with a reason") {
  const auto plain = parse_what_if_request(json::object());
  CHECK(plain.scenario.factor == 1.0);
  CHECK(plain.scenario.select.empty());
  CHECK(plain.removal.empty());
  CHECK(!plain.host_gaps);
  CHECK_THROWS_WITH_AS(parse_what_if_request({{"median_rank", true}, {"factor", 0.5}}),
                       "give either factor or median_rank, not both", CriticalPathError);
  CHECK_THROWS_AS(parse_what_if_request({{"remove_waits_only", true}}), CriticalPathError);
  CHECK_THROWS_AS(parse_what_if_request({{"kernel_uids", {4294967295ull}}}), CriticalPathError);
}

TEST_CASE("what_if request: changes join one replay, each selection at its own factor") {
  Scenario joint;
  join_gpu_change(parse_what_if_request({{"kernel_uids", {1, 2}}, {"factor", 0.25}}), joint);
  join_gpu_change(parse_what_if_request({{"remove_launch_gaps", true}}), joint);
  join_gpu_change(parse_what_if_request({{"kernel", "nchw"}}), joint);
  REQUIRE(joint.also_scale.size() == 2);
  CHECK(joint.also_scale[0].first.gpu_uids == std::vector<jarvis::Uid>{1, 2});
  CHECK(joint.also_scale[0].second == 0.25);
  CHECK(joint.also_scale[1].first.kernel == "nchw");
  CHECK(joint.also_scale[1].second == 1.0);
  CHECK(joint.remove_launch_gaps);
  CHECK(joint.select.empty());  // the first selection stays the caller's
  CHECK_THROWS_AS(join_gpu_change(parse_what_if_request({{"median_rank", true}}), joint),
                  CriticalPathError);
}
