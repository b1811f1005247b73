// The parallel event parse (LoadOptions::parse_workers): parts parsed on
// worker threads and joined in order give the Trace of the sequential parse,
// byte for byte (compared through their snapshots), and the same error for
// bad input, however the events fall into batches.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <string>
#include <vector>

#include "golden.h"
#include "test_loader_support.h"
#include "trace/loader.h"
#include "trace/snapshot.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using namespace jarvis;
using namespace jarvis::loader_test;

namespace {

Trace load_with(const std::string& path, int workers, size_t batch_bytes) {
  LoadOptions options;
  options.parse_workers = workers;
  options.parse_batch_bytes = batch_bytes;
  SnapshotOptions no_snapshot;
  no_snapshot.enabled = false;
  return load_trace(path, options, no_snapshot);
}

// The whole store as bytes: events, strings, arg lists, side tables, metadata.
std::string store_bytes(const std::string& path, const Trace& trace, const fs::path& file) {
  write_snapshot(file.string(), snapshot_key(path), SnapshotMacKey{}, trace);
  return snapshot_store_bytes(read_file(file.string()));
}

std::string load_error(const std::string& path, int workers, size_t batch_bytes) {
  try {
    load_with(path, workers, batch_bytes);
  } catch (const TraceError& e) {
    return e.what();
  }
  return "(no error)";
}

std::vector<std::string> shared_traces() {
  std::vector<std::string> paths;
  for (const auto& dir : golden::conformance_dirs()) paths.push_back(dir + "/trace.json.gz");
  paths.push_back(golden::shared_dir() + "/legacy/hta_noflow_rank1/trace.json.gz");
  paths.push_back(golden::shared_dir() + "/nccl/hta_allreduce_2ranks_rank0/trace.json.gz");
  return paths;
}

// Events that exercise every table the join renumbers: string pids and tids,
// metadata overwritten by later events, repeated and distinct arg lists,
// sparse ids, Kineto's stream waits and an event without cat.
std::string crafted_trace() {
  std::vector<std::string> events;
  for (int k = 0; k < 120; ++k) {
    std::string pid = k % 3 == 0 ? R"("Spans")" : std::to_string(100 + k % 2);
    std::string tid = k % 5 == 0 ? R"("stream 7")" : std::to_string(k % 4);
    events.push_back(fmt::format(
        R"({{"ph":"X","cat":"cpu_op","name":"op{}","pid":{},"tid":{},"ts":{}.125,"dur":1.5,)"
        R"("args":{{"External id":{},"Input Dims":[[{},3]],"Sequence number":{},"Ev Idx":{}}}}})",
        k % 7, pid, tid, 1000 + k, k, k % 4, k, k));
    events.push_back(fmt::format(
        R"({{"ph":"X","cat":"kernel","name":"nccl_k{}","pid":0,"tid":{},"ts":{}.5,"dur":0.25,)"
        R"("args":{{"correlation":{},"stream":{},"device":0,"grid":[{},1,1]}}}})",
        k % 3, 7 + k % 2, 2000 + k, k, 7 + k % 2, k % 5));
    if (k % 10 == 0)
      events.push_back(fmt::format(
          R"({{"ph":"M","name":"process_name","pid":{},"tid":0,"args":{{"name":"proc {}"}}}})", pid,
          k));
    if (k % 15 == 0)
      events.push_back(fmt::format(
          R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":"thread {}"}}}})",
          pid, tid, k));
    if (k % 20 == 0)
      events.push_back(
          fmt::format(R"({{"ph":"i","cat":"cuda_sync","name":"Wait","pid":0,"tid":7,"ts":{},)"
                      R"("args":{{"cuda_sync_kind":"Wait Event","wait_on_stream":8,)"
                      R"("wait_on_cuda_event_record_corr_id":{}}}}})",
                      3000 + k, k));
    if (k % 25 == 0)
      events.push_back(
          fmt::format(R"({{"ph":"s","id":{},"pid":1,"tid":1,"ts":{},"name":"x"}})", k, 4000 + k));
  }
  std::string text = R"({"schemaVersion":1,"traceEvents":[)";
  for (size_t k = 0; k < events.size(); ++k) text += (k ? ",\n" : "") + events[k];
  return text + "]}";
}

}  // namespace

TEST_CASE("parallel parse: every shared trace loads to the sequential parse's store") {
  TempDir tmp;
  for (const std::string& path : shared_traces()) {
    CAPTURE(path);
    Trace serial = load_with(path, 0, 0);
    std::string expected = store_bytes(path, serial, tmp.path / "serial.snap");
    // Small batches: hundreds of parts per trace, joined in order.
    for (int workers : {1, 3}) {
      CAPTURE(workers);
      Trace parallel = load_with(path, workers, 32 << 10);
      CHECK(parallel.events.size() == serial.events.size());
      CHECK(parallel.strings.size() == serial.strings.size());
      CHECK(parallel.arg_lists.size() == serial.arg_lists.size());
      CHECK(store_bytes(path, parallel, tmp.path / "parallel.snap") == expected);
    }
  }
}

TEST_CASE("parallel parse: one event per batch joins string ids, threads, args and metadata") {
  TempDir tmp;
  auto path = tmp.path / "crafted.json";
  write_file(path, crafted_trace());
  Trace serial = load_with(path.string(), 0, 0);
  REQUIRE(serial.events.size() > 250);
  CHECK(serial.metadata.process_name.size() == 2);
  CHECK(serial.process_name(ProcId{100, false}) == "proc 110");  // the last of k = 10, 20, ...
  std::string expected = store_bytes(path.string(), serial, tmp.path / "serial.snap");
  for (size_t batch : {size_t{1}, size_t{700}, size_t{1} << 20}) {
    CAPTURE(batch);
    Trace parallel = load_with(path.string(), 2, batch);
    CHECK(store_bytes(path.string(), parallel, tmp.path / "parallel.snap") == expected);
    CHECK(parallel.process_name(ProcId{100, false}) == "proc 110");
  }
}

TEST_CASE("parallel parse: every malformed corpus file gives the sequential parse's error") {
  const std::string corpus = std::string(JARVIS_SOURCE_DIR) + "/tests/malformed/";
  size_t files = 0;
  for (const auto& entry : fs::directory_iterator(corpus)) {
    if (!entry.is_regular_file() || entry.path().extension() == ".md") continue;
    std::string path = entry.path().string();
    CAPTURE(path);
    std::string expected = load_error(path, 0, 0);
    CHECK(load_error(path, 2, 1) == expected);
    CHECK(load_error(path, 3, 64) == expected);
    // The whole array one batch: its one-pass parse fails, the events are
    // parsed again one by one and the first bad one is reported.
    CHECK(load_error(path, 2, size_t{1} << 20) == expected);
    ++files;
  }
  CHECK(files >= 20);
}

TEST_CASE("parallel parse: the first bad event in array order is the one reported") {
  TempDir tmp;
  std::string events;
  for (int k = 0; k < 400; ++k) {
    if (k) events += ",";
    if (k == 7)
      events += R"({"ph":"X","ts":"seven"})";
    else if (k == 250)
      events += R"({"ph":"X","name":250})";
    else
      events += fmt::format(R"({{"ph":"X","cat":"kernel","name":"k","ts":{},"dur":1}})", k);
  }
  const std::string head = R"({"traceEvents":[)";
  auto both = tmp.path / "both.json";
  write_file(both, head + events + "]}");
  // Truncated after event 300: a reading error later in the array than both.
  auto truncated = tmp.path / "truncated.json";
  write_file(truncated, head + events.substr(0, events.find(R"("ts":301)")));
  for (const auto& path : {both, truncated}) {
    CAPTURE(path);
    std::string expected = load_error(path.string(), 0, 0);
    CHECK(expected.find("traceEvents[7]: field 'ts' must be a number") != std::string::npos);
    for (size_t batch : {size_t{1}, size_t{100}, size_t{4096}, size_t{1} << 20})
      CHECK(load_error(path.string(), 2, batch) == expected);
  }
  // Without event 7, event 250 is reported with its index in the whole array.
  auto later = tmp.path / "later.json";
  std::string fixed = events;
  fixed.replace(fixed.find(R"("ts":"seven")"), 12, R"("ts":7)");
  write_file(later, head + fixed + "]}");
  std::string expected = load_error(later.string(), 0, 0);
  CHECK(expected.find("traceEvents[250]: field 'name' must be a string") != std::string::npos);
  CHECK(load_error(later.string(), 2, 1) == expected);
  CHECK(load_error(later.string(), 2, 2048) == expected);
}

TEST_CASE("parallel parse: cancelling through the progress callback stops the workers") {
  TempDir tmp;
  std::string events;
  for (int k = 0; k < 60000; ++k) {
    if (k) events += ",";
    events += fmt::format(R"({{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":{}}})", k);
  }
  auto path = tmp.path / "big.json.gz";
  write_file(path, gzip_member(R"({"traceEvents":[)" + events + "]}"));
  LoadOptions options;
  options.parse_workers = 2;
  options.parse_batch_bytes = 4096;
  int calls = 0;
  options.progress = [&](uint64_t, uint64_t) { return ++calls < 2; };
  SnapshotOptions no_snapshot;
  no_snapshot.enabled = false;
  try {
    load_trace(path.string(), options, no_snapshot);
    FAIL("no error");
  } catch (const TraceError& e) {
    CHECK(std::string(e.what()).find("load cancelled") != std::string::npos);
  }
  CHECK(calls == 2);
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
