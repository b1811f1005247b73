// Bad input must give one clear TraceError naming the file and the problem,
// and the CLI must exit non-zero without leaving output behind.
#include <doctest/doctest.h>

#include <charconv>
#include <cstdint>
#include <string>
#include <system_error>
#include <vector>

#include "rocprof/profile.h"
#include "test_loader_support.h"
#include "trace/loader.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using namespace jarvis;
using namespace jarvis::loader_test;

namespace {

const std::string kCorpus = std::string(JARVIS_SOURCE_DIR) + "/tests/malformed/";

struct BadInput {
  std::string file;      // under tests/malformed/
  std::string expected;  // substring of the error message
};

const std::vector<BadInput>& corpus() {
  static const std::vector<BadInput> cases = {
      {"random_text.json", "not JSON or not a JSON object"},
      {"png_header.json", "not JSON: this is a PNG image"},
      {"not_gzip.json.gz", "not a gzip file"},
      {"missing_comma.json", "traceEvents[0] is not valid JSON"},
      {"unterminated_string.json", "unexpected end of data (truncated JSON)"},
      {"trailing_garbage.json", "unexpected data after the top-level JSON object"},
      {"truncated.json", "unexpected end of data (truncated JSON)"},
      {"no_trace_events.json", "no 'traceEvents' array"},
      {"trace_events_not_array.json", "'traceEvents' is not an array"},
      {"element_not_object.json", "traceEvents[1] is not a JSON object"},
      {"ts_string.json", "traceEvents[0]: field 'ts' must be a number"},
      {"name_number.json", "traceEvents[0]: field 'name' must be a string"},
      {"pid_object.json", "traceEvents[0]: field 'pid' must be an integer or a string"},
      {"args_list.json", "traceEvents[0]: field 'args' must be an object"},
      {"missing_ph.json", "traceEvents[0] has no 'ph' (phase) member"},
      {"empty_trace.json", "'traceEvents' is empty"},
      {"empty_file.json", "file is empty"},
      {"whitespace_only.json", "file is empty"},
      {"top_level_array.json", "top-level JSON value is an array"},
      {"bad_number_in_args.json", "args['Ev Idx'] is not a valid number"},
      {"bad_literal_in_args.json", "args['finished'] is not a valid literal"},
      {"bad_array_in_args.json", "args['Input Dims']"},
      {"deep_args.json", "args['Input Dims'] is nested too deeply"},
  };
  return cases;
}

std::string load_error(const std::string& path) {
  try {
    load_trace(path);
  } catch (const TraceError& e) {
    return e.what();
  }
  return "(no error)";
}

// A minimal valid trace with a few events.
std::string small_trace() {
  std::string events;
  for (int k = 0; k < 50; ++k) {
    if (k) events += ",";
    events += R"({"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":)" +
              std::to_string(100 + k) + R"(.5,"dur":2.25,"args":{"External id":)" +
              std::to_string(k) + R"(,"Input Dims":[[2,3],[3,4]]}})";
  }
  return R"({"schemaVersion":1,"traceEvents":[)" + events + "]}";
}

}  // namespace

TEST_CASE("loader: every malformed corpus file gives a clear error naming the file") {
  for (const BadInput& bad : corpus()) {
    std::string path = kCorpus + bad.file;
    CAPTURE(path);
    std::string msg = load_error(path);
    CAPTURE(msg);
    CHECK(msg.rfind(path + ": ", 0) == 0);  // starts with the file name
    CHECK(msg.find(bad.expected) != std::string::npos);
  }
}

TEST_CASE("loader: missing file and directory") {
  std::string missing = kCorpus + "does_not_exist.json.gz";
  std::string msg = load_error(missing);
  CHECK(msg.find(missing + ": cannot open: No such file or directory") != std::string::npos);
  std::string dir = kCorpus;
  CHECK(load_error(dir).find("is a directory") != std::string::npos);
}

TEST_CASE("loader: broken gzip containers") {
  TempDir tmp;
  std::string good = gzip_member(small_trace());

  SUBCASE("truncated gzip") {
    auto path = tmp.path / "truncated.json.gz";
    write_file(path, std::string_view(good).substr(0, good.size() / 2));
    std::string msg = load_error(path.string());
    CAPTURE(msg);
    CHECK(msg.find(path.string() + ": truncated gzip data") == 0);
  }
  SUBCASE("gzip missing only its trailer") {
    auto path = tmp.path / "no_trailer.json.gz";
    write_file(path, std::string_view(good).substr(0, good.size() - 4));
    CHECK(load_error(path.string()).find("truncated gzip data") != std::string::npos);
  }
  SUBCASE("corrupt deflate data") {
    std::string bad = good;
    for (size_t k = 20; k < 40 && k < bad.size(); ++k) bad[k] = static_cast<char>(bad[k] ^ 0x5a);
    auto path = tmp.path / "corrupt.json.gz";
    write_file(path, bad);
    std::string msg = load_error(path.string());
    CAPTURE(msg);
    CHECK(msg.find(path.string() + ": corrupt gzip data") == 0);
  }
  SUBCASE("trailing garbage after the gzip member") {
    auto path = tmp.path / "garbage.json.gz";
    write_file(path, good + "this is not gzip");
    CHECK(load_error(path.string()).find("trailing garbage") != std::string::npos);
  }
  SUBCASE("gzip holding a malformed trace names the .gz file") {
    auto path = tmp.path / "inner.json.gz";
    write_file(path, gzip_member(read_file(kCorpus + "missing_comma.json")));
    std::string msg = load_error(path.string());
    CHECK(msg.rfind(path.string() + ": traceEvents[0] is not valid JSON", 0) == 0);
  }
  SUBCASE("gzip of a PNG") {
    auto path = tmp.path / "png.json.gz";
    write_file(path, gzip_member(read_file(kCorpus + "png_header.json")));
    CHECK(load_error(path.string()).find("PNG image") != std::string::npos);
  }
  SUBCASE("zero padding after the last member is tolerated (as gzip(1) does)") {
    auto path = tmp.path / "padded.json.gz";
    write_file(path, good + std::string(512, '\0'));
    CHECK(load_trace(path.string()).events.size() == 50);
  }
}

TEST_CASE("loader: in-memory JSON errors carry the label") {
  try {
    load_trace_from_json(R"({"traceEvents":[{"ph":"X","ts":"x"}]})", "mem-label");
    FAIL("no error");
  } catch (const TraceError& e) {
    CHECK(std::string(e.what()) == "mem-label: traceEvents[0]: field 'ts' must be a number");
  }
}

TEST_CASE("loader: cancelling through the progress callback stops a gzip load cleanly") {
  TempDir tmp;
  std::string events;
  for (int k = 0; k < 40000; ++k) {
    if (k) events += ",";
    events += R"({"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":)" + std::to_string(k) +
              ".0,\"dur\":1.0}";
  }
  auto path = tmp.path / "big.json.gz";
  write_file(path, gzip_member(R"({"traceEvents":[)" + events + "]}"));
  LoadOptions options;
  int calls = 0;
  options.progress = [&](uint64_t, uint64_t) { return ++calls < 2; };
  try {
    load_trace(path.string(), options);
    FAIL("no error");
  } catch (const TraceError& e) {
    CHECK(std::string(e.what()).find("load cancelled") != std::string::npos);
  }
  CHECK(calls == 2);
}

TEST_CASE("cli: info exits non-zero with the loader's message for every bad input") {
  std::vector<std::string> files;
  for (const BadInput& bad : corpus()) files.push_back(kCorpus + bad.file);
  files.push_back(kCorpus + "does_not_exist.json");
  for (const std::string& path : files) {
    CAPTURE(path);
    CliResult r = run_jarvis("info " + shell_quote(path));
    CAPTURE(r.output);
    CHECK(r.exit_code == 1);
    CHECK(r.output.find("jarvis info: " + path + ": ") != std::string::npos);
    CHECK(r.output.find("events:") == std::string::npos);  // no partial summary
  }
}

TEST_CASE("cli: report exits non-zero and writes nothing for bad input") {
  TempDir tmp;
  for (const BadInput& bad : corpus()) {
    std::string path = kCorpus + bad.file;
    CAPTURE(path);
    auto out = tmp.path / ("out_" + bad.file);
    CliResult r = run_jarvis("report " + shell_quote(path) + " --out " + shell_quote(out.string()));
    CAPTURE(r.output);
    CHECK(r.exit_code != 0);
    CHECK(r.output.find(path + ": ") != std::string::npos);
    bool wrote_something = fs::exists(out) && !fs::is_empty(out);
    CHECK_FALSE(wrote_something);
  }
}

// ---- rocprofv3 input -------------------------------------------------------

namespace {

struct BadRocprof {
  std::string path;      // under tests/malformed/rocprof/
  std::string expected;  // substring of the error message
  bool force = false;    // only read as rocprofv3 when asked (--rocprof)
};

const std::vector<BadRocprof>& rocprof_corpus() {
  static const std::vector<BadRocprof> cases = {
      {"kineto_not_rocprof.json",
       "not a rocprofv3 results file: no top-level 'rocprofiler-sdk-tool' member", true},
      {"tool_not_array.json", "'rocprofiler-sdk-tool' is not a non-empty array"},
      {"no_buffer_records.json", "rocprofiler-sdk-tool[0] has no 'buffer_records' object"},
      {"dispatch_without_end.json",
       "buffer_records.kernel_dispatch[0] has no integer start_timestamp/end_timestamp"},
      {"1_results.pftrace", "rocprofv3 Perfetto output (.pftrace) is not supported"},
      {"missing_columns", "missing column(s) End_Timestamp, Grid_Size_Z"},
      {"missing_columns/1_kernel_trace.csv", "missing column(s) End_Timestamp, Grid_Size_Z"},
      {"counters_only", "a counter_collection.csv needs its kernel trace"},
      {"counters_only/1_counter_collection.csv", "a counter_collection.csv needs its kernel trace"},
      {"counters_without_dispatch.json",
       "callback_records.counter_collection[0]: dispatch 7 has no kernel_dispatch record"},
  };
  return cases;
}

std::string rocprof_error(const std::string& path) {
  try {
    jarvis::rocprof::load_profile(path);
  } catch (const TraceError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("rocprof loader: every bad rocprofv3 input gives one clear error naming the file") {
  for (const BadRocprof& bad : rocprof_corpus()) {
    std::string path = kCorpus + "rocprof/" + bad.path;
    CAPTURE(path);
    std::string msg = rocprof_error(path);
    CAPTURE(msg);
    CHECK(msg.rfind(path, 0) == 0);  // names the file (or the set's file) first
    CHECK(msg.find(bad.expected) != std::string::npos);
  }
}

TEST_CASE("cli: report on bad rocprofv3 input exits non-zero and writes nothing") {
  TempDir tmp;
  int k = 0;
  for (const BadRocprof& bad : rocprof_corpus()) {
    std::string path = kCorpus + "rocprof/" + bad.path;
    CAPTURE(path);
    auto out = tmp.path / ("out_" + std::to_string(k++));
    CliResult r = run_jarvis("report " + shell_quote(path) + " --out " + shell_quote(out.string()) +
                             (bad.force ? " --rocprof" : ""));
    CAPTURE(r.output);
    CHECK(r.exit_code == 1);
    CHECK(r.output.find(bad.expected) != std::string::npos);
    bool wrote_something = fs::exists(out) && !fs::is_empty(out);
    CHECK_FALSE(wrote_something);
  }
}

namespace {

// What the loader's number check accepts, computed here with from_chars
// alone: an integer literal in range, or a text from_chars reads to the end
// as a double (out of range included).
bool from_chars_reads_all(const std::string& text) {
  const char* end = text.data() + text.size();
  int64_t i = 0;
  auto [ip, iec] = std::from_chars(text.data(), end, i);
  if (iec == std::errc() && ip == end) return true;
  double d = 0;
  auto [dp, dec] = std::from_chars(text.data(), end, d);
  return dp == end && (dec == std::errc() || dec == std::errc::result_out_of_range);
}

}  // namespace

TEST_CASE("loader: a dropped number arg is valid exactly when from_chars reads it whole") {
  // Kernel args such as "est. achieved occupancy %" are validated and dropped;
  // the accepted set is that of from_chars.
  for (std::string text : {"1.5",
                           "-0.25",
                           "1.5e3",
                           "1.5E+30",
                           "2.5e-400",
                           "1.5e99999",
                           "00.5",
                           "7",
                           "-12",
                           "0.1e-2",
                           "-1E-5",
                           "1e5",
                           "123456789012345678901234567890",
                           "1.5e",
                           "1.5e+",
                           "1.2.3",
                           "1.5x",
                           "-",
                           "12abc",
                           "-.5"}) {
    CAPTURE(text);
    std::string json =
        R"({"traceEvents":[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1,"dur":1,)"
        R"("args":{"est. achieved occupancy %":)" +
        text + "}}]}";
    std::string error;
    try {
      load_trace_from_json(json);
    } catch (const TraceError& e) {
      error = e.what();
    }
    CHECK(error.empty() == from_chars_reads_all(text));
    if (!error.empty()) CHECK(error.find("is not a valid number") != std::string::npos);
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
