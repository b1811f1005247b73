// Issue 74 point 9, writers under symlink races: the MCP server checks an
// output path against its roots once, resolving every symlink; a directory
// of the path replaced by a symlink to elsewhere between that check and the
// write must not send the write out of the roots. Under output roots (set by
// `jarvis serve`) each write holds its target's directory open, checks where
// it really is, and writes through it (base/output_confinement.h). The swap
// is made at the last moment by the writers' test hook, after the target was
// checked and before its directory is opened.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <filesystem>
#include <string>
#include <vector>

#include "base/atomic_file.h"
#include "base/output_confinement.h"
#include "base/output_guard.h"
#include "mcp_harness.h"
#include "security_support.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace fs = std::filesystem;
using jarvis::testing::ScratchDir;
using json = nlohmann::json;

// Output roots and the hook for one test, cleared after it.
struct Confined {
  explicit Confined(std::vector<fs::path> roots) { jarvis::set_output_roots(std::move(roots)); }
  ~Confined() {
    jarvis::set_output_roots({});
    jarvis::set_output_write_hook({});
  }
};

// root/out is a directory until the first write into it, then a symlink to
// `outside` (the real one kept as root/out.real).
struct Race {
  ScratchDir base;
  fs::path root = base / "root", out = base / "root/out", outside = base / "outside";
  int swaps = 0;
  Race() {
    fs::create_directories(out);
    fs::create_directories(outside);
    jarvis::set_output_write_hook([this](const fs::path& target) {
      if (swaps > 0 || target.parent_path() != out) return;
      fs::rename(out, base / "root/out.real");
      fs::create_directory_symlink(outside, out);
      ++swaps;
    });
  }
  size_t files_outside() const {
    size_t n = 0;
    for (auto it = fs::recursive_directory_iterator(outside);
         it != fs::recursive_directory_iterator(); ++it)
      ++n;
    return n;
  }
};

TEST_CASE(
    "issue 74 point 9: no writer follows a directory swapped for a symlink out of the roots") {
  SUBCASE("write_file_atomic") {
    Race race;
    Confined confined({race.root});
    CHECK_THROWS_WITH_AS(jarvis::write_file_atomic((race.out / "a.txt").string(), "x"),
                         doctest::Contains("outside the directories this server may write"),
                         jarvis::OutputRefused);
    CHECK(race.swaps == 1);
    CHECK(race.files_outside() == 0);
  }
  SUBCASE("write_files_atomic, a set over two directories") {
    Race race;
    Confined confined({race.root});
    fs::create_directories(race.root / "other");
    CHECK_THROWS_AS(jarvis::write_files_atomic({{(race.root / "other/b.csv").string(), "b"},
                                                {(race.out / "a.csv").string(), "a"}}),
                    jarvis::OutputRefused);
    CHECK(race.swaps == 1);
    CHECK(race.files_outside() == 0);
    // The set is refused before any rename: nothing placed, no temp left.
    CHECK(fs::is_empty(race.root / "other"));
  }
  SUBCASE("AtomicFile (the workbook and SQLite export writers)") {
    Race race;
    Confined confined({race.root});
    CHECK_THROWS_AS(jarvis::AtomicFile((race.out / "w.xlsx").string()), jarvis::OutputRefused);
    CHECK(race.files_outside() == 0);
  }
  SUBCASE("without output roots (the CLI) the write goes where its path leads") {
    Race race;
    Confined confined({});
    jarvis::write_file_atomic((race.out / "a.txt").string(), "x");
    CHECK(race.swaps == 1);
    CHECK(jarvis::testing::read_text(race.outside / "a.txt") == "x");
  }
}

TEST_CASE("issue 74 point 9: under output roots, writes inside them work, also through symlinks") {
  ScratchDir base;
  const fs::path root = base / "root";
  fs::create_directories(root / "real");
  fs::create_directory_symlink(root / "real", root / "link");  // stays inside the root
  Confined confined({root});
  jarvis::write_file_atomic((root / "link/a.txt").string(), "via the link");
  CHECK(jarvis::testing::read_text(root / "real/a.txt") == "via the link");
  jarvis::write_files_atomic(
      {{(root / "new/dir/b.csv").string(), "b"}, {(root / "c.csv").string(), "c"}});
  CHECK(jarvis::testing::read_text(root / "new/dir/b.csv") == "b");
  CHECK(jarvis::testing::read_text(root / "c.csv") == "c");
  {
    jarvis::AtomicFile file((root / "link/w.bin").string());
    // Writers that need a path of their own (libxlsxwriter, SQLite) get one
    // through the held directory.
    jarvis::testing::write_text(file.temp_path(), "workbook");
    file.commit();
  }
  CHECK(jarvis::testing::read_text(root / "real/w.bin") == "workbook");
  // No temp file is left anywhere.
  size_t temps = 0;
  for (const auto& e : fs::recursive_directory_iterator(root))
    temps += e.path().filename().string().find(".tmp.") != std::string::npos;
  CHECK(temps == 0);
  // A path leading out of the roots through a symlink is refused outright.
  fs::create_directories(base / "outside");
  fs::create_directory_symlink(base / "outside", root / "out_link");
  CHECK_THROWS_AS(jarvis::write_file_atomic((root / "out_link/x.txt").string(), "x"),
                  jarvis::OutputRefused);
  CHECK(fs::is_empty(base / "outside"));
}

TEST_CASE("issue 74 point 9: over MCP a swapped output directory ends the call, nothing outside") {
  Race race;
  Confined confined({race.root});
  jarvis::testing::copy_example_trace(race.root / "t.json.gz");
  jarvis::mcp::ServerOptions options;
  options.roots = {race.root.string()};
  jarvis::mcp::testing::Harness h(options);
  h.initialize();
  const std::string handle =
      h.tool_result(1, "load_trace", {{"path", (race.root / "t.json.gz").string()}})["trace"];
  json reply = h.call_tool(
      2, "gemm_roofline",
      {{"trace", handle}, {"arch", "H100"}, {"svg_path", (race.out / "r.svg").string()}});
  INFO(reply.dump().substr(0, 600));
  REQUIRE(reply.contains("result"));
  CHECK(reply["result"].value("isError", false));
  CHECK(reply.dump().find("outside the directories this server may write") != std::string::npos);
  CHECK(race.swaps == 1);
  CHECK(race.files_outside() == 0);
  // The next call, with the directory a directory again, writes.
  fs::remove(race.out);
  fs::create_directories(race.out);
  reply = h.call_tool(
      3, "gemm_roofline",
      {{"trace", handle}, {"arch", "H100"}, {"svg_path", (race.out / "r.svg").string()}});
  CHECK_FALSE(reply["result"].value("isError", false));
  CHECK(fs::file_size(race.out / "r.svg") > 0);
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
