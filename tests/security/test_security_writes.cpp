// Issue 49 points 1, 4, 5 and 7 (make_replay's command), and issue 50's data
// safety: every writer under one rule (base/output_guard.h), sweeps inside
// the roots, multi-rank calls inside --max-memory. Each case reproduces the
// attack, asserts the refusal, that nothing was written, and that the server
// answers the next request.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>

#include <fmt/format.h>

#include "base/output_guard.h"
#include "golden.h"
#include "mcp_harness.h"
#include "security_mcp_support.h"
#include "security_support.h"
#include "session/trace_cache.h"
#include "sweep/sweep.h"
#include "test_loader_support.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using jarvis::mcp::json;
namespace mcp = jarvis::mcp;
namespace fs = std::filesystem;
using jarvis::testing::CliRun;
using jarvis::testing::jarvis_cli;
using jarvis::testing::q;
using jarvis::testing::read_text;
using jarvis::testing::ScratchDir;
using jarvis::testing::write_text;
using mcp::testing::answers_next_request;
using mcp::testing::Harness;
using mcp::testing::root_options;
using mcp::testing::tool_error;
using mcp::testing::tool_text;

namespace {

// A sweep of two configurations in `root`/sw: bs{bs}/trace.json.gz.
std::string small_sweep_handle(Harness& h, const ScratchDir& root) {
  for (const char* bs : {"1", "2"})
    jarvis::testing::copy_example_trace(root / fmt::format("sw/bs{}/trace.json.gz", bs));
  json reply = h.call_tool(1, "load_sweep",
                           {{"path", "sw"}, {"layout", "bs{bs}/*.json.gz"}, {"cache_dir", "none"}});
  REQUIRE(!tool_error(reply));
  return reply["result"]["structuredContent"]["sweep"].get<std::string>();
}

}  // namespace

TEST_SUITE("mcp_security") {
  TEST_CASE("issue 49 point 1: rocprof_config never writes over a trace or a user's file") {
    ScratchDir root;
    jarvis::testing::copy_example_trace(root / "precious.json.gz");
    std::string trace_before = read_text(root / "precious.json.gz");
    // An AMD kernel: NVIDIA names get the Nsight Compute command, not a job.
    write_text(root / "kernels.csv", "kernel_name\nCijk_Alik_Bljk_MT128x128x64\n");
    write_text(root / "plan.json", "{\"mine\": true}\n");
    Harness h(root_options(root));
    h.initialize();
    // A trace as the job: refused (its name is no .yaml), trace intact.
    json reply =
        h.call_tool(1, "rocprof_config", {{"csv", "kernels.csv"}, {"output", "precious.json.gz"}});
    REQUIRE(tool_error(reply));
    CHECK(tool_text(reply).find(".yaml") != std::string::npos);
    CHECK(read_text(root / "precious.json.gz") == trace_before);
    // plan.yaml would write plan.json beside it: the user's plan.json stops
    // all three files.
    reply = h.call_tool(2, "rocprof_config", {{"csv", "kernels.csv"}, {"output", "plan.yaml"}});
    REQUIRE(tool_error(reply));
    CHECK(tool_text(reply).find("plan.json") != std::string::npos);
    CHECK(read_text(root / "plan.json") == "{\"mine\": true}\n");
    CHECK(!fs::exists(root / "plan.yaml"));
    CHECK(!fs::exists(root / "plan_kernel_list.txt"));
    // A fresh name is written and recorded: the same call again replaces it.
    reply = h.call_tool(3, "rocprof_config", {{"csv", "kernels.csv"}, {"output", "job.yaml"}});
    REQUIRE(!tool_error(reply));
    CHECK(fs::exists(root / "job.json"));
    CHECK(jarvis::written_by_jarvis(root / "job.yaml"));
    reply = h.call_tool(4, "rocprof_config", {{"csv", "kernels.csv"}, {"output", "job.yaml"}});
    CHECK(!tool_error(reply));
    // overwrite: true replaces the user's plan.json, never the input CSV.
    reply = h.call_tool(5, "rocprof_config",
                        {{"csv", "kernels.csv"}, {"output", "plan.yaml"}, {"overwrite", true}});
    CHECK(!tool_error(reply));
    answers_next_request(h);
  }

  TEST_CASE("issue 49 point 1: the sweep tools' output_dir and xlsx follow the rule") {
    ScratchDir root;
    Harness h(root_options(root));
    h.initialize();
    std::string sweep = small_sweep_handle(h, root);
    jarvis::testing::copy_example_trace(root / "precious.json.gz");
    std::string trace_before = read_text(root / "precious.json.gz");
    write_text(root / "userdir/gemm_variance.csv", "mine\n");
    // A workbook over a trace.
    json reply =
        h.call_tool(2, "sweep_gpu_timeline",
                    {{"sweep", sweep}, {"output_dir", "fresh"}, {"xlsx", "precious.json.gz"}});
    REQUIRE(tool_error(reply));
    CHECK(read_text(root / "precious.json.gz") == trace_before);
    // A directory of the user's files.
    for (const char* tool : {"sweep_gemm_variance", "sweep_nccl", "sweep_gpu_timeline"}) {
      reply = h.call_tool(3, tool, {{"sweep", sweep}, {"output_dir", "userdir"}});
      REQUIRE_MESSAGE(tool_error(reply), tool);
      CHECK(tool_text(reply).find("did not write") != std::string::npos);
    }
    reply = h.call_tool(4, "compare_sweeps",
                        {{"base", sweep}, {"candidate", sweep}, {"output_dir", "userdir"}});
    CHECK(tool_error(reply));
    CHECK(read_text(root / "userdir/gemm_variance.csv") == "mine\n");
    // A user's workbook.
    write_text(root / "mine.xlsx", "not jarvis's");
    reply = h.call_tool(5, "sweep_nccl",
                        {{"sweep", sweep}, {"output_dir", "out1"}, {"xlsx", "mine.xlsx"}});
    CHECK(tool_error(reply));
    CHECK(read_text(root / "mine.xlsx") == "not jarvis's");
    // A new directory is written, recorded and marked; a second call reuses it.
    reply = h.call_tool(6, "sweep_gemm_variance",
                        {{"sweep", sweep}, {"output_dir", "out2"}, {"xlsx", "out2.xlsx"}});
    REQUIRE(!tool_error(reply));
    CHECK(fs::exists(root / "out2/.jarvis-output"));
    CHECK(jarvis::written_by_jarvis(root / "out2/gemm_variance.csv"));
    CHECK(jarvis::written_by_jarvis(root / "out2.xlsx"));
    reply = h.call_tool(7, "sweep_gemm_variance",
                        {{"sweep", sweep}, {"output_dir", "out2"}, {"xlsx", "out2.xlsx"}});
    CHECK(!tool_error(reply));
    answers_next_request(h);
  }

  TEST_CASE("issue 49 point 4: load_sweep never follows a symlink out of the roots") {
    ScratchDir root, outside;
    jarvis::testing::copy_example_trace(root / "sw/bs1/trace.json.gz");
    jarvis::testing::copy_example_trace(outside / "bs9/trace.json.gz");
    fs::create_directory_symlink(outside / "bs9", root / "sw/bs7");
    jarvis::testing::copy_example_trace(outside / "secret.json.gz");
    fs::create_directories(root / "sw/bs8");
    fs::create_symlink(outside / "secret.json.gz", root / "sw/bs8/trace.json.gz");
    Harness h(root_options(root));
    h.initialize();
    json reply = h.call_tool(
        1, "load_sweep", {{"path", "sw"}, {"layout", "bs{bs}/*.json.gz"}, {"cache_dir", "none"}});
    REQUIRE(!tool_error(reply));
    json r = reply["result"]["structuredContent"];
    CHECK(r["run_count"] == 1);
    CHECK(r["runs"][0]["run"] == "bs1/trace.json.gz");
    REQUIRE(r["failures"].size() == 2);
    for (const auto& f : r["failures"])
      CHECK(f["reason"].get<std::string>().find("outside the allowed directories") !=
            std::string::npos);
    // Everything refused: an error, no outside trace parsed.
    fs::remove_all(root / "sw/bs1");
    reply = h.call_tool(2, "load_sweep",
                        {{"path", "sw"}, {"layout", "bs{bs}/*.json.gz"}, {"cache_dir", "none"}});
    CHECK(tool_error(reply));
    answers_next_request(h);
    // The CLI follows the user's own symlinks (docs/sweeps.md).
    jarvis::sweep::LoadOptions o;
    o.pattern = "bs{bs}/*.json.gz";
    o.cache_dir = "none";
    CHECK(jarvis::sweep::load_sweep((root / "sw").string(), o).runs.size() == 2);
  }

  TEST_CASE("issue 49 point 5: multi-rank calls are budgeted before they parse") {
    ScratchDir root;
    json traces = json::array();
    for (int k = 0; k < 64; ++k) {
      std::string name = fmt::format("r{}.json.gz", k);
      jarvis::testing::copy_example_trace(root / name);
      traces.push_back(name);
    }
    uint64_t one = jarvis::estimate_trace_bytes_before_parse((root / "r0.json.gz").string());
    REQUIRE(one > 0);
    // The estimate bounds the real parse (the budget must not under-count).
    jarvis::TraceCache probe;
    uint64_t parsed =
        probe.acquire(jarvis::identify_file((root / "r0.json.gz").string())).entry->bytes();
    CHECK(one >= parsed);
    mcp::ServerOptions options = root_options(root);
    options.max_memory_bytes = 8 * one;  // eight ranks' worth
    Harness h(options);
    h.initialize();
    for (const char* tool : {"critical_path", "what_if"}) {
      auto start = std::chrono::steady_clock::now();
      uint64_t parses = h.server.trace_cache().stats().parses;
      json reply = h.call_tool(1, tool, {{"traces", traces}});
      REQUIRE_MESSAGE(tool_error(reply), tool);
      CHECK(tool_text(reply).find("64 rank traces") != std::string::npos);
      CHECK(tool_text(reply).find("--max-memory") != std::string::npos);
      CHECK(h.server.trace_cache().stats().parses == parses);
      // Refused before parsing: far faster than 64 loads.
      CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
    }
    // Within the budget the call runs, and its reservation is released.
    json few = json::array({"r0.json.gz"});
    json reply = h.call_tool(2, "critical_path", {{"traces", few}});
    CHECK(!tool_error(reply));
    CHECK(h.server.trace_cache().stats().resident_bytes == 0);
    answers_next_request(h);
  }

  TEST_CASE("issue 49 point 5: the pre-parse estimate covers every shared trace's parse") {
    std::vector<fs::path> traces;
    std::string shared = jarvis::golden::shared_dir();
    for (const char* dir : {"conformance", "hw_pairs", "nccl", "legacy"})
      for (const auto& e : fs::recursive_directory_iterator(fs::path(shared) / dir))
        if (e.is_regular_file() && jarvis::is_trace_file_name(e.path())) traces.push_back(e.path());
    REQUIRE(traces.size() >= 14);
    for (const auto& path : traces) {
      jarvis::TraceCache probe;
      uint64_t parsed = probe.acquire(jarvis::identify_file(path.string())).entry->bytes();
      uint64_t estimate = jarvis::estimate_trace_bytes_before_parse(path.string());
      CHECK_MESSAGE(estimate >= parsed, path.string());
      // Not so loose that a budget refuses what it could hold.
      CHECK_MESSAGE(estimate <= 3 * parsed + (1u << 20), path.string());
    }
  }

  TEST_CASE("issue 49 point 7: make_replay's run command quotes the directory") {
    ScratchDir root;
    jarvis::testing::copy_example_trace(root / "t.json.gz");
    Harness h(root_options(root));
    h.initialize();
    json reply = h.call_tool(1, "load_trace", {{"path", "t.json.gz"}});
    REQUIRE(!tool_error(reply));
    std::string handle = reply["result"]["structuredContent"]["trace"];
    reply =
        h.call_tool(2, "make_replay",
                    {{"trace", handle}, {"output_dir", "rep;touch PWNED;#"}, {"category", "GEMM"}});
    if (tool_error(reply)) {
      // No GEMM in the example: any op category the replay supports will do.
      reply = h.call_tool(
          3, "make_replay",
          {{"trace", handle}, {"output_dir", "rep;touch PWNED;#"}, {"op", "aten::linear"}});
    }
    REQUIRE_MESSAGE(!tool_error(reply), reply.dump());
    std::string command = reply["result"]["structuredContent"]["run_command"];
    CHECK(command.find("'" + (root / "rep;touch PWNED;#").string() + "'") != std::string::npos);
    // Run through a shell, the command changes into the directory and
    // nothing else: no PWNED file appears (python3 may be absent; `true`
    // stands in for it).
    std::string shell = command.substr(0, command.find("&&")) + "&& true";
    CHECK(std::system(("cd " + q(root.path) + " && " + shell).c_str()) == 0);
    CHECK(!fs::exists(root / "PWNED"));
  }
}

TEST_SUITE("cli_data_safety") {
  TEST_CASE("issue 50: report never writes over its input, a trace or a user's file") {
    ScratchDir dir;
    jarvis::testing::copy_example_trace(dir / "self.json.gz");
    std::string before = read_text(dir / "self.json.gz");
    fs::path self = dir / "self.json.gz";
    // The trace as --html / --xlsx; a hard link to it under another name.
    fs::create_hard_link(self, dir / "alias.html");
    for (const std::string& flags :
         {"--html " + q(self), "--xlsx " + q(self), "--html " + q(dir / "alias.html")}) {
      CliRun r = jarvis_cli("report " + q(self) + " " + flags);
      CHECK_MESSAGE(r.exit_code == 2, flags);
      CHECK_MESSAGE(r.err.find("input of this command") != std::string::npos, r.err);
    }
    // Another trace as a target, even with --force.
    jarvis::testing::copy_example_trace(dir / "other.json.gz");
    CliRun r = jarvis_cli("report " + q(self) + " --xlsx " + q(dir / "other.json.gz") + " --force");
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("never writes over a trace") != std::string::npos);
    CHECK(read_text(self) == before);
    // Contradictory flags.
    r = jarvis_cli("report " + q(self) + " --xlsx " + q(dir / "w.xlsx") + " --no-xlsx");
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("contradict") != std::string::npos);
    CHECK(!fs::exists(dir / "w.xlsx"));
    // A hand-written workbook in --out and an existing --html page.
    write_text(dir / "out/perf_report.xlsx", "hand-written");
    r = jarvis_cli("report " + q(self) + " --out " + q(dir / "out"));
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("--force") != std::string::npos);
    CHECK(read_text(dir / "out/perf_report.xlsx") == "hand-written");
    CHECK(!fs::exists(dir / "out/perf_report_csvs"));
    write_text(dir / "page.html", "my page");
    r = jarvis_cli("report " + q(self) + " --html " + q(dir / "page.html"));
    CHECK(r.exit_code == 2);
    CHECK(read_text(dir / "page.html") == "my page");
    // --force replaces them; then they are jarvis's, and a rerun needs none.
    CHECK(jarvis_cli("report " + q(self) + " --out " + q(dir / "out") + " --html " +
                     q(dir / "page.html") + " --force")
              .exit_code == 0);
    CHECK(read_text(dir / "out/perf_report.xlsx").rfind("PK", 0) == 0);
    CHECK(jarvis_cli("report " + q(self) + " --out " + q(dir / "out") + " --html " +
                     q(dir / "page.html"))
              .exit_code == 0);
    // Edited by the user afterwards: theirs again.
    write_text(dir / "page.html", "edited");
    CHECK(jarvis_cli("report " + q(self) + " --html " + q(dir / "page.html")).exit_code == 2);
    CHECK(read_text(dir / "page.html") == "edited");
    CHECK(read_text(self) == before);
  }

  TEST_CASE("issue 50: a default sweep of a read-only input leaves it byte-identical") {
    ScratchDir dir, cache;
    for (const char* bs : {"1", "2"})
      jarvis::testing::copy_example_trace(dir / fmt::format("sw/bs{}/trace.json.gz", bs));
    auto listing = [&] {
      std::string all;
      for (const auto& e : fs::recursive_directory_iterator(dir / "sw"))
        all += e.path().string() + "\n" + (e.is_regular_file() ? read_text(e.path()) : "");
      return all;
    };
    std::string before = listing();
    for (const auto& e : fs::recursive_directory_iterator(dir / "sw"))
      fs::permissions(e.path(),
                      fs::perms::owner_write | fs::perms::group_write | fs::perms::others_write,
                      fs::perm_options::remove);
    fs::permissions(dir / "sw", fs::perms::owner_write, fs::perm_options::remove);
    std::string env = "JARVIS_CACHE_DIR=" + q(cache.path) + " ";
    std::string cmd = env + JARVIS_BINARY + " sweep " + q(dir / "sw") +
                      " --layout 'bs{bs}/*.json.gz' --out " + q(dir / "out") + " >/dev/null 2>&1";
    int status = std::system(cmd.c_str());
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    fs::permissions(dir / "sw", fs::perms::owner_all, fs::perm_options::add);
    CHECK(listing() == before);
    CHECK(!fs::exists(dir / "sw/.jarvis-sweep-cache"));
    // The runs went to the user cache, private to the user.
    size_t cached = 0;
    for (const auto& e : fs::directory_iterator(cache / "sweeps")) cached += e.is_regular_file();
    CHECK(cached == 2);
    struct stat st;
    REQUIRE(::stat((cache / "sweeps").c_str(), &st) == 0);
    CHECK((st.st_mode & 077) == 0);
    // A second run reads them back.
    cmd = env + JARVIS_BINARY + " sweep " + q(dir / "sw") + " --layout 'bs{bs}/*.json.gz' --out " +
          q(dir / "out2") + " --stats 2>&1 >/dev/null";
    FILE* p = popen(cmd.c_str(), "r");
    REQUIRE(p);
    std::string out;
    char buf[4096];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
    pclose(p);
    CHECK_MESSAGE(out.find("cache hits 2") != std::string::npos, out);
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
