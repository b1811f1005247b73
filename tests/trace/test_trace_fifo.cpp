// Issue 49 point 7: a FIFO (or a device) given as a trace is refused at once
// with "not a regular file", never waited on: by the loader (snapshots on or
// off), by the rocprofv3 readers, by a sweep (that run fails, the others are
// analysed) and by the server's load_trace (which answers the next call).
// Each read runs on another thread under a deadline; if it hangs, the test
// fails and opens the FIFO for writing until the reader wakes, so the suite
// goes on.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <future>
#include <string>
#include <vector>

#include "mcp_harness.h"
#include "rocprof/profile.h"
#include "security_support.h"
#include "sweep/sweep.h"
#include "test_loader_support.h"
#include "trace/loader.h"
#include "trace/snapshot.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using namespace jarvis;
using namespace jarvis::loader_test;

namespace {

constexpr auto kDeadline = std::chrono::seconds(10);

fs::path make_fifo(const fs::path& path) {
  fs::create_directories(path.parent_path());
  REQUIRE(::mkfifo(path.c_str(), 0600) == 0);
  return path;
}

// What `read` threw (its message), or "(no error)"; fails the test instead
// of hanging when it does not return within the deadline.
std::string error_within_deadline(const std::vector<fs::path>& fifos, std::function<void()> read) {
  auto start = std::chrono::steady_clock::now();
  auto result = std::async(std::launch::async, [read = std::move(read)]() -> std::string {
    try {
      read();
    } catch (const std::exception& e) {
      return e.what();
    }
    return "(no error)";
  });
  if (result.wait_for(kDeadline) != std::future_status::ready) {
    FAIL_CHECK("the read blocked on the FIFO for ", kDeadline.count(), " s");
    // Unblock it: a writer that closes at once gives the reader end of file;
    // again for each later open of the FIFO.
    do {
      for (const fs::path& fifo : fifos) {
        int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
        if (fd >= 0) ::close(fd);
      }
    } while (result.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready);
  }
  std::string error = result.get();
  CHECK(std::chrono::steady_clock::now() - start < kDeadline);
  return error;
}

std::string error_within_deadline(const fs::path& fifo, std::function<void()> read) {
  return error_within_deadline(std::vector<fs::path>{fifo}, std::move(read));
}

std::string not_regular(const fs::path& path) {
  return "'" + path.string() + "' is not a regular file (a FIFO); give a trace file";
}

}  // namespace

TEST_SUITE("trace_fifo") {
  TEST_CASE("the loader refuses a FIFO at once, with snapshots on and off") {
    TempDir tmp;
    fs::path fifo = make_fifo(tmp.path / "trace.json");
    SnapshotOptions off;
    off.enabled = false;
    CHECK(error_within_deadline(fifo, [&] { load_trace(fifo.string(), LoadOptions{}, off); }) ==
          not_regular(fifo));
    // With snapshots on, the snapshot key (it reads the file's edges) refuses it first.
    SnapshotOptions on;
    on.cache_dir = (tmp.path / "cache").string();
    on.log = [](std::string_view) {};
    CHECK(error_within_deadline(fifo, [&] { load_trace(fifo.string(), LoadOptions{}, on); }) ==
          not_regular(fifo));
    CHECK(error_within_deadline(fifo, [&] { snapshot_key(fifo.string()); }) ==
          not_regular(fs::canonical(fifo)));
    // A device is no trace either (/dev/zero would never end).
    CHECK_THROWS_WITH(load_trace("/dev/zero", LoadOptions{}, off),
                      "'/dev/zero' is not a regular file (a character device); give a trace file");
  }

  TEST_CASE("the rocprofv3 readers refuse a FIFO at once") {
    TempDir tmp;
    fs::path fifo = make_fifo(tmp.path / "run_results.json");
    // The format sniff reads nothing from it: not rocprofv3, at once.
    rocprof::InputKind kind = rocprof::InputKind::Json;
    CHECK(error_within_deadline(fifo, [&] { kind = rocprof::detect_input(fifo.string()); }) ==
          "(no error)");
    CHECK(kind == rocprof::InputKind::Other);
    CHECK(error_within_deadline(fifo, [&] { (void)rocprof::load_profile(fifo.string()); }) ==
          not_regular(fifo));
    fs::path csv_fifo = make_fifo(tmp.path / "csv" / "run_kernel_trace.csv");
    std::string csv_error =
        error_within_deadline(csv_fifo, [&] { (void)rocprof::load_profile(csv_fifo.string()); });
    CAPTURE(csv_error);
    CHECK(csv_error.find(not_regular(csv_fifo)) != std::string::npos);
  }

  TEST_CASE("a sweep run whose trace is a FIFO fails with the reason; the others are analysed") {
    TempDir tmp;
    fs::path root = tmp.path / "sweep";
    testing::copy_example_trace(root / "rank0" / "trace.json.gz");
    fs::path fifo = make_fifo(root / "rank1" / "trace.json.gz");
    fs::path xlsx_fifo = make_fifo(root / "rank2" / "trace.xlsx");
    sweep::LoadOptions options;
    options.pattern = "rank{rank}/*";
    options.cache_dir = "none";
    options.jobs = 2;
    sweep::Sweep result;
    std::string error = error_within_deadline(
        {fifo, xlsx_fifo}, [&] { result = sweep::load_sweep(root.string(), options); });
    CHECK(error == "(no error)");
    REQUIRE(result.runs.size() == 1);
    CHECK(result.runs[0].input.values == std::vector<std::string>{"0"});
    REQUIRE(result.failures.size() == 2);
    std::sort(result.failures.begin(), result.failures.end(),
              [](const auto& a, const auto& b) { return a.path < b.path; });
    CHECK(result.failures[0].path == fifo.string());
    CHECK(result.failures[0].reason == not_regular(fifo));
    CHECK(result.failures[1].reason == not_regular(xlsx_fifo));
  }

  TEST_CASE("the server refuses a FIFO trace with a tool error and answers the next call") {
    testing::ScratchDir root;
    fs::path fifo = make_fifo(root / "trace.json");
    testing::copy_example_trace(root / "real.json.gz");
    mcp::ServerOptions server_options;
    server_options.roots = {root.str()};
    mcp::testing::Harness h(server_options);
    h.initialize();
    mcp::json reply;
    error_within_deadline(fifo, [&] {
      reply = h.call_tool(1, "load_trace", {{"path", "trace.json"}});
    });
    REQUIRE(reply.contains("result"));
    CHECK(reply["result"].value("isError", false));
    CAPTURE(reply.dump());
    CHECK(reply["result"]["content"][0]["text"].get<std::string>().find("not a regular file") !=
          std::string::npos);
    mcp::json next = h.call_tool(2, "load_trace", {{"path", "real.json.gz"}});
    REQUIRE(next.contains("result"));
    CHECK_FALSE(next["result"].value("isError", false));
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
