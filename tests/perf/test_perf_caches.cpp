// Issue 16's hot-path work: name flags computed once per interned string,
// the family index built once, the GPU timeline and the category_filter
// preparation cached on a loaded trace. Each cache is checked against the
// uncached computation it replaces.
#include <doctest/doctest.h>

#include <fmt/format.h>
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "categories/prepare_trace.h"
#include "explore/trace_store.h"
#include "golden.h"
#include "perf/metrics.h"
#include "perf/perf_model.h"
#include "report/gpu_timeline.h"
#include "report/perf_tables.h"
#include "test_analysis_support.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace fs = std::filesystem;
using namespace jarvis;

namespace {

// The communication predicate written out independently of the library:
// lower-case the name, then look for each marker.
bool communication_by_text(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower.find("nccl") != std::string::npos || lower.find("rccl") != std::string::npos ||
         lower.find("cross_device_reduce") != std::string::npos;
}

// Every regular file under `dir` (relative path -> bytes).
std::map<std::string, std::string> read_tree(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::ifstream in(e.path(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    out[fs::relative(e.path(), dir).string()] = ss.str();
  }
  return out;
}

void clear_dir(const std::string& dir) {
  fs::remove_all(dir);
  fs::create_directories(dir);
}

}  // namespace

TEST_CASE("name flags: fixed names") {
  StringPool pool;
  struct Case {
    const char* name;
    uint8_t flags;
  };
  const Case cases[] = {
      {"ncclDevKernel_AllReduce_Sum_f32_RING_LL", kNameCommunication},
      {"void NCCL_kernel<int>()", kNameCommunication},
      {"rcclGenericKernel", kNameCommunication},
      {"cross_device_reduce_1stage<__nv_bfloat16, 8>", kNameCommunication},
      {"ampere_sgemm_128x64_nn", 0},
      {"ncc_l", 0},
      {"nccl", kNameCommunication},
      {"NcCl", kNameCommunication},
      {"x_RCCL", kNameCommunication},
      {"ncc", 0},
      {"nccL\xcc", kNameCommunication},
      {"\xce\xc3\xc3\xcc", 0},  // the bytes of "NCCL" with the high bit set
      {"Cross_Device_Reduce", kNameCommunication},
      {"cross_device_reduc", 0},
      {"cross-device-reduce", 0},
      {"xcross_device_reduce", kNameCommunication},
      {"__amd_rocclr_copyBuffer", kNameRocmLegacyMemcpy},
      {"__amd_rocclr_copyBufferRectAligned.kd", kNameRocmLegacyMemcpy},
      {"MEMORY_COPY_DEVICE_TO_HOST", kNameRocmLegacyMemcpy},
      {"__amd_rocclr_copyBufferX", 0},
      {"__amd_rocclr_fillBufferAligned.kd", kNameRocmLegacyMemset},
      {"__amd_rocclr_fillBuffer", kNameRocmLegacyMemset},
      {"", 0},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    uint32_t id = pool.intern(c.name);
    CHECK(int(pool.flags(id)) == int(c.flags));
    CHECK(int(name_flags_of(c.name)) == int(c.flags));
    CHECK(pool.intern(c.name) == id);  // interned once, flags unchanged
    CHECK(int(pool.flags(id)) == int(c.flags));
  }
}

TEST_CASE("name flags agree with the string predicates on every conformance trace") {
  auto dirs = golden::conformance_dirs();
  REQUIRE_FALSE(dirs.empty());
  for (const auto& dir : dirs) {
    CAPTURE(dir);
    Trace trace = load_trace(dir + "/trace.json.gz");
    size_t comm_names = 0;
    for (uint32_t id = 0; id < trace.strings.size(); ++id) {
      std::string_view s = trace.strings.view(id);
      uint8_t f = trace.strings.flags(id);
      bool comm = (f & kNameCommunication) != 0;
      if (comm != communication_by_text(s)) FAIL_CHECK("communication flag differs for " << s);
      if (comm != is_communication_name(s)) FAIL_CHECK("predicate differs for " << s);
      if (((f & kNameRocmLegacyMemcpy) != 0) != is_rocm_legacy_memcpy_name(s))
        FAIL_CHECK("memcpy flag differs for " << s);
      if (((f & kNameRocmLegacyMemset) != 0) != is_rocm_legacy_memset_name(s))
        FAIL_CHECK("memset flag differs for " << s);
      comm_names += comm;
    }
    size_t comm_events = 0, by_text = 0;
    for (Uid u = 0; u < trace.events.size(); ++u) {
      comm_events += trace.is_communication(u);
      by_text += communication_by_text(trace.name(u));
    }
    CHECK(comm_events == by_text);
    CHECK(comm_names <= comm_events);
  }
}

TEST_CASE("family index built once gives the rows of the per-call index") {
  std::string dir = golden::shared_dir() + "/conformance/h100_qwen1.5-0.5b";
  Trace trace = load_trace(dir + "/trace.json.gz");
  CallTree tree(trace);
  report::FamilyIndex index = report::events_by_family(trace);
  CHECK(index.count("GEMM") == 1);
  size_t compared = 0;
  for (const char* family : {"GEMM", "SDPA", "UnaryElementwise", "BinaryElementwise"}) {
    for (bool backward : {false, true}) {
      CAPTURE(family);
      CAPTURE(backward);
      auto a = report::perf_sheet_rows(trace, tree, family, backward, nullptr);
      auto b = report::perf_sheet_rows(trace, tree, index, family, backward, nullptr);
      REQUIRE(a.size() == b.size());
      for (size_t k = 0; k < a.size(); ++k) {
        CHECK(a[k].uid == b[k].uid);
        CHECK(a[k].kernel_time_us == b[k].kernel_time_us);
      }
      compared += a.size();
    }
  }
  CHECK(compared > 0);
}

TEST_CASE("loaded trace: one cached timeline, equal to a fresh computation") {
  TraceCache cache;
  TraceStore store(cache);
  auto loaded = store.load(golden::shared_dir() + "/conformance/mi300_bert-small/trace.json.gz");
  auto t1 = trace_timeline(*loaded.entry);
  auto t2 = trace_timeline(*loaded.entry);
  REQUIRE(t1);
  CHECK(t1.get() == t2.get());
  GpuTimeline fresh = compute_gpu_timeline(loaded.entry->trace(), *trace_call_tree(*loaded.entry));
  CHECK(t1->total_time == fresh.total_time);
  CHECK(t1->computation_time == fresh.computation_time);
  CHECK(t1->exposed_comm_time == fresh.exposed_comm_time);
  CHECK(t1->busy_time == fresh.busy_time);
  CHECK(t1->event_count == fresh.event_count);
  auto report = trace_report(*loaded.entry, "MI300X");
  CHECK(report->timeline.total_time == fresh.total_time);
  CHECK(report->timeline.exposed_memcpy_time == fresh.exposed_memcpy_time);
}

TEST_CASE("cached category_filter preparation writes the files of the uncached one") {
  TraceCache cache;
  TraceStore store(cache);
  for (const char* trace_name : {"h100_bert-small", "mi300_qwen1.5-0.5b"}) {
    std::string name = trace_name;
    CAPTURE(name);
    std::string dir = golden::shared_dir() + "/conformance/" + name;
    std::string arch = testing::conformance_arch(dir).platform;
    testing::TempDir tmp;
    analysis::TracePrepareOptions o;
    o.platform = arch;
    o.output_dir = tmp.path;
    o.trace_path = "trace.json.gz";

    Trace trace = load_trace(dir + "/trace.json.gz");
    analysis::PrepareResult plain = analysis::prepare_from_trace(trace, o);
    auto expected = read_tree(tmp.path);
    REQUIRE(expected.size() > 5);

    auto loaded = store.load(dir + "/trace.json.gz");
    for (int pass = 0; pass < 2; ++pass) {  // the second pass is served from the cache
      CAPTURE(pass);
      clear_dir(tmp.path);
      analysis::PrepareResult cached = analysis::prepare_from_loaded_trace(*loaded.entry, o);
      CHECK(cached.files == plain.files);
      CHECK(cached.categories == plain.categories);
      CHECK(cached.manifest == plain.manifest);
      auto got = read_tree(tmp.path);
      CHECK(got.size() == expected.size());
      for (const auto& [file, bytes] : expected) {
        std::string f = file;
        auto it = got.find(f);
        if (it == got.end()) {
          FAIL_CHECK("missing " << f);
          continue;
        }
        CHECK_MESSAGE(it->second == bytes, f);
      }
    }
    // The data really is cached: a build on the same key is never run again.
    std::string key = "prepare:" + canonical_arch_id(arch) + ":3";
    bool rebuilt = false;
    loaded.entry->cached<analysis::PreparedTraceData>(key, [&] {
      rebuilt = true;
      return analysis::PreparedTraceData{};
    });
    CHECK_FALSE(rebuilt);

    // One category from the cache equals the same category uncached.
    if (!plain.categories.empty()) {
      o.category = plain.categories.front();
      clear_dir(tmp.path);
      analysis::prepare_from_trace(trace, o);
      auto one = read_tree(tmp.path);
      clear_dir(tmp.path);
      analysis::prepare_from_loaded_trace(*loaded.entry, o);
      CHECK(read_tree(tmp.path) == one);
    }
  }
}

TEST_CASE("multi_kernel_data reuses the linked timeline only where it equals the full one") {
  for (const char* trace_name : {"mi300_bert-small", "vllm_decode_graph_capture"}) {
    std::string name = trace_name;
    CAPTURE(name);
    std::string dir = golden::shared_dir() + "/conformance/" + name;
    Trace trace = load_trace(dir + "/trace.json.gz");
    CallTree tree(trace);
    analysis::TracePrepareOptions o;
    o.platform = testing::conformance_arch(dir).platform;
    if (o.platform.empty()) o.platform = "H100";  // no agent reference for this trace
    o.tree_data = false;
    Report report = analysis::perf_report(trace, tree, o.platform);
    analysis::TableRefs refs;
    for (const auto& t : report.tables) refs[t.name] = &t;
    analysis::PreparedTraceData d =
        analysis::prepared_trace_data(trace, tree, nullptr, refs, o, &report.timeline);
    CHECK(d.multi_kernel_data == analysis::multi_kernel_data(trace, tree));
    CHECK(d.multi_kernel_data["overlap_analysis"].contains("total_time_us"));
  }
}

TEST_CASE("shared perf models: every sheet row equals a model built for its own event") {
  // The sheets share one model between events with equal name, args and
  // kernel names; each row is checked against a model built for it alone.
  std::string dir = golden::shared_dir() + "/conformance/h100_qwen1.5-0.5b";
  Trace trace = load_trace(dir + "/trace.json.gz");
  CallTree tree(trace);
  size_t compared = 0;
  for (const char* family : {"GEMM", "SDPA", "UnaryElementwise", "BinaryElementwise"}) {
    for (bool backward : {false, true}) {
      CAPTURE(family);
      CAPTURE(backward);
      for (const report::PerfOpRow& row :
           report::perf_sheet_rows(trace, tree, family, backward, nullptr)) {
        perf::OpInput in = perf::op_input_from_event(trace, row.event_uid);
        for (Uid k : row.kernels) in.kernel_names.push_back(trace.name(k));
        auto model = perf::make_perf_model(in);
        REQUIRE(model);
        perf::PerfMetrics alone =
            perf::compute_perf_metrics(*model, backward, row.kernel_time_us, nullptr);
        REQUIRE(row.metrics);
        CHECK(row.metrics->gflops == alone.gflops);
        CHECK(row.metrics->bytes == alone.bytes);
        CHECK(perf::params_dict_repr(row.metrics->params()) ==
              perf::params_dict_repr(alone.params()));
        ++compared;
      }
    }
  }
  CHECK(compared > 100);
}

TEST_CASE("shared perf models: equal attention ops under different annotations keep their own") {
  // The inference attention model reads the request mix from the annotation
  // around the op, so two ops with equal args must not share a model.
  const char* args =
      R"("Input Dims":[[6147,32,128],[6147,8,128],[6147,8,128],[6147,32,128],[]],)"
      R"("Input type":["c10::BFloat16","c10::BFloat16","c10::BFloat16","c10::BFloat16","Scalar"])";
  auto annotation = [](const std::string& name, int ts) {
    return fmt::format(
        R"({{"ph":"X","cat":"user_annotation","name":"{}","pid":1,"tid":1,"ts":{},"dur":100}})",
        name, ts);
  };
  auto attention = [&](int ts) {
    return fmt::format(
        R"({{"ph":"X","cat":"cpu_op","name":"vllm::unified_attention_with_output","pid":1,"tid":1,"ts":{},"dur":10,"args":{{{}}}}})",
        ts, args);
  };
  std::string json = "{\"traceEvents\":[" +
                     annotation(
                         "execute_6147_context_2(sq6144sk7144sqsq20971520sqsk23019520)"
                         "_generation_3(sq3sk6144sqsq3sqsk6144)",
                         50) +
                     "," + attention(100) + "," +
                     annotation(
                         "execute_6147_context_1(sq6144sk6144sqsq37748736sqsk37748736)"
                         "_generation_3(sq3sk9000sqsq3sqsk9000)",
                         200) +
                     "," + attention(250) + "]}";
  Trace trace = load_trace_from_json(json, "two annotations");
  CallTree tree(trace);
  auto rows = report::perf_sheet_rows(trace, tree, "InferenceAttention", false, nullptr);
  REQUIRE(rows.size() == 2);
  REQUIRE(rows[0].metrics);
  REQUIRE(rows[1].metrics);
  CHECK(rows[0].metrics->gflops != rows[1].metrics->gflops);
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
