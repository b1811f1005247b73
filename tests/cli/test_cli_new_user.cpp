// Issue 50, what a new user meets: TraceLens's manifest paths,
// counts that read right, other profilers' files named.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "golden.h"
#include "mcp/tool_profiles.h"
#include "security_support.h"
#include "test_loader_support.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace fs = std::filesystem;
using jarvis::loader_test::shell_quote;
using jarvis::testing::read_text;
using jarvis::testing::ScratchDir;

namespace {

struct Output {
  int exit_code = -1;
  std::string text;  // stdout and stderr
};

Output run_in(const fs::path& dir, const std::string& args) {
  std::string cmd =
      "cd " + shell_quote(dir) + " && " + std::string(JARVIS_BINARY) + " " + args + " 2>&1";
  Output out;
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p);
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.text.append(buf, n);
  int status = pclose(p);
  out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return out;
}

// The binary with stdout and stderr kept apart (stderr read from a file).
struct Split {
  int exit_code = -1;
  std::string out, err;
};

Split run_split(const fs::path& dir, const std::string& args) {
  std::string cmd = "cd " + shell_quote(dir) + " && " + std::string(JARVIS_BINARY) + " " + args +
                    " 2>jarvis.stderr";
  Split s;
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p);
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) s.out.append(buf, n);
  int status = pclose(p);
  s.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  s.err = read_text(dir / "jarvis.stderr");
  fs::remove(dir / "jarvis.stderr");
  return s;
}

// What bash completes after `jarvis WORDS...` (the last word being typed),
// with the script `jarvis completion bash` prints.
std::string bash_completes(const fs::path& dir, const std::string& words) {
  Output script = run_in(dir, "completion bash > completion.sh");
  REQUIRE(script.exit_code == 0);
  std::string body = "source ./completion.sh; COMP_WORDS=(jarvis " + words +
                     "); COMP_CWORD=$((${#COMP_WORDS[@]}-1)); _jarvis; echo \"${COMPREPLY[*]}\"";
  std::string cmd = "cd " + shell_quote(dir) + " && bash -c " + shell_quote(body);
  std::string text;
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p);
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) text.append(buf, n);
  CHECK(pclose(p) == 0);
  return text;
}

// The verdict section of the page `jarvis report TRACE --html page.html
// --arch ARCH` writes in `dir`.
std::string report_verdict_section(const fs::path& dir, const std::string& trace,
                                   const std::string& arch) {
  Output out = run_in(dir, "report " + shell_quote(trace) + " --html page.html --arch " + arch);
  REQUIRE_MESSAGE(out.exit_code == 0, out.text);
  const std::string html = read_text(dir / "page.html");
  const size_t verdict = html.find("<section id=\"verdict\">");
  REQUIRE(verdict != std::string::npos);
  return html.substr(verdict, html.find("</section>", verdict) - verdict);
}

}  // namespace

TEST_SUITE("cli_new_user") {
  TEST_CASE("issue 50: prepare's manifest paths: '.' as TraceLens records it, no '//'") {
    ScratchDir dir;
    jarvis::testing::copy_example_trace(dir / "trace.json.gz");
    // TraceLens's own run with --output-dir . records "category_data/..."
    // (../shared/conformance/*/category_data/category_manifest.json).
    Output out = run_in(dir.path, "prepare trace.json.gz --out .");
    REQUIRE_MESSAGE(out.exit_code == 0, out.text);
    auto manifest =
        nlohmann::json::parse(read_text(dir / "category_data" / "category_manifest.json"));
    REQUIRE(!manifest["categories"].empty());
    for (const auto& c : manifest["categories"])
      if (c.contains("csv_file") && c["csv_file"].is_string())
        CHECK(c["csv_file"].get<std::string>().rfind("category_data/", 0) == 0);
    // A directory given with its trailing slash is joined without doubling it.
    out = run_in(dir.path, "prepare trace.json.gz --out sub/");
    REQUIRE_MESSAGE(out.exit_code == 0, out.text);
    manifest =
        nlohmann::json::parse(read_text(dir / "sub" / "category_data" / "category_manifest.json"));
    size_t checked = 0;
    for (const auto& c : manifest["categories"])
      if (c.contains("csv_file") && c["csv_file"].is_string()) {
        CHECK(c["csv_file"].get<std::string>().rfind("sub/category_data/", 0) == 0);
        ++checked;
      }
    CHECK(checked > 0);
  }

  TEST_CASE("issue 64 point 7: info names what its byte count measures (JSON or protobuf)") {
    const fs::path xspace = fs::path(JARVIS_SHARED_DIR) / "ab_pairs/s_jax_B_jit.xplane.pb";
    ScratchDir dir;
    jarvis::testing::copy_example_trace(dir / "trace.json.gz");
    Output kineto = run_in(dir.path, "info trace.json.gz");
    REQUIRE(kineto.exit_code == 0);
    CHECK(kineto.text.find("json bytes: ") != std::string::npos);
    if (!fs::exists(xspace)) return;
    Output xplane = run_in(dir.path, "info " + xspace.string());
    REQUIRE(xplane.exit_code == 0);
    CHECK(xplane.text.find("json bytes") == std::string::npos);
    CHECK(xplane.text.find(fmt::format("protobuf bytes: {}\n", fs::file_size(xspace))) !=
          std::string::npos);
  }

  TEST_CASE("issue 64 point 7: JAX input says what report does not do for it, steps kept apart") {
    const fs::path xspace = fs::path(JARVIS_SHARED_DIR) / "ab_pairs/s_jax_B_jit.xplane.pb";
    if (!fs::exists(xspace)) return;
    ScratchDir dir;
    // --arch: a note that the JAX sheets have no rooflines, the sheets written.
    Output arch = run_in(dir.path, "report " + xspace.string() + " --out r --arch H200");
    REQUIRE(arch.exit_code == 0);
    CHECK(arch.text.find("--arch H200 is not used for XPlane input") != std::string::npos);
    CHECK(fs::exists(dir / "r/perf_report_csvs/df_xla_perf.csv"));
    // --html: refused with the reason, before any work.
    Output html = run_in(dir.path, "report " + xspace.string() + " --out h --html h/page.html");
    CHECK(html.exit_code != 0);
    CHECK(html.text.find("--html is not supported for XPlane input") != std::string::npos);
    // The step markers of a jitted loop give one iteration each (record_ab.py
    // profiles three StepTraceAnnotation("train") steps).
    Output cp = run_in(dir.path, "critical-path " + xspace.string() + " -o cp");
    REQUIRE(cp.exit_code == 0);
    CHECK(cp.text.find("over 3 iteration(s)") != std::string::npos);
  }

  TEST_CASE("issue 64 point 7: --html inside the --out directory the report creates") {
    ScratchDir dir;
    jarvis::testing::copy_example_trace(dir / "trace.json.gz");
    Output out = run_in(dir.path, "report trace.json.gz --out new/out --html new/out/page.html");
    REQUIRE_MESSAGE(out.exit_code == 0, out.text);
    CHECK(fs::exists(dir / "new/out/page.html"));
    CHECK(fs::exists(dir / "new/out/perf_report_csvs"));
    // Outside --out a missing directory is still an error naming --mkdirs.
    out = run_in(dir.path, "report trace.json.gz --out o2 --html elsewhere/page.html");
    CHECK(out.exit_code == 2);
    CHECK(out.text.find("--mkdirs") != std::string::npos);
    // A bare file name beside --out (its parent path is empty: fs::absolute("")
    // threw "cannot make absolute path", exit 1, issue 74 point 9's attacks).
    out = run_in(dir.path, "report trace.json.gz --out o3 --xlsx book.xlsx --html page.html");
    REQUIRE_MESSAGE(out.exit_code == 0, out.text);
    CHECK(fs::exists(dir / "book.xlsx"));
    CHECK(fs::exists(dir / "page.html"));
    CHECK(fs::exists(dir / "o3/perf_report_csvs"));
  }

  TEST_CASE("issue 64 point 7: sql --out FILE writes what its name says, and --force replaces") {
    ScratchDir dir;
    jarvis::testing::copy_example_trace(dir / "trace.json.gz");
    const std::string query = "\"SELECT name, dur FROM kernels ORDER BY dur DESC LIMIT 3\"";
    // .csv: CSV (a header, then comma-separated rows), not the text table.
    Output out = run_in(dir.path, "sql trace.json.gz " + query + " --out x.csv");
    REQUIRE_MESSAGE(out.exit_code == 0, out.text);
    const std::string csv = read_text(dir / "x.csv");
    CHECK(csv.rfind("name,dur\n", 0) == 0);
    CHECK(std::count(csv.begin(), csv.end(), '\n') == 4);
    CHECK(csv.find("-----") == std::string::npos);
    // .json: a JSON document; --format wins over the name.
    REQUIRE(run_in(dir.path, "sql trace.json.gz " + query + " --out x.json").exit_code == 0);
    const auto doc = nlohmann::json::parse(read_text(dir / "x.json"), nullptr, false);
    CHECK_FALSE(doc.is_discarded());
    REQUIRE(
        run_in(dir.path, "sql trace.json.gz " + query + " --out t.csv --format table").exit_code ==
        0);
    CHECK(read_text(dir / "t.csv").find("-----") != std::string::npos);
    // A file of the user's: refused without --force (never "an input of this
    // command"), replaced with it.
    jarvis::testing::write_text(dir / "mine.csv", "keep me\n");
    out = run_in(dir.path, "sql trace.json.gz " + query + " --out mine.csv");
    CHECK(out.exit_code == 2);
    CHECK(out.text.find("an input of this command") == std::string::npos);
    CHECK(out.text.find("--force") != std::string::npos);
    CHECK(read_text(dir / "mine.csv") == "keep me\n");
    out = run_in(dir.path, "sql trace.json.gz " + query + " --out mine.csv --force");
    REQUIRE_MESSAGE(out.exit_code == 0, out.text);
    CHECK(read_text(dir / "mine.csv") == csv);
  }

  TEST_CASE("issue 50: report counts read right ('1 row', never '1 rows')") {
    ScratchDir dir;
    jarvis::testing::copy_example_trace(dir / "trace.json.gz");
    Output out = run_in(dir.path, "report trace.json.gz --out out");
    REQUIRE_MESSAGE(out.exit_code == 0, out.text);
    CHECK(out.text.find(" 1 rows") == std::string::npos);
    CHECK(out.text.find(" rows\n") != std::string::npos);
  }

  TEST_CASE("issue 50: an output directory that is a file (the trace) is named, before any work") {
    ScratchDir dir;
    jarvis::testing::copy_example_trace(dir / "t.json.gz");
    const std::string before = read_text(dir / "t.json.gz");
    for (const char* args :
         {"report t.json.gz --out t.json.gz", "report t.json.gz --csv-dir t.json.gz",
          "report t.json.gz --html p.html --svg-dir t.json.gz", "prepare t.json.gz --out t.json.gz",
          "critical-path t.json.gz --out t.json.gz",
          "what-if t.json.gz --out t.json.gz --category GEMM --factor 0.5",
          "collectives t.json.gz t.json.gz --out t.json.gz",
          "compare t.json.gz t.json.gz --out t.json.gz", "replay t.json.gz --out t.json.gz --op x",
          "memory t.json.gz --out t.json.gz", "sweep . --out t.json.gz"}) {
      CAPTURE(args);
      Split r = run_split(dir.path, args);
      CHECK(r.exit_code == 2);
      CHECK_MESSAGE(r.err.find("'t.json.gz' is a file, not a directory") != std::string::npos,
                    r.err);
      CHECK(r.err.find("filesystem error") == std::string::npos);
    }
    CHECK(read_text(dir / "t.json.gz") == before);
    CHECK_FALSE(fs::exists(dir / "p.html"));
  }

  TEST_CASE("issue 50: an Nsight Systems export is named, not dumped as bytes") {
    ScratchDir dir;
    jarvis::testing::write_text(dir / "profile.sqlite",
                                std::string("SQLite format 3\0\x10\x00", 18) + "rest");
    Output out = run_in(dir.path, "report profile.sqlite --out out");
    CHECK(out.exit_code == 1);
    CHECK_MESSAGE(out.text.find("Nsight Systems") != std::string::npos, out.text);
  }

  TEST_CASE(
      "issue 50: misspelt commands and flags get a did-you-mean; TraceLens-only flags are named") {
    ScratchDir dir;
    Split cmd = run_split(dir.path, "reprot x.json");
    CHECK(cmd.exit_code == 2);
    CHECK_MESSAGE(
        cmd.err.find("unknown command 'reprot' (did you mean 'report'?)") != std::string::npos,
        cmd.err);
    Split far = run_split(dir.path, "zzzzzz x.json");
    CHECK(far.exit_code == 2);
    CHECK(far.err.find("did you mean") == std::string::npos);  // nothing close: no guess
    Split flag = run_split(dir.path, "report x.json --outt o --topk_ops 5 --short_kernel_bins 3");
    CHECK(flag.exit_code == 2);
    CHECK(flag.out.empty());
    CHECK_MESSAGE(flag.err.find("--outt: (did you mean '--out'?)") != std::string::npos, flag.err);
    CHECK(flag.err.find("--topk_ops is a TraceLens flag jarvis does not support") !=
          std::string::npos);
    // '_' and '-' are one character to the guess: the snake_case near-miss finds the
    // hyphenated flag.
    CHECK(flag.err.find("--short_kernel_bins: (did you mean '--short-kernel-bins'?)") !=
          std::string::npos);
    CHECK_FALSE(fs::exists(dir / "o"));
  }

  TEST_CASE("issue 50: help wins over a bad flag, on stdout alone; the footer only at the top") {
    ScratchDir dir;
    Split help = run_split(dir.path, "report --bad --help");
    CHECK(help.exit_code == 0);
    CHECK(help.err.empty());
    CHECK(help.out.find("Usage: jarvis report") != std::string::npos);
    const std::string footer = "Run `jarvis COMMAND --help` for a command's options.";
    CHECK(run_split(dir.path, "--help").out.find(footer) != std::string::npos);
    for (const char* cmd : {"info", "report", "sweep", "serve"}) {
      CAPTURE(cmd);
      CHECK(run_split(dir.path, std::string(cmd) + " --help").out.find(footer) ==
            std::string::npos);
    }
  }

  TEST_CASE("issue 50: the man page says what jarvis is once and describes jarvis, not `manpage`") {
    ScratchDir dir;
    Split man = run_split(dir.path, "manpage");
    REQUIRE(man.exit_code == 0);
    CHECK(man.out.find(".SH NAME\njarvis \\- GPU performance analysis") != std::string::npos);
    CHECK(man.out.find("jarvis \\- jarvis:") == std::string::npos);
    size_t description = man.out.find(".SH DESCRIPTION");
    size_t commands = man.out.find(".SH COMMANDS");
    REQUIRE(description != std::string::npos);
    REQUIRE(commands != std::string::npos);
    std::string text = man.out.substr(description, commands - description);
    CHECK(text.find("Usage: jarvis [OPTIONS] SUBCOMMAND") != std::string::npos);
    CHECK(text.find("manpage") == std::string::npos);
    CHECK(text.find("critical\\-path") != std::string::npos);  // the commands are listed
  }

  TEST_CASE("issue 50: bash completes the values of --progress and --arch, not file names") {
    ScratchDir dir;
    jarvis::testing::write_text(dir / "planfile.txt", "x");  // a file a wrong completion offers
    CHECK(bash_completes(dir.path, "report t.json --progress p") == "plain\n");
    CHECK(bash_completes(dir.path, "report t.json --progress \"\"") == "auto bar plain none\n");
    // --arch takes a bundled name, none, or an arch JSON file.
    std::string arch = bash_completes(dir.path, "insights t.json --arch \"\"");
    for (const char* name : {"H100", "MI300X", "none", "planfile.txt"}) {
      CAPTURE(name);
      CHECK(arch.find(name) != std::string::npos);
    }
    CHECK(bash_completes(dir.path, "report t.json --arch MI3") == "MI300X MI325X MI355X\n");
    CHECK(bash_completes(dir.path, "prepare t.json --platform M").find("none") ==
          std::string::npos);
    // Elsewhere a file name is still completed.
    CHECK(bash_completes(dir.path, "report pl") == "planfile.txt\n");
  }

  TEST_CASE("issue 50: bash completes serve's --tools and --profile from the server's own lists") {
    ScratchDir dir;
    jarvis::testing::write_text(dir / "planfile.txt", "x");
    // The tools the server serves (tools_schema/) and the profile table.
    const std::vector<std::string> tools = jarvis::mcp::builtin_tool_names();
    std::vector<std::string> profiles;
    for (const auto& p : jarvis::mcp::tool_profiles()) profiles.push_back(p.name);
    CHECK(bash_completes(dir.path, "serve --stdio --tools \"\"") ==
          fmt::format("{}\n", fmt::join(tools, " ")));
    CHECK(bash_completes(dir.path, "serve --stdio --profile \"\"") ==
          fmt::format("{}\n", fmt::join(profiles, " ")));
    CHECK(bash_completes(dir.path, "serve --stdio --profile s") == "single-trace sweep\n");
    // A comma-separated list completes its last item and keeps the ones before.
    std::vector<std::string> sweep_tools;
    for (const std::string& t : tools)
      if (t.rfind("sweep_", 0) == 0) sweep_tools.push_back("load_trace," + t);
    REQUIRE(!sweep_tools.empty());
    CHECK(bash_completes(dir.path, "serve --stdio --tools load_trace,sweep_") ==
          fmt::format("{}\n", fmt::join(sweep_tools, " ")));
    CHECK(bash_completes(dir.path, "serve --tools insights,ops_s") == "insights,ops_summary\n");
    // Every completed name is accepted by the server's selection.
    for (const std::string& t : tools) CHECK_NOTHROW(jarvis::mcp::select_tools({}, {t}, tools));
    // After the list, file names again.
    CHECK(bash_completes(dir.path, "serve --tools insights pl") == "planfile.txt\n");
  }

  TEST_CASE("issue 50: a directory of rank traces stands for its traces where ranks are expected") {
    ScratchDir dir;
    const std::string source =
        jarvis::golden::shared_dir() + "/nccl/hta_allreduce_2ranks_rank0/trace.json.gz";
    std::string make =
        "python3 " +
        shell_quote(std::string(JARVIS_SOURCE_DIR) + "/tools/make_multirank_traces.py") +
        " --src " + shell_quote(source) + " --out " + shell_quote(dir / "gen") +
        " --ranks 3 --gpu-only >/dev/null";
    REQUIRE(std::system(make.c_str()) == 0);
    // Two layouts of the same ranks: files in the directory, and rank<N>/ subdirectories.
    fs::create_directories(dir / "flat");
    for (int r = 0; r < 3; ++r) {
      std::string name = "rank" + std::to_string(r) + ".json.gz";
      fs::copy_file(dir / "gen" / name, dir / "flat" / name);
      fs::create_directories(dir / "nested" / ("rank" + std::to_string(r)));
      fs::copy_file(dir / "gen" / name,
                    dir / "nested" / ("rank" + std::to_string(r)) / "trace.json.gz");
    }
    const std::string listed = "flat/rank0.json.gz flat/rank1.json.gz flat/rank2.json.gz";
    for (const char* cmd : {"collectives", "critical-path"}) {
      CAPTURE(cmd);
      Output by_files = run_in(dir.path, std::string(cmd) + " " + listed + " --out by_files");
      REQUIRE_MESSAGE(by_files.exit_code == 0, by_files.text);
      for (const char* layout : {"flat", "nested"}) {
        CAPTURE(layout);
        std::string out = std::string("by_") + layout;
        Output by_dir = run_in(dir.path, std::string(cmd) + " " + layout + " --out " + out);
        REQUIRE_MESSAGE(by_dir.exit_code == 0, by_dir.text);
        size_t files = 0;
        for (const auto& entry : fs::directory_iterator(dir / "by_files")) {
          CAPTURE(entry.path().filename().string());
          CHECK(read_text(entry.path()) == read_text(dir / out / entry.path().filename()));
          ++files;
        }
        CHECK(files >= 2);
        fs::remove_all(dir / out);
      }
      fs::remove_all(dir / "by_files");
    }
    Output multi = run_in(dir.path, "collectives flat --out o");
    CHECK(multi.text.find("3 ranks") != std::string::npos);
    // The straggler verdict on the terminal, from the generator's injected
    // start delays: the latest-delayed rank of each instance starts last.
    auto truth = nlohmann::json::parse(read_text(dir / "gen" / "truth.json"));
    std::map<int64_t, size_t> last;
    for (const auto& inst : truth["instances"]) {
      std::vector<double> delays = inst["delays_us"].get<std::vector<double>>();
      ++last[std::max_element(delays.begin(), delays.end()) - delays.begin()];
    }
    int64_t rank = -1;
    size_t count = 0;
    for (const auto& [r, c] : last)
      if (c > count) {
        rank = r;
        count = c;
      }
    const size_t n = truth["instances"].size();
    // Half the instances or more, and 1.5x the even share of 3 ranks.
    bool straggler = 2 * count >= n && 3.0 * count >= 1.5 * n;
    std::string expected =
        straggler ? fmt::format("straggler: rank {} started last at {} of {}", rank, count, n)
                  : fmt::format(
                        "no straggler: the last arrival is spread over the ranks (rank {} "
                        "last most often, at {} of {} instances)",
                        rank, count, n);
    CAPTURE(expected);
    CHECK_MESSAGE(multi.text.find(expected) != std::string::npos, multi.text);
    // collective_ranks.csv's clock offsets in the generator's recorded
    // convention (docs/collectives.md): minus the shift it added, so a rank
    // whose clock runs ahead has a negative offset.
    std::ifstream ranks_csv(dir / "o" / "collective_ranks.csv");
    std::string row;
    std::getline(ranks_csv, row);
    REQUIRE(row.substr(row.rfind(',') + 1) == "clock_offset_us");
    size_t offsets = 0;
    while (std::getline(ranks_csv, row)) {
      int64_t r = std::stoll(row.substr(0, row.find(',')));
      double got = std::stod(row.substr(row.rfind(',') + 1));
      CAPTURE(r);
      CHECK(got == doctest::Approx(truth["clock_offset_us"][r].get<double>()).epsilon(1e-9));
      CHECK(truth["clock_offset_us"][r].get<double>() ==
            -(truth["clock_shift_us"][r].get<double>() - truth["clock_shift_us"][0].get<double>()));
      if (r > 0) CHECK(got < 0);
      ++offsets;
    }
    CHECK(offsets == 3);
    // report reads one trace: the directory is named with the commands that take it.
    Output report = run_in(dir.path, "report flat --out r");
    CHECK(report.exit_code == 1);
    CHECK_MESSAGE(report.text.find("flat is a directory of 3 trace(s)") != std::string::npos,
                  report.text);
    CHECK(report.text.find("jarvis collectives") != std::string::npos);
    CHECK_FALSE(fs::exists(dir / "r"));
    fs::create_directories(dir / "empty");
    Output empty = run_in(dir.path, "critical-path empty --out e");
    CHECK(empty.exit_code == 1);
    CHECK(empty.text.find("empty: a directory with no trace") != std::string::npos);
  }

  TEST_CASE("issue 50: docs/cli.md's CLI table is one table and names every command") {
    ScratchDir dir;
    // The commands `jarvis --help` lists, one per line under "Subcommands:".
    Split help = run_split(dir.path, "--help");
    REQUIRE(help.exit_code == 0);
    size_t at = help.out.find("Subcommands:\n");
    REQUIRE(at != std::string::npos);
    std::vector<std::string> commands;
    std::istringstream lines(help.out.substr(at + 13));
    for (std::string line; std::getline(lines, line) && line.rfind("  ", 0) == 0;)
      commands.push_back(line.substr(2, line.find(' ', 2) - 2));
    REQUIRE(commands.size() > 15);
    // The table under "## Commands": its rows up to the first line that is not a row.
    const std::string doc = read_text(fs::path(JARVIS_SOURCE_DIR) / "docs" / "cli.md");
    size_t cli = doc.find("\n## Commands\n");
    REQUIRE(cli != std::string::npos);
    size_t first = doc.find("\n|", cli);
    REQUIRE(first != std::string::npos);
    std::string table;
    std::istringstream rows(doc.substr(first + 1));
    for (std::string line; std::getline(rows, line) && line.rfind("|", 0) == 0;)
      table += line + "\n";
    for (const std::string& cmd : commands) {
      CAPTURE(cmd);
      CHECK(table.find("`jarvis " + cmd + " ") != std::string::npos);
    }
  }

  TEST_CASE("issue 50: docs/cli.md quotes the misspelt-flag error as the binary prints it") {
    ScratchDir dir;
    const std::string doc = read_text(fs::path(JARVIS_SOURCE_DIR) / "docs" / "cli.md");
    const std::string example = "`jarvis report t.json --outt x` → ";
    size_t at = doc.find(example);
    REQUIRE(at != std::string::npos);
    std::string line = doc.substr(at + example.size(), doc.find('\n', at) - at - example.size());
    Output out = run_in(dir.path, "report t.json --outt x");
    CHECK(out.exit_code == 2);
    // Every code span quoted after the arrow ("``...``" or "`...`"), less
    // those shortened with "…", is a line of the real output.
    std::vector<std::string> quoted;
    for (size_t i = 0; i < line.size();) {
      size_t open = line.find('`', i);
      if (open == std::string::npos) break;
      size_t ticks = line.compare(open, 2, "``") == 0 ? 2 : 1;
      size_t close = line.find(std::string(ticks, '`'), open + ticks);
      REQUIRE(close != std::string::npos);
      quoted.push_back(line.substr(open + ticks, close - open - ticks));
      i = close + ticks;
    }
    REQUIRE(quoted.size() >= 3);
    for (const std::string& q : quoted) {
      if (q.find("…") != std::string::npos) {
        // Shortened: the real line starts with the quoted part.
        std::string head = "\n";
        head += q.substr(0, q.find("…"));
        CHECK_MESSAGE(out.text.find(head) != std::string::npos, q);
        continue;
      }
      CHECK_MESSAGE(out.text.find(q + "\n") != std::string::npos, q, "\n", out.text);
    }
    // The general line names the command as CMD.
    CHECK(doc.find("``Run `jarvis CMD --help` for the options.``") != std::string::npos);
  }

  TEST_CASE("issue 50: counts read right in every command's summary ('1 row', never '1 rows')") {
    ScratchDir dir;
    jarvis::testing::copy_example_trace(dir / "trace.json.gz");
    Output one = run_in(dir.path, "sql trace.json.gz \"select 1 as x\" --out one.csv");
    REQUIRE_MESSAGE(one.exit_code == 0, one.text);
    CHECK_MESSAGE(one.text.find("one.csv (1 row)") != std::string::npos, one.text);
    Output two =
        run_in(dir.path, "sql trace.json.gz \"select 1 union all select 2\" --out two.csv");
    REQUIRE_MESSAGE(two.exit_code == 0, two.text);
    CHECK_MESSAGE(two.text.find("two.csv (2 rows)") != std::string::npos, two.text);
    Output html = run_in(dir.path, "report trace.json.gz --html r.html");
    REQUIRE_MESSAGE(html.exit_code == 0, html.text);
    std::regex plural_one(R"(\b1 (rows|charts|files|kernels|ranks|tables|views|images)\b)");
    for (const Output* o : {&one, &two, &html}) CHECK_FALSE(std::regex_search(o->text, plural_one));
  }

  TEST_CASE("issue 50: the sweep page and tables of a one-rank sweep read right") {
    ScratchDir dir;
    const std::string sweep = jarvis::golden::shared_dir() + "/sweeps/h100_gpt2_ddp";
    Output out = run_in(dir.path, "sweep " + shell_quote(sweep) +
                                      " --out out --cache none --html page.html --progress none");
    REQUIRE_MESSAGE(out.exit_code == 0, out.text);
    const std::string html = read_text(dir / "page.html");
    // One rank: no "by rank" plot, and the page says why.
    CHECK(html.find("by rank (box plot)") == std::string::npos);
    CHECK(html.find("by rank (violin plot)") == std::string::npos);
    CHECK(html.find("No chart by rank: one value in this sweep.") != std::string::npos);
    CHECK(html.find("by threads (box plot)") != std::string::npos);
    // Per-step values are labelled per step.
    CHECK(html.find("GPU time per step by configuration (mean over ranks and steps)") !=
          std::string::npos);
    CHECK(html.find("Noise cannot be judged: one run per configuration.") != std::string::npos);
    // No collective in a one-rank sweep: the empty nccl_by_config.csv is explained.
    CHECK(read_text(dir / "out" / "nccl_by_config.csv").find('\n') ==
          read_text(dir / "out" / "nccl_by_config.csv").size() - 1);  // the header alone
    CHECK_MESSAGE(out.text.find("nccl_by_config.csv: no rows: no collectives in this sweep") !=
                      std::string::npos,
                  out.text);
    CHECK(html.find("None (nccl_by_config.csv has no rows)") != std::string::npos);
    // gemm_variance's timestamps are offsets from the run's first GPU event:
    // the is_min / is_max instances' start_since_first_gpu_ms of the timestamps table.
    auto rows_of = [&](const std::string& name) {
      std::ifstream in(dir / "out" / name);
      std::vector<std::vector<std::string>> rows;
      std::string line;
      while (std::getline(in, line)) {
        std::vector<std::string> cells;
        std::string cell;
        bool quoted = false;
        for (char c : line) {
          if (c == '"')
            quoted = !quoted;
          else if (c == ',' && !quoted)
            cells.push_back(cell), cell.clear();
          else
            cell += c;
        }
        cells.push_back(cell);
        rows.push_back(cells);
      }
      return rows;
    };
    auto variance = rows_of("gemm_variance.csv");
    auto stamps = rows_of("gemm_variance_timestamps.csv");
    REQUIRE(variance.size() > 1);
    auto col = [](const std::vector<std::string>& header, const std::string& name) {
      auto it = std::find(header.begin(), header.end(), name);
      REQUIRE(it != header.end());
      return static_cast<size_t>(it - header.begin());
    };
    const size_t v_min = col(variance[0], "min_duration_timestamp_ms"),
                 v_op = col(variance[0], "op"), v_run = col(variance[0], "run"),
                 v_shape = col(variance[0], "shape");
    const size_t s_start = col(stamps[0], "start_since_first_gpu_ms"),
                 s_min = col(stamps[0], "is_min"), s_op = col(stamps[0], "op"),
                 s_run = col(stamps[0], "run"), s_shape = col(stamps[0], "shape");
    size_t matched = 0;
    for (size_t r = 1; r < variance.size(); ++r) {
      const double at = std::stod(variance[r][v_min]);
      CHECK(at >= 0);
      CHECK(at < 1e6);  // an offset, not the trace clock (~4.5e9 ms)
      bool found = false;
      for (size_t k = 1; k < stamps.size() && !found; ++k)
        found = stamps[k][s_min] == "True" && stamps[k][s_op] == variance[r][v_op] &&
                stamps[k][s_run] == variance[r][v_run] &&
                stamps[k][s_shape] == variance[r][v_shape] &&
                std::fabs(std::stod(stamps[k][s_start]) - at) < 1e-6;
      matched += found;
    }
    CHECK(matched == variance.size() - 1);
  }

  TEST_CASE("issue 50: report --html writes an annotated trace with the critical path, linked") {
    ScratchDir dir;
    const std::string trace =
        jarvis::golden::shared_dir() + "/conformance/h100_bert-small/trace.json.gz";
    Output out = run_in(
        dir.path, "report " + shell_quote(trace) + " --html pages/r.html --mkdirs --arch H100");
    REQUIRE_MESSAGE(out.exit_code == 0, out.text);
    const fs::path annotated = dir / "pages" / "r.annotated.json.gz";
    REQUIRE(fs::exists(annotated));
    CHECK(out.text.find("r.annotated.json.gz: annotated trace") != std::string::npos);
    // The page links it by its name beside the page.
    const std::string html = read_text(dir / "pages" / "r.html");
    CHECK(html.find("href=\"r.annotated.json.gz\"") != std::string::npos);
    auto doc = nlohmann::json::parse(jarvis::loader_test::gunzip_file(annotated.string()));
    REQUIRE(doc["traceEvents"].is_array());
    // Every timed slice of the raw trace is there, on its own pid / tid.
    auto raw = nlohmann::json::parse(jarvis::loader_test::gunzip_file(trace));
    size_t raw_slices = 0, copied = 0;
    for (const auto& e : raw["traceEvents"])
      if (e.value("ph", "") == "X" && e.contains("ts") && e.contains("dur")) ++raw_slices;
    std::vector<nlohmann::json> path;
    std::set<std::string> finding_tracks;
    int64_t jarvis_pid = -1;
    for (const auto& e : doc["traceEvents"]) {
      std::string cat = e.value("cat", "");
      if (e.value("ph", "") == "X" && cat.rfind("jarvis.", 0) != 0) ++copied;
      if (cat == "jarvis.critical_path") path.push_back(e);
      if (e.value("ph", "") == "M" && e.value("name", "") == "process_name" &&
          e["args"]["name"] == "jarvis annotations")
        jarvis_pid = e["pid"].get<int64_t>();
      if (e.value("ph", "") == "M" && e.value("name", "") == "thread_name" &&
          e["args"]["name"].get<std::string>().rfind("finding ", 0) == 0)
        finding_tracks.insert(e["args"]["name"].get<std::string>());
    }
    CHECK(copied == raw_slices);
    CHECK(jarvis_pid >= 0);
    CHECK(!finding_tracks.empty());
    // The critical path's slices are `jarvis critical-path --recorded-host`'s
    // segments (the annotated trace draws the recorded schedule, which lines
    // up with the trace's events), in order, with their times.
    Output cp =
        run_in(dir.path, "critical-path " + shell_quote(trace) + " --recorded-host --out cp");
    REQUIRE_MESSAGE(cp.exit_code == 0, cp.text);
    std::vector<std::pair<double, double>> expected;
    for (int k = 0; fs::exists(dir / "cp" / fmt::format("path_iteration{}.csv", k)); ++k) {
      std::ifstream csv(dir / "cp" / fmt::format("path_iteration{}.csv", k));
      std::string line;
      std::getline(csv, line);
      REQUIRE(line.rfind("iteration,start_us,dur_us,", 0) == 0);
      while (std::getline(csv, line)) {
        // The iteration name has no comma; start_us and dur_us follow it.
        size_t a = line.find(','), b = line.find(',', a + 1), c = line.find(',', b + 1);
        expected.emplace_back(std::stod(line.substr(a + 1, b - a - 1)),
                              std::stod(line.substr(b + 1, c - b - 1)));
      }
    }
    REQUIRE(!expected.empty());
    REQUIRE(path.size() == expected.size());
    for (size_t i = 0; i < path.size(); ++i) {
      CAPTURE(i);
      CHECK(path[i]["pid"].get<int64_t>() == jarvis_pid);
      CHECK(path[i]["args"]["start_us"].get<double>() == doctest::Approx(expected[i].first));
      CHECK(path[i]["args"]["dur_us"].get<double>() == doctest::Approx(expected[i].second));
      // The slice's own times, in the trace's microseconds to the ns.
      CHECK(path[i]["ts"].get<double>() == doctest::Approx(expected[i].first).epsilon(1e-12));
    }
    // The page's timeline: its data holds every slice of this small trace,
    // the ProfilerStep#N steps and the critical path.
    size_t start = html.find("<script type=\"application/json\" class=\"timeline-data\">");
    REQUIRE(start != std::string::npos);
    start = html.find('>', start) + 1;
    auto data = nlohmann::json::parse(html.substr(start, html.find("</script>", start) - start));
    size_t raw_timeline = 0, raw_steps = 0;
    for (const auto& e : raw["traceEvents"]) {
      std::string cat = e.value("cat", "");
      if (e.value("ph", "") != "X" || !e.contains("dur")) continue;
      if (cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset" || cat == "cpu_op" ||
          cat == "user_annotation" || cat == "cuda_runtime" || cat == "cuda_driver")
        ++raw_timeline;
      if (cat == "user_annotation" && e.value("name", "").rfind("ProfilerStep#", 0) == 0)
        ++raw_steps;
    }
    CHECK(data["slices"].size() == raw_timeline);
    CHECK(data["steps"].size() == raw_steps);
    CHECK(data["path"].size() == expected.size());
    // An existing file of the user's under the annotated trace's name is refused.
    fs::remove(annotated);
    jarvis::testing::write_text(annotated, "mine");
    Output again =
        run_in(dir.path, "report " + shell_quote(trace) + " --html pages/r.html --arch H100");
    CHECK(again.exit_code == 2);
    CHECK(read_text(annotated) == "mine");
  }

  TEST_CASE("issue 50: the HTML report opens with the verdict, numbers rounded for reading") {
    ScratchDir dir;
    const std::string bert = jarvis::golden::shared_dir() + "/conformance/h100_bert-small";
    Output out = run_in(dir.path, "report " + shell_quote(bert + "/trace.json.gz") +
                                      " --html page.html --arch H100");
    REQUIRE_MESSAGE(out.exit_code == 0, out.text);
    Output insights = run_in(dir.path, "insights " + shell_quote(bert + "/trace.json.gz") +
                                           " --arch H100 --json insights.json");
    REQUIRE_MESSAGE(insights.exit_code == 0, insights.text);
    const std::string html = read_text(dir / "page.html");
    size_t verdict = html.find("<section id=\"verdict\">");
    size_t summary = html.find("<section id=\"summary\">");
    REQUIRE(verdict != std::string::npos);
    CHECK(verdict < summary);
    CHECK(html.find("<section") == verdict);  // the first section
    std::string text = html.substr(verdict, summary - verdict);
    CHECK(text.find("Trace health: ") != std::string::npos);
    // Busy / idle as TraceLens's own gpu_timeline.csv of this trace has them.
    std::map<std::string, double> ms;
    std::ifstream csv(bert + "/perf_report_csvs/gpu_timeline.csv");
    std::string line;
    std::getline(csv, line);
    while (std::getline(csv, line)) {
      size_t a = line.find(','), b = line.find(',', a + 1);
      ms[line.substr(0, a)] = std::stod(line.substr(a + 1, b - a - 1));
    }
    std::string busy = fmt::format("GPU busy {:.1f} ms of {:.1f} ms ({:.0f} %)", ms["busy_time"],
                                   ms["total_time"], 100 * ms["busy_time"] / ms["total_time"]);
    CHECK_MESSAGE(text.find(busy) != std::string::npos, busy);
    CHECK(text.find(fmt::format("idle {:.1f} ms ({:.0f} %)", ms["idle_time"],
                                100 * ms["idle_time"] / ms["total_time"])) != std::string::npos);
    // The findings in `jarvis insights`'s order.
    auto found = nlohmann::json::parse(read_text(dir / "insights.json"));
    REQUIRE(!found.empty());
    size_t at = 0;
    for (size_t k = 0; k < found.size() && k < 10; ++k) {
      std::string rule = "<td>" + found[k]["rule"].get<std::string>() + "</td>";
      size_t next = text.find(rule, at);
      CHECK_MESSAGE(next != std::string::npos, rule);
      if (next != std::string::npos) at = next;
    }
    // No table cell shows more than three significant digits after the point
    // of a number (the CSVs keep full precision) and none is in exponent form.
    std::regex long_number(R"(<td class="n" data-v="[^"]*">-?\d*\.\d{4,}</td>)");
    std::regex exponent(R"(<td class="n" data-v="[^"]*">[^<]*e[-+]\d+</td>)");
    CHECK_FALSE(std::regex_search(html, exponent));
    size_t cells = 0;
    for (auto it = std::sregex_iterator(html.begin(), html.end(), long_number);
         it != std::sregex_iterator(); ++it) {
      // Only numbers below 0.1 need four or more decimals for three significant digits.
      std::string cell = it->str();
      CHECK_MESSAGE(
          (cell.find(">0.0") != std::string::npos || cell.find(">-0.0") != std::string::npos),
          cell);
      ++cells;
    }
    CHECK(html.find("<td class=\"n\"") != std::string::npos);
    MESSAGE(cells << " small numbers with four or more decimals");
  }

  TEST_CASE("issue 64 point 7: compare prints the largest op changes beside the timeline") {
    // fp32 (TF32 off) against TF32 GPT-2 training (../shared/ab_pairs): the
    // printed changes lead with the op whose kernel time changed most among
    // the heaviest ten, as compare's own ops_summary.csv has it.
    const std::string ab = jarvis::golden::shared_dir() + "/ab_pairs/";
    ScratchDir dir;
    Output out = run_in(dir.path, "compare " + shell_quote(ab + "s_tf32_A_fp32.json.gz") + " " +
                                      shell_quote(ab + "s_tf32_B_tf32.json.gz") + " --out cmp");
    REQUIRE_MESSAGE(out.exit_code == 0, out.text);
    const jarvis::Table ops = jarvis::read_csv_file((dir / "cmp/ops_summary.csv").string());
    const int ref = ops.col("reference::total_direct_kernel_time_ms");
    const int tgt = ops.col("target::total_direct_kernel_time_ms");
    const int diff = ops.col("total_direct_kernel_time_ms__target_diff");
    REQUIRE((ref >= 0 && tgt >= 0 && diff >= 0));
    auto num = [&](size_t r, int c) {
      const std::string& t = ops.rows[r][static_cast<size_t>(c)].text();
      return t.empty() ? 0.0 : std::stod(t);
    };
    std::vector<size_t> order(ops.rows.size());
    for (size_t r = 0; r < order.size(); ++r) order[r] = r;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return std::max(num(a, ref), num(a, tgt)) > std::max(num(b, ref), num(b, tgt));
    });
    order.resize(std::min<size_t>(order.size(), 10));
    size_t largest = order.front();
    for (size_t r : order)
      if (std::fabs(num(r, diff)) > std::fabs(num(largest, diff))) largest = r;
    const std::string name = ops.rows[largest][0].text();
    const size_t header = out.text.find("largest op changes (kernel ms)");
    REQUIRE(header != std::string::npos);
    const size_t line = out.text.find('\n', header) + 1;
    CHECK_MESSAGE(
        out.text.substr(line, out.text.find('\n', line) - line).find(name.substr(0, 30)) !=
            std::string::npos,
        name);
    CHECK(out.text.find(fmt::format("{:+.3f}", num(largest, diff)), line) != std::string::npos);
  }

  TEST_CASE("issue 64 point 7: the report page's verdict names what jarvis memory finds") {
    // GPT-2 training recorded with profile_memory=True (../shared/ab_pairs
    // s_ckpt_A): every finding of `jarvis memory` is in the verdict section.
    const std::string trace =
        jarvis::golden::shared_dir() + "/ab_pairs/s_ckpt_A_no_checkpointing.json.gz";
    ScratchDir dir;
    Output mem = run_in(dir.path, "memory " + shell_quote(trace) + " --out m");
    REQUIRE_MESSAGE(mem.exit_code == 0, mem.text);
    const auto summary = nlohmann::json::parse(read_text(dir / "m/memory_summary.json"));
    REQUIRE(summary.is_array());
    REQUIRE_FALSE(summary[0]["findings"].empty());
    const std::string text = report_verdict_section(dir.path, trace, "H200");
    auto escaped = [](const std::string& s) {
      std::string out;
      for (char c : s) {
        if (c == '&')
          out += "&amp;";
        else if (c == '<')
          out += "&lt;";
        else if (c == '>')
          out += "&gt;";
        else if (c == '"')
          out += "&quot;";
        else if (c == '\'')
          out += "&#39;";
        else
          out += c;
      }
      return out;
    };
    CHECK(text.find(fmt::format("Memory: {} finding(s)", summary[0]["findings"].size())) !=
          std::string::npos);
    for (const auto& f : summary[0]["findings"]) {
      const std::string title = f["title"].get<std::string>();
      CHECK_MESSAGE(text.find(escaped(title)) != std::string::npos, title);
    }
  }

  TEST_CASE("issue 64 point 6: the report page names each finding's fix with its value") {
    // Llama with a vocabulary of 32001 (../shared/ab_pairs s_vocab_A): the
    // page's findings table says what to pad it to, the next multiple of 64
    // computed here from the vocabulary the trace's GEMMs carry.
    const std::string trace =
        jarvis::golden::shared_dir() + "/ab_pairs/s_vocab_A_vocab32001.json.gz";
    ScratchDir dir;
    const std::string text = report_verdict_section(dir.path, trace, "H200");
    CHECK(text.find("<th>fix</th>") != std::string::npos);
    const int64_t vocabulary = 32001, padded = (vocabulary + 63) / 64 * 64;
    CHECK(padded == 32064);
    CHECK_MESSAGE(text.find(fmt::format("pad it to {}", padded)) != std::string::npos,
                  text.substr(0, 3000));
    // It opens with the step without the profiler and what bounds it.
    CHECK(text.find("Step without the profiler: ") != std::string::npos);
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
