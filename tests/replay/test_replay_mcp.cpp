// The make_replay MCP tool, called in process: argument checks, path
// confinement and the package it writes.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "golden.h"
#include "mcp_harness.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using jarvis::mcp::json;
using jarvis::mcp::testing::conformance_trace;
using jarvis::mcp::testing::Harness;
namespace fs = std::filesystem;

namespace {

// A server whose roots are the shared material (traces) and a scratch
// directory (outputs).
struct ReplayHarness {
  fs::path scratch;
  std::unique_ptr<Harness> h;

  ReplayHarness() {
    scratch = fs::temp_directory_path() / ("jarvis_replay_mcp_" + std::to_string(::getpid()));
    fs::remove_all(scratch);
    fs::create_directories(scratch);
    jarvis::mcp::ServerOptions options;
    options.roots = {jarvis::golden::shared_dir(), scratch.string()};
    h = std::make_unique<Harness>(options);
    h->initialize();
    h->tool_result(1, "load_trace", {{"path", conformance_trace("h100_bert-small")}});
  }
  ~ReplayHarness() { fs::remove_all(scratch); }

  std::string error_text(int id, json args) {
    json reply = h->call_tool(id, "make_replay", std::move(args));
    if (reply.contains("error")) return "protocol error: " + reply["error"].dump();
    REQUIRE(reply["result"]["isError"] == true);
    return reply["result"]["content"][0]["text"].get<std::string>();
  }
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_SUITE("replay") {
  TEST_CASE("make_replay tool writes the package for an op, a category or UIDs") {
    ReplayHarness r;
    fs::path out = r.scratch / "addmm";
    json res = r.h->tool_result(
        2, "make_replay", {{"trace", "t1"}, {"output_dir", out.string()}, {"op", "aten::addmm"}});
    CHECK(res["trace"] == "t1");
    CHECK(res["op_count"] == 4);
    CHECK(res["replayable_count"] == 4);
    CHECK(res["ops"][0]["count"] == 17);
    CHECK(res["ops"][0]["input_dims"] == "((512,), (141, 512), (512, 512), (), ())");
    for (const char* key : {"replay_ir", "runner", "readme", "zip"})
      CHECK(fs::exists(res["files"][key].get<std::string>()));
    json ir = json::parse(slurp(out / "replay_ir.json"));
    CHECK(ir["ops"].size() == 4);

    json dims = r.h->tool_result(
        3, "make_replay",
        {{"trace", "t1"},
         {"output_dir", (r.scratch / "dims").string()},
         {"op", "aten::addmm"},
         {"input_dims", json::parse("[[2048], [141, 512], [512, 2048], [], []]")}});
    CHECK(dims["op_count"] == 1);
    // The same, as jarvis prints operand shapes (issue 64 point 7).
    json printed =
        r.h->tool_result(6, "make_replay",
                         {{"trace", "t1"},
                          {"output_dir", (r.scratch / "printed").string()},
                          {"op", "aten::addmm"},
                          {"input_dims", "(2048,) x (141, 512) x (512, 2048) x () x ()"}});
    CHECK(printed["op_count"] == 1);
    CHECK(printed["ops"][0]["input_dims"] == dims["ops"][0]["input_dims"]);

    json cat = r.h->tool_result(
        4, "make_replay",
        {{"trace", "t1"}, {"output_dir", (r.scratch / "sdpa").string()}, {"category", "SDPA_fwd"}});
    REQUIRE(cat["op_count"] == 1);
    CHECK(cat["ops"][0]["name"] == "aten::_scaled_dot_product_flash_attention");

    json uids = r.h->tool_result(
        5, "make_replay",
        {{"trace", "t1"}, {"output_dir", (r.scratch / "uids").string()}, {"uids", {48, 19}}});
    CHECK(uids["op_count"] == 2);
  }

  TEST_CASE("make_replay tool errors tell the agent what to do") {
    ReplayHarness r;
    std::string dir = (r.scratch / "x").string();
    CHECK(r.error_text(2, {{"trace", "t9"}, {"output_dir", dir}, {"op", "aten::mm"}})
              .find("load_trace") != std::string::npos);
    // Two selections at once, or none, fail the schema.
    r.error_text(3, {{"trace", "t1"}, {"output_dir", dir}, {"op", "aten::mm"}, {"uids", {1}}});
    r.error_text(4, {{"trace", "t1"}, {"output_dir", dir}});
    CHECK(r.error_text(5, {{"trace", "t1"}, {"output_dir", dir}, {"op", "aten::mm"}})
              .find("no cpu_op named 'aten::mm'") != std::string::npos);
    CHECK(r.error_text(6, {{"trace", "t1"}, {"output_dir", dir}, {"category", "CONV_fwd"}})
              .find("GEMM") != std::string::npos);
    CHECK(r.error_text(7, {{"trace", "t1"}, {"output_dir", dir}, {"uids", {999999}}})
              .find("out of range") != std::string::npos);
    // Outside the allowed roots: nothing is written.
    std::string outside = "/jarvis_replay_outside_" + std::to_string(::getpid());
    r.error_text(8, {{"trace", "t1"}, {"output_dir", outside}, {"op", "aten::add"}});
    CHECK_FALSE(fs::exists(outside));
    CHECK_FALSE(fs::exists(dir));
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
