// Persisted trace snapshots (issue 16): a second load reads the snapshot and
// gives the identical event store and byte-identical reports; truncated,
// stale, corrupt or foreign snapshots are ignored with a logged reason and
// rebuilt. Every test uses its own cache directory under a TempDir.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "golden.h"
#include "report/report.h"
#include "session/trace_cache.h"
#include "test_loader_support.h"
#include "trace/loader.h"
#include "trace/snapshot.h"
#include "tree/call_tree.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using namespace jarvis;
using namespace jarvis::loader_test;

namespace {

std::string conformance_trace(const std::string& name) {
  return jarvis::golden::shared_dir() + "/conformance/" + name + "/trace.json.gz";
}

// Everything stored about one event, through the public accessors.
std::string describe(const Trace& t, Uid u) {
  const Event& e = t.events[u];
  std::string s =
      fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", static_cast<int>(e.ph), static_cast<int>(e.cat),
                  t.cat_name(u), t.name(u), e.ts_ns, e.dur_ns, t.proc_id_text(t.pid(u)),
                  t.proc_id_text(t.tid(u)), t.external_id(e), t.correlation(e));
  for (int i = 0; i < kSparseIds; ++i) s += fmt::format("|{}", t.sparse_id(e, SparseId(i)));
  s += e.has_args ? "|args" : "|-";
  s += e.bp_enclosing ? "|e" : "|-";
  if (e.args >= 0)
    for (const auto& [key, value] : t.arg_lists[static_cast<size_t>(e.args)])
      s += fmt::format("|{}={}", t.str(key), value.repr_tuple());
  return s;
}

void check_same_store(const Trace& a, const Trace& b) {
  REQUIRE(a.events.size() == b.events.size());
  CHECK(a.path == b.path);
  CHECK(a.platform == b.platform);
  CHECK(a.json_bytes == b.json_bytes);
  CHECK(a.file_bytes == b.file_bytes);
  CHECK(a.clamped_negative_durations == b.clamped_negative_durations);
  CHECK(a.top_level_json == b.top_level_json);
  CHECK(a.metadata.process_name == b.metadata.process_name);
  CHECK(a.metadata.process_labels == b.metadata.process_labels);
  CHECK(a.metadata.thread_name == b.metadata.thread_name);
  CHECK(a.threads == b.threads);
  CHECK(a.strings.size() == b.strings.size());
  size_t mismatches = 0;
  for (Uid u = 0; u < a.events.size() && mismatches < 5; ++u) {
    std::string da = describe(a, u), db = describe(b, u);
    if (da != db) {
      ++mismatches;
      CHECK(da == db);
    }
  }
  CHECK(mismatches == 0);
}

// Every report CSV of the trace, by file name.
std::map<std::string, std::string> report_files(const Trace& t, const fs::path& dir) {
  CallTree tree(t);
  Report r = build_report(t, tree, ReportOptions{});
  write_report_csvs(r, dir.string());
  std::map<std::string, std::string> out;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().extension() == ".csv")
      out[entry.path().filename().string()] = read_file(entry.path().string());
  return out;
}

struct Loads {
  fs::path cache;
  std::vector<std::string> reasons;
  SnapshotOptions options() {
    SnapshotOptions o;
    o.cache_dir = cache.string();
    o.log = [this](std::string_view r) { reasons.emplace_back(r); };
    return o;
  }
  Trace load(const std::string& path) {
    reasons.clear();
    return load_trace(path, LoadOptions{}, options());
  }
  std::shared_ptr<const Trace> load_behind(const std::string& path, SnapshotWriteBehind& writer) {
    reasons.clear();
    return load_trace_write_behind(path, LoadOptions{}, options(), writer);
  }
  std::string snapshot_of(const std::string& path) {
    return snapshot_path(cache.string(), snapshot_key(path));
  }
};

// A conformance trace copied under `tmp`, its plain load (snapshots on) and
// the snapshot file that load wrote: what write-behind loads must match.
struct PlainLoad {
  fs::path trace;
  Trace store;
  std::string snapshot;
};
PlainLoad plain_load(const TempDir& tmp) {
  PlainLoad p;
  p.trace = tmp.path / "trace.json.gz";
  fs::copy_file(conformance_trace("h100_qwen1.5-0.5b"), p.trace);
  Loads plain{tmp.path / "plain", {}};
  p.store = plain.load(p.trace.string());
  p.snapshot = snapshot_store_bytes(read_file(plain.snapshot_of(p.trace.string())));
  return p;
}

}  // namespace

TEST_CASE("snapshot: the second load reads it and every report is byte-identical") {
  TempDir tmp;
  fs::path trace = tmp.path / "trace.json.gz";
  fs::copy_file(conformance_trace("h100_qwen1.5-0.5b"), trace);
  Loads loads{tmp.path / "cache", {}};
  SnapshotOptions off;
  off.enabled = false;
  Trace json = load_trace(trace.string(), LoadOptions{}, off);
  CHECK_FALSE(fs::exists(tmp.path / "cache"));

  Trace first = loads.load(trace.string());  // from JSON, writes the snapshot
  CHECK(loads.reasons.empty());
  std::string snap = loads.snapshot_of(trace.string());
  REQUIRE(fs::exists(snap));
  CHECK(fs::path(snap).parent_path().parent_path() == tmp.path / "cache");

  Trace second = loads.load(trace.string());  // from the snapshot
  CHECK(loads.reasons.empty());
  check_same_store(json, first);
  check_same_store(json, second);

  fs::create_directories(tmp.path / "a");
  fs::create_directories(tmp.path / "b");
  auto from_json = report_files(json, tmp.path / "a");
  auto from_snapshot = report_files(second, tmp.path / "b");
  CHECK(from_json.size() > 10);
  CHECK(from_json == from_snapshot);
  CHECK(second.gpu_name() == json.gpu_name());
}

TEST_CASE(
    "snapshot: events are read in place from the file, and writing them leaves it unchanged") {
  TempDir tmp;
  fs::path trace = tmp.path / "trace.json.gz";
  fs::copy_file(conformance_trace("h100_qwen1.5-0.5b"), trace);
  Loads loads{tmp.path / "cache", {}};
  Trace first = loads.load(trace.string());
  CHECK_FALSE(first.events.is_view());  // parsed from JSON
  std::string snap = loads.snapshot_of(trace.string());
  std::string bytes_before = read_file(snap);

  Trace second = loads.load(trace.string());
  CHECK(loads.reasons.empty());
  REQUIRE(second.events.is_view());
  CHECK(second.sparse_ids().is_view());
  // In place: the event array lies inside the file's bytes, at an 8-byte offset.
  CHECK(reinterpret_cast<uintptr_t>(second.events.data()) % alignof(Event) == 0);

  // A private mapping: this process's write is its own.
  const int64_t ts0 = second.events[0].ts_ns;
  second.events[0].ts_ns = ts0 + 12345;
  CHECK(second.events[0].ts_ns == ts0 + 12345);
  CHECK(read_file(snap) == bytes_before);
  Trace third = loads.load(trace.string());
  CHECK(loads.reasons.empty());
  CHECK(third.events[0].ts_ns == ts0);
  check_same_store(first, third);

  // Copies are owned and independent; growing a view copies it first.
  MappableVector<Event> copy = third.events;
  CHECK_FALSE(copy.is_view());
  copy[0].ts_ns = 7;
  CHECK(third.events[0].ts_ns == ts0);
  const size_t n = third.events.size();
  Event extra = third.events[1];
  third.events.push_back(extra);
  CHECK_FALSE(third.events.is_view());
  REQUIRE(third.events.size() == n + 1);
  CHECK(third.events[0].ts_ns == ts0);
  CHECK(third.events[n].ts_ns == extra.ts_ns);
  // The mapping outlives the load that made it: a moved trace keeps its view.
  Trace moved = std::move(second);
  CHECK(moved.events.is_view());
  CHECK(moved.events[0].ts_ns == ts0 + 12345);
  check_same_store(first, loads.load(trace.string()));
}

#if defined(__linux__)
// A byte of each page (not checked by a sanitizer: its shadow reads would
// fault pages of their own).
__attribute__((no_sanitize_address)) unsigned sum_pages(const volatile unsigned char* bytes,
                                                        size_t size, size_t page) {
  unsigned sum = 0;
  for (size_t at = 0; at < size; at += page) sum += bytes[at];
  return sum;
}

TEST_CASE("snapshot: a forked process reads the mapped events without mapping them again") {
  // An MCP worker is a fork of the server: Linux copies the page table
  // entries of a mapping into the child only when the mapping holds pages of
  // its own, else the child faults each page of the file in again (16 pages
  // a fault). Counted in the child over every page of the event array.
  TempDir tmp;
  fs::path trace = tmp.path / "trace.json.gz";
  fs::copy_file(conformance_trace("h100_qwen1.5-0.5b"), trace);
  Loads loads{tmp.path / "cache", {}};
  (void)loads.load(trace.string());
  Trace mapped = loads.load(trace.string());
  REQUIRE(mapped.events.is_view());
  const auto* bytes = reinterpret_cast<const volatile unsigned char*>(mapped.events.data());
  const size_t size = mapped.events.size() * sizeof(Event);
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t pages = size / page;
  REQUIRE(pages >= 128);                              // a refault of each 16 pages would show
  const unsigned sum = sum_pages(bytes, size, page);  // resident in this process
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    rusage before{}, after{};
    ::getrusage(RUSAGE_SELF, &before);
    const unsigned child_sum = sum_pages(bytes, size, page);
    ::getrusage(RUSAGE_SELF, &after);
    const long faults = after.ru_minflt - before.ru_minflt;
    ::_exit(child_sum == sum && faults <= 4 ? 0 : 1);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}
#endif

TEST_CASE("snapshot: a write-behind load gives the plain load's store and snapshot file") {
  TempDir tmp;
  const PlainLoad plain = plain_load(tmp);
  const fs::path& trace = plain.trace;
  const Trace& reference = plain.store;
  const std::string& plain_snapshot = plain.snapshot;
  REQUIRE(plain_snapshot.size() > 1000);

  Loads behind{tmp.path / "behind", {}};
  const std::string snap = behind.snapshot_of(trace.string());
  {
    SnapshotWriteBehind writer;
    std::shared_ptr<const Trace> t = behind.load_behind(trace.string(), writer);
    // The caller works with the trace while the snapshot is written.
    CallTree tree(*t);
    CHECK(tree.cpu_root_nodes().size() > 0);
    check_same_store(reference, *t);
    writer.wait();
    CHECK(behind.reasons.empty());
    REQUIRE(fs::exists(snap));
    CHECK(snapshot_store_bytes(read_file(snap)) == plain_snapshot);
  }
  {
    // The next load reads that snapshot: nothing to write, the same store.
    SnapshotWriteBehind writer;
    std::shared_ptr<const Trace> t = behind.load_behind(trace.string(), writer);
    CHECK(t->events.is_view());
    check_same_store(reference, *t);
    writer.wait();
    CHECK(behind.reasons.empty());
    CHECK(snapshot_store_bytes(read_file(snap)) == plain_snapshot);
  }
  {
    // Started on request: nothing is written before start(); a writer never
    // started writes when it is joined.
    Loads later{tmp.path / "later", {}};
    const std::string later_snap = later.snapshot_of(trace.string());
    for (bool started : {true, false}) {
      CAPTURE(started);
      fs::remove_all(tmp.path / "later");
      SnapshotWriteBehind writer(SnapshotWriteBehind::Start::OnRequest);
      std::shared_ptr<const Trace> t = later.load_behind(trace.string(), writer);
      CallTree tree(*t);
      CHECK_FALSE(fs::exists(later_snap));
      if (started) writer.start();
      writer.wait();
      REQUIRE(fs::exists(later_snap));
      CHECK(snapshot_store_bytes(read_file(later_snap)) == plain_snapshot);
    }
  }
  {
    // A write that fails is logged by the time the writer is joined; the
    // load itself succeeds. The cache directory lies under a plain file.
    write_file(tmp.path / "file", "x");
    Loads failing{tmp.path / "file" / "cache", {}};
    std::shared_ptr<const Trace> t;
    {
      SnapshotWriteBehind writer;
      t = failing.load_behind(trace.string(), writer);
    }  // the destructor joins
    check_same_store(reference, *t);
    // The cache directory cannot be made: one warning, no read, no write.
    REQUIRE(failing.reasons.size() == 1);
    CHECK(failing.reasons[0].find("not used: cannot create it") != std::string::npos);
  }
}

TEST_CASE("snapshot: a session's first load writes the snapshot beside the session") {
  TempDir tmp;
  const PlainLoad plain = plain_load(tmp);
  const fs::path& trace = plain.trace;
  const Trace& reference = plain.store;
  const std::string& plain_snapshot = plain.snapshot;

  EnvGuard env;
  env.set("JARVIS_NO_SNAPSHOT", "0");
  env.set("JARVIS_CACHE_DIR", (tmp.path / "session").c_str());
  const std::string snap =
      snapshot_path((tmp.path / "session").string(), snapshot_key(trace.string()));
  {
    TraceCache cache;
    auto acquired = cache.acquire(identify_file(trace.string()));
    REQUIRE(acquired.parsed);
    CHECK_FALSE(acquired.entry->trace().events.is_view());  // from the JSON
    check_same_store(reference, acquired.entry->trace());
  }  // the entry goes with the cache, and its snapshot write is joined
  REQUIRE(fs::exists(snap));
  CHECK(snapshot_store_bytes(read_file(snap)) == plain_snapshot);
  TraceCache next_session;
  auto acquired = next_session.acquire(identify_file(trace.string()));
  CHECK(acquired.entry->trace().events.is_view());  // from the snapshot
  check_same_store(reference, acquired.entry->trace());
}

TEST_CASE("snapshot: truncated, stale, corrupt and foreign snapshots are ignored with a reason") {
  TempDir tmp;
  fs::path trace = tmp.path / "t.json.gz";
  fs::copy_file(conformance_trace("mi300_compile_triton"), trace);
  Loads loads{tmp.path / "cache", {}};
  Trace reference = loads.load(trace.string());
  std::string snap = loads.snapshot_of(trace.string());
  REQUIRE(fs::exists(snap));
  const auto full_size = fs::file_size(snap);

  auto expect_ignored = [&](const std::string& why) {
    Trace t = loads.load(trace.string());
    REQUIRE(loads.reasons.size() == 1);
    std::string reason = loads.reasons[0];
    CAPTURE(reason);
    CHECK(reason.find(why) != std::string::npos);
    CHECK(reason.find("ignored") != std::string::npos);
    check_same_store(reference, t);
    // Rebuilt: the next load uses it without complaint.
    Trace again = loads.load(trace.string());
    CHECK(loads.reasons.empty());
    check_same_store(reference, again);
  };

  SUBCASE("truncated") {
    fs::resize_file(snap, full_size / 2);
    expect_ignored("truncated");
  }
  SUBCASE("shorter than the header") {
    fs::resize_file(snap, 10);
    expect_ignored("truncated");
  }
  SUBCASE("stale: the trace was touched") {
    fs::last_write_time(trace, fs::last_write_time(trace) + std::chrono::seconds(5));
    expect_ignored("stale");
  }
  SUBCASE("corrupt: one byte flipped in the events") {
    std::fstream f(snap, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(full_size / 2));
    char c = 0;
    f.read(&c, 1);
    f.seekp(static_cast<std::streamoff>(full_size / 2));
    c = static_cast<char>(c ^ 0x5a);
    f.write(&c, 1);
    f.close();
    expect_ignored("corrupt");
  }
  SUBCASE("another format version") {
    std::fstream f(snap, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(8);
    const char v[4] = {99, 0, 0, 0};
    f.write(v, 4);
    f.close();
    expect_ignored("format version 99");
  }
  SUBCASE("not a snapshot") {
    write_file(snap, "hello, this is not a snapshot file at all, though longer than its header");
    expect_ignored("not a jarvis snapshot");
  }
}

TEST_CASE("snapshot: a changed trace of the same size is not served from the old snapshot") {
  TempDir tmp;
  fs::path trace = tmp.path / "t.json";
  std::string text =
      R"({"traceEvents":[{"ph":"X","cat":"kernel","name":"A","pid":0,"tid":7,"ts":1,"dur":2}]})";
  write_file(trace, text);
  auto mtime = fs::last_write_time(trace);
  Loads loads{tmp.path / "cache", {}};
  CHECK(loads.load(trace.string()).name(0) == "A");
  text[text.find("\"A\"") + 1] = 'B';
  write_file(trace, text);
  fs::last_write_time(trace, mtime);  // same size and mtime: only the content differs
  Trace t = loads.load(trace.string());
  CHECK(t.name(0) == "B");
  REQUIRE(loads.reasons.size() == 1);
  CHECK(loads.reasons[0].find("stale") != std::string::npos);
}

TEST_CASE("snapshot: plain load_trace follows JARVIS_NO_SNAPSHOT and the cache directory env") {
  TempDir tmp;
  fs::path trace = tmp.path / "t.json";
  write_file(trace, R"({"traceEvents":[{"ph":"X","name":"A","ts":1,"dur":2}]})");
  fs::path cache = tmp.path / "cache";
  EnvGuard env;
  env.set("JARVIS_CACHE_DIR", cache.c_str());
  env.set("JARVIS_NO_SNAPSHOT", "1");
  CHECK_FALSE(snapshots_enabled());
  load_trace(trace.string());
  CHECK_FALSE(fs::exists(cache));
  env.set("JARVIS_NO_SNAPSHOT", "0");
  CHECK(snapshots_enabled());
  load_trace(trace.string());
  CHECK(fs::exists(snapshot_path(cache.string(), snapshot_key(trace.string()))));
  CHECK(load_trace(trace.string()).name(0) == "A");  // from the snapshot

  CHECK(snapshot_cache_dir() == cache.string());
  env.set("JARVIS_CACHE_DIR", nullptr);
  env.set("XDG_CACHE_HOME", (tmp.path / "x").c_str());
  CHECK(snapshot_cache_dir() == (tmp.path / "x" / "jarvis").string());
  env.set("XDG_CACHE_HOME", nullptr);
  env.set("HOME", (tmp.path / "home").c_str());
  CHECK(snapshot_cache_dir() == (tmp.path / "home" / ".cache" / "jarvis").string());
}

TEST_CASE("snapshot: the cache stays within its budget, least recently used first") {
  TempDir tmp;
  std::vector<fs::path> traces;
  for (const char* name : {"a", "b", "c"}) {
    traces.push_back(tmp.path / (std::string(name) + ".json"));
    write_file(traces.back(),
               fmt::format(R"({{"traceEvents":[{{"ph":"X","name":"{}","ts":1,"dur":2}}]}})", name));
  }
  Loads loads{tmp.path / "cache", {}};
  loads.load(traces[0].string());
  loads.load(traces[1].string());
  std::vector<std::string> snaps;
  for (const auto& t : traces) snaps.push_back(loads.snapshot_of(t.string()));
  uint64_t one = fs::file_size(snaps[0]);
  REQUIRE(fs::file_size(snaps[1]) == one);  // same shape, same size
  // a is older than b on disk; reading it from the snapshot makes it the most
  // recently used, so b is the one a third snapshot pushes out.
  auto now = fs::file_time_type::clock::now();
  fs::last_write_time(snaps[0], now - std::chrono::hours(2));
  fs::last_write_time(snaps[1], now - std::chrono::hours(1));
  CHECK(loads.load(traces[0].string()).name(0) == "a");
  CHECK(loads.reasons.empty());  // served from the snapshot
  CHECK(fs::last_write_time(snaps[0]) > fs::last_write_time(snaps[1]));

  SnapshotOptions bounded = loads.options();
  bounded.cache_budget_bytes = 2 * one + one / 2;  // room for two snapshots
  CHECK(load_trace(traces[2].string(), LoadOptions{}, bounded).name(0) == "c");
  CHECK(fs::exists(snaps[0]));
  CHECK_FALSE(fs::exists(snaps[1]));
  CHECK(fs::exists(snaps[2]));

  // A budget below one snapshot keeps only the one just written.
  CHECK(prune_snapshot_cache(loads.cache.string(), 1, snaps[2]) ==
        std::vector<std::string>{snaps[0]});
  CHECK(fs::exists(snaps[2]));

  EnvGuard env;
  env.set("JARVIS_CACHE_MAX_MB", "3");
  CHECK(snapshot_cache_budget() == 3u << 20);
  env.set("JARVIS_CACHE_MAX_MB", "lots");
  CHECK(snapshot_cache_budget() == uint64_t{4096} << 20);
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
