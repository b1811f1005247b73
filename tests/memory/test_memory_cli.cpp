// The memory samples through a snapshot, and `jarvis memory` as a command.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "golden.h"
#include "memory/memory.h"
#include "test_analysis_support.h"
#include "trace/loader.h"
#include "trace/memory_events.h"
#include "trace/snapshot.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using namespace jarvis;

namespace {

std::string bert_trace() {
  return golden::shared_dir() + "/conformance/h100_bert-small/trace.json.gz";
}

struct Run {
  int exit_code = -1;
  std::string out;  // stdout and stderr
};

Run jarvis_cli(const std::string& args) {
  Run r;
  std::string cmd = std::string(JARVIS_BINARY) + " --no-cache " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p);
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

}  // namespace

TEST_CASE("memory: the samples survive a snapshot") {
  testing::TempDir dir;
  std::string path = bert_trace();
  Trace loaded = load_trace(path);
  std::string file = dir.path + "/bert.snap";
  SnapshotKey key = snapshot_key(path);
  SnapshotMacKey mac_key{};
  for (size_t k = 0; k < mac_key.size(); ++k) mac_key[k] = static_cast<uint8_t>(k * 7 + 1);
  write_snapshot(file, key, mac_key, loaded);
  std::optional<Trace> back = read_snapshot(
      file, key, mac_key, path, [](std::string_view why) { FAIL_CHECK(std::string(why)); });
  REQUIRE(back.has_value());
  std::vector<MemorySample> a = memory_samples(loaded), b = memory_samples(*back);
  REQUIRE(a.size() == 236);
  REQUIRE(b.size() == a.size());
  for (size_t k = 0; k < a.size(); ++k) {
    CHECK(b[k].uid == a[k].uid);
    CHECK(b[k].addr == a[k].addr);
    CHECK(b[k].bytes == a[k].bytes);
    CHECK(b[k].total_allocated == a[k].total_allocated);
    CHECK(b[k].total_reserved == a[k].total_reserved);
    CHECK(b[k].device_type == a[k].device_type);
  }
}

TEST_CASE("memory: jarvis memory writes the three CSVs and names profile_memory when absent") {
  testing::TempDir dir;
  std::string out = dir.path + "/mem";
  Run ok = jarvis_cli("memory " + bert_trace() + " --out " + out + " --progress none");
  CHECK(ok.exit_code == 0);
  CHECK(ok.out.find("cuda:0: peak 96.6 MiB allocated") != std::string::npos);
  for (const char* f :
       {"memory_timeline.csv", "memory_at_peak.csv", "memory_by_op.csv", "memory_summary.json"})
    CHECK_MESSAGE(std::filesystem::exists(out + "/" + f), f);

  Run none = jarvis_cli("memory " + golden::shared_dir() + "/hw_pairs/gpt2_train/h100.json.gz");
  CHECK(none.exit_code == 1);
  CHECK(none.out.find("profile_memory=True") != std::string::npos);

  Run device = jarvis_cli("memory " + bert_trace() + " --device cuda:5");
  CHECK(device.exit_code == 1);
  CHECK(device.out.find("cuda:0, cpu") != std::string::npos);
}

TEST_CASE("memory: jarvis memory --html writes the page with the peak the text prints") {
  testing::TempDir dir;
  std::string page = dir.path + "/m.html";
  Run ok = jarvis_cli("memory " + bert_trace() + " --html " + page + " --progress none");
  CHECK(ok.exit_code == 0);
  REQUIRE(std::filesystem::exists(page));
  std::stringstream html;
  html << std::ifstream(page).rdbuf();
  // "cuda:0: peak 96.6 MiB allocated" in the text; the same label on the chart.
  CHECK(ok.out.find("cuda:0: peak 96.6 MiB allocated") != std::string::npos);
  CHECK(html.str().find(">peak 96.6 MiB</text>") != std::string::npos);
  CHECK(html.str().find("class=\"series allocated\"") != std::string::npos);
  CHECK(html.str().find("class=\"series reserved\"") != std::string::npos);
  CHECK(ok.out.find(page + ": memory page, 2 devices") != std::string::npos);

  Run missing = jarvis_cli("memory " + bert_trace() + " --html " + dir.path + "/no/m.html");
  CHECK(missing.exit_code == 2);
  CHECK(missing.out.find("--mkdirs") != std::string::npos);
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
