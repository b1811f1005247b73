// `jarvis compare` end to end: the two qwen conformance traces (H100
// reference, MI300X target) must reproduce every CSV of the TraceLens
// reference comparison, plus the sheets TraceLens could not produce there
// (gpu_timeline, kernel_summary) and the hardware gap analysis.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "golden.h"
#include "report/table.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace fs = std::filesystem;

namespace {

std::string conformance(const std::string& sub) {
  return jarvis::golden::shared_dir() + "/conformance/" + sub;
}

int run(const std::string& command) {
  int status = std::system((command + " > /dev/null 2>&1").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& tag)
      : path(fs::temp_directory_path() / ("jarvis_" + tag + "_" + std::to_string(::getpid()))) {
    fs::remove_all(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::string quoted(const std::string& s) {
  return "'" + s + "'";
}

}  // namespace

TEST_CASE("jarvis compare: qwen H100 vs MI300X traces reproduce the reference comparison") {
  TempDir out("compare_golden");
  std::string cmd = std::string(JARVIS_BINARY) + " compare " +
                    quoted(conformance("h100_qwen1.5-0.5b/trace.json.gz")) + " " +
                    quoted(conformance("mi300_qwen1.5-0.5b/trace.json.gz")) + " --out " +
                    quoted(out.path.string()) +
                    " --names h100 mi300 --arch-ref H100 --arch-target MI300X";
  REQUIRE(run(cmd) == 0);

  size_t checked = 0;
  for (const auto& entry : fs::directory_iterator(conformance("compare_qwen_h100_vs_mi300"))) {
    if (entry.path().extension() != ".csv") continue;
    std::string name = entry.path().filename().string();
    CAPTURE(name);
    fs::path actual = out.path / name;
    REQUIRE(fs::exists(actual));
    auto r = jarvis::golden::compare_csv_files(entry.path().string(), actual.string());
    INFO(r.summary());
    CHECK(r.ok());
    ++checked;
  }
  CHECK(checked == 19);

  // Sheets without a TraceLens reference on this data: present and shaped.
  jarvis::Table timeline = jarvis::read_csv_file((out.path / "gpu_timeline.csv").string());
  CHECK(timeline.columns.front() == "type");
  CHECK(timeline.col("time ms__mi300_diff") == 1);
  CHECK(timeline.rows.size() == 8);
  CHECK(fs::exists(out.path / "kernel_summary.csv"));

  jarvis::Table gaps = jarvis::read_csv_file((out.path / "hardware_gap_analysis.csv").string());
  CHECK(gaps.rows.size() == 35);
  std::ifstream in(out.path / "hardware_gap_analysis.json");
  std::stringstream ss;
  ss << in.rdbuf();
  auto j = nlohmann::json::parse(ss.str());
  CHECK(j["reference"]["arch"]["name"] == "H100");
  CHECK(j["target"]["arch"]["name"] == "MI300X");
  CHECK(j["hbm_time_ratio"].get<double>() == doctest::Approx(3350.0 / 5300.0));
  CHECK(j["rows"].size() == 35);
}

TEST_CASE("jarvis compare: bad invocations fail cleanly") {
  std::string bin = JARVIS_BINARY;
  CHECK(run(bin + " compare") == 2);
  CHECK(run(bin + " compare a.json") == 2);
  CHECK(run(bin + " compare a.json b.json") == 2);  // no --out
  CHECK(run(bin + " compare a.json b.json --out /tmp/x --bogus") == 2);
  CHECK(run(bin + " compare a.json b.json --out /tmp/x --merge-order random") == 2);
  TempDir out("compare_bad");
  CHECK(run(bin + " compare /nonexistent/a.json.gz /nonexistent/b.json.gz --out " +
            quoted(out.path.string())) == 1);
  CHECK_FALSE(fs::exists(out.path));  // nothing written on failure
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
