// The command line as a Unix tool (docs/cli.md): help and version on stdout
// with exit 0, unknown flags and bad values exit 2 naming the flag,
// --flag=value, TraceLens's flag spellings, defaults from the trace, and
// outputs that never delete what jarvis did not write.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "golden.h"
#include "test_loader_support.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace {

namespace fs = std::filesystem;
using jarvis::loader_test::EnvGuard;
using jarvis::loader_test::shell_quote;
using jarvis::loader_test::TempDir;

struct Run {
  int exit_code = -1;
  std::string out, err;
};

// `binary` (a shell word: a quoted path, maybe after VAR=value) with stdout
// and stderr kept apart.
Run jarvis_cli_at(const std::string& binary, const std::string& args) {
  TempDir tmp;
  fs::path err_file = tmp.path / "stderr";
  std::string cmd = binary + " " + args + " 2>" + shell_quote(err_file);
  Run r;
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p);
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::ifstream in(err_file);
  std::stringstream ss;
  ss << in.rdbuf();
  r.err = ss.str();
  return r;
}

// The built binary.
Run jarvis_cli(const std::string& args) {
  return jarvis_cli_at(JARVIS_BINARY, args);
}

std::string bert_dir() {
  return jarvis::golden::shared_dir() + "/conformance/h100_bert-small";
}
std::string bert_trace() {
  return bert_dir() + "/trace.json.gz";
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Every file under dir (relative name -> bytes).
std::map<std::string, std::string> tree_of(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) files[fs::relative(e.path(), dir).string()] = read(e.path());
  return files;
}

// tree_of(dir) with `dir` in file contents replaced by <DIR> (recorded paths
// name the directory a run wrote into).
std::map<std::string, std::string> tree_without_dir(const fs::path& dir) {
  std::map<std::string, std::string> files = tree_of(dir);
  for (auto& [name, bytes] : files)
    for (size_t at = bytes.find(dir.string()); at != std::string::npos;
         at = bytes.find(dir.string(), at))
      bytes.replace(at, dir.string().size(), "<DIR>");
  return files;
}

const char* kCommands[] = {"info",          "report",         "prepare",     "analyze",
                           "compare",       "insights",       "collectives", "sweep",
                           "sweep-compare", "rocprof-config", "replay",      "render-findings",
                           "final-report",  "serve",          "completion"};

}  // namespace

TEST_SUITE("cli") {
  TEST_CASE("--help and --version print on stdout and exit 0") {
    Run help = jarvis_cli("--help");
    CHECK(help.exit_code == 0);
    CHECK(help.err.empty());
    for (const char* cmd : kCommands) CHECK_MESSAGE(help.out.find(cmd) != std::string::npos, cmd);
    Run version = jarvis_cli("--version");
    CHECK(version.exit_code == 0);
    CHECK(version.out.rfind("jarvis ", 0) == 0);
    CHECK(version.out.find('.') != std::string::npos);
    // The build options: MPI scale-out and the Python API, on or off.
    CHECK(version.out.find(JARVIS_MPI_BUILD ? "MPI on" : "MPI off") != std::string::npos);
    CHECK(version.out.find("Python o") != std::string::npos);
  }

  TEST_CASE("every command has --help on stdout with exit 0") {
    for (const char* cmd : kCommands) {
      CAPTURE(cmd);
      Run r = jarvis_cli(std::string(cmd) + " --help");
      CHECK(r.exit_code == 0);
      CHECK(r.err.empty());
      CHECK(r.out.find("Usage:") != std::string::npos);
      CHECK(r.out.find("--help") != std::string::npos);
    }
    CHECK(jarvis_cli("report --help").out.find("--short-kernel-threshold-us") != std::string::npos);
  }

  TEST_CASE("usage errors exit 2 on stderr and name the flag") {
    Run none = jarvis_cli("");
    CHECK(none.exit_code == 2);
    CHECK(none.out.empty());
    Run unknown_cmd = jarvis_cli("reprot x");
    CHECK(unknown_cmd.exit_code == 2);
    CHECK(unknown_cmd.err.find("reprot") != std::string::npos);
    // A typo'd flag used to run with defaults in info/prepare/replay/analyze.
    for (const char* cmd : {"info", "prepare", "replay", "analyze", "report", "compare"}) {
      CAPTURE(cmd);
      Run r = jarvis_cli(std::string(cmd) + " " + shell_quote(bert_trace()) + " --outt x");
      CHECK(r.exit_code == 2);
      CHECK(r.out.empty());
      CHECK(r.err.find("--outt") != std::string::npos);
      CHECK(r.err.find("valid flags:") != std::string::npos);  // what the typo meant
      CHECK(r.err.find(" --help") != std::string::npos);
    }
    Run bad_number = jarvis_cli("report " + shell_quote(bert_trace()) +
                                " --out /tmp/never --short-kernel-bins many");
    CHECK(bad_number.exit_code == 2);
    CHECK(bad_number.err.find("--short-kernel-bins") != std::string::npos);
    CHECK(bad_number.err.find("many") != std::string::npos);
    Run negative = jarvis_cli("report " + shell_quote(bert_trace()) +
                              " --out /tmp/never --short-kernel-threshold-us -5");
    CHECK(negative.exit_code == 2);
    CHECK(negative.err.find("--short-kernel-threshold-us") != std::string::npos);
    Run bad_choice = jarvis_cli("collectives " + shell_quote(bert_trace()) +
                                " --out /tmp/never --align sideways");
    CHECK(bad_choice.exit_code == 2);
    CHECK(bad_choice.err.find("end") != std::string::npos);  // the accepted values
    CHECK(bad_choice.err.find("none") != std::string::npos);
    Run needs = jarvis_cli("report " + shell_quote(bert_trace()) + " --out /tmp/never --svg-dir d");
    CHECK(needs.exit_code == 2);
    CHECK(needs.err.find("--html") != std::string::npos);
    CHECK_FALSE(fs::exists("/tmp/never"));
  }

  TEST_CASE("input errors exit 1 with the path in the message") {
    Run r = jarvis_cli("info /nonexistent/trace.json");
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("/nonexistent/trace.json") != std::string::npos);
  }

  TEST_CASE("error kinds keep the documented exit codes (base/error.h, docs/cli.md)") {
    // Not found and invalid input (like every failed run): 1; a usage error: 2.
    CHECK(jarvis_cli("info /nonexistent/trace.json").exit_code == 1);
    std::string malformed = std::string(JARVIS_SOURCE_DIR) + "/tests/malformed/missing_comma.json";
    Run bad = jarvis_cli("info " + shell_quote(malformed));
    CHECK(bad.exit_code == 1);
    CHECK(bad.err.find("missing_comma.json") != std::string::npos);
    Run usage = jarvis_cli("report " + shell_quote(bert_trace()) + " --out /tmp/never --svg-dir d");
    CHECK(usage.exit_code == 2);
    CHECK(usage.err.find("--help` for the options") != std::string::npos);
  }

  TEST_CASE("--flag=value equals --flag value") {
    TempDir tmp;
    Run eq = jarvis_cli("report " + shell_quote(bert_trace()) + " --out=" +
                        shell_quote((tmp.path / "a").string()) + " --arch=H100 --no-xlsx");
    REQUIRE(eq.exit_code == 0);
    Run sp = jarvis_cli("report " + shell_quote(bert_trace()) + " --out " +
                        shell_quote((tmp.path / "b").string()) + " --arch H100 --no-xlsx");
    REQUIRE(sp.exit_code == 0);
    CHECK(tree_of(tmp.path / "a") == tree_of(tmp.path / "b"));
  }

  TEST_CASE("TraceLens's own command line gives TraceLens's sheets") {
    // COMMANDS.txt of the conformance trace: TraceLens_generate_perf_report_pytorch
    // --profile_json_path --output_csvs_dir --gpu_arch_json_path --enable_kernel_summary
    // --short_kernel_study, run here with the same flags.
    TempDir tmp;
    fs::path csvs = tmp.path / "perf_report_csvs";
    Run r =
        jarvis_cli("report --profile_json_path " + shell_quote(bert_trace()) +
                   " --output_csvs_dir " + shell_quote(csvs.string()) + " --gpu_arch_json_path " +
                   shell_quote(std::string(JARVIS_SOURCE_DIR) + "/arch/H100.json") +
                   " --enable_kernel_summary --short_kernel_study");
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    size_t sheets = 0;
    for (const auto& e : fs::directory_iterator(bert_dir() + "/perf_report_csvs")) {
      std::string sheet = e.path().filename().string();
      CAPTURE(sheet);
      REQUIRE(fs::exists(csvs / sheet));
      auto result = jarvis::golden::compare_csv_files(e.path().string(), (csvs / sheet).string());
      CHECK_MESSAGE(result.ok(), result.summary());
      ++sheets;
    }
    CHECK(sheets >= 10);
    CHECK_FALSE(fs::exists(tmp.path / "perf_report.xlsx"));  // --output_csvs_dir: CSVs only
  }

  TEST_CASE("report --out writes the workbook beside the CSVs; --no-xlsx skips it") {
    TempDir tmp;
    REQUIRE(jarvis_cli("report " + shell_quote(bert_trace()) + " --out " +
                       shell_quote((tmp.path / "with").string()))
                .exit_code == 0);
    std::string xlsx = read(tmp.path / "with" / "perf_report.xlsx");
    CHECK(xlsx.rfind("PK", 0) == 0);  // a zip container
    REQUIRE(jarvis_cli("report " + shell_quote(bert_trace()) + " --no-xlsx --out " +
                       shell_quote((tmp.path / "without").string()))
                .exit_code == 0);
    CHECK_FALSE(fs::exists(tmp.path / "without" / "perf_report.xlsx"));
  }

  TEST_CASE("a second run into the same directory equals one run into an empty directory") {
    // Nothing a run writes may depend on what an earlier run left there
    // (issue 17): report, then prepare with the analyses and drafts, twice
    // into `again`, once into `fresh`. Recorded paths name the directory, so
    // they are compared with it replaced; the workbook carries a creation time.
    TempDir tmp;
    auto run = [&](const fs::path& dir) {
      std::string out = shell_quote(dir.string());
      REQUIRE(jarvis_cli("report " + shell_quote(bert_trace()) + " --no-xlsx -q --out " + out)
                  .exit_code == 0);
      REQUIRE(jarvis_cli("prepare " + shell_quote(bert_trace()) +
                         " --analyze --drafts -q --trace-path t.json.gz --out " + out)
                  .exit_code == 0);
    };
    run(tmp.path / "again");
    run(tmp.path / "again");
    run(tmp.path / "fresh");
    auto again = tree_without_dir(tmp.path / "again");
    auto fresh = tree_without_dir(tmp.path / "fresh");
    CHECK(again.size() > 20);
    REQUIRE(again.size() == fresh.size());
    for (const auto& [name, bytes] : fresh) {
      std::string file = name;
      CAPTURE(file);
      REQUIRE(again.count(name) == 1);
      CHECK(again.at(name) == bytes);
    }
  }

  TEST_CASE("prepare and analyze again into a prepared directory equal one run into an empty one") {
    // Qwen on H100 has high-confidence fusion kernels: kernel_fusion_metrics.json
    // left by the first run must not flag the compute categories of the second
    // (nor of a repeated `analyze`).
    TempDir tmp;
    std::string trace =
        jarvis::golden::shared_dir() + "/conformance/h100_qwen1.5-0.5b/trace.json.gz";
    auto prepare = [&](const fs::path& dir) {
      REQUIRE(jarvis_cli("prepare " + shell_quote(trace) +
                         " --analyze --drafts -q --trace-path t.json.gz --out " +
                         shell_quote(dir.string()))
                  .exit_code == 0);
    };
    prepare(tmp.path / "again");
    std::string fusion = read(tmp.path / "again" / "category_data" / "kernel_fusion_metrics.json");
    REQUIRE(fusion.find("high_confidence_kernel_map") != std::string::npos);
    REQUIRE(fusion.find("high_confidence_kernel_map\": {}") == std::string::npos);
    prepare(tmp.path / "again");
    REQUIRE(jarvis_cli("analyze " + shell_quote((tmp.path / "again").string()) + " -q").exit_code ==
            0);
    prepare(tmp.path / "fresh");
    auto again = tree_without_dir(tmp.path / "again");
    auto fresh = tree_without_dir(tmp.path / "fresh");
    REQUIRE(again.size() == fresh.size());
    for (const auto& [name, bytes] : fresh) {
      std::string file = name;
      CAPTURE(file);
      REQUIRE(again.count(name) == 1);
      CHECK(again.at(name) == bytes);
      CHECK(bytes.find("fusion_flagged") == std::string::npos);
    }
  }

  TEST_CASE("--no-cache neither reads nor writes trace snapshots") {
    TempDir tmp;
    fs::path cache = tmp.path / "cache";
    std::string trace = shell_quote(bert_trace());
    // The test environment turns snapshots off (JARVIS_NO_SNAPSHOT=1); on for
    // these runs, in a cache of their own.
    EnvGuard env;
    env.set("JARVIS_NO_SNAPSHOT", "0");
    env.set("JARVIS_CACHE_DIR", cache.c_str());
    Run uncached = jarvis_cli("--no-cache info " + trace);
    REQUIRE(uncached.exit_code == 0);
    CHECK_FALSE(fs::exists(cache / "snapshots"));
    Run first = jarvis_cli("info " + trace);
    REQUIRE(first.exit_code == 0);
    REQUIRE(fs::exists(cache / "snapshots"));
    std::vector<fs::path> snaps;
    for (const auto& e : fs::directory_iterator(cache / "snapshots")) snaps.push_back(e.path());
    REQUIRE(snaps.size() == 1);
    // A snapshot that is not one: the cached run says why and loads the JSON;
    // --no-cache does not even look at it.
    std::ofstream(snaps[0], std::ios::binary | std::ios::trunc) << "not a snapshot";
    Run ignored = jarvis_cli("info " + trace);
    REQUIRE(ignored.exit_code == 0);
    CHECK(ignored.err.find("trace snapshot: ") != std::string::npos);
    CHECK(ignored.err.find("ignored (truncated") != std::string::npos);
    CHECK(ignored.out == first.out);
    std::ofstream(snaps[0], std::ios::binary | std::ios::trunc) << "not a snapshot";
    Run skipped = jarvis_cli("--no-cache info " + trace);
    REQUIRE(skipped.exit_code == 0);
    CHECK(skipped.err.find("snapshot") == std::string::npos);
    CHECK(skipped.out == first.out);
    CHECK(uncached.out == first.out);
  }

  TEST_CASE("arch and platform default to the trace's GPU") {
    TempDir tmp;
    Run detected = jarvis_cli("report " + shell_quote(bert_trace()) + " --no-xlsx --out " +
                              shell_quote((tmp.path / "d").string()));
    REQUIRE(detected.exit_code == 0);
    CHECK(detected.out.find("arch: H100 (detected from the trace)") != std::string::npos);
    Run named = jarvis_cli("report " + shell_quote(bert_trace()) + " --no-xlsx --arch h100 --out " +
                           shell_quote((tmp.path / "n").string()));
    REQUIRE(named.exit_code == 0);
    CHECK(tree_of(tmp.path / "d") == tree_of(tmp.path / "n"));
    Run none = jarvis_cli("report " + shell_quote(bert_trace()) + " --no-xlsx --arch none --out " +
                          shell_quote((tmp.path / "none").string()));
    REQUIRE(none.exit_code == 0);
    CHECK(read(tmp.path / "none/perf_report_csvs/GEMM.csv").find("Roofline") == std::string::npos);
    CHECK(read(tmp.path / "d/perf_report_csvs/GEMM.csv").find("Roofline") != std::string::npos);

    // prepare without --platform: the platform of TraceLens's own run (H100).
    Run prep = jarvis_cli("prepare " + shell_quote(bert_trace()) + " --out " +
                          shell_quote((tmp.path / "p").string()));
    REQUIRE_MESSAGE(prep.exit_code == 0, prep.err);
    CHECK(prep.out.find("for H100") != std::string::npos);
    auto result =
        jarvis::golden::compare_csv_files(bert_dir() + "/category_data/gemm_ops.csv",
                                          (tmp.path / "p/category_data/gemm_ops.csv").string());
    CHECK_MESSAGE(result.ok(), result.summary());
  }

  TEST_CASE("a report never deletes files jarvis did not write") {
    TempDir tmp;
    fs::path out = tmp.path / "out";
    std::string base = "report " + shell_quote(bert_trace()) + " --no-xlsx --arch H100 --out " +
                       shell_quote(out.string());
    REQUIRE(jarvis_cli(base).exit_code == 0);
    auto first = tree_of(out);
    // Built twice into the same directory = built into an empty one.
    REQUIRE(jarvis_cli(base).exit_code == 0);
    CHECK(tree_of(out) == first);

    { std::ofstream(out / "perf_report_csvs" / "my_notes.txt") << "keep me"; }
    Run refused = jarvis_cli(base);
    CHECK(refused.exit_code == 2);
    CHECK(refused.err.find("my_notes.txt") != std::string::npos);
    CHECK(refused.err.find("--force") != std::string::npos);
    CHECK(read(out / "perf_report_csvs" / "my_notes.txt") == "keep me");

    // A directory someone else filled (no jarvis marker) is refused too.
    fs::create_directories(tmp.path / "foreign" / "perf_report_csvs");
    { std::ofstream(tmp.path / "foreign" / "perf_report_csvs" / "GEMM.csv") << "theirs\n"; }
    Run foreign = jarvis_cli("report " + shell_quote(bert_trace()) + " --no-xlsx --out " +
                             shell_quote((tmp.path / "foreign").string()));
    CHECK(foreign.exit_code == 2);
    CHECK(read(tmp.path / "foreign" / "perf_report_csvs" / "GEMM.csv") == "theirs\n");

    // prepare's perf_report_csvs are jarvis's too: a report may replace them.
    fs::path prepared = tmp.path / "prepared";
    REQUIRE(jarvis_cli("prepare " + shell_quote(bert_trace()) + " --out " +
                       shell_quote(prepared.string()))
                .exit_code == 0);
    CHECK(jarvis_cli("report " + shell_quote(bert_trace()) + " --no-xlsx --out " +
                     shell_quote(prepared.string()))
              .exit_code == 0);

    REQUIRE(jarvis_cli(base + " --force").exit_code == 0);
    CHECK_FALSE(fs::exists(out / "perf_report_csvs" / "my_notes.txt"));
    CHECK(tree_of(out) == first);
  }

  TEST_CASE("an edited output is refused, naming it and --force; an unedited one is replaced") {
    // Issue 76 point 5: every file jarvis writes follows one rule, CSV sheets
    // included: replaced only when jarvis wrote it and nobody changed it since.
    TempDir tmp;
    const std::string edit = "my own numbers\n";
    // Runs `args` once (unedited: replaced fine), edits `file`, runs again:
    // refused (exit 2) naming it and --force, the edit kept; then --force
    // replaces it.
    auto check_kind = [&](const std::string& args, const fs::path& file) {
      CAPTURE(file);
      Run first = jarvis_cli(args);
      REQUIRE_MESSAGE(first.exit_code == 0, first.err);
      const std::string written = read(file);
      REQUIRE_FALSE(written.empty());
      Run again = jarvis_cli(args);
      REQUIRE_MESSAGE(again.exit_code == 0, again.err);
      const std::string replaced = read(file);
      { std::ofstream(file, std::ios::app) << edit; }
      Run refused = jarvis_cli(args);
      CHECK(refused.exit_code == 2);
      CHECK_MESSAGE(refused.err.find(file.filename().string()) != std::string::npos, refused.err);
      CHECK_MESSAGE(refused.err.find("--force") != std::string::npos, refused.err);
      CHECK(read(file) == replaced + edit);
      Run forced = jarvis_cli(args + " --force");
      REQUIRE_MESSAGE(forced.exit_code == 0, forced.err);
      CHECK(read(file).find(edit) == std::string::npos);
      // The forced file is jarvis's again: the next run replaces it.
      CHECK(jarvis_cli(args).exit_code == 0);
    };
    const std::string trace = shell_quote(bert_trace());
    SUBCASE("report --out: a CSV sheet") {
      fs::path out = tmp.path / "csv";
      check_kind("report " + trace + " --no-xlsx --arch H100 --out " + shell_quote(out.string()),
                 out / "perf_report_csvs" / "GEMM.csv");
    }
    SUBCASE("report --out: the workbook") {
      fs::path out = tmp.path / "xlsx";
      check_kind("report " + trace + " --arch H100 --out " + shell_quote(out.string()),
                 out / "perf_report.xlsx");
    }
    SUBCASE("report --html: the page") {
      fs::path out = tmp.path / "html";
      fs::create_directories(out);
      check_kind(
          "report " + trace + " --arch H100 --html " + shell_quote((out / "r.html").string()),
          out / "r.html");
    }
    SUBCASE("prepare: perf_report_csvs, category_data and metadata") {
      fs::path out = tmp.path / "prep";
      std::string args = "prepare " + trace + " --out " + shell_quote(out.string());
      check_kind(args, out / "perf_report_csvs" / "GEMM.csv");
      check_kind(args, out / "category_data" / "gemm_ops.csv");
      check_kind(args, out / "metadata" / "gemm_metadata.json");
    }
    SUBCASE("the marker vouches only for content as written (another cache, no ledger)") {
      fs::path out = tmp.path / "moved";
      std::string args =
          "report " + trace + " --no-xlsx --arch H100 --out " + shell_quote(out.string());
      REQUIRE(jarvis_cli(args).exit_code == 0);
      // A fresh cache: the ledger knows none of the files; the marker's
      // hashes say they are as jarvis wrote them.
      std::string other = "JARVIS_CACHE_DIR=" + shell_quote((tmp.path / "cache2").string()) + " ";
      Run replaced = jarvis_cli_at(other + shell_quote(JARVIS_BINARY), args);
      CHECK_MESSAGE(replaced.exit_code == 0, replaced.err);
      { std::ofstream(out / "perf_report_csvs" / "GEMM.csv", std::ios::app) << edit; }
      std::string third = "JARVIS_CACHE_DIR=" + shell_quote((tmp.path / "cache3").string()) + " ";
      Run refused = jarvis_cli_at(third + shell_quote(JARVIS_BINARY), args);
      CHECK(refused.exit_code == 2);
      CHECK(refused.err.find("GEMM.csv") != std::string::npos);
    }
  }

  TEST_CASE("the default cache directory is announced once, by the run that creates it") {
    TempDir tmp;
    // No JARVIS_CACHE_DIR: the default place under XDG_CACHE_HOME.
    std::string env =
        "env -u JARVIS_CACHE_DIR XDG_CACHE_HOME=" + shell_quote((tmp.path / "xdg").string()) + " " +
        shell_quote(JARVIS_BINARY);
    std::string args = "report " + shell_quote(bert_trace()) + " --no-xlsx --out " +
                       shell_quote((tmp.path / "o").string());
    Run first = jarvis_cli_at(env, args);
    REQUIRE_MESSAGE(first.exit_code == 0, first.err);
    fs::path dir = tmp.path / "xdg" / "jarvis";
    CHECK(fs::is_directory(dir));
    CHECK_MESSAGE(first.err == "jarvis: created " + dir.string() +
                                   " for its cache (trace snapshots, the list of files it "
                                   "wrote); set JARVIS_CACHE_DIR to move it, delete it at any "
                                   "time\n",
                  first.err);
    Run second = jarvis_cli_at(env, args);
    REQUIRE(second.exit_code == 0);
    CHECK(second.err.empty());
    // A directory the user named is not announced.
    std::string named = "JARVIS_CACHE_DIR=" + shell_quote((tmp.path / "named").string()) + " " +
                        shell_quote(JARVIS_BINARY);
    Run third = jarvis_cli_at(named, args + " --force");
    REQUIRE(third.exit_code == 0);
    CHECK(third.err.empty());
  }

  TEST_CASE("output files need an existing directory unless --mkdirs") {
    TempDir tmp;
    fs::path xlsx = tmp.path / "no" / "such" / "dir" / "r.xlsx";
    Run refused =
        jarvis_cli("report " + shell_quote(bert_trace()) + " --xlsx " + shell_quote(xlsx.string()));
    CHECK(refused.exit_code == 2);
    CHECK(refused.err.find("--mkdirs") != std::string::npos);
    CHECK_FALSE(fs::exists(tmp.path / "no"));
    Run made = jarvis_cli("report " + shell_quote(bert_trace()) + " --mkdirs --xlsx " +
                          shell_quote(xlsx.string()));
    CHECK(made.exit_code == 0);
    CHECK(fs::exists(xlsx));
  }

  TEST_CASE("progress goes to stderr only when asked off a terminal") {
    TempDir tmp;
    std::string base = "report " + shell_quote(bert_trace()) + " --no-xlsx --out " +
                       shell_quote((tmp.path / "o").string());
    Run silent = jarvis_cli(base);  // stderr is a file: auto = no progress
    CHECK(silent.err.empty());
    Run plain = jarvis_cli(base + " --force --progress plain");
    // One line per phase: its wall time, then the process's CPU time in it.
    for (const char* step : {"load", "call tree", "report", "write"}) {
      std::regex line(std::string(R"((^|\n)report: )") + step +
                      R"( \d+\.\d\d s \(CPU \d+\.\d\d s\)\n)");
      CHECK_MESSAGE(std::regex_search(plain.err, line), step, "\n", plain.err);
    }
    CHECK(plain.err.find('\r') == std::string::npos);
    CHECK(plain.out.find("gpu_timeline.csv") != std::string::npos);
    Run quiet = jarvis_cli(base + " --force --progress plain --quiet");
    CHECK(quiet.err.empty());
  }
}

TEST_SUITE("cli") {
  TEST_CASE("one name per category: aliases select the same ops in every tool") {
    TempDir tmp;
    auto ir = [&](const std::string& category) {
      fs::path out = tmp.path / ("replay_" + category);
      Run r = jarvis_cli("replay " + shell_quote(bert_trace()) + " --category " + category +
                         " --out " + shell_quote(out.string()));
      REQUIRE_MESSAGE(r.exit_code == 0, r.err);
      // The selection text names what the user typed; the ops must be equal.
      return nlohmann::json::parse(read(out / "replay_ir.json"))["ops"].dump();
    };
    std::string norm = ir("NORM_fwd");
    CHECK(norm.find("layer_norm") != std::string::npos);
    for (const char* alias : {"Normalization", "norm", "layernorm", "NORM_FWD"})
      CHECK_MESSAGE(ir(alias) == norm, alias);
    CHECK(ir("matmul") == ir("GEMM"));
    Run unknown = jarvis_cli("replay " + shell_quote(bert_trace()) + " --category bogus --out " +
                             shell_quote((tmp.path / "x").string()));
    CHECK(unknown.exit_code == 1);
    CHECK(unknown.err.find("NORM_fwd") != std::string::npos);  // lists what is there
  }

  TEST_CASE(
      "the modules: serve --http, workbooks, replay and MPI ranks need theirs, other commands "
      "none") {
    // The binary alone in a directory: no libjarvis_http.so / libjarvis_xlsx.so
    // / libjarvis_zip.so / libjarvis_mpi.so beside it, no lib/jarvis above it.
    TempDir tmp;
    fs::create_directories(tmp.path / "bin");
    fs::path alone = tmp.path / "bin" / "jarvis";
    fs::copy_file(JARVIS_BINARY, alone);
    std::string bin = shell_quote(alone.string());
    std::string trace =
        shell_quote(std::string(JARVIS_SOURCE_DIR) + "/examples/example_trace.json.gz");
    Run report = jarvis_cli_at(bin, "report " + trace + " --out " +
                                        shell_quote((tmp.path / "out").string()) + " --no-xlsx");
    CHECK(report.exit_code == 0);
    CHECK(fs::exists(tmp.path / "out" / "perf_report_csvs" / "gpu_timeline.csv"));

    Run http = jarvis_cli_at(bin, "serve --http 127.0.0.1:0");
    CHECK(http.exit_code == 1);
    CHECK(http.err.find("libjarvis_http.so") != std::string::npos);
    CHECK(http.err.find((tmp.path / "bin" / "libjarvis_http.so").string() + ": no such file") !=
          std::string::npos);
    CHECK(http.err.find((tmp.path / "lib" / "jarvis" / "libjarvis_http.so").string()) !=
          std::string::npos);

    // A workbook is written by the xlsx module: without it a report that
    // would write one fails before any output, naming the paths tried.
    Run workbook =
        jarvis_cli_at(bin, "report " + trace + " --out " + shell_quote((tmp.path / "wb").string()));
    CHECK(workbook.exit_code == 1);
    CHECK(workbook.err.find((tmp.path / "bin" / "libjarvis_xlsx.so").string() + ": no such file") !=
          std::string::npos);
    CHECK(workbook.err.find((tmp.path / "lib" / "jarvis" / "libjarvis_xlsx.so").string()) !=
          std::string::npos);
    CHECK_FALSE(fs::exists(tmp.path / "wb" / "perf_report_csvs"));
    CHECK_FALSE(fs::exists(tmp.path / "wb" / "perf_report.xlsx"));

    // The replay package's archive is written by the zip module; without it
    // the command fails before writing any file of the package.
    Run replay = jarvis_cli_at(bin, "replay " + trace + " --category GEMM --out " +
                                        shell_quote((tmp.path / "replay").string()));
    CHECK(replay.exit_code == 1);
    CHECK(replay.err.find((tmp.path / "bin" / "libjarvis_zip.so").string() + ": no such file") !=
          std::string::npos);
    CHECK_FALSE(fs::exists(tmp.path / "replay" / "replay_ir.json"));
    CHECK_FALSE(fs::exists(tmp.path / "replay" / "replay_package.zip"));
#if JARVIS_MPI_BUILD
    // What mpirun sets for a rank of a 2-rank job: the rank joins the job
    // through the module.
    Run rank = jarvis_cli_at(
        "OMPI_COMM_WORLD_SIZE=2 " + bin,
        "sweep " + shell_quote(jarvis::golden::shared_dir() + "/sweeps/h100_gpt2_ddp") + " --out " +
            shell_quote((tmp.path / "sweep").string()));
    CHECK(rank.exit_code == 1);
    CHECK(rank.err.find("libjarvis_mpi.so") != std::string::npos);
    CHECK_FALSE(fs::exists(tmp.path / "sweep"));
#endif
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
