// Issue 50, what a new user meets: TraceLens's manifest paths,
// counts that read right, other profilers' files named.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "golden.h"
#include "security_support.h"
#include "test_loader_support.h"

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

  TEST_CASE("issue 50: report counts read right ('1 row', never '1 rows')") {
    ScratchDir dir;
    jarvis::testing::copy_example_trace(dir / "trace.json.gz");
    Output out = run_in(dir.path, "report trace.json.gz --out out");
    REQUIRE_MESSAGE(out.exit_code == 0, out.text);
    CHECK(out.text.find(" 1 rows") == std::string::npos);
    CHECK(out.text.find(" rows\n") != std::string::npos);
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
}
