// Security regression tests through the in-process MCP session (issue 24
// points 1, 2, 3, 7, 8, 11 and issue 18's server state): each reproduces an
// attack, asserts the refusal or the bound, and that the server answers the
// next request.
#include <doctest/doctest.h>
#include <malloc.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "explore/trace_store.h"
#include "mcp/transport.h"
#include "mcp_harness.h"
#include "report/report.h"
#include "sanitizer.h"
#include "security_mcp_support.h"
#include "security_support.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using jarvis::mcp::json;
namespace mcp = jarvis::mcp;
namespace fs = std::filesystem;
using jarvis::testing::ScratchDir;
using mcp::testing::answers_next_request;
using mcp::testing::Harness;
using mcp::testing::root_options;
using mcp::testing::tool_error;
using mcp::testing::tool_text;

namespace {

std::string trace_name(int k) {
  return fmt::format("t{}.json.gz", k);
}

json meta_2026() {
  return {{mcp::kMetaProtocolVersion, "2026-07-28"},
          {mcp::kMetaClientCapabilities, json::object()}};
}

// One stateless request, as the HTTP transport serves it: a fresh session
// over the server's capability-handle store.
json stateless_call(Harness& h, int id, const std::string& tool, json args) {
  auto session = h.server.new_stateless_session();
  auto reply = session->handle(
      {{"jsonrpc", "2.0"},
       {"id", id},
       {"method", "tools/call"},
       {"params", {{"name", tool}, {"arguments", std::move(args)}, {"_meta", meta_2026()}}}},
      [](const json&) {});
  return reply ? *reply : json();
}

}  // namespace

TEST_SUITE("mcp_security") {
  TEST_CASE("point 1: '..' after a missing directory cannot skip a symlink out of the root") {
    ScratchDir root, outside;
    jarvis::testing::copy_example_trace(outside / "secret.json.gz");
    fs::create_directory_symlink(outside.path, root / "link");
    Harness h(root_options(root));
    h.initialize();
    for (std::string path :
         std::vector<std::string>{"nonexistent/../link/secret.json.gz", "link/secret.json.gz",
                                  root.str() + "/nonexistent/../link/secret.json.gz"}) {
      INFO(path);
      json reply = h.call_tool(1, "load_trace", {{"path", path}});
      REQUIRE(tool_error(reply));
      CHECK(tool_text(reply).find("outside the allowed directories") != std::string::npos);
    }
    CHECK(h.session->traces().size() == 0);
    answers_next_request(h);
  }

  TEST_CASE("point 1: an output directory that is a symlink to outside is not written through") {
    ScratchDir root, outside;
    jarvis::testing::copy_example_trace(root / "trace.json.gz");
    fs::create_directory_symlink(outside.path, root / "out");
    Harness h(root_options(root));
    h.initialize();
    REQUIRE_FALSE(tool_error(h.call_tool(1, "load_trace", {{"path", "trace.json.gz"}})));
    for (std::string dir : {"out", "missing/../out", "out/sub"}) {
      INFO(dir);
      json reply = h.call_tool(2, "category_filter",
                               {{"trace", "t1"}, {"output_dir", dir}, {"arch", "H100"}});
      CHECK(tool_error(reply));
    }
    // A symlink planted inside a real output directory is refused too.
    fs::create_directory(root / "real");
    fs::create_directory_symlink(outside.path, root / "real" / "category_data");
    CHECK(tool_error(h.call_tool(3, "category_filter", {{"trace", "t1"}, {"output_dir", "real"}})));
    // A file symlink as an SVG target.
    jarvis::testing::write_text(outside / "victim.svg", "precious");
    fs::create_symlink(outside / "victim.svg", root / "plot.svg");
    CHECK(tool_error(h.call_tool(4, "gemm_roofline", {{"trace", "t1"}, {"svg_path", "plot.svg"}})));
    CHECK(jarvis::testing::read_text(outside / "victim.svg") == "precious");
    CHECK(fs::is_empty(outside.path / ".") == false);  // only victim.svg, nothing new
    size_t files = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(outside.path)) ++files;
    CHECK(files == 1);
    answers_next_request(h);
  }

  TEST_CASE("point 2: arch files only from the roots, and their contents never echoed") {
    ScratchDir root, outside;
    jarvis::testing::copy_example_trace(root / "trace.json.gz");
    jarvis::testing::write_text(outside / "arch.json", R"({"name": "X", "mem_bw_gbps": 1})");
    jarvis::testing::write_text(root / "bad.json", "SECRET-CONTENT-1234 not json");
    jarvis::testing::write_text(root / "notarch.json", R"({"SECRETKEY": [1, 2]})");
    Harness h(root_options(root));
    h.initialize();
    REQUIRE_FALSE(tool_error(h.call_tool(1, "load_trace", {{"path", "trace.json.gz"}})));
    // Outside the roots: the same answer whether the file exists or not.
    json present =
        h.call_tool(2, "ops_summary", {{"trace", "t1"}, {"arch", outside.str() + "/arch.json"}});
    json missing =
        h.call_tool(3, "ops_summary", {{"trace", "t1"}, {"arch", outside.str() + "/nope.json"}});
    REQUIRE(tool_error(present));
    REQUIRE(tool_error(missing));
    auto without_path = [](std::string text, const std::string& path) {
      return text.replace(text.find(path), path.size(), "<path>");
    };
    CHECK(without_path(tool_text(present), outside.str() + "/arch.json") ==
          without_path(tool_text(missing), outside.str() + "/nope.json"));
    // Any other file of the machine is not an arch at all.
    json passwd = h.call_tool(4, "ops_summary", {{"trace", "t1"}, {"arch", "/etc/passwd"}});
    REQUIRE(tool_error(passwd));
    CHECK(tool_text(passwd).find("root:") == std::string::npos);
    // Files inside the roots: the problem in kind, never their text.
    for (const char* name : {"bad.json", "notarch.json"}) {
      json reply = h.call_tool(5, "insights", {{"trace", "t1"}, {"arch", name}});
      REQUIRE(tool_error(reply));
      CHECK(tool_text(reply).find("SECRET") == std::string::npos);
      CHECK(tool_text(reply).find("not a GPU arch JSON file") != std::string::npos);
    }
    // Bundled names in any case still work.
    CHECK_FALSE(tool_error(h.call_tool(6, "ops_summary", {{"trace", "t1"}, {"arch", "h100"}})));
    answers_next_request(h);
  }

  TEST_CASE("point 3: deeply nested params are refused with -32600 and the server stays up") {
    Harness h;
    h.initialize();
    std::string deep = R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"x":)" +
                       std::string(200000, '[') + std::string(200000, ']') + "}}";
    json reply = h.send_text(deep);
    CHECK(reply["error"]["code"] == mcp::rpc::kInvalidRequest);
    // make_replay's nested input_dims are a tool argument like any other.
    std::string dims = std::string(40000, '[') + std::string(40000, ']');
    json replay = h.send_text(
        R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"make_replay","arguments":{"trace":"t1","output_dir":"x","op":"aten::mm","input_dims":)" +
        dims + "}}}");
    CHECK(replay["error"]["code"] == mcp::rpc::kInvalidRequest);
    // Brackets inside strings do not count.
    CHECK_FALSE(mcp::json_nesting_exceeds(R"({"a": "[[[[[[[[[[[[[[[[[[[["})", 3));
    CHECK(mcp::json_nesting_exceeds("[[[[", 3));
    answers_next_request(h);
  }

  TEST_CASE("point 3: deep nesting on stdio is answered and the next line served") {
    int in[2], out[2];
    REQUIRE(::pipe(in) == 0);
    REQUIRE(::pipe(out) == 0);
    mcp::Server server(mcp::testing::shared_root_options());
    std::thread serving([&] { mcp::serve_stdio(server, in[0], out[1], 2); });
    std::string lines = std::string(R"({"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":)") +
                        std::string(200000, '[') + std::string(200000, ']') + "}}\n" +
                        R"({"jsonrpc":"2.0","id":2,"method":"ping"})" + "\n";
    for (size_t off = 0; off < lines.size();) {
      ssize_t n = ::write(in[1], lines.data() + off, lines.size() - off);
      REQUIRE(n > 0);
      off += static_cast<size_t>(n);
    }
    ::close(in[1]);
    serving.join();
    ::close(out[1]);
    std::string text;
    char buf[4096];
    for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) > 0;) text.append(buf, n);
    ::close(out[0]);
    ::close(in[0]);
    REQUIRE(text.find('\n') != std::string::npos);
    json first = json::parse(text.substr(0, text.find('\n')));
    json second = json::parse(text.substr(text.find('\n') + 1));
    CHECK(first["error"]["code"] == mcp::rpc::kInvalidRequest);
    CHECK(second["id"] == 2);
    CHECK(second.contains("result"));
  }

  TEST_CASE("point 7 / issue 18: 30 sessions loading one trace share one parse") {
    ScratchDir root;
    jarvis::testing::copy_example_trace(root / "trace.json.gz");
    mcp::Server server(root_options(root));
    std::vector<std::shared_ptr<mcp::Session>> sessions;
    std::vector<std::thread> threads;
    for (int k = 0; k < 30; ++k) sessions.push_back(server.new_session());
    for (int k = 0; k < 30; ++k)
      threads.emplace_back([&, k] {
        auto& s = *sessions[k];
        s.handle(
            {{"jsonrpc", "2.0"},
             {"id", 0},
             {"method", "initialize"},
             {"params", {{"protocolVersion", "2025-11-25"}, {"capabilities", json::object()}}}},
            [](const json&) {});
        s.handle({{"jsonrpc", "2.0"},
                  {"id", 1},
                  {"method", "tools/call"},
                  {"params", {{"name", "load_trace"}, {"arguments", {{"path", "trace.json.gz"}}}}}},
                 [](const json&) {});
      });
    for (auto& t : threads) t.join();
    auto stats = server.trace_cache().stats();
    CHECK(stats.parses == 1);  // concurrent loads of one file share the parse
    CHECK(stats.resident == 1);
    for (auto& s : sessions) CHECK(s->traces().size() == 1);
  }

  TEST_CASE("issue 18: loads, unloads and reloads under a memory budget") {
    ScratchDir root;
    const int kTraces = 30;
    for (int k = 0; k < kTraces; ++k) jarvis::testing::copy_example_trace(root / trace_name(k));
    // The budget: three of these traces.
    jarvis::TraceCache probe;
    uint64_t one =
        probe.acquire(jarvis::identify_file((root / "t0.json.gz").string())).entry->bytes();
    mcp::ServerOptions options = root_options(root);
    options.max_memory_bytes = 3 * one + one / 2;
    mcp::Server server(options);
    auto start = std::chrono::steady_clock::now();
    uint64_t rss_before = jarvis::testing::resident_bytes();
    std::vector<std::shared_ptr<mcp::Session>> sessions;
    for (int k = 0; k < kTraces; ++k) {
      auto s = server.new_session();
      auto& store = s->traces();
      store.load((root / trace_name(k)).string());
      CHECK(server.trace_cache().stats().resident_bytes <= options.max_memory_bytes);
      sessions.push_back(s);
    }
    CHECK(server.trace_cache().stats().resident <= 3);
    // An evicted trace is parsed again on use, transparently.
    uint64_t parses = server.trace_cache().stats().parses;
    auto first = sessions[0]->traces().get("t1");
    REQUIRE(first);
    CHECK(first->trace().events.size() > 100);
    CHECK(server.trace_cache().stats().parses == parses + 1);
    first.reset();
    // A file changed behind a handle is not silently re-read.
    sessions[1]->traces().get("t1");
    server.trace_cache().trim();
    jarvis::testing::write_text(root / "t1.json.gz", "changed");
    CHECK_THROWS_AS(sessions[1]->traces().get("t1"), jarvis::TraceError);
    // Unload everything: nothing stays resident.
    for (auto& s : sessions) s->traces().unload("t1");
    sessions.clear();
    server.trace_cache().trim();
    CHECK(server.trace_cache().stats().resident == 0);
    CHECK(server.trace_cache().stats().resident_bytes == 0);
    ::malloc_trim(0);
    uint64_t rss_after = jarvis::testing::resident_bytes();
    INFO("resident before " << rss_before << " B, after " << rss_after << " B");
    // ASan keeps freed memory in its quarantine (256 MB by default) and maps
    // shadow memory for everything the earlier test cases touched, so the
    // sanitizer build allows that much more, on the process as a whole too
    // (CI's sanitized run stood at 1.03 GiB here).
    constexpr uint64_t kProcessCap = (JARVIS_ASAN ? 2ull : 1ull) << 30;
    CHECK(rss_after < kProcessCap);
    constexpr uint64_t kHeld = (JARVIS_ASAN ? 64 + 256 : 64) * (1ull << 20);
    CHECK(rss_after < rss_before + kHeld);
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
  }

  TEST_CASE("issue 62: an evicted trace is parsed again, and the call's result says so") {
    ScratchDir root;
    jarvis::testing::copy_example_trace(root / "a.json.gz");
    jarvis::testing::copy_example_trace(root / "b.json.gz");
    jarvis::TraceCache probe;
    const uint64_t one =
        probe.acquire(jarvis::identify_file((root / "a.json.gz").string())).entry->bytes();
    mcp::ServerOptions options = root_options(root);
    options.max_memory_bytes = one + one / 2;  // room for one of the two
    Harness h(options);
    h.initialize();
    const json a = h.tool_result(1, "load_trace", {{"path", "a.json.gz"}});
    const std::string handle_a = a["trace"].get<std::string>();
    h.tool_result(2, "load_trace", {{"path", "b.json.gz"}});  // evicts a (least recently used)
    const json reply = h.call_tool(3, "ops_summary", {{"trace", handle_a}});
    REQUIRE_FALSE(tool_error(reply));
    const json& r = reply["result"];
    REQUIRE(r.contains("structuredContent"));
    bool said = false;
    for (const json& c : r["structuredContent"].value("trace_caveats", json::array()))
      for (const json& w : c["warnings"])
        said |= w.get<std::string>().find("evicted") != std::string::npos;
    CHECK(said);
    CHECK(tool_text(reply).find("parsed again") != std::string::npos);
    // Used again while resident: no note.
    const json again = h.call_tool(4, "ops_summary", {{"trace", handle_a}});
    CHECK(tool_text(again).find("parsed again") == std::string::npos);
  }

  TEST_CASE("issue 18: a trace larger than the budget is refused, the server answers on") {
    ScratchDir root;
    jarvis::testing::copy_example_trace(root / "trace.json.gz");
    mcp::ServerOptions options = root_options(root);
    options.max_memory_bytes = 4096;  // far too small
    Harness h(options);
    h.initialize();
    json reply = h.call_tool(1, "load_trace", {{"path", "trace.json.gz"}});
    REQUIRE(tool_error(reply));
    CHECK(tool_text(reply).find("--max-memory") != std::string::npos);
    CHECK(h.session->traces().size() == 0);
    answers_next_request(h);
  }

  TEST_CASE("issue 18: legacy sessions never see each other's handles") {
    ScratchDir root;
    jarvis::testing::copy_example_trace(root / "trace.json.gz");
    Harness a(root_options(root));
    a.initialize();
    Harness b(root_options(root));
    b.session = a.server.new_session();  // a second session of the same server
    b.initialize();
    REQUIRE(a.tool_result(1, "load_trace", {{"path", "trace.json.gz"}})["trace"] == "t1");
    CHECK(b.tool_result(2, "list_traces", json::object())["traces"].empty());
    CHECK(tool_error(b.call_tool(3, "ops_summary", {{"trace", "t1"}})));
    CHECK(tool_error(b.call_tool(4, "unload_trace", {{"trace", "t1"}})));
    CHECK(a.tool_result(5, "list_traces", json::object())["traces"].size() == 1);
    // b loading the same file gets its own handle over the same parse.
    CHECK(b.tool_result(6, "load_trace", {{"path", "trace.json.gz"}})["reused"] == true);
    CHECK(a.server.trace_cache().stats().parses == 1);
  }

  TEST_CASE("issue 18: stateless clients get capability handles, never a list") {
    ScratchDir root;
    jarvis::testing::copy_example_trace(root / "trace.json.gz");
    Harness h(root_options(root));  // stateless requests: no initialize
    json loaded = stateless_call(h, 1, "load_trace", {{"path", "trace.json.gz"}});
    REQUIRE_FALSE(tool_error(loaded));
    std::string handle = loaded["result"]["structuredContent"]["trace"];
    CHECK(handle.size() == 33);  // "s" + 128 random bits
    CHECK(handle != "t1");
    // Another stateless client lists nothing and cannot guess.
    json list = stateless_call(h, 2, "list_traces", json::object());
    CHECK(list["result"]["structuredContent"]["traces"].empty());
    CHECK(tool_error(stateless_call(h, 3, "ops_summary", {{"trace", "t1"}})));
    CHECK(tool_error(stateless_call(h, 4, "unload_trace", {{"trace", "s0"}})));
    // The holder of the handle uses it in a later request.
    CHECK_FALSE(tool_error(stateless_call(h, 5, "ops_summary", {{"trace", handle}})));
    // Or it names the trace by path in each request: served from the shared
    // cache, confined like load_trace, no handle kept.
    json by_path = stateless_call(h, 8, "ops_summary", {{"trace", "trace.json.gz"}});
    REQUIRE_FALSE(tool_error(by_path));
    CHECK(by_path["result"]["structuredContent"]["trace"] == "trace.json.gz");
    CHECK(h.server.trace_cache().stats().parses == 1);
    json escape = stateless_call(h, 9, "ops_summary", {{"trace", "/etc/x.json"}});
    REQUIRE(tool_error(escape));
    CHECK(tool_text(escape).find("outside the allowed directories") != std::string::npos);
    // A legacy session does not see it either.
    h.initialize();
    CHECK(h.tool_result(6, "list_traces", json::object())["traces"].empty());
    CHECK(tool_error(h.call_tool(7, "ops_summary", {{"trace", handle}})));
  }

  TEST_CASE("issue 18: reports are keyed by the canonical arch id") {
    jarvis::TraceStore store;
    auto loaded =
        store.load(std::string(JARVIS_SOURCE_DIR) + "/examples/example_trace.json.gz").entry;
    CHECK(jarvis::canonical_arch_id("mi300x") == "MI300X");
    CHECK(jarvis::canonical_arch_id(std::string(JARVIS_SOURCE_DIR) + "/arch/MI300X.json") ==
          "MI300X");
    CHECK(jarvis::canonical_arch_id("none").empty());
    auto a = jarvis::trace_report(*loaded, "H100");
    auto b = jarvis::trace_report(*loaded, "h100");
    auto c = jarvis::trace_report(*loaded, std::string(JARVIS_SOURCE_DIR) + "/arch/H100.json");
    CHECK(a.get() == b.get());
    CHECK(a.get() == c.get());
  }

  TEST_CASE("point 8: tools never overwrite files they did not write, nor traces") {
    ScratchDir root;
    jarvis::testing::copy_example_trace(root / "trace.json.gz");
    jarvis::testing::write_text(root / "notes" / "category_findings" / "gemm_findings.md",
                                "the user's own notes");
    jarvis::testing::write_text(root / "mine.svg", "user svg");
    Harness h(root_options(root));
    h.initialize();
    REQUIRE_FALSE(tool_error(h.call_tool(1, "load_trace", {{"path", "trace.json.gz"}})));
    // write_findings over a file jarvis did not write.
    json over = h.call_tool(2, "write_findings",
                            {{"output_dir", "notes"}, {"category", "gemm"}, {"markdown", "# x"}});
    REQUIRE(tool_error(over));
    CHECK(tool_text(over).find("overwrite") != std::string::npos);
    CHECK(jarvis::testing::read_text(root / "notes/category_findings/gemm_findings.md") ==
          "the user's own notes");
    // ... unless asked to.
    CHECK_FALSE(tool_error(h.call_tool(3, "write_findings",
                                       {{"output_dir", "notes"},
                                        {"category", "gemm"},
                                        {"markdown", "# x"},
                                        {"overwrite", true},
                                        {"force", true}})));
    // A second write of our own file needs no flag.
    CHECK_FALSE(tool_error(h.call_tool(
        4, "write_findings",
        {{"output_dir", "notes"}, {"category", "gemm"}, {"markdown", "# y"}, {"force", true}})));
    // Outputs never land on a trace, whatever the flag says.
    CHECK(tool_error(
        h.call_tool(5, "gemm_roofline",
                    {{"trace", "t1"}, {"svg_path", "trace.json.gz"}, {"overwrite", true}})));
    CHECK(tool_error(h.call_tool(6, "gemm_roofline", {{"trace", "t1"}, {"svg_path", "mine.svg"}})));
    CHECK(jarvis::testing::read_text(root / "mine.svg") == "user svg");
    CHECK(tool_error(h.call_tool(7, "category_filter",
                                 {{"trace", "t1"},
                                  {
                                      "output_dir",
                                      ".",
                                  },
                                  {"overwrite", true}})));
    // A planted findings file is not a trace to load_trace.
    json planted =
        h.call_tool(8, "load_trace", {{"path", "notes/category_findings/gemm_findings.md"}});
    REQUIRE(tool_error(planted));
    CHECK(tool_text(planted).find("not a trace file name") != std::string::npos);
    // A new output directory gets the marker; running again into it is fine.
    CHECK_FALSE(
        tool_error(h.call_tool(9, "category_filter", {{"trace", "t1"}, {"output_dir", "out"}})));
    CHECK(fs::exists(root / "out" / ".jarvis-output"));
    CHECK_FALSE(
        tool_error(h.call_tool(10, "category_filter", {{"trace", "t1"}, {"output_dir", "out"}})));
    // A non-empty directory jarvis did not make needs overwrite.
    jarvis::testing::write_text(root / "userdir" / "keep.txt", "user data");
    CHECK(tool_error(
        h.call_tool(11, "category_filter", {{"trace", "t1"}, {"output_dir", "userdir"}})));
    CHECK(jarvis::testing::read_text(root / "userdir" / "keep.txt") == "user data");
    CHECK(jarvis::testing::read_text(root / "trace.json.gz").size() > 1000);
    answers_next_request(h);
  }

  TEST_CASE("point 11: zero-duration kernels give no NaN and no -32603") {
    ScratchDir root;
    jarvis::testing::write_text(root / "zero.json", R"({"deviceProperties":[{"name":"NVIDIA H100"}],
      "traceEvents":[
      {"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":0,"dur":10,"args":{"External id":1}},
      {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":1,"dur":2,"args":{"correlation":5,"External id":1}},
      {"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":5,"dur":0,"args":{"correlation":5,"External id":1,"device":0,"stream":7}}]})");
    Harness h(root_options(root));
    h.initialize();
    json reply = h.call_tool(1, "load_trace", {{"path", "zero.json"}});
    REQUIRE(reply.contains("result"));
    if (!tool_error(reply)) {
      const json& timeline = reply["result"]["structuredContent"]["gpu_timeline"];
      for (const auto& [timeline_type, row] : timeline.items()) {
        const std::string& type = timeline_type;  // clang 14 cannot capture a binding
        INFO(type);
        CHECK((row["percent"].is_null() || std::isfinite(row["percent"].get<double>())));
      }
      json ops = h.call_tool(2, "ops_summary", {{"trace", "t1"}});
      CHECK(ops.contains("result"));
    }
    answers_next_request(h);
  }

  TEST_CASE("point 11: compare with a sheet on one side only answers cleanly") {
    Harness h;
    h.initialize();
    json reply =
        h.call_tool(1, "compare",
                    {{"reference_trace", "conformance/h100_bert-small/trace.json.gz"},
                     {"target_trace", "conformance/vllm_decode_graph_capture/trace.json.gz"},
                     {"sheets", {"all"}}});
    REQUIRE(reply.contains("result"));  // never -32603
    INFO(reply.dump().substr(0, 400));
    CHECK_FALSE(tool_error(reply));  // one-sided sheets are skipped
    CHECK(reply["result"]["structuredContent"]["sheets"].is_array());
    answers_next_request(h);
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
