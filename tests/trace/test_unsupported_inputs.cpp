// Issue 50: inputs of other profilers are named, with what to do instead,
// rather than "not JSON … bytes 53 51 4c 69".
#include <doctest/doctest.h>

#include <string>

#include "security_support.h"
#include "trace/loader.h"

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
