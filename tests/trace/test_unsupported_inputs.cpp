// Issue 50: inputs of other profilers are named, with what to do instead,
// rather than "not JSON … bytes 53 51 4c 69".
#include <doctest/doctest.h>

#include <string>

#include "security_support.h"
#include "trace/loader.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace fs = std::filesystem;
using jarvis::testing::ScratchDir;
using jarvis::testing::write_text;

namespace {

std::string load_error(const fs::path& path) {
  try {
    jarvis::load_trace(path.string());
  } catch (const jarvis::TraceError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("unsupported inputs: Nsight Systems and XPlane files are named") {
  ScratchDir dir;
  // The first 16 bytes of every SQLite 3 database.
  write_text(dir / "profile.sqlite", std::string("SQLite format 3\0\x10\x00", 18) + "rest");
  std::string sqlite = load_error(dir / "profile.sqlite");
  CHECK(sqlite.find("SQLite database") != std::string::npos);
  CHECK(sqlite.find("Nsight Systems") != std::string::npos);
  CHECK(sqlite.find("bytes") == std::string::npos);
  // A report file is binary; the name says what it is.
  write_text(dir / "run.nsys-rep", std::string("\x01\x02\x03\x04xyz", 7));
  CHECK(load_error(dir / "run.nsys-rep").find("Nsight Systems report") != std::string::npos);
  // An XSpace protobuf starts with field 1 (planes), length-delimited: 0x0a.
  write_text(dir / "host.xplane.pb", std::string("\x0a\x05\x08\x01\x12\x01x", 7));
  CHECK(load_error(dir / "host.xplane.pb").find("XPlane") != std::string::npos);
  // Other garbage keeps the byte dump.
  write_text(dir / "junk.json", "\x01\x02\x03 not json");
  CHECK(load_error(dir / "junk.json").find("bytes 01 02 03") != std::string::npos);
}

TEST_CASE("unsupported inputs: a JAX trace in Chrome trace JSON points to its .xplane.pb") {
  ScratchDir dir;
  // The shape of XProf's trace viewer JSON (trace.json.gz beside the
  // .xplane.pb): processes named by XLA device, no Kineto categories.
  const std::string xla =
      R"J({"displayTimeUnit":"ns","metadata":{"highres-ticks":true},"traceEvents":[)J"
      R"J({"ph":"M","pid":1,"name":"process_name","args":{"name":"/device:GPU:0"}},)J"
      R"J({"ph":"M","pid":2,"name":"process_name","args":{"name":"/host:CPU"}},)J"
      R"J({"ph":"M","pid":1,"tid":1,"name":"thread_name","args":{"name":"Stream #1(Compute)"}},)J"
      R"J({"ph":"X","pid":1,"tid":1,"ts":100.0,"dur":50.0,"name":"fusion.1",)J"
      R"J("args":{"hlo_op":"fusion.1","hlo_module":"jit_step"}},)J"
      R"J({"ph":"X","pid":2,"tid":5,"ts":90.0,"dur":5.0,"name":"hipModuleLaunchKernel"}]})J";
  write_text(dir / "host.trace.json", xla);
  try {
    jarvis::load_trace((dir / "host.trace.json").string());
    FAIL("a JAX Chrome trace loaded");
  } catch (const jarvis::TraceError& e) {
    const std::string message = e.what();
    CHECK(message.find("JAX / XLA trace in Chrome trace JSON") != std::string::npos);
    CHECK(message.find("(process '/device:GPU:0')") != std::string::npos);
    CHECK(message.find(".xplane.pb") != std::string::npos);
    CHECK(e.kind() == jarvis::ErrorKind::Unsupported);
  }
  CHECK_THROWS_AS(jarvis::load_trace_from_json(xla, "x.json"), jarvis::TraceError);
  // A Kineto trace with no GPU event under ordinary process names still loads.
  const std::string cpu_only =
      R"J({"traceEvents":[{"ph":"M","pid":7,"name":"process_name","args":{"name":"python3"}},)J"
      R"J({"ph":"X","cat":"cpu_op","pid":7,"tid":7,"ts":1,"dur":2,"name":"aten::add"}]})J";
  CHECK(jarvis::load_trace_from_json(cpu_only, "cpu.json").events.size() >= 1);
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
