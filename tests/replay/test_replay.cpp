// make_replay: op selection and trace timings against TraceLens's
// ops_unique_args reference, the zip writer, the CLI, and a real run of the
// generated runner with Debian's PyTorch on CPU.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "golden.h"
#include "replay/replay.h"
#include "replay/replay_zip.h"
#include "report/table.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace jarvis;

namespace {

const std::string kBert = jarvis::golden::shared_dir() + "/conformance/h100_bert-small";

// UIDs in h100_bert-small: the first aten::addmm, aten::_scaled_dot_product_flash_attention
// and aten::add calls (positions in traceEvents).
constexpr Uid kAddmmUid = 48;
constexpr Uid kSdpaUid = 79;
constexpr Uid kAddUid = 19;

struct Loaded {
  Trace trace;
  CallTree tree;
  explicit Loaded(const std::string& path) : trace(load_trace(path)), tree(trace) {}
};

const Loaded& bert() {
  static const Loaded loaded(kBert + "/trace.json.gz");
  return loaded;
}

fs::path fresh_dir(const std::string& tag) {
  static std::atomic<int> counter{0};
  fs::path dir =
      fs::temp_directory_path() /
      ("jarvis_replay_" + tag + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  fs::remove_all(dir);
  return dir;
}

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The ops_unique_args reference row of (name, Input Dims repr).
struct RefRow {
  int64_t count = 0;
  double subtree_mean = 0;
  double subtree_sum = 0;
};

RefRow reference_row(const std::string& name, const std::string& dims) {
  Table t = read_csv_file(kBert + "/perf_report_csvs/ops_unique_args.csv");
  for (size_t r = 0; r < t.rows.size(); ++r) {
    if (t.at(r, "name").text() != name || t.at(r, "Input Dims").text() != dims) continue;
    return {std::stoll(t.at(r, "operation_count").text()),
            std::stod(t.at(r, "total_subtree_kernel_time_mean").text()),
            std::stod(t.at(r, "total_subtree_kernel_time_sum").text())};
  }
  FAIL("no reference row for " << name << " " << dims);
  return {};
}

// Reads a zip archive back (central directory -> local headers -> inflate).
std::vector<replay::ZipMember> read_zip(const std::string& zip) {
  auto u16 = [&](size_t at) {
    return static_cast<uint16_t>(static_cast<uint8_t>(zip[at]) |
                                 (static_cast<uint8_t>(zip[at + 1]) << 8));
  };
  auto u32 = [&](size_t at) { return static_cast<uint32_t>(u16(at) | (u16(at + 2) << 16)); };
  REQUIRE(zip.size() >= 22);
  size_t eocd = zip.size() - 22;
  REQUIRE(u32(eocd) == 0x06054b50u);
  size_t n = u16(eocd + 10);
  size_t at = u32(eocd + 16);
  std::vector<replay::ZipMember> out;
  for (size_t k = 0; k < n; ++k) {
    REQUIRE(u32(at) == 0x02014b50u);
    uint16_t method = u16(at + 10);
    uint32_t crc = u32(at + 16), csize = u32(at + 20), usize = u32(at + 24);
    uint16_t name_len = u16(at + 28), extra = u16(at + 30), comment = u16(at + 32);
    size_t local = u32(at + 42);
    std::string name = zip.substr(at + 46, name_len);
    REQUIRE(u32(local) == 0x04034b50u);
    size_t data_at = local + 30 + u16(local + 26) + u16(local + 28);
    std::string packed = zip.substr(data_at, csize);
    std::string data;
    if (method == 0) {
      data = packed;
    } else {
      REQUIRE(method == 8);
      data.resize(usize);
      z_stream zs{};
      REQUIRE(inflateInit2(&zs, -MAX_WBITS) == Z_OK);
      zs.next_in = reinterpret_cast<Bytef*>(packed.data());
      zs.avail_in = static_cast<uInt>(packed.size());
      zs.next_out = reinterpret_cast<Bytef*>(data.data());
      zs.avail_out = static_cast<uInt>(data.size());
      CHECK(inflate(&zs, Z_FINISH) == Z_STREAM_END);
      inflateEnd(&zs);
    }
    CHECK(data.size() == usize);
    CHECK(crc32(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(data.data()),
                static_cast<uInt>(data.size())) == crc);
    out.push_back({name, data});
    at += 46 + name_len + extra + comment;
  }
  return out;
}

bool has_debian_torch() {
  return std::system("/usr/bin/python3 -c 'import torch' > /dev/null 2>&1") == 0;
}

}  // namespace

TEST_SUITE("replay") {
  TEST_CASE("zip archive round-trips through deflate and store") {
    std::string repetitive(5000, 'a');
    for (size_t k = 0; k < repetitive.size(); k += 7) repetitive[k] = 'b';
    std::vector<replay::ZipMember> members = {
        {"pkg/a.txt", repetitive}, {"pkg/b.bin", "x"}, {"pkg/empty", ""}};
    std::string zip = replay::make_zip(members);
    CHECK(zip.size() < repetitive.size());  // the big member was deflated
    auto back = read_zip(zip);
    REQUIRE(back.size() == members.size());
    for (size_t k = 0; k < members.size(); ++k) {
      CHECK(back[k].name == members[k].name);
      CHECK(back[k].data == members[k].data);
    }
    // Fixed timestamps: the same members give the same bytes, whenever written.
    CHECK(replay::make_zip(members) == zip);
    // ... because every member is dated 1980-01-01 00:00 (local header offsets 10 and 12).
    auto u16 = [&zip](size_t at) {
      return static_cast<unsigned>(static_cast<unsigned char>(zip[at])) |
             static_cast<unsigned>(static_cast<unsigned char>(zip[at + 1])) << 8;
    };
    CHECK(u16(10) == 0u);
    CHECK(u16(12) == ((1u << 5) | 1u));
    CHECK_THROWS_AS(replay::make_zip({{"", "x"}}), std::runtime_error);
  }

  TEST_CASE("Input Dims filters parse from JSON and Python tuple text") {
    PyValue a = replay::parse_dims("[[8944, 1024], [1024, 2816]]");
    PyValue b = replay::parse_dims("((8944, 1024), (1024, 2816))");
    CHECK(a == b);
    CHECK(a.repr_tuple() == "((8944, 1024), (1024, 2816))");
    CHECK(replay::parse_dims("((16,), ())").repr_tuple() == "((16,), ())");
    CHECK_THROWS_AS(replay::parse_dims("[[1, 2]"), replay::ReplayError);
    CHECK_THROWS_AS(replay::parse_dims("[[1.5]]"), replay::ReplayError);
    // Issue 64 point 7: the form jarvis prints a GEMM's operands in
    // (insights' titles, gemm_roofline), pasted as it is.
    CHECK(replay::parse_dims("(8944, 1024) x (1024, 2816)") == a);
    CHECK(replay::parse_dims("(4, 8944, 1024) x (4, 1024, 2816) x ()").repr_tuple() ==
          "((4, 8944, 1024), (4, 1024, 2816), ())");
    CHECK_THROWS_AS(replay::parse_dims("(8944, 1024) x (1024, oops)"), replay::ReplayError);
  }

  TEST_CASE("UID selection: counts and GPU times equal TraceLens ops_unique_args") {
    const Loaded& b = bert();
    auto plan = replay::plan_replay(
        b.trace, b.tree, replay::Selection::by_uids({kAddmmUid, kSdpaUid, kAddUid, kAddmmUid}));
    REQUIRE(plan.ops.size() == 3);  // the repeated UID is merged
    CHECK(plan.ops[0].name == "aten::addmm");
    CHECK(plan.ops[0].category == "GEMM");
    CHECK(plan.ops[1].name == "aten::_scaled_dot_product_flash_attention");
    CHECK(plan.ops[1].category == "SDPA_fwd");
    CHECK(plan.ops[2].name == "aten::add");
    CHECK(plan.ops[2].category == "elementwise");

    RefRow addmm = reference_row("aten::addmm", "((512,), (141, 512), (512, 512), (), ())");
    CHECK(plan.ops[0].uids.size() == static_cast<size_t>(addmm.count));
    REQUIRE(plan.ops[0].gpu_time.has_value());
    CHECK(plan.ops[0].gpu_time->mean == doctest::Approx(addmm.subtree_mean).epsilon(1e-9));
    CHECK(plan.ops[0].gpu_time->sum == doctest::Approx(addmm.subtree_sum).epsilon(1e-9));
    CHECK(plan.ops[0].uids.front() == kAddmmUid);

    // SDPA launches through aten::_flash_attention_forward: same kernels, same time.
    RefRow flash = reference_row("aten::_flash_attention_forward",
                                 "((1, 141, 8, 64), (1, 141, 8, 64), (1, 141, 8, 64), (), (), (), "
                                 "(), (), (), (), (), (), (), (), ())");
    CHECK(plan.ops[1].uids.size() == static_cast<size_t>(flash.count));
    REQUIRE(plan.ops[1].gpu_time.has_value());
    CHECK(plan.ops[1].gpu_time->mean == doctest::Approx(flash.subtree_mean).epsilon(1e-9));
    CHECK_FALSE(plan.ops[1].kernels.empty());

    RefRow add = reference_row("aten::add", "((1, 141, 512), (1, 141, 512), ())");
    CHECK(plan.ops[2].uids.size() == static_cast<size_t>(add.count));
    CHECK(plan.ops[2].gpu_time->mean == doctest::Approx(add.subtree_mean).epsilon(1e-9));
    for (const auto& op : plan.ops) {
      CHECK(op.not_replayable.empty());
      CHECK(op.tracelens_rejects.empty());
    }
  }

  TEST_CASE("op-name and category selections rank by GPU time") {
    const Loaded& b = bert();
    auto all = replay::plan_replay(b.trace, b.tree, replay::Selection::by_op("aten::addmm"));
    Table ref = read_csv_file(kBert + "/perf_report_csvs/ops_unique_args.csv");
    std::vector<std::string> ref_dims;  // reference rows are sorted by direct time sum
    for (size_t r = 0; r < ref.rows.size(); ++r)
      if (ref.at(r, "name").text() == "aten::addmm")
        ref_dims.push_back(ref.at(r, "Input Dims").text());
    REQUIRE(all.ops.size() == ref_dims.size());
    for (size_t k = 0; k < ref_dims.size(); ++k)
      CHECK(all.ops[k].input_dims.repr_tuple() == ref_dims[k]);

    auto one = replay::plan_replay(
        b.trace, b.tree,
        replay::Selection::by_op("aten::addmm",
                                 replay::parse_dims("((2048,), (141, 512), (512, 2048), (), ())")));
    REQUIRE(one.ops.size() == 1);
    CHECK(one.ops[0].uids.size() == 4);

    auto gemm = replay::plan_replay(b.trace, b.tree, replay::Selection::by_category("gemm", 2));
    REQUIRE(gemm.ops.size() == 2);
    CHECK(gemm.ops[0].input_dims.repr_tuple() == ref_dims[0]);
    CHECK(gemm.ops[1].input_dims.repr_tuple() == ref_dims[1]);

    auto sdpa = replay::plan_replay(b.trace, b.tree, replay::Selection::by_category("SDPA_fwd", 5));
    REQUIRE(sdpa.ops.size() == 1);
    CHECK(sdpa.ops[0].name == "aten::_scaled_dot_product_flash_attention");
  }

  TEST_CASE("bad selections name the problem") {
    const Loaded& b = bert();
    auto message = [&](const replay::Selection& s) {
      try {
        replay::plan_replay(b.trace, b.tree, s);
      } catch (const replay::ReplayError& e) {
        return std::string(e.what());
      }
      return std::string("no error");
    };
    CHECK(message(replay::Selection::by_uids({99999999})).find("out of range") !=
          std::string::npos);
    // A kernel UID is answered with the UID of the op that launched it.
    Uid kernel = kNoUid;
    for (Uid u = 0; u < b.trace.events.size() && kernel == kNoUid; ++u)
      if (b.trace.events[u].cat == Cat::Kernel && b.tree.nearest_cpu_op(u) != kNoUid) kernel = u;
    REQUIRE(kernel != kNoUid);
    CHECK(message(replay::Selection::by_uids({kernel})).find("the op that launched it is UID") !=
          std::string::npos);
    CHECK(message(replay::Selection::by_op("aten::nope")).find("no cpu_op named") !=
          std::string::npos);
    CHECK(message(replay::Selection::by_op("addm")).find("aten::addmm") != std::string::npos);
    CHECK(message(replay::Selection::by_op("aten::addmm", replay::parse_dims("[[1]]")))
              .find("recorded Input Dims are") != std::string::npos);
    CHECK(message(replay::Selection::by_category("NOPE", 3)).find("GEMM") != std::string::npos);
    CHECK(message(replay::Selection::by_category("GEMM", 0)).find("at least 1") !=
          std::string::npos);
  }

  TEST_CASE("tensor lists and int64 tensors are flagged") {
    // cat takes a tensor list (never rebuildable); embedding has int64 indices
    // ("long int"), which TraceLens's replayer refuses but jarvis's runner builds.
    const char* json_text = R"({"traceEvents": [
      {"ph": "X", "cat": "cpu_op", "name": "aten::cat", "pid": 1, "tid": 1, "ts": 10, "dur": 5,
       "args": {"External id": 1, "Input Dims": [[[2, 3], [2, 3]], []], "Input type": ["TensorList", "Scalar"],
                "Input Strides": [[[3, 1], [3, 1]], []], "Concrete Inputs": ["", "0"]}},
      {"ph": "X", "cat": "cpu_op", "name": "aten::embedding", "pid": 1, "tid": 1, "ts": 20, "dur": 5,
       "args": {"External id": 2, "Input Dims": [[100, 8], [4, 5], [], [], []],
                "Input type": ["float", "long int", "Scalar", "Scalar", "Scalar"],
                "Input Strides": [[8, 1], [5, 1], [], [], []], "Concrete Inputs": ["", "", "-1", "False", "False"]}},
      {"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 1, "tid": 1, "ts": 30, "dur": 5,
       "args": {"External id": 3}}
    ]})";
    Trace t = load_trace_from_json(json_text);
    CallTree tree(t);
    auto plan = replay::plan_replay(t, tree, replay::Selection::by_uids({0, 1, 2}));
    REQUIRE(plan.ops.size() == 3);
    CHECK(plan.ops[0].not_replayable.find("tensor list") != std::string::npos);
    CHECK(plan.ops[1].not_replayable.empty());
    CHECK(plan.ops[1].tracelens_rejects.find("long int") != std::string::npos);
    CHECK(plan.ops[2].not_replayable.find("record_shapes") != std::string::npos);
    CHECK_FALSE(plan.ops[0].gpu_time.has_value());
    json ir = replay::replay_ir_json(t, plan);
    CHECK(ir["ops"][1]["args"][1]["kind"] == "tensor");
    CHECK(ir["ops"][1]["args"][1]["dtype"] == "long int");
    CHECK(ir["ops"][1]["args"][2]["value"] == -1);
    CHECK(ir["ops"][1]["args"][3]["value"] == false);
    CHECK(ir["ops"][0]["args"].empty());
    CHECK(ir["ops"][0]["not_replayable_reason"].is_string());
  }

  TEST_CASE("package files: IR, runner, README and zip agree") {
    const Loaded& b = bert();
    fs::path dir = fresh_dir("pkg");
    auto result = replay::make_replay(
        b.trace, b.tree, replay::Selection::by_uids({kAddmmUid, kSdpaUid, kAddUid}), dir.string());
    json ir = json::parse(slurp(result.files.ir));
    CHECK(ir["format"] == "jarvis-replay-ir");
    CHECK(ir["source_trace"] == "trace.json.gz");
    REQUIRE(ir["ops"].size() == 3);
    const json& addmm = ir["ops"][0];
    CHECK(addmm["Input Dims"] == json::parse("[[512], [141, 512], [512, 512], [], []]"));
    CHECK(addmm["Input Strides"] == json::parse("[[1], [512, 1], [1, 512], [], []]"));
    CHECK(addmm["Concrete Inputs"] == json::parse(R"(["", "", "", "1", "1"])"));
    CHECK(addmm["count"] == 17);
    CHECK(addmm["args"][2]["strides"] == json::parse("[1, 512]"));
    CHECK(addmm["args"][3]["value"] == 1);
    std::string runner = slurp(result.files.runner);
    CHECK(runner == replay::runner_script());
    CHECK(runner.rfind("#!/usr/bin/env python3\n", 0) == 0);
    std::string readme = slurp(result.files.readme);
    CHECK(readme.find("aten::_scaled_dot_product_flash_attention") != std::string::npos);
    auto members = read_zip(slurp(result.files.zip));
    REQUIRE(members.size() == 3);
    CHECK(members[0].name == "replay_package/replay_ir.json");
    CHECK(members[0].data == slurp(result.files.ir));
    CHECK(members[1].data == runner);
    CHECK(members[2].data == readme);
    json summary = replay::replay_summary_json(result);
    CHECK(summary["op_count"] == 3);
    CHECK(summary["replayable_count"] == 3);
    fs::remove_all(dir);
  }

  TEST_CASE("the generated runner replays GEMM, SDPA and elementwise ops on CPU") {
    // The runner is the product here: without torch the test fails, never skips.
    REQUIRE_MESSAGE(has_debian_torch(),
                    "/usr/bin/python3 cannot import torch: install python3-torch (Debian)");
    const Loaded& b = bert();
    fs::path dir = fresh_dir("run");
    auto result = replay::make_replay(
        b.trace, b.tree, replay::Selection::by_uids({kAddmmUid, kSdpaUid, kAddUid}), dir.string());
    fs::path out = dir / "stdout.txt", results = dir / "results.json",
             tl = dir / "tracelens_ir.json";
    std::string cmd = "cd /tmp && /usr/bin/python3 " + result.files.runner +
                      " --device cpu --warmup 1 --iters 2 --results-json " + results.string() +
                      " --emit-tracelens-ir " + tl.string() + " > " + out.string() + " 2>&1";
    int rc = std::system(cmd.c_str());
    std::string text = slurp(out);
    INFO(text);
    REQUIRE(rc == 0);

    // The printed table: one row per op with a numeric replay time.
    std::istringstream lines(text);
    std::string line;
    std::vector<std::vector<std::string>> rows;
    while (std::getline(lines, line)) {
      std::vector<std::string> cells;
      std::string cell;
      std::istringstream split(line);
      while (std::getline(split, cell, '|')) {
        cell.erase(0, cell.find_first_not_of(' '));
        cell.erase(cell.find_last_not_of(' ') + 1);
        cells.push_back(cell);
      }
      if (cells.size() == 11 && cells[0] != "id") rows.push_back(cells);
    }
    REQUIRE(rows.size() == 3);
    const char* names[] = {"aten::addmm", "aten::_scaled_dot_product_flash_attention", "aten::add"};
    for (size_t k = 0; k < 3; ++k) {
      CHECK(rows[k][1] == names[k]);
      CHECK(rows[k][10] == "ok");
      CHECK(rows[k][9] == "cpu-wall");     // timing method on CPU
      CHECK(std::stod(rows[k][6]) > 0.0);  // replay_us
      CHECK(std::stod(rows[k][8]) > 0.0);  // host_us
      CHECK(std::stod(rows[k][5]) ==
            doctest::Approx(result.plan.ops[k].gpu_time->mean).epsilon(0.01));
    }
    CHECK(text.find("replayed 3 of 3 ops, 0 failed") != std::string::npos);

    json res = json::parse(slurp(results));
    REQUIRE(res["ops"].size() == 3);
    for (const json& op : res["ops"]) {
      CHECK(op["status"] == "ok");
      CHECK(op["iters"] == 2);
      CHECK(op["replay_us_mean"].get<double>() > 0.0);
      CHECK(op["timing_method"] == "cpu-wall");
      CHECK(op["replay_gpu_us"].is_null());  // no GPU: host time only
      CHECK(op["replay_host_us"]["samples"] == 2);
      CHECK(op["ratio"].get<double>() == doctest::Approx(op["replay_us_median"].get<double>() /
                                                         op["trace_gpu_us_mean"].get<double>()));
    }
    // Old PyTorch has no SDPA operator: the runner says how it computed it.
    std::string sdpa_notes = res["ops"][1]["notes"].dump();
    CHECK(sdpa_notes.find("scaled_dot_product_attention") != std::string::npos);

    // The matched addmm call in TraceLens's IR form (spec §2.4): three tensors
    // positional, beta/alpha as keyword floats.
    json tl_ir = json::parse(slurp(tl));
    REQUIRE(tl_ir.size() >= 2);
    CHECK(tl_ir[0]["op_name"] == "aten::addmm");
    const json& pos = tl_ir[0]["replay_ir"]["list_pos_args"];
    REQUIRE(pos.size() == 3);
    CHECK(pos[0]["arg_name"] == "self");
    CHECK(pos[2]["value"]["strides"] == json::parse("[1, 512]"));
    CHECK(pos[2]["value"]["init"] == "normal");
    const json& kw = tl_ir[0]["replay_ir"]["list_kwargs"];
    REQUIRE(kw.size() == 2);
    CHECK(kw[0]["arg_name"] == "beta");
    CHECK(kw[0]["value"].is_number_float());
    CHECK(kw[0]["value"].get<double>() == 1.0);
    CHECK(tl_ir[0]["count"] == 17);
    fs::remove_all(dir);
  }

  TEST_CASE("the runner reports unreplayable ops, int64 tensors and dtype fallbacks") {
    // The runner is the product here: without torch the test fails, never skips.
    REQUIRE_MESSAGE(has_debian_torch(),
                    "/usr/bin/python3 cannot import torch: install python3-torch (Debian)");
    const char* json_text = R"({"traceEvents": [
      {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 5,
       "args": {"External id": 1, "Input Dims": [[64, 32], [32, 16]], "Input type": ["c10::Half", "c10::Half"],
                "Input Strides": [[32, 1], [1, 32]], "Concrete Inputs": ["", ""]}},
      {"ph": "X", "cat": "cpu_op", "name": "aten::cat", "pid": 1, "tid": 1, "ts": 20, "dur": 5,
       "args": {"External id": 2, "Input Dims": [[[2, 3], [2, 3]], []], "Input type": ["TensorList", "Scalar"],
                "Input Strides": [[[3, 1], [3, 1]], []], "Concrete Inputs": ["", "0"]}},
      {"ph": "X", "cat": "cpu_op", "name": "aten::embedding", "pid": 1, "tid": 1, "ts": 30, "dur": 5,
       "args": {"External id": 3, "Input Dims": [[100, 8], [4, 5], [], [], []],
                "Input type": ["float", "long int", "Scalar", "Scalar", "Scalar"],
                "Input Strides": [[8, 1], [5, 1], [], [], []], "Concrete Inputs": ["", "", "-1", "False", "False"]}}
    ]})";
    Trace t = load_trace_from_json(json_text);
    CallTree tree(t);
    fs::path dir = fresh_dir("mixed");
    auto result = replay::make_replay(t, tree, replay::Selection::by_uids({0, 1, 2}), dir.string());
    fs::path results = dir / "results.json";
    auto run = [&](const std::string& extra) {
      std::string cmd = "/usr/bin/python3 " + result.files.runner +
                        " --device cpu --warmup 0 --iters 1 --results-json " + results.string() +
                        " " + extra + " > " + (dir / "out.txt").string() + " 2>&1";
      int rc = std::system(cmd.c_str());
      INFO(slurp(dir / "out.txt"));
      REQUIRE(WIFEXITED(rc));
      return WEXITSTATUS(rc);
    };
    CHECK(run("") == 1);  // the tensor-list op fails
    json res = json::parse(slurp(results));
    REQUIRE(res["ops"].size() == 3);
    CHECK(res["ops"][0]["status"] == "ok");
    if (res["ops"][0]["float32_fallback"] == true)  // CPU Half GEMM is missing in old PyTorch
      CHECK(res["ops"][0]["notes"].dump().find("float32") != std::string::npos);
    CHECK(res["ops"][1]["status"] == "error");
    CHECK(res["ops"][1]["error"].get<std::string>().find("tensor list") != std::string::npos);
    CHECK(res["ops"][2]["status"] == "ok");  // int64 indices, zero-filled
    CHECK(run("--tracelens-strict --ids 2") == 1);
    res = json::parse(slurp(results));
    REQUIRE(res["ops"].size() == 1);
    CHECK(res["ops"][0]["error"].get<std::string>().find("no schema") != std::string::npos);
    CHECK(run("--only aten::mm") == 0);
    fs::remove_all(dir);
  }

  TEST_CASE("CLI: jarvis replay writes a package and rejects bad selections") {
    fs::path dir = fresh_dir("cli");
    std::string base =
        std::string(JARVIS_BINARY) + " replay " + kBert + "/trace.json.gz --out " + dir.string();
    CHECK(std::system(
              (base + " --op aten::add --dims '[[1, 141, 512], [1, 141, 512], []]' > /dev/null")
                  .c_str()) == 0);
    json ir = json::parse(slurp(dir / "replay_ir.json"));
    REQUIRE(ir["ops"].size() == 1);
    CHECK(ir["ops"][0]["count"] == 9);
    CHECK(fs::exists(dir / "replay_package.zip"));
    CHECK(WEXITSTATUS(std::system((base + " --uid 48 --op aten::add 2>/dev/null").c_str())) == 2);
    CHECK(WEXITSTATUS(std::system((base + " --uid x 2>/dev/null").c_str())) == 2);
    CHECK(WEXITSTATUS(std::system((base + " --op aten::nope 2>/dev/null").c_str())) == 1);
    fs::remove_all(dir);
  }

  TEST_CASE("the runner rebuilds every recorded argument kind (constructed IR, CPU)") {
    // One op per argument kind, recorded as PyTorch 2.x's profiler records
    // them: an unrecorded string (gelu approximate), dtype / memory-format
    // enums as integers, optional None, negative dims in an int list,
    // non-contiguous and channels-last strides, zero-size tensors, out= and
    // in-place variants.
    auto op = [](int id, const char* name, json types, json dims, json strides, json concrete) {
      return json{{"id", id},
                  {"name", name},
                  {"Input type", types},
                  {"Input Dims", dims},
                  {"Input Strides", strides},
                  {"Concrete Inputs", concrete},
                  {"count", 1},
                  {"trace_gpu_time_us", {{"mean", 1.0}}}};
    };
    json ops = json::array({
        op(0, "aten::gelu", {"float", ""}, {{4, 8}, json::array()}, {{8, 1}, json::array()},
           {"", ""}),
        op(1, "aten::_to_copy", {"float", "Scalar", "", "", "", "Scalar", ""},
           {{4, 8},
            json::array(),
            json::array(),
            json::array(),
            json::array(),
            json::array(),
            json::array()},
           {{8, 1},
            json::array(),
            json::array(),
            json::array(),
            json::array(),
            json::array(),
            json::array()},
           {"", "15", "", "", "", "False", ""}),
        op(2, "aten::sum", {"float", "ScalarList", "Scalar", ""},
           {{4, 8}, json::array(), json::array(), json::array()},
           {{8, 1}, json::array(), json::array(), json::array()}, {"", "[-1]", "True", ""}),
        op(3, "aten::add", {"float", "float", "Scalar"}, {{4, 8}, {4, 8}, json::array()},
           {{1, 4}, {8, 1}, json::array()}, {"", "", "1"}),
        op(4, "aten::relu", {"float"}, {{2, 3, 4, 4}}, {{48, 1, 12, 3}}, {""}),
        op(5, "aten::mul", {"float", "float"}, {{0, 8}, {0, 8}}, {{8, 1}, {8, 1}}, {"", ""}),
        op(6, "aten::mul", {"float", "float", "float"}, {{4, 8}, {4, 8}, {4, 8}},
           {{8, 1}, {8, 1}, {8, 1}}, {"", "", ""}),
        op(7, "aten::add_", {"float", "float", "Scalar"}, {{4, 8}, {4, 8}, json::array()},
           {{8, 1}, {8, 1}, json::array()}, {"", "", "1"}),
        // Integral tensors refuse a float alpha: the IR's 1.0 goes back to 1.
        op(8, "aten::add_", {"long int", "long int", "Scalar"}, {{4, 8}, {4, 8}, json::array()},
           {{8, 1}, {8, 1}, json::array()}, {"", "", "1"}),
    });
    fs::path dir = fresh_dir("argkinds");
    fs::create_directories(dir);
    std::ofstream(dir / "replay.py") << replay::runner_script();
    std::ofstream(dir / "replay_ir.json") << json{{"ops", ops}}.dump();
    fs::path results = dir / "results.json", out = dir / "stdout.txt";
    std::string cmd = "cd /tmp && /usr/bin/python3 " + (dir / "replay.py").string() +
                      " --device cpu --warmup 0 --iters 1 --results-json " + results.string() +
                      " > " + out.string() + " 2>&1";
    int rc = std::system(cmd.c_str());
    INFO(slurp(out));
    REQUIRE(rc == 0);
    json res = json::parse(slurp(results));
    REQUIRE(res["ops"].size() == ops.size());
    for (const json& r : res["ops"]) {
      CAPTURE(r.dump());
      CHECK(r["status"] == "ok");
    }
    // The gelu string was not recorded: the schema default is used and said.
    CHECK(res["ops"][0]["notes"].dump().find("approximate") != std::string::npos);
    CHECK(res["ops"][0]["path"].get<std::string>().find("aten::gelu") == 0);
    CHECK(res["ops"][6]["path"] == "aten::mul.out");
    fs::remove_all(dir);
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
