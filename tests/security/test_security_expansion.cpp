// Issue 63 point 1: kilobyte inputs that expand to gigabytes. Each hostile
// input is built here, byte by byte (a protobuf writer of a few lines; the
// field numbers are xla/tsl/profiler/protobuf/xplane.proto's and
// xla/service/hlo.proto's), and each must stop at the input's
// ExpansionBudget with an error that says so, or, where the file shares one
// expansion, load with it expanded once:
//   * one 1 MiB stat name referenced by 300,000 stats (2.3 MB -> 4.1 GB);
//   * a 2 MiB tf_op stat on an event metadata shared by 200,000 events;
//   * an HLO operand listed 1.5 M times whose shape has 60,000 dimensions;
//   * 2,000 iota device lists of 2^20 groups (71 KB -> 4.1 GB);
//   * one device list repeating its iota field 20,000 times (ran > 90 s);
//   * 3,000 nested nn.Modules over 3,000 allocations (70 KB -> 4.1 GB).
// Over MCP under `serve --max-memory 512M` the server's peak stays within
// the budget (half of it for one trace) plus what it held before.
#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "../../fuzz/protobuf_amplify.h"
#include "child_process.h"
#include "engine/engine.h"
#include "explore/input_format.h"
#include "mcp_harness.h"
#include "sanitizer.h"
#include "security_support.h"
#include "trace/expansion_budget.h"
#include "trace/loader.h"
#include "trace/module_path.h"
#include "xplane/space.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace fs = std::filesystem;
using jarvis::mcp::json;
using jarvis::testing::Child;
using jarvis::testing::proc_status_bytes;
using jarvis::testing::ScratchDir;
using jarvis::testing::write_text;
using Clock = std::chrono::steady_clock;

namespace {

constexpr uint64_t kMiB = 1 << 20;

// A protobuf message being written: varint and length-delimited fields.
struct Pb {
  std::string bytes;
  void varint(uint64_t v) {
    while (v >= 0x80) {
      bytes += static_cast<char>((v & 0x7f) | 0x80);
      v >>= 7;
    }
    bytes += static_cast<char>(v);
  }
  Pb& v(uint32_t field, uint64_t value) {
    varint(uint64_t{field} << 3);
    varint(value);
    return *this;
  }
  Pb& s(uint32_t field, std::string_view payload) {
    varint((uint64_t{field} << 3) | 2);
    varint(payload.size());
    bytes += payload;
    return *this;
  }
  Pb& m(uint32_t field, const Pb& message) { return s(field, message.bytes); }
  Pb& packed(uint32_t field, uint64_t value, size_t count) {
    Pb run;
    for (size_t k = 0; k < count; ++k) run.varint(value);
    return s(field, run.bytes);
  }
};

// xplane.proto: XSpace.planes 1; XPlane id 1, name 2, lines 3,
// event_metadata 4, stat_metadata 5; XLine id 1, name 2, timestamp_ns 3,
// events 4; XEvent metadata_id 1, offset_ps 2, duration_ps 3, stats 4;
// XStat metadata_id 1, int64 4, str 5, bytes 6; XEventMetadata id 1, name 2,
// stats 5; XStatMetadata id 1, name 2; map entries key 1, value 2.
Pb stat_metadata(int64_t id, std::string_view name) {
  return Pb().v(1, static_cast<uint64_t>(id)).m(2, Pb().v(1, static_cast<uint64_t>(id)).s(2, name));
}
Pb event_metadata(int64_t id, std::string_view name, const std::vector<Pb>& stats = {}) {
  Pb meta;
  meta.v(1, static_cast<uint64_t>(id)).s(2, name);
  for (const Pb& s : stats) meta.m(5, s);
  return Pb().v(1, static_cast<uint64_t>(id)).m(2, meta);
}
Pb str_stat(int64_t id, std::string_view text) {
  return Pb().v(1, static_cast<uint64_t>(id)).s(5, text);
}
// A line of `count` events of metadata 1, each with `stats` (already encoded).
Pb line_of(int64_t id, std::string_view name, size_t count, const std::string& stats = "") {
  Pb line;
  line.v(1, static_cast<uint64_t>(id)).s(2, name).v(3, 1000);
  Pb event;
  event.v(1, 1);  // offset and duration 0: left out, as protobuf leaves defaults
  event.bytes += stats;
  for (size_t k = 0; k < count; ++k) line.m(4, event);
  return line;
}

std::string xspace(const std::vector<Pb>& planes) {
  Pb space;
  for (const Pb& p : planes) space.m(1, p);
  return space.bytes;
}

// hlo.proto: HloProto.hlo_module 1; HloModuleProto name 1, computations 3;
// HloComputationProto name 1, instructions 2, id 5, root_id 6;
// HloInstructionProto name 1, opcode 2, shape 3, id 35, operand_ids 36,
// collective_device_list 87; ShapeProto element_type 2, dimensions 3;
// CollectiveDeviceListProto iota 2; IotaReplicaGroupListProto
// num_replica_groups 1, num_devices_per_group 2.
Pb shape(size_t dims) {
  return Pb().v(2, 11).packed(3, 1, dims);  // f32[1,1,...]
}
Pb instruction(std::string_view name, std::string_view opcode, int64_t id, const Pb& extra = {}) {
  Pb inst;
  inst.s(1, name).s(2, opcode).m(3, shape(1)).v(35, static_cast<uint64_t>(id));
  inst.bytes += extra.bytes;
  return inst;
}
Pb iota_list(uint64_t groups, uint64_t per_group) {
  return Pb().m(2, Pb().v(1, groups).v(2, per_group));
}

// A /host:metadata plane holding one program "jit_m(1)" of these
// instructions, and a GPU plane whose one kernel names instruction `op`.
std::string program_and_kernel(const std::vector<Pb>& instructions, std::string_view op) {
  Pb computation;
  computation.s(1, "main").v(5, 1);
  for (const Pb& i : instructions) computation.m(2, i);
  const Pb hlo = Pb().m(1, Pb().s(1, "jit_m").m(3, computation));
  Pb metadata;
  metadata.v(1, 0).s(2, "/host:metadata").m(5, stat_metadata(3, "Hlo Proto"));
  metadata.m(4, event_metadata(1, "jit_m(1)", {Pb().v(1, 3).s(6, hlo.bytes)}));
  Pb gpu;
  gpu.v(1, 1).s(2, "/device:GPU:0");
  gpu.m(5, stat_metadata(1, "hlo_op")).m(5, stat_metadata(2, "hlo_module"));
  gpu.m(4, event_metadata(1, "kernel_k"));
  Pb stats;
  stats.m(4, str_stat(1, op)).m(4, str_stat(2, "jit_m"));
  gpu.m(3, line_of(7, "Stream #7(Kernel)", 1, stats.bytes));
  return xspace({metadata, gpu});
}

// Loads `bytes` as a file of `dir` the way every tool does; the error text,
// "" when it loaded.
std::string load_error(const ScratchDir& dir, const std::string& name, const std::string& bytes) {
  const fs::path path = dir / name;
  write_text(path, bytes);
  try {
    (void)jarvis::load_any_trace(path.string());
    return "";
  } catch (const jarvis::TraceError& e) {
    return e.what();
  }
}

void check_refused(const std::string& error, const std::string& what, size_t file_bytes) {
  INFO(error);
  CHECK(error.find(what) != std::string::npos);
  CHECK(error.find("crafted or damaged") != std::string::npos);
  const uint64_t limit = jarvis::expansion_limit(file_bytes);
  CHECK(error.find(fmt::format("past the {:.1f} MiB", static_cast<double>(limit) / kMiB)) !=
        std::string::npos);
}

// One 1 MiB stat name, referenced by `count` stats on a host line.
std::string shared_stat_name(size_t count) {
  Pb plane;
  plane.v(1, 1).s(2, "/host:CPU").m(5, stat_metadata(1, std::string(kMiB, 'n')));
  plane.m(4, event_metadata(1, "op"));
  plane.m(3, line_of(1, "python3", count, Pb().m(4, Pb().v(1, 1).v(4, 7)).bytes));
  return xspace({plane});
}

// A 2 MiB tf_op on one event metadata, `count` events of it: each event
// keeps its stats as args.
std::string shared_tf_op(size_t count) {
  Pb plane;
  plane.v(1, 1).s(2, "/host:CPU").m(5, stat_metadata(2, "tf_op"));
  plane.m(4, event_metadata(1, "op", {str_stat(2, std::string(2 * kMiB, 't'))}));
  plane.m(3, line_of(1, "python3", count));
  return xspace({plane});
}

// An operand of 60,000 dimensions listed 1.5 M times by the kernel's
// instruction: its shape text (120 KB) once per operand.
std::string repeated_operand() {
  Pb ids;
  ids.packed(36, 1, 1'500'000);
  Pb big;
  big.s(1, "big").s(2, "parameter").m(3, shape(60'000)).v(35, 1);
  return program_and_kernel({big, instruction("k", "add", 2, ids)}, "k");
}

// 2,000 collectives, each an iota list of 2^20 groups of one device.
std::string iota_lists() {
  std::vector<Pb> insts;
  for (int k = 0; k < 2000; ++k)
    insts.push_back(
        instruction(fmt::format("c{}", k), "all-reduce", k + 1, Pb().m(87, iota_list(1 << 20, 1))));
  return program_and_kernel(insts, "c0");
}

// One device list giving its iota field 20,000 times.
std::string repeated_iota() {
  Pb list;
  for (int k = 0; k < 20'000; ++k) list.m(2, Pb().v(1, 1 << 20).v(2, 1));
  return program_and_kernel({instruction("c", "all-reduce", 1, Pb().m(87, list))}, "c");
}

// `depth` nested nn.Modules over `allocations` [memory] samples, all live
// at the end.
constexpr int kDepth = 3000, kAllocations = 3000;
std::string nested_modules_trace() {
  std::string ev = R"({"traceEvents":[)";
  for (int k = 0; k < kDepth; ++k)
    ev += fmt::format(
        R"({{"ph":"X","cat":"python_function","name":"nn.Module: Block_{}","pid":1,"tid":1,)"
        R"("ts":{},"dur":{}}},)",
        k, k, 2 * (kDepth + kAllocations) - 2 * k);
  for (int k = 0; k < kAllocations; ++k)
    ev += fmt::format(
        R"({{"ph":"i","s":"t","cat":"cpu_instant_event","name":"[memory]","pid":1,"tid":1,)"
        R"("ts":{},"args":{{"Total Reserved":1073741824,"Total Allocated":{},"Bytes":1024,)"
        R"("Addr":{},"Device Id":0,"Device Type":1}}}},)",
        kDepth + k, 1024 * (k + 1), 4096 + 1024 * k);
  ev.pop_back();
  return ev + "]}";
}

// `serve --stdio` confined to `root`, initialised; --max-memory as given.
struct Server {
  Child child;
  Server(const std::string& root, const std::string& max_memory)
      : child({JARVIS_BINARY, "serve", "--stdio", "--root", root, "--max-memory", max_memory}) {
    child.send(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":)"
               R"("2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})");
    REQUIRE_FALSE(child.read_line().empty());
    child.send(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
  }
  json call(int id, const std::string& tool, const json& args) {
    child.send(json{{"jsonrpc", "2.0"},
                    {"id", id},
                    {"method", "tools/call"},
                    {"params", {{"name", tool}, {"arguments", args}}}}
                   .dump());
    std::string line = child.read_line(120000);
    REQUIRE_FALSE(line.empty());
    return json::parse(line);
  }
  uint64_t peak() const { return proc_status_bytes(child.pid(), "VmHWM"); }
  uint64_t now() const { return proc_status_bytes(child.pid(), "VmRSS"); }
};

}  // namespace

TEST_SUITE("mcp_security") {
  TEST_CASE("issue 63 point 1: the expansion budget's limit and its error") {
    // The limit scales with the input above the floor, and a server's
    // --max-memory caps it at half.
    CHECK(jarvis::expansion_limit(1000) == jarvis::kExpansionFloorBytes);
    CHECK(jarvis::expansion_limit(100 * kMiB) == 100 * kMiB * jarvis::kExpansionFactor);
    jarvis::set_process_memory_limit(512 * kMiB);
    CHECK(jarvis::expansion_limit(1000) == 256 * kMiB);
    CHECK(jarvis::expansion_limit(100 * kMiB) == 256 * kMiB);
    jarvis::set_process_memory_limit(0);
    jarvis::ExpansionBudget budget("t.xplane.pb", 10, 100);
    budget.charge(60, "a");
    CHECK_THROWS_WITH_AS(budget.charge(41, "the names"),
                         doctest::Contains("t.xplane.pb: the names would take"),
                         jarvis::TraceError);
    CHECK(budget.used() == 60);
    CHECK_NOTHROW(budget.charge(40, "the rest"));
  }

  TEST_CASE("issue 63 point 1: XPlane strings referenced far more often than stored") {
    ScratchDir dir;
    {
      // One 1 MiB stat name, 300,000 stats naming it: 4.1 GB once copied.
      const std::string file = shared_stat_name(300'000);
      CHECK(file.size() < 4 * kMiB);
      auto start = Clock::now();
      check_refused(load_error(dir, "names.xplane.pb", file), "stat metadata names", file.size());
      CHECK(Clock::now() - start < std::chrono::seconds(10 * kSanitizerSlowdown));
    }
    {
      const std::string file = shared_tf_op(200'000);
      CHECK(file.size() < 4 * kMiB);
      check_refused(load_error(dir, "tf_op.xplane.pb", file), "XPlane stats copied onto events",
                    file.size());
    }
    {
      // The same file shape at an honest scale loads, every event with the
      // stat: the budget is no cap on real files.
      const std::string file = shared_stat_name(20);
      CHECK(load_error(dir, "few.xplane.pb", file).empty());
    }
  }

  TEST_CASE("issue 63 point 1: HLO operands and iota device lists expand within the budget") {
    ScratchDir dir;
    {
      const std::string file = repeated_operand();
      CHECK(file.size() < 2 * kMiB);
      check_refused(load_error(dir, "operands.xplane.pb", file), "HLO operand shapes", file.size());
    }
    {
      const std::string file = iota_lists();
      CHECK(file.size() < 128 * 1024);
      check_refused(load_error(dir, "iota.xplane.pb", file), "iota replica group lists",
                    file.size());
    }
    {
      // The last iota field counts (protobuf), expanded once: the file loads.
      const std::string file = repeated_iota();
      const fs::path path = dir / "repeated.xplane.pb";
      write_text(path, file);
      auto start = Clock::now();
      jarvis::xplane::Space space = jarvis::xplane::load_space(path.string());
      CHECK(Clock::now() - start < std::chrono::seconds(10 * kSanitizerSlowdown));
      REQUIRE(space.hlo_modules.size() == 1);
      const auto* inst = space.hlo_modules[0].find("c");
      REQUIRE(inst != nullptr);
      CHECK(inst->replica_groups.size() == size_t{1} << 20);
      CHECK(inst->replica_groups.back() == std::vector<int64_t>{(1 << 20) - 1});
    }
  }

  TEST_CASE("XPlane event times past 2^63 ns are a TraceError, not an overflow") {
    // fuzz_xplane's find: a line timestamp of INT64_MAX plus a 500 ps offset
    // overflowed while rounding picoseconds (UBSan). The start, and the end a
    // later sum computes, must both fit.
    ScratchDir dir;
    constexpr uint64_t kMax = static_cast<uint64_t>(INT64_MAX);
    struct Case {
      uint64_t line_ns, offset_ps, duration_ps;
    };
    for (const Case c :
         {Case{kMax, 500, 0}, Case{kMax - 10, 0, 11'000}, Case{kMax - 1'000'000, kMax, 0},
          Case{kMax - 5, 999'999'999'999'999'999, 0}}) {
      CAPTURE(c.line_ns);
      CAPTURE(c.offset_ps);
      Pb plane;
      plane.v(1, 1).s(2, "/host:CPU").m(4, event_metadata(1, "op"));
      Pb event;
      event.v(1, 1).v(2, c.offset_ps).v(3, c.duration_ps);
      plane.m(3, Pb().v(1, 1).s(2, "python").v(3, c.line_ns).m(4, event));
      const std::string error = load_error(dir, "late.xplane.pb", xspace({plane}));
      CHECK(error.find("time is out of range") != std::string::npos);
    }
    // The largest time that fits still loads, rounded half up from ps.
    Pb plane;
    plane.v(1, 1).s(2, "/host:CPU").m(4, event_metadata(1, "op"));
    Pb event;
    event.v(1, 1).v(2, 1'499).v(3, 500);
    plane.m(3, Pb().v(1, 1).s(2, "python").v(3, kMax - 2).m(4, event));
    CHECK(load_error(dir, "edge.xplane.pb", xspace({plane})).empty());
  }

  TEST_CASE("issue 63 point 1: 3,000 nested modules over 3,000 allocations") {
    // Each allocation's module path named every enclosing module (60 KB
    // each, built by prepending: quadratic). Now the middle is elided.
    const std::string ev = nested_modules_trace();
    CHECK(ev.size() < 1024 * 1024);  // 70 KB gzipped
    auto start = Clock::now();
    const jarvis::Trace trace = jarvis::load_trace_from_json(ev);
    const jarvis::engine::MemoryAnalysis analysis = jarvis::engine::analyse_memory(trace);
    CHECK(Clock::now() - start < std::chrono::seconds(10 * kSanitizerSlowdown));
    const auto& device = analysis.primary();
    REQUIRE(device.live_at_peak.size() == kAllocations);
    // Expected from the nesting built above: 16 outermost, the count of the
    // elided, 16 innermost.
    std::string expected;
    for (int k = 0; k < 16; ++k) expected += fmt::format("Block_{}/", k);
    expected += fmt::format("...({} more)", kDepth - 32);
    for (int k = kDepth - 16; k < kDepth; ++k) expected += fmt::format("/Block_{}", k);
    for (const auto& a : device.live_at_peak) {
      CHECK(a.module_path == expected);
      CHECK(a.module == "Block");
    }
    // A path within the bound is every frame, as before.
    CHECK(jarvis::join_module_path(3, [](size_t k) { return k == 1 ? "B_1" : "A_0"; }) ==
          "A_0/B_1/A_0");
  }

  TEST_CASE("issue 63 point 1: over MCP under --max-memory 512M every peak stays in budget") {
    // Each attack in a server of its own (a peak is per process): the tool
    // call is refused, or answers, and the server's peak resident memory
    // stays within what it held before plus the budget of one input (half
    // of 512M) plus slack for the file's bytes and the server's own heap.
    struct Attack {
      const char* name;
      std::string bytes;
      const char* tool;
      bool refused;
    };
    const std::vector<Attack> attacks = {
        {"names.xplane.pb", shared_stat_name(300'000), "load_trace", true},
        {"tf_op.xplane.pb", shared_tf_op(200'000), "load_trace", true},
        {"operands.xplane.pb", repeated_operand(), "load_trace", true},
        {"iota.xplane.pb", iota_lists(), "load_trace", true},
        {"repeated_iota.xplane.pb", repeated_iota(), "load_trace", false},
        {"nested_modules.json", nested_modules_trace(), "memory_summary", false},
    };
    ScratchDir dir;
    const uint64_t slack = JARVIS_ASAN ? 512 * kMiB : 128 * kMiB;
    for (const Attack& attack : attacks) {
      const std::string name = attack.name;
      CAPTURE(name);
      write_text(dir / attack.name, attack.bytes);
      Server server(dir.str(), "512M");
      const uint64_t before = server.now();
      const std::string key = std::string(attack.tool) == "load_trace" ? "path" : "trace";
      json r = server.call(2, attack.tool, {{key, (dir / attack.name).string()}});
      INFO(r.dump().substr(0, 600));
      CHECK(r["result"].value("isError", false) == attack.refused);
      if (attack.refused)
        CHECK(r.dump().find("half of the server's --max-memory") != std::string::npos);
      const uint64_t grew = server.peak() - before;
      MESSAGE(name, " (", attack.bytes.size() / 1024, " KiB): peak grew by ", grew / kMiB, " MiB");
      CHECK(grew < 256 * kMiB + slack);
      json again = server.call(3, "list_traces", json::object());
      CHECK(again.contains("result"));
    }
  }
}

TEST_SUITE("mcp_security") {
  TEST_CASE("issue 63 point 2: over MCP under --max-memory 512M SQL stays within its heap") {
    // The attacker's queries, each in a server of its own: 80 values of
    // printf('%.*c', 60e6) (5.2 GB before) and ORDER BY random() over a
    // million generated rows (2.8 GB of temp files before). SQLite's heap
    // is a quarter of --max-memory here (128 MiB): each query answers or
    // stops with the heap's error, and the server's peak stays within it.
    const std::string example = std::string(JARVIS_SOURCE_DIR) + "/examples/example_trace.json.gz";
    const std::vector<std::string> queries = {
        "SELECT length(printf('%.*c', 60000000, 'x')) FROM (WITH RECURSIVE n(i) AS (SELECT 1 "
        "UNION ALL SELECT i + 1 FROM n WHERE i < 80) SELECT i FROM n)",
        "SELECT i FROM (WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < "
        "1000000) SELECT i, printf('%.*c', 100, 'y') AS pad FROM n) ORDER BY random()"};
    const uint64_t slack = JARVIS_ASAN ? 512 * kMiB : 96 * kMiB;
    for (const std::string& sql : queries) {
      CAPTURE(sql);
      Server server(std::string(JARVIS_SOURCE_DIR) + "/examples", "512M");
      json loaded = server.call(2, "load_trace", {{"path", example}});
      REQUIRE_FALSE(loaded["result"].value("isError", false));
      const std::string handle = loaded["result"]["structuredContent"]["trace"];
      const uint64_t before = server.now();
      json r =
          server.call(3, "query_sql", {{"trace", handle}, {"sql", sql}, {"timeout_ms", 30000}});
      INFO(r.dump().substr(0, 400));
      REQUIRE(r.contains("result"));
      if (r["result"].value("isError", false))
        CHECK(r.dump().find("more memory than SQLite may use here") != std::string::npos);
      const uint64_t grew = server.peak() - before;
      MESSAGE(sql.substr(0, 40), "...: peak grew by ", grew / kMiB, " MiB");
      CHECK(grew < 128 * kMiB + slack);
      CHECK(server.call(4, "list_traces", json::object()).contains("result"));
    }
  }
}

TEST_SUITE("fuzz_support") {
  TEST_CASE("fuzz_xplane's amplifying mutation keeps the wire format and grows the input") {
    // The mutation the XPlane fuzzer applies to a quarter of its inputs
    // (fuzz/protobuf_amplify.h): every result must still parse as protobuf
    // fields (lengths re-encoded all the way up) unless cut at max_size, and
    // repeats, large varints and grown payloads must all occur.
    Pb plane;
    plane.v(1, 1).s(2, "/host:CPU").m(5, stat_metadata(1, "hlo_op"));
    plane.m(4, event_metadata(1, "op", {str_stat(1, "fusion.1")}));
    plane.m(3, line_of(1, "python3", 3, Pb().m(4, Pb().v(1, 1).v(4, 7)).bytes));
    const std::string seed = xspace({plane});
    constexpr size_t kMax = 1 << 20;
    REQUIRE(seed.size() < kMax);
    size_t grown = 0, parsed = 0, tried = 0;
    for (unsigned s = 0; s < 400; ++s) {
      std::vector<uint8_t> buf(kMax);
      std::copy(seed.begin(), seed.end(), buf.begin());
      const size_t n = jarvis::fuzz::amplify(buf.data(), seed.size(), kMax, s);
      if (n == 0) continue;  // the picked field could not take that mutation
      ++tried;
      grown += n > seed.size();
      std::string_view out(reinterpret_cast<const char*>(buf.data()), n);
      std::vector<jarvis::fuzz::WireField> fields;
      if (n < kMax) {
        CHECK(jarvis::fuzz::parse_fields(out, 0, n, 0, fields));
        ++parsed;
      }
    }
    MESSAGE(tried, " mutations, ", grown, " grew the input, ", parsed, " parsed back");
    CHECK(tried > 100);
    CHECK(grown > tried / 4);
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
