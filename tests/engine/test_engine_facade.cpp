// The engine facade (src/engine/engine.h) is the only way src/cli and src/mcp
// reach the engine: no file there includes an engine-internal header or names
// an engine-internal namespace. Reads the source tree (JARVIS_SOURCE_DIR).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <re2/re2.h>
#include <unistd.h>

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace fs = std::filesystem;

namespace {

// Folders of src/ that cli/ and mcp/ may include headers of.
const std::set<std::string> kAllowedFolders = {"engine", "base", "mcp", "cli"};

// Single headers outside those folders that cli/ and mcp/ may include, and why.
const std::set<std::string> kAllowedHeaders = {
    // ASCII case helpers (ascii_lower): string utilities below every layer,
    // holding no engine state.
    "pycompat/text.h",
};

// Headers only src/cli may include: the MPI scale-out layer sits above the
// engine (it distributes engine calls over ranks) and only the CLI links it.
const std::set<std::string> kCliOnlyHeaders = {"scaleout/scaleout.h", "scaleout/job.h"};

// Engine namespaces whose members cli/ and mcp/ reach through jarvis::engine
// only (pycompat:: is named for the ASCII helpers of pycompat/text.h).
const char* const kInternalNamespaces[] = {
    "analysis", "categories", "charts",   "collectives", "compare", "critical_path",
    "explore",  "frame",      "insights", "perf",        "replay",  "report",
    "rocprof",  "session",    "sweep",    "numpy",       "stats",   "memory",
    "nsys",     "xplane",     "sql",      "ab"};

std::vector<fs::path> caller_files() {
  std::vector<fs::path> files;
  for (const char* dir : {"src/cli", "src/mcp"}) {
    fs::path root = fs::path(JARVIS_SOURCE_DIR) / dir;
    for (const auto& e : fs::recursive_directory_iterator(root)) {
      auto ext = e.path().extension();
      if (e.is_regular_file() && (ext == ".cpp" || ext == ".h")) files.push_back(e.path());
    }
  }
  return files;
}

std::vector<std::string> lines_of(const fs::path& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// A line without its // comment (string literals here never hold "//"
// followed by a namespace qualifier that matters).
std::string code_part(const std::string& line) {
  auto pos = line.find("//");
  return pos == std::string::npos ? line : line.substr(0, pos);
}

// An engine-namespace qualifier (captured), not part of a longer name.
std::string qualifier_pattern() {
  std::string alternatives;
  for (const char* ns : kInternalNamespaces) {
    if (!alternatives.empty()) alternatives += '|';
    alternatives += ns;
  }
  std::string pattern = R"((?:^|[^A-Za-z0-9_:])(?:jarvis::)?()";
  pattern += alternatives;
  pattern += ")::";
  return pattern;
}

// The problems of one cli/ or mcp/ file: internal includes and qualifiers.
std::vector<std::string> facade_violations(const fs::path& path, bool is_cli) {
  static const RE2 include_re(R"re(^\s*#\s*include\s*"(([A-Za-z0-9_]+)/[^"]+)")re");
  std::vector<std::string> problems;
  auto lines = lines_of(path);
  std::string rel = fs::relative(path, JARVIS_SOURCE_DIR).string();
  for (size_t n = 0; n < lines.size(); ++n) {
    std::string where = rel + ":" + std::to_string(n + 1);
    std::string header, folder;
    if (RE2::PartialMatch(lines[n], include_re, &header, &folder)) {
      bool ok = kAllowedFolders.count(folder) || kAllowedHeaders.count(header) ||
                (is_cli && kCliOnlyHeaders.count(header));
      if (!ok) problems.push_back(where + ": includes engine-internal \"" + header + "\"");
      continue;
    }
    static const RE2 qualifier_re(qualifier_pattern());
    std::string ns;
    if (RE2::PartialMatch(code_part(lines[n]), qualifier_re, &ns))
      problems.push_back(where + ": names " + ns + ":: (use jarvis::engine)");
  }
  return problems;
}

}  // namespace

TEST_SUITE("engine_facade") {
  TEST_CASE("cli/ and mcp/ reach the engine through engine/engine.h only") {
    auto files = caller_files();
    REQUIRE(files.size() > 40);  // the adapters and commands are there to check
    size_t engine_users = 0;
    std::vector<std::string> problems;
    for (const auto& f : files) {
      bool is_cli = f.parent_path().filename() == "cli";
      for (auto& p : facade_violations(f, is_cli)) problems.push_back(std::move(p));
      for (const auto& line : lines_of(f))
        if (line.find("#include \"engine/engine.h\"") != std::string::npos) ++engine_users;
    }
    std::string report;
    for (const auto& p : problems) report += p + "\n";
    CAPTURE(report);
    CHECK(problems.empty());
    CHECK(engine_users > 30);  // every adapter and command that calls the engine
  }

  TEST_CASE("the checker sees an internal include and an internal qualifier") {
    fs::path dir = fs::temp_directory_path() / ("jarvis_facade_check_" + std::to_string(getpid()));
    fs::create_directories(dir);
    fs::path bad = dir / "bad.cpp";
    {
      std::ofstream out(bad);
      out << "#include \"engine/engine.h\"\n"
             "#include \"categories/prepare.h\"\n"
             "#include \"scaleout/scaleout.h\"\n"
             "// analysis::mentioned in a comment is fine\n"
             "auto x = analysis::load_arch_json(\"mi300x\");\n"
             "auto y = engine::load_arch_json(\"mi300x\");\n";
    }
    auto problems = facade_violations(bad, false);
    std::string report;
    for (const auto& p : problems) report += p + "\n";
    CAPTURE(report);
    REQUIRE(problems.size() == 3);
    CHECK(problems[0].find(":2: includes engine-internal \"categories/prepare.h\"") !=
          std::string::npos);
    CHECK(problems[1].find(":3: includes engine-internal \"scaleout/scaleout.h\"") !=
          std::string::npos);
    CHECK(problems[2].find(":5: names analysis::") != std::string::npos);
    // The CLI may include the scale-out layer.
    CHECK(facade_violations(bad, true).size() == 2);
    fs::remove_all(dir);
  }

  TEST_CASE("engine.h exposes public headers only") {
    fs::path header = fs::path(JARVIS_SOURCE_DIR) / "src/engine/engine.h";
    std::vector<std::string> bad;
    for (const auto& line : lines_of(header)) {
      if (line.find("#include \"") == std::string::npos) continue;
      if (line.find("internal") != std::string::npos || line.find("detail") != std::string::npos ||
          line.find("svg_common") != std::string::npos ||
          line.find("rocprof/io.h") != std::string::npos)
        bad.push_back(line);
    }
    std::string report;
    for (const auto& b : bad) report += b + "\n";
    CAPTURE(report);
    CHECK(bad.empty());
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
