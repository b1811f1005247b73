// The one input dispatch: each format judged by content (not by name), the
// inputs read through an export refused with the command that makes one, and
// every loader path giving the same events as the format's own reader.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include <fmt/format.h>
#include <unistd.h>

#include "explore/input_format.h"
#include "rocprof/profile.h"
#include "test_analysis_support.h"
#include "trace/loader.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using namespace jarvis;
namespace fs = std::filesystem;

namespace {

std::string source_path(const std::string& rel) {
  return std::string(JARVIS_SOURCE_DIR) + "/" + rel;
}

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / fmt::format("jarvis_input_format.{}", ::getpid());
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const TraceError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("input format: judged by content, whatever the file is called") {
  const std::string kineto = source_path("examples/example_trace.json.gz");
  const std::string rocprof_json = source_path("tests/rocprof/908_subset_results.json");
  const std::string rocprof_csv = source_path("tests/rocprof/csv_908");
  CHECK(detect_input_format(kineto) == InputFormat::KinetoJson);
  CHECK(detect_input_format(rocprof_json) == InputFormat::RocprofJson);
  CHECK(detect_input_format(rocprof_csv) == InputFormat::RocprofCsv);

  // A rocprofv3 results file under a Kineto-looking name is still rocprofv3.
  TempDir tmp;
  fs::path renamed = tmp.path / "trace.json";
  fs::copy_file(rocprof_json, renamed);
  CHECK(detect_input_format(renamed.string()) == InputFormat::RocprofJson);
  CHECK(input_format_name(InputFormat::RocprofJson) == "rocprofv3 JSON results");
}

TEST_CASE("input format: an Nsight Systems report is refused with the export command") {
  TempDir tmp;
  fs::path rep = tmp.path / "run1.nsys-rep";
  std::ofstream(rep) << "not read";
  std::string message = error_of([&] { detect_input_format(rep.string()); });
  CHECK(message.find("nsys export --type sqlite") != std::string::npos);
  CHECK(message.find("run1.sqlite") != std::string::npos);
  // The same refusal reaches every path that loads a trace.
  CHECK(error_of([&] { load_any_trace(rep.string()); }) == message);
}

TEST_CASE("input format: every load path gives the format's own events") {
  const std::string rocprof_json = source_path("tests/rocprof/908_subset_results.json");
  Trace direct = rocprof::to_trace(rocprof::load_profile(rocprof_json));
  // Commands that need host ops are told what reads rocprofv3 output.
  CHECK(error_of([&] { load_any_trace(rocprof_json); }).find("not a PyTorch profiler trace") !=
        std::string::npos);
  LoadedInput in = load_non_kineto_input(rocprof_json, InputFormat::RocprofJson);
  CHECK(in.trace.platform == direct.platform);
  CHECK(in.trace.events.size() == direct.events.size());
  CHECK(static_cast<bool>(in.attach));  // the profile stays for the rocprof-only tools

  const std::string kineto = source_path("examples/example_trace.json.gz");
  CHECK(load_any_trace(kineto).events.size() == load_trace(kineto).events.size());
  // Kineto JSON is the Kineto loader's (snapshot cache included), not a reader row.
  CHECK(error_of([&] {
          load_non_kineto_input(kineto, InputFormat::KinetoJson);
        }).find("no reader") != std::string::npos);
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
