// Device memory (src/memory): a generated trace with a known peak, known
// holders and a known leak recovered exactly, and the shared traces recorded
// with profile_memory=True checked against the raw [memory] events, parsed
// here on their own (nlohmann over the gunzipped file).
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "golden.h"
#include "memory/memory.h"
#include "test_analysis_support.h"
#include "test_loader_support.h"
#include "trace/loader.h"
#include "trace/memory_events.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using namespace jarvis;
using namespace jarvis::memory;
using nlohmann::json;

namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

std::string span(const char* cat, const std::string& name, double ts, double dur) {
  return fmt::format(R"({{"ph":"X","cat":"{}","name":"{}","pid":1,"tid":1,"ts":{},"dur":{}}},)",
                     cat, name, ts, dur);
}

// One [memory] sample; sizes in MiB.
std::string sample(double ts, uint64_t addr, int64_t mib, int64_t total_mib, int type = 1,
                   int id = 0, int64_t reserved_mib = 4096) {
  return fmt::format(
      R"({{"ph":"i","s":"t","cat":"cpu_instant_event","name":"[memory]","pid":1,"tid":1,)"
      R"("ts":{},"args":{{"Total Reserved":{},"Total Allocated":{},"Bytes":{},"Addr":{},)"
      R"("Device Id":{},"Device Type":{},"Ev Idx":1}}}},)",
      ts, reserved_mib * kMiB, total_mib * kMiB, mib * kMiB, addr, id, type);
}

// Three steps of a model whose weights (1000 MiB) were allocated before the
// trace. Step 1 peaks at t=60 holding A (200, aten::mm in Linear), B
// (`b_mib`, aten::linear in Linear) and C (50, aten::relu in Net); frees B,
// A and 40 MiB the trace never saw allocated. Steps 2 and 3 each leak 100
// MiB from aten::cat. Plus one CPU allocation.
std::string generated_trace(int64_t b_mib = 300) {
  int64_t peak = 1000 + 200 + b_mib + 50;
  std::string ev;
  ev += span("user_annotation", "ProfilerStep#1", 0, 100);
  ev += span("user_annotation", "ProfilerStep#2", 100, 100);
  ev += span("user_annotation", "ProfilerStep#3", 200, 100);
  ev += span("python_function", "nn.Module: Net_0", 1, 98);
  ev += span("python_function", "model.py(10): forward", 1.5, 97);
  ev += span("python_function", "nn.Module: Linear_0", 2, 48);
  ev += span("cpu_op", "aten::linear", 3, 37);    // uid 6
  ev += span("cpu_op", "aten::mm", 5, 25);        // uid 7
  ev += span("cpu_op", "aten::relu", 55, 15);     // uid 8
  ev += span("cpu_op", "aten::cat", 105, 15);     // uid 9
  ev += span("cpu_op", "aten::cat", 205, 15);     // uid 10
  ev += sample(10, 0x100, 200, 1200);             // uid 11: A
  ev += sample(20, 0x10, 64, 64, 0, -1, 64);      // uid 12: CPU
  ev += sample(35, 0x200, b_mib, 1200 + b_mib);   // uid 13: B
  ev += sample(60, 0x300, 50, peak);              // uid 14: C, the peak
  ev += sample(80, 0x200, -b_mib, peak - b_mib);  // free B
  ev += sample(90, 0x100, -200, 1050);            // free A
  ev += sample(95, 0x999, -40, 1010);             // allocated before the trace
  ev += sample(110, 0x400, 100, 1110);            // uid 18: D, never freed
  ev += sample(150, 0x300, -50, 1060);            // free C
  ev += sample(210, 0x500, 100, 1160);            // uid 20: E, never freed
  ev.pop_back();
  return R"({"traceEvents":[)" + ev + "]}";
}

// --- expectations from the raw events -------------------------------------

struct RawSample {
  size_t index;
  double ts;
  int64_t pid, tid;
  int type, id;
  uint64_t addr;
  int64_t bytes, total, reserved;
};

struct RawDevice {
  std::vector<RawSample> samples;  // time order
  RawSample peak{};
  std::vector<RawSample> live_at_peak;  // largest first
  int64_t never_freed_bytes = 0;
  size_t never_freed = 0, unknown_frees = 0;
};

std::vector<RawSample> raw_samples(const json& events) {
  std::vector<RawSample> out;
  for (size_t i = 0; i < events.size(); ++i) {
    const json& e = events[i];
    if (e.value("name", "") != "[memory]" || e.value("cat", "") != "cpu_instant_event") continue;
    const json& a = e["args"];
    out.push_back({i, e["ts"].get<double>(), e["pid"].get<int64_t>(), e["tid"].get<int64_t>(),
                   a["Device Type"].get<int>(), a["Device Id"].get<int>(),
                   a["Addr"].get<uint64_t>(), a["Bytes"].get<int64_t>(),
                   a["Total Allocated"].get<int64_t>(), a["Total Reserved"].get<int64_t>()});
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const RawSample& a, const RawSample& b) { return a.ts < b.ts; });
  return out;
}

RawDevice raw_device(const std::vector<RawSample>& all, int type, int id) {
  RawDevice d;
  for (const RawSample& s : all)
    if (s.type == type && s.id == id) d.samples.push_back(s);
  REQUIRE(!d.samples.empty());
  d.peak = d.samples.front();
  for (const RawSample& s : d.samples)
    if (s.total > d.peak.total) d.peak = s;
  std::map<uint64_t, RawSample> live;
  auto largest_first = [](const RawSample& a, const RawSample& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.index < b.index;
  };
  for (const RawSample& s : d.samples) {
    if (s.bytes > 0) live[s.addr] = s;
    if (s.bytes < 0 && live.erase(s.addr) == 0) ++d.unknown_frees;
    if (s.index == d.peak.index) {
      for (const auto& [addr, a] : live) d.live_at_peak.push_back(a);
      std::sort(d.live_at_peak.begin(), d.live_at_peak.end(), largest_first);
    }
  }
  for (const auto& [addr, a] : live) d.never_freed_bytes += a.bytes;
  d.never_freed = live.size();
  return d;
}

// The innermost cpu_op on the sample's thread whose span holds it: the
// latest start, then the shortest.
size_t raw_enclosing_op(const json& events, const RawSample& s) {
  size_t best = SIZE_MAX;
  double best_ts = 0, best_dur = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    const json& e = events[i];
    if (e.value("cat", "") != "cpu_op" || e.value("ph", "") != "X") continue;
    if (!e["pid"].is_number() || !e["tid"].is_number()) continue;
    if (e["pid"].get<int64_t>() != s.pid || e["tid"].get<int64_t>() != s.tid) continue;
    double ts = e["ts"].get<double>(), dur = e["dur"].get<double>();
    if (ts > s.ts || ts + dur < s.ts) continue;
    if (best == SIZE_MAX || ts > best_ts || (ts == best_ts && dur < best_dur)) {
      best = i;
      best_ts = ts;
      best_dur = dur;
    }
  }
  return best;
}

std::string conformance_trace(const std::string& name) {
  return golden::shared_dir() + "/conformance/" + name + "/trace.json.gz";
}

// Checks one device of an analysis against the raw events.
void check_device(const json& events, const DeviceMemory& d, const RawDevice& raw) {
  CAPTURE(d.device);
  CHECK(d.samples == raw.samples.size());
  CHECK(d.timeline.size() == raw.samples.size());
  CHECK(d.peak_allocated == raw.peak.total);
  CHECK(d.reserved_at_peak == raw.peak.reserved);
  int64_t max_gap = raw.samples.front().reserved - raw.samples.front().total;
  for (const RawSample& s : raw.samples) max_gap = std::max(max_gap, s.reserved - s.total);
  CHECK(d.max_gap == max_gap);
  CHECK(d.peak_uid == raw.peak.index);
  CHECK(ns_to_us(d.peak_ts_ns) == doctest::Approx(raw.peak.ts).epsilon(1e-15));
  REQUIRE(d.live_at_peak.size() == raw.live_at_peak.size());
  int64_t tracked = 0;
  for (size_t k = 0; k < d.live_at_peak.size(); ++k) {
    CHECK(d.live_at_peak[k].uid == raw.live_at_peak[k].index);
    CHECK(d.live_at_peak[k].bytes == raw.live_at_peak[k].bytes);
    tracked += raw.live_at_peak[k].bytes;
  }
  CHECK(d.tracked_at_peak == tracked);
  CHECK(d.untracked_at_peak == raw.peak.total - tracked);
  CHECK(d.never_freed_bytes == raw.never_freed_bytes);
  CHECK(d.never_freed.size() == raw.never_freed);
  CHECK(d.unknown_frees == raw.unknown_frees);
  // The top holders' ops, found on their own.
  for (size_t k = 0; k < std::min<size_t>(5, d.live_at_peak.size()); ++k) {
    size_t op = raw_enclosing_op(events, raw.live_at_peak[k]);
    if (op == SIZE_MAX) {
      CHECK(d.live_at_peak[k].op_uid == kNoUid);
    } else {
      CHECK(d.live_at_peak[k].op_uid == op);
      CHECK(d.live_at_peak[k].op == events[op]["name"].get<std::string>());
    }
  }
}

}  // namespace

// Every device of a shared trace against its raw events.
void check_shared_trace(const std::string& name, size_t devices) {
  CAPTURE(name);
  std::string path = conformance_trace(name);
  json events = json::parse(loader_test::gunzip_file(path))["traceEvents"];
  std::vector<RawSample> raw = raw_samples(events);
  MemoryAnalysis a = analyse_memory(load_trace(path));
  REQUIRE(a.devices.size() == devices);
  size_t samples = 0;
  for (const DeviceMemory& d : a.devices) {
    check_device(events, d, raw_device(raw, d.device_type, d.device_id));
    samples += d.samples;
  }
  CHECK(samples == raw.size());
}

TEST_CASE("memory: shared traces against their raw [memory] events") {
  check_shared_trace("h100_bert-small", 2);            // 236 samples, CUDA and CPU
  check_shared_trace("h100_qwen1.5-0.5b", 2);          // 2,450
  check_shared_trace("vllm_decode_graph_capture", 1);  // 1,184 on ROCm (HIP)
}

TEST_CASE("memory: a shared trace cut to a window leaks and frees memory it never saw allocated") {
  // h100_bert-small frees everything it allocates; keeping only its [memory]
  // events from a third of the way in up to the CUDA peak leaves allocations
  // live at the end and frees of addresses allocated before the window.
  json trace = json::parse(loader_test::gunzip_file(conformance_trace("h100_bert-small")));
  json& events = trace["traceEvents"];
  std::vector<RawSample> raw = raw_samples(events);
  RawDevice cuda = raw_device(raw, kDeviceTypeCuda, 0);
  double from = cuda.samples[cuda.samples.size() / 3].ts, to = cuda.peak.ts;
  json kept = json::array();
  for (json& e : events) {
    bool memory = e.value("name", "") == "[memory]";
    if (!memory || (e["ts"].get<double>() >= from && e["ts"].get<double>() <= to))
      kept.push_back(std::move(e));
  }
  events = std::move(kept);
  raw = raw_samples(events);
  RawDevice window = raw_device(raw, kDeviceTypeCuda, 0);
  REQUIRE(window.never_freed > 0);
  REQUIRE(window.unknown_frees > 0);
  MemoryAnalysis a = analyse_memory(load_trace_from_json(trace.dump()));
  const DeviceMemory* d = a.find("cuda:0");
  REQUIRE(d);
  check_device(events, *d, window);
  CHECK(d->never_freed_bytes == d->tracked_at_peak);  // the window ends at the peak
}

TEST_CASE("memory: a generated trace's peak, holders, leak and steps recovered exactly") {
  Trace trace = load_trace_from_json(generated_trace());
  std::vector<MemorySample> samples = memory_samples(trace);
  REQUIRE(samples.size() == 10);
  CHECK(samples[0].uid == 11);
  CHECK(samples[1].device_type == kDeviceTypeCpu);
  CHECK(samples[4].bytes == -300 * kMiB);

  MemoryAnalysis a = analyse_memory(trace);
  REQUIRE(a.devices.size() == 2);
  CHECK(a.devices[1].device == "cpu");  // GPU devices first
  const DeviceMemory& d = a.primary();
  CHECK(d.device == "cuda:0");
  CHECK(d.samples == 9);
  CHECK(d.allocations == 5);
  CHECK(d.frees == 4);
  CHECK(d.peak_allocated == 1550 * kMiB);
  CHECK(d.peak_uid == 14);
  CHECK(d.peak_ts_ns == 60'000);
  CHECK(d.peak_step == "ProfilerStep#1");
  CHECK(d.reserved_at_peak == 4096 * kMiB);
  CHECK(d.tracked_at_peak == 550 * kMiB);
  CHECK(d.untracked_at_peak == 1000 * kMiB);  // the weights
  CHECK(d.max_gap == (4096 - 1010) * kMiB);   // after the unknown free at t=95
  CHECK(d.max_gap_ts_ns == 95'000);

  REQUIRE(d.live_at_peak.size() == 3);
  const Allocation& b = d.live_at_peak[0];
  CHECK(b.uid == 13);
  CHECK(b.op == "aten::linear");
  CHECK(b.op_uid == 6);
  CHECK(b.module == "Linear");
  CHECK(b.module_path == "Net_0/Linear_0");
  CHECK(b.python_frame == "model.py(10): forward");
  const Allocation& mm = d.live_at_peak[1];
  CHECK(mm.op == "aten::mm");  // innermost, not aten::linear around it
  CHECK(mm.op_uid == 7);
  CHECK(d.live_at_peak[2].op == "aten::relu");
  CHECK(d.live_at_peak[2].module == "Net");
  CHECK(d.live_at_peak[2].module_path == "Net_0");

  REQUIRE(d.by_op.size() == 4);
  CHECK(d.by_op[0].op == "aten::linear");
  CHECK(d.by_op[0].at_peak_bytes == 300 * kMiB);
  CHECK(d.by_op[1].op == "aten::mm");
  CHECK(d.by_op[2].op == "aten::relu");
  CHECK(d.by_op[3].op == "aten::cat");
  CHECK(d.by_op[3].never_freed == 2);
  CHECK(d.by_op[3].never_freed_bytes == 200 * kMiB);

  REQUIRE(d.never_freed.size() == 2);
  CHECK(d.never_freed_bytes == 200 * kMiB);
  CHECK(d.never_freed_after_first_step_bytes == 200 * kMiB);
  CHECK(d.unknown_frees == 1);
  CHECK(d.unknown_freed_bytes == 40 * kMiB);

  REQUIRE(d.steps.size() == 3);
  CHECK(d.steps[0].allocated_at_start == 1000 * kMiB);
  CHECK(d.steps[0].allocated_at_end == 1010 * kMiB);
  CHECK(d.steps[0].peak_allocated == 1550 * kMiB);
  CHECK(d.steps[1].growth() == 50 * kMiB);
  CHECK(d.steps[1].peak_allocated == 1110 * kMiB);
  CHECK(d.steps[2].growth() == 100 * kMiB);
  CHECK(d.growth_per_step == 100 * kMiB);
  CHECK(d.grows_every_step);

  // Growth across steps and the 2.5 GiB unused reserve are findings; the
  // step's own allocations are 35% of the peak, below "dominating".
  std::vector<std::string> rules;
  for (const MemoryFinding& f : a.findings) rules.push_back(f.rule);
  CHECK(rules == std::vector<std::string>{"growth_across_steps", "reserved_gap"});
  CHECK(a.findings[1].action.find("expandable_segments") != std::string::npos);

  // The bounded summary and its timeline keep the peak.
  SummaryOptions options;
  options.timeline_points = 3;
  json s = memory_summary_json(a, options);
  CHECK(s["device"] == "cuda:0");
  CHECK(s["timeline"].size() == 3);
  int64_t top = 0;
  for (const json& p : s["timeline"]) top = std::max(top, p["allocated_bytes"].get<int64_t>());
  CHECK(top == 1550 * kMiB);
  CHECK(s["at_peak"][0]["op_uid"] == 6);
  CHECK(s["never_freed"][0]["op"] == "aten::cat");
  CHECK_THROWS_AS(memory_summary_json(a, {"cuda:7", 40, 20}), std::invalid_argument);
}

TEST_CASE("memory: a trace without [memory] events is unsupported, naming profile_memory") {
  Trace trace = load_trace_from_json(
      R"({"traceEvents":[{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":1,"dur":2}]})");
  try {
    analyse_memory(trace);
    FAIL("no error");
  } catch (const TraceError& e) {
    CHECK(e.kind() == ErrorKind::Unsupported);
    CHECK(std::string(e.what()).find("torch.profiler.profile(profile_memory=True") !=
          std::string::npos);
  }
}

TEST_CASE("memory: two generated runs differ by the holder that grew") {
  MemoryAnalysis reference = analyse_memory(load_trace_from_json(generated_trace(300)));
  MemoryAnalysis target = analyse_memory(load_trace_from_json(generated_trace(500)));
  MemoryDiff diff = diff_memory(reference, target);
  REQUIRE(diff.devices.size() == 2);
  CHECK(diff.devices[0].target_device == "cuda:0");
  CHECK(diff.devices[0].peak_delta() == 200 * kMiB);
  CHECK(diff.devices[1].peak_delta() == 0);
  REQUIRE(diff.groups.size() == 1);  // only aten::linear's holding changed
  CHECK(diff.groups[0].op == "aten::linear");
  CHECK(diff.groups[0].delta() == 200 * kMiB);
  REQUIRE(diff.steps.size() == 3 + 3);  // the CPU device has the steps too, unchanged
  CHECK(diff.steps[0].target_peak - diff.steps[0].reference_peak == 200 * kMiB);
  json j = memory_diff_json(diff, 10);
  CHECK(j["summary"].get<std::string>().find("aten::linear") != std::string::npos);
}

TEST_CASE("memory: the CSV and JSON files") {
  testing::TempDir dir;
  MemoryAnalysis a = analyse_memory(load_trace_from_json(generated_trace()));
  auto files = write_memory_files(a, dir.path + "/out", 4);
  REQUIRE(files.size() == 4);
  Table timeline = read_csv_file(dir.path + "/out/memory_timeline.csv");
  CHECK(timeline.columns ==
        std::vector<std::string>{"device", "ts_us", "allocated_bytes", "reserved_bytes"});
  CHECK(timeline.rows.size() == 4 + 1);  // cuda:0 downsampled to 4, the one CPU sample
  Table at_peak = read_csv_file(dir.path + "/out/memory_at_peak.csv");
  REQUIRE(at_peak.rows.size() == 3 + 1);
  CHECK(at_peak.at(0, "op").text() == "aten::linear");
  CHECK(at_peak.at(0, "module_path").text() == "Net_0/Linear_0");
  Table by_op = read_csv_file(dir.path + "/out/memory_by_op.csv");
  CHECK(by_op.at(3, "never_freed_bytes").text() == std::to_string(200 * kMiB));
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
