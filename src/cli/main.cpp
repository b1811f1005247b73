// `jarvis`: one binary, one CLI11 application with a subcommand per task.
// Help and version go to stdout (exit 0); usage errors to stderr (exit 2);
// input and analysis errors to stderr (exit 1).
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include "base/malloc_policy.h"
#include "base/output_guard.h"
#include "cli/commands.h"
#include "cli/docgen.h"
#include "cli/suggest.h"

#ifndef JARVIS_VERSION
#error "JARVIS_VERSION is set by CMake from the project version"
#endif
#ifndef JARVIS_BUILD_OPTIONS
#error "JARVIS_BUILD_OPTIONS is set by cmake/build_options.cmake"
#endif

namespace jarvis::cli {
const char* version() {
  return JARVIS_VERSION;
}
}  // namespace jarvis::cli

namespace {

using jarvis::cli::Runner;

constexpr const char* kFooter =
    "Run `jarvis COMMAND --help` for a command's options. Flags take `--flag VALUE` or\n"
    "`--flag=VALUE`. Exit codes: 0 ok, 1 input or analysis error, 2 usage error.\n"
    "Docs: README.md, docs/cli.md; MCP server for agents: `jarvis serve --help`.";

struct Registered {
  CLI::App* command;
  Runner run;
};

struct CommandEntry {
  const char* name;  // the subcommand name the adder registers
  Runner (*add)(CLI::App&);
};

// Every command, in the order of `jarvis --help`. `completion` and `manpage`
// describe the whole application, so they never run alone.
constexpr CommandEntry kCommands[] = {
    {"info", jarvis::cli::add_info},
    {"report", jarvis::cli::add_report},
    {"prepare", jarvis::cli::add_prepare},
    {"analyze", jarvis::cli::add_analyze},
    {"compare", jarvis::cli::add_compare},
    {"insights", jarvis::cli::add_insights},
    {"memory", jarvis::cli::add_memory},
    {"sql", jarvis::cli::add_sql},
    {"collectives", jarvis::cli::add_collectives},
    {"critical-path", jarvis::cli::add_critical_path},
    {"what-if", jarvis::cli::add_what_if},
    {"sweep", jarvis::cli::add_sweep},
    {"sweep-compare", jarvis::cli::add_sweep_compare},
    {"rocprof-config", jarvis::cli::add_rocprof_config},
    {"gate", jarvis::cli::add_gate},
    {"ab", jarvis::cli::add_ab},
    {"calibrate", jarvis::cli::add_calibrate},
    {"replay", jarvis::cli::add_replay},
    {"render-findings", jarvis::cli::add_render_findings},
    {"final-report", jarvis::cli::add_final_report},
    {"serve", jarvis::cli::add_serve},
    {"completion", jarvis::cli::add_completion},
    {"manpage", jarvis::cli::add_manpage},
};

// The first argument that is not a flag names the command: the application's
// own flags (--no-cache, --help, --version) take no value.
std::string_view command_word(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (argv[i][0] != '-') return argv[i];
  return {};
}

bool runs_alone(std::string_view name) {
  if (name == "completion" || name == "manpage") return false;
  for (const auto& entry : kCommands)
    if (name == entry.name) return true;
  return false;
}

// Every command that writes files takes --force: the one overwrite rule of
// base/output_guard.h (an existing file jarvis did not write is refused
// unless forced; inputs and traces never are written over).
bool writes_files(std::string_view name) {
  return name != "serve" && name != "completion" && name != "manpage" && name != "info";
}

void add_force_flag(CLI::App& command) {
  if (!writes_files(command.get_name()) || command.get_option_no_throw("--force")) return;
  static const std::string kHelp =
      "replace existing files jarvis did not write (never an input or a trace)";
  command.add_flag("--force", kHelp);
}

// Flags that name one output file; `-o/--out` names a file for these
// commands (a directory for the others).
bool is_output_file_flag(const CLI::Option& option, std::string_view command) {
  for (const char* flag : {"--xlsx", "--html", "--json", "--export"})
    if (option.check_lname(flag + 2)) return true;
  return option.check_lname("out") &&
         (command == "render-findings" || command == "rocprof-config" || command == "sql");
}

// Before the command runs: every file named on its command line that exists
// is an input (never a target), and every output file flag passes the
// overwrite rule, so a refusal comes before the work, not after it.
void check_command_line_files(const CLI::App& command) {
  namespace fs = std::filesystem;
  std::vector<std::pair<std::string, std::string>> outputs;
  for (const CLI::Option* option : command.get_options()) {
    bool output = is_output_file_flag(*option, command.get_name());
    for (const std::string& value : option->results()) {
      std::error_code ec;
      if (output)
        outputs.emplace_back(value, option->get_name());
      else if (fs::is_regular_file(value, ec))
        jarvis::note_input_file(value);
    }
  }
  for (const auto& [file, flag] : outputs) jarvis::check_output_target(file, flag);
}

// The overwrite rule of the command about to run.
void set_overwrite_rule_for(const CLI::App& command) {
  const CLI::Option* force = command.get_option_no_throw("--force");
  bool forced = force && force->count() > 0;
  bool server = command.get_name() == "serve";  // its PathPolicy decides per call
  jarvis::set_overwrite_rule(server || forced ? jarvis::OverwriteRule::Any
                                              : jarvis::OverwriteRule::OnlyOurs);
}

// Builds the named command only when the command line names one: building
// all eighteen (their options, validators and help texts) is most of a short
// run's process start, which a snapshot load of a small trace pays in full.
// Help, version, unknown commands and the introspecting commands get all.
std::vector<Registered> register_commands(CLI::App& app, std::string_view only) {
  std::vector<Registered> out;
  bool alone = runs_alone(only);
  for (const auto& entry : kCommands) {
    if (alone && only != entry.name) continue;
    Runner run = entry.add(app);
    CLI::App* added = app.get_subcommands([](CLI::App*) { return true; }).back();
    if (added->get_name() != entry.name)
      throw std::logic_error(fmt::format("command table names '{}' but its adder registered '{}'",
                                         entry.name, added->get_name()));
    add_force_flag(*added);
    out.push_back({added, std::move(run)});
  }
  return out;
}

using jarvis::cli::did_you_mean;

std::set<std::string> command_names(const std::vector<Registered>& commands) {
  std::set<std::string> names;
  for (const auto& c : commands)
    if (!c.command->get_group().empty()) names.insert(c.command->get_name());
  return names;
}

// TraceLens_generate_perf_report_pytorch flags with no jarvis equivalent:
// named as such, so a TraceLens command line that uses one is not mistaken
// for a typo (docs/cli.md, "TraceLens flag spellings").
constexpr std::pair<std::string_view, std::string_view> kTraceLensOnlyFlags[] = {
    {"--include_unlinked_kernels", "jarvis links every kernel it can and counts the rest"},
    {"--micro_idle_thresh_us", "the timeline has no micro-idle split"},
    {"--topk_ops", "the sheets hold every op; `jarvis insights` ranks them"},
    {"--topk_roofline_ops", "the roofline sheets hold every modelled op"},
    {"--topk_short_kernels", "the short-kernel sheets hold every short kernel"},
    {"--extension_file", "perf models are compiled in"},
    {"--python_path", "jarvis runs no Python"},
};

// One line per unknown flag: what TraceLens's flag is to jarvis, or the
// nearest flag the command has.
std::vector<std::string> flag_hints(const std::vector<std::string>& unplaced,
                                    const std::set<std::string>& flags) {
  std::vector<std::string> hints;
  for (const std::string& arg : unplaced) {
    if (arg.rfind("--", 0) != 0) continue;
    std::string flag = arg.substr(0, arg.find('='));
    bool tracelens = false;
    for (const auto& [name, why] : kTraceLensOnlyFlags)
      if (flag == name) {
        hints.push_back(
            fmt::format("{} is a TraceLens flag jarvis does not support: {}", flag, why));
        tracelens = true;
      }
    if (tracelens) continue;
    std::string suggestion = did_you_mean(flag, flags);
    if (!suggestion.empty()) hints.push_back(flag + ":" + suggestion);
  }
  return hints;
}

int parse_error(const CLI::App& app, const CLI::ParseError& e, const CLI::App* command,
                const std::vector<Registered>& commands, int argc, char** argv) {
  if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version: stdout, exit 0
  if (!command) {
    if (argc > 1 && argv[1][0] != '-') {
      std::string names;
      for (const auto& c : commands)
        if (!c.command->get_group().empty()) names += " " + c.command->get_name();
      std::fprintf(stderr, "jarvis: unknown command '%s'%s\ncommands:%s\n", argv[1],
                   did_you_mean(argv[1], command_names(commands)).c_str(), names.c_str());
    } else {
      std::fprintf(stderr, "jarvis: %s\n", e.what());
    }
    std::fprintf(stderr, "Run `jarvis --help` for the commands.\n");
    return 2;
  }
  std::string name = " " + command->get_name();
  // Arguments CLI11 could not place are most often a typo'd flag: name them
  // first (a missing required flag may only be their consequence) and list
  // what the command accepts.
  std::vector<std::string> unplaced = command->remaining();
  bool extras = dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr;
  if (!unplaced.empty()) {
    std::fprintf(stderr, "jarvis%s: unknown argument(s): %s\n", name.c_str(),
                 fmt::format("{}", fmt::join(unplaced, " ")).c_str());
    for (const std::string& hint : flag_hints(unplaced, jarvis::cli::long_flags(*command)))
      std::fprintf(stderr, "%s\n", hint.c_str());
  }
  if (!extras || unplaced.empty()) std::fprintf(stderr, "jarvis%s: %s\n", name.c_str(), e.what());
  if (!unplaced.empty()) {
    std::fprintf(stderr, "valid flags: %s\n",
                 fmt::format("{}", fmt::join(jarvis::cli::long_flags(*command), " ")).c_str());
  }
  std::fprintf(stderr, "Run `jarvis%s --help` for the options.\n", name.c_str());
  return 2;
}

}  // namespace

// " (input: A, B)" when a failure's message names none of the command's
// positional inputs, so that every error says which file it is about.
static std::string inputs_not_named(const CLI::App& command, std::string_view message) {
  std::vector<std::string> inputs;
  for (const CLI::Option* opt : command.get_options()) {
    if (!opt->get_positional()) continue;
    for (const std::string& value : opt->results()) {
      if (message.find(value) != std::string_view::npos) return "";
      inputs.push_back(value);
    }
  }
  if (inputs.empty()) return "";
  std::string out = " (input: ";
  for (size_t k = 0; k < inputs.size(); ++k) out += (k ? ", " : "") + inputs[k];
  return out + ")";
}

// The cache directory (trace snapshots, the write ledger, sweep results)
// goes to ~/.cache/jarvis unless JARVIS_CACHE_DIR names one: the run that
// creates the default one says so, once, on stderr (docs/cli.md).
class CacheDirNotice {
 public:
  CacheDirNotice() {
    if (const char* named = std::getenv("JARVIS_CACHE_DIR"); named && *named) return;
    std::string dir = jarvis::jarvis_cache_dir();
    std::error_code ec;
    if (!dir.empty() && !std::filesystem::exists(dir, ec) && !ec) dir_ = dir;
  }
  ~CacheDirNotice() {
    std::error_code ec;
    if (!dir_.empty() && std::filesystem::is_directory(dir_, ec))
      std::fprintf(stderr,
                   "jarvis: created %s for its cache (trace snapshots, the list of files it "
                   "wrote); set JARVIS_CACHE_DIR to move it, delete it at any time\n",
                   dir_.c_str());
  }
  CacheDirNotice(const CacheDirNotice&) = delete;
  CacheDirNotice& operator=(const CacheDirNotice&) = delete;

 private:
  std::string dir_;
};

int main(int argc, char** argv) {
  jarvis::tune_malloc_at_start(argv);
  CLI::App app{"jarvis: GPU performance analysis of PyTorch profiler traces and sweeps"};
  app.name("jarvis");
  // The build options say what this binary can do (MPI scale-out, Python API).
  app.set_version_flag("--version", std::string("jarvis ") + jarvis::cli::version() + " (" +
                                        JARVIS_BUILD_OPTIONS + ")");
  app.require_subcommand(1);
  bool no_cache = false;
  app.add_flag("--no-cache", no_cache,
               "neither read nor write trace snapshots (the cache of loaded traces; also "
               "JARVIS_NO_SNAPSHOT=1)");
  std::vector<Registered> commands = register_commands(app, command_word(argc, argv));
  // Set after the commands: CLI11 copies a parent's footer into every
  // subcommand added after it, and this one belongs under `jarvis --help` only.
  app.footer(kFooter);
  std::string chosen;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const CLI::App* parsed = nullptr;
    for (const auto& c : commands)
      if (c.command->parsed()) parsed = c.command;
    return parse_error(app, e, parsed, commands, argc, argv);
  }
  if (no_cache) ::setenv("JARVIS_NO_SNAPSHOT", "1", 1);
  for (const auto& c : commands) {
    if (!c.command->parsed()) continue;
    chosen = c.command->get_name();
    // Every command but the server does one task and exits.
    if (chosen != "serve")
      jarvis::keep_freed_memory_for_reuse();
    else
      jarvis::reuse_freed_memory_in_a_server();
    set_overwrite_rule_for(*c.command);
    CacheDirNotice notice;  // after the command's own output, error included
    try {
      if (writes_files(chosen)) check_command_line_files(*c.command);
      return c.run();
    } catch (const std::exception& e) {
      // One mapping from the error to the exit code (base/error.h, docs/cli.md).
      int code = jarvis::cli_exit_code(e);
      std::fprintf(stderr, "jarvis %s: %s%s\n", chosen.c_str(), e.what(),
                   inputs_not_named(*c.command, e.what()).c_str());
      if (code == jarvis::kExitUsage)
        std::fprintf(stderr, "Run `jarvis %s --help` for the options.\n", chosen.c_str());
      return code;
    }
  }
  return 2;  // unreachable: require_subcommand(1)
}
