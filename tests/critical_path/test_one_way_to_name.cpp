// One way to name things (issue 73 point 7): critical_path and what_if take
// a loaded trace's handle as every other tool does; a kernel selector that
// is a whole name selects that name only, and one that is a substring says
// which kernels it took; a host finding's suggested what_if selects exactly
// its ops. Expectations come from the raw events of ../shared/ab_pairs
// traces, read here with nlohmann::json.
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "golden.h"
#include "mcp_harness.h"
#include "test_loader_support.h"
#include "trace/loader.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using nlohmann::json;

std::string ab(const std::string& file) {
  return jarvis::golden::shared_dir() + "/ab_pairs/" + file;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return s;
}

json raw_events(const std::string& file) {
  return json::parse(jarvis::loader_test::gunzip_file(ab(file)))["traceEvents"];
}

std::string error_text(const json& reply) {
  REQUIRE(reply.contains("result"));
  CHECK(reply["result"]["isError"] == true);
  return reply["result"]["content"][0]["text"].get<std::string>();
}

TEST_SUITE("critical_path") {
  TEST_CASE("critical_path and what_if take the load_trace handle (s_mask_sync A)") {
    jarvis::mcp::testing::Harness h;
    h.initialize();
    const std::string path = ab("s_mask_sync_A_boolean_index.json.gz");
    const json loaded = h.tool_result(1, "load_trace", {{"path", path}});
    const std::string handle = loaded["trace"].get<std::string>();
    // The handle and the path are one job: the same step, the same path.
    const json by_path =
        h.tool_result(2, "critical_path", {{"traces", json::array({path})}, {"detail", "summary"}});
    const json by_handle =
        h.tool_result(3, "critical_path", {{"trace", handle}, {"detail", "summary"}});
    CHECK(by_handle["step_time_us"].get<double>() ==
          doctest::Approx(by_path["step_time_us"].get<double>()).epsilon(1e-9));
    CHECK(by_handle["iterations"].size() == by_path["iterations"].size());
    // The raw trace's ProfilerStep annotations are its iterations.
    size_t steps = 0;
    for (const auto& e : raw_events("s_mask_sync_A_boolean_index.json.gz"))
      if (e.value("cat", "") == "user_annotation" &&
          e.value("name", "").starts_with("ProfilerStep#"))
        ++steps;
    CHECK(by_handle["iterations"].size() == steps);
    const json w_path = h.tool_result(4, "what_if",
                                      {{"traces", json::array({path})},
                                       {"remove_ops", json::array({"aten::nonzero"})},
                                       {"remove_waits_only", true},
                                       {"detail", "summary"}});
    const json w_handle = h.tool_result(5, "what_if",
                                        {{"trace", handle},
                                         {"remove_ops", json::array({"aten::nonzero"})},
                                         {"remove_waits_only", true},
                                         {"detail", "summary"}});
    CHECK(w_handle["predicted_step_time_us"].get<double>() ==
          doctest::Approx(w_path["predicted_step_time_us"].get<double>()).epsilon(1e-9));
    // Exactly one of trace and traces; an unknown handle is not found.
    CHECK(error_text(h.call_tool(6, "what_if",
                                 {{"trace", handle},
                                  {"traces", json::array({path})},
                                  {"remove_launch_gaps", true}}))
              .find("give either trace") != std::string::npos);
    CHECK(error_text(h.call_tool(7, "critical_path", json::object())).find("give either trace") !=
          std::string::npos);
    CHECK(error_text(h.call_tool(8, "critical_path", {{"trace", "t999"}}))
              .find("unknown trace handle") != std::string::npos);
  }

  TEST_CASE(
      "what_if's kernel selector: a whole name takes that kernel, a substring says what it "
      "took (s_layout A)") {
    // "Nhwc" is in the layout conversions' names and in the NHWC
    // convolutions' (counted here from the raw kernel events); the reply
    // lists every kernel it took. The full name of one kernel takes only it.
    const std::string file = "s_layout_A_nchw.json.gz";
    std::map<std::string, size_t> with_text, all;
    for (const auto& e : raw_events(file)) {
      if (e.value("cat", "") != "kernel" || e.value("ph", "") != "X") continue;
      const std::string name = e.value("name", "");
      ++all[name];
      if (lower(name).find("nhwc") != std::string::npos) ++with_text[name];
    }
    REQUIRE(with_text.size() >= 2);
    jarvis::mcp::testing::Harness h;
    h.initialize();
    const json loaded = h.tool_result(1, "load_trace", {{"path", ab(file)}});
    const json r = h.tool_result(
        2, "what_if",
        {{"trace", loaded["trace"]}, {"kernel", "Nhwc"}, {"factor", 0.5}, {"detail", "summary"}});
    CHECK(r["matched_kernel_count"].get<size_t>() == with_text.size());
    size_t launches = 0;
    std::set<std::string> names;
    for (const auto& m : r["matched_kernels"]) {
      const std::string name = m["name"].get<std::string>();
      CAPTURE(name);
      REQUIRE(with_text.count(name) == 1);
      CHECK(m["launches"].get<size_t>() == with_text.at(name));
      launches += m["launches"].get<size_t>();
      names.insert(name);
    }
    if (with_text.size() <= 20) CHECK(names.size() == with_text.size());
    CHECK(launches <= r["selected_nodes"].get<size_t>());
    bool said = false;
    for (const auto& c : r["changes"])
      said |= c.get<std::string>().find("matched " + std::to_string(with_text.size()) +
                                        " different kernels") != std::string::npos;
    CHECK(said);
    // The conversion kernel named in full: that kernel only, every launch.
    std::string conversion;
    for (const auto& [name, n] : with_text)
      if (name.find("nchwToNhwcKernel") != std::string::npos) conversion = name;
    REQUIRE(!conversion.empty());
    const json one = h.tool_result(3, "what_if",
                                   {{"trace", loaded["trace"]},
                                    {"kernel", conversion},
                                    {"factor", 0.5},
                                    {"detail", "summary"}});
    CHECK(one["matched_kernel_count"] == 1);
    CHECK(one["matched_kernels"][0]["name"] == conversion);
    CHECK(one["matched_kernels"][0]["launches"].get<size_t>() == all.at(conversion));
    CHECK(one["selected_nodes"].get<size_t>() == all.at(conversion));
  }

  TEST_CASE(
      "host_sync's what_if selects its syncing ops, not every op of their name "
      "(s_loader A)") {
    // 414 aten::to in the trace; the steps' syncs are the blocking copies
    // (a cudaMemcpyAsync whose copy ended inside the call) and the device
    // synchronisations inside the ProfilerStep ranges, from the raw events.
    const std::string file = "s_loader_A_workers0.json.gz";
    const json raw = raw_events(file);
    std::vector<std::pair<double, double>> steps;
    std::map<int64_t, std::vector<std::pair<double, double>>> gpu_by_correlation;
    size_t to_calls = 0;
    for (const auto& e : raw) {
      if (e.value("ph", "") != "X") continue;
      const std::string cat = e.value("cat", "");
      const double ts = e["ts"].get<double>(), end = ts + e.value("dur", 0.0);
      if (cat == "user_annotation" && e.value("name", "").starts_with("ProfilerStep#"))
        steps.emplace_back(ts, end);
      if (cat == "cpu_op" && e.value("name", "") == "aten::to") ++to_calls;
      if ((cat == "gpu_memcpy" || cat == "kernel" || cat == "gpu_memset") && e.contains("args") &&
          e["args"].contains("correlation"))
        gpu_by_correlation[e["args"]["correlation"].get<int64_t>()].emplace_back(ts, end);
    }
    REQUIRE(!steps.empty());
    std::vector<std::pair<double, double>> sync_calls;  // in the steps
    for (const auto& e : raw) {
      if (e.value("ph", "") != "X" || e.value("cat", "") != "cuda_runtime") continue;
      const std::string name = e.value("name", "");
      const double ts = e["ts"].get<double>(), end = ts + e.value("dur", 0.0);
      bool sync = name.find("Synchronize") != std::string::npos;
      if (!sync && name.find("Memcpy") != std::string::npos && e.contains("args") &&
          e["args"].contains("correlation")) {
        auto it = gpu_by_correlation.find(e["args"]["correlation"].get<int64_t>());
        if (it != gpu_by_correlation.end())
          for (const auto& [gts, gend] : it->second) sync |= gend >= ts && gend <= end + 2.0;
      }
      if (!sync) continue;
      if (std::any_of(steps.begin(), steps.end(),
                      [&](const auto& s) { return ts >= s.first && ts < s.second; }))
        sync_calls.emplace_back(ts, end);
    }
    REQUIRE(!sync_calls.empty());
    CHECK(to_calls > 100);
    jarvis::mcp::testing::Harness h;
    h.initialize();
    const json loaded = h.tool_result(1, "load_trace", {{"path", ab(file)}});
    const json found = h.tool_result(
        2, "insights", {{"trace", loaded["trace"]}, {"rule", "host_sync"}, {"detail", "full"}});
    REQUIRE(found["insights"].size() == 1);
    const json args = found["insights"][0]["what_if"];
    CHECK(!args.contains("remove_ops"));
    CHECK(args["trace"] == loaded["trace"]);
    const auto uids = args["remove_uids"].get<std::vector<jarvis::Uid>>();
    // One op per sync of the steps, each around its sync call.
    CHECK(uids.size() == sync_calls.size());
    const jarvis::Trace trace = jarvis::load_trace(ab(file));
    for (jarvis::Uid u : uids) {
      REQUIRE(u < trace.events.size());
      const jarvis::Event& op = trace.events[u];
      CHECK(std::any_of(sync_calls.begin(), sync_calls.end(), [&](const auto& s) {
        return s.first >= op.ts() - 0.01 && s.second <= op.end() + 0.01;
      }));
    }
    // The what_if tool takes them as they are and says what they matched.
    json call = args;
    call["detail"] = "summary";
    const json r = h.tool_result(3, "what_if", call);
    const std::string first = r["changes"][0].get<std::string>();
    CAPTURE(first);
    CHECK(first.find(std::to_string(uids.size()) + " host event(s)") == 0);
    CHECK(first.find("the " + std::to_string(sync_calls.size()) + " synchronising call(s)") !=
          std::string::npos);
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
