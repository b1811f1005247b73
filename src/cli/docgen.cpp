#include "cli/docgen.h"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "engine/engine.h"
#include "mcp/tool_profiles.h"

namespace jarvis::cli {
namespace {

std::vector<const CLI::App*> visible_commands(const CLI::App& app) {
  return app.get_subcommands(
      [](const CLI::App* sub) { return !sub->get_name().empty() && !sub->get_group().empty(); });
}

// roff escapes: a leading '.' or '\'' starts a request; '\' is the escape.
std::string roff(const std::string& text) {
  std::string out;
  bool line_start = true;
  for (char c : text) {
    if (line_start && (c == '.' || c == '\'')) out += "\\&";
    if (c == '\\')
      out += "\\e";
    else if (c == '-')
      out += "\\-";
    else
      out += c;
    line_start = c == '\n';
  }
  return out;
}

// The NAME line says what jarvis is once: the description without the
// "jarvis: " that `jarvis --help` shows it with.
std::string name_line(const std::string& description) {
  constexpr std::string_view kPrefix = "jarvis: ";
  return description.rfind(kPrefix, 0) == 0 ? description.substr(kPrefix.size()) : description;
}

// GPU arch options (`prepare --platform` names one too): a bundled name,
// `none` or an arch JSON file.
bool takes_arch(std::string_view lname) {
  return lname == "platform" || lname == "gpu_arch_json_path" ||
         (lname.find("arch") != std::string_view::npos && lname != "arch-dir");
}

// `serve --tools` names MCP tools: the server's own list (tools_schema/).
bool takes_tool_names(std::string_view lname) {
  return lname == "tools";
}

// The values an option accepts, as its CLI::IsMember check lists them in the
// type name ("TEXT:{auto,bar,plain,none}", `serve --profile` from the profile
// table); GPU arch options take a bundled arch name or `none` (or a file, which
// the script completes too); `serve --tools` the served tools' names.
std::vector<std::string> option_values(const CLI::Option& option) {
  std::vector<std::string> values;
  std::string type = option.get_type_name();
  size_t open = type.find(":{");
  size_t close = type.find('}', open);
  if (open != std::string::npos && close != std::string::npos) {
    std::string list = type.substr(open + 2, close - open - 2);
    for (size_t start = 0; start <= list.size();) {
      size_t comma = std::min(list.find(',', start), list.size());
      if (comma > start) values.push_back(list.substr(start, comma - start));
      start = comma + 1;
    }
    return values;
  }
  for (const std::string& name : option.get_lnames())
    if (takes_tool_names(name)) return mcp::builtin_tool_names();
  for (const std::string& name : option.get_lnames())
    if (takes_arch(name)) {
      values = engine::bundled_gpu_arch_names();
      if (name != "platform") values.push_back("none");  // prepare needs an arch
      break;
    }
  return values;
}

// One bash `case` arm per flag with known values: `--flag)` completes them
// (plus file names where a file is accepted too). A comma-separated list
// (`--tools a,b`) completes its last item and keeps the ones before it.
std::string value_cases(const CLI::App& app) {
  std::map<std::string, std::vector<std::string>> by_flag;
  std::set<std::string> lists;
  auto collect = [&](const CLI::App& from) {
    for (const CLI::Option* opt : from.get_options()) {
      std::vector<std::string> values = option_values(*opt);
      if (values.empty()) continue;
      for (const std::string& name : opt->get_lnames()) {
        by_flag["--" + name] = values;
        if (opt->get_delimiter() == ',') lists.insert("--" + name);
      }
    }
  };
  for (const CLI::App* cmd : visible_commands(app)) {
    collect(*cmd);
    for (const CLI::App* group :
         cmd->get_subcommands([](const CLI::App* sub) { return sub->get_name().empty(); }))
      collect(*group);
  }
  std::string cases;
  for (const auto& [flag, values] : by_flag) {
    if (lists.count(flag)) {
      cases += fmt::format(
          "    {}) local head=\"\"; [[ \"$cur\" == *,* ]] && head=\"${{cur%,*}},\"\n"
          "      COMPREPLY=($(compgen -P \"$head\" -W \"{}\" -- \"${{cur##*,}}\"))\n"
          "      compopt -o nospace 2>/dev/null || true; return ;;\n",
          flag, fmt::join(values, " "));
      continue;
    }
    bool files = takes_arch(std::string_view(flag).substr(2));
    cases += fmt::format("    {}) COMPREPLY=($(compgen -W \"{}\" -- \"$cur\"){}); return ;;\n",
                         flag, fmt::join(values, " "), files ? " $(compgen -f -- \"$cur\")" : "");
  }
  return cases;
}

}  // namespace

std::set<std::string> long_flags(const CLI::App& cmd) {
  std::set<std::string> flags = {"--help"};
  auto collect = [&](const CLI::App& from) {
    for (const CLI::Option* opt : from.get_options())
      for (const std::string& name : opt->get_lnames()) flags.insert("--" + name);
  };
  collect(cmd);
  for (const CLI::App* group :
       cmd.get_subcommands([](const CLI::App* sub) { return sub->get_name().empty(); }))
    collect(*group);
  return flags;
}

std::string bash_completion(const CLI::App& app) {
  std::set<std::string> names;
  std::string cases;
  for (const CLI::App* cmd : visible_commands(app)) {
    names.insert(cmd->get_name());
    cases +=
        fmt::format("    {}) opts=\"{}\" ;;\n", cmd->get_name(), fmt::join(long_flags(*cmd), " "));
  }
  return fmt::format(
      "# bash completion for jarvis (generated by `jarvis completion bash`)\n"
      "_jarvis() {{\n"
      "  local cur=\"${{COMP_WORDS[COMP_CWORD]}}\" opts=\"\"\n"
      "  if [ \"$COMP_CWORD\" -eq 1 ]; then\n"
      "    COMPREPLY=($(compgen -W \"{} --help --version\" -- \"$cur\"))\n"
      "    return\n"
      "  fi\n"
      "  case \"${{COMP_WORDS[COMP_CWORD-1]}}\" in\n"
      "{}"
      "  esac\n"
      "  case \"${{COMP_WORDS[1]}}\" in\n"
      "{}"
      "  esac\n"
      "  if [[ \"$cur\" == -* ]]; then\n"
      "    COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n"
      "  else\n"
      "    COMPREPLY=($(compgen -f -- \"$cur\"))\n"
      "  fi\n"
      "}}\n"
      "complete -o filenames -F _jarvis jarvis\n",
      fmt::join(names, " "), value_cases(app), cases);
}

std::string man_page(const CLI::App& app, const std::string& version) {
  std::string out = fmt::format(".TH JARVIS 1 \"\" \"jarvis {}\" \"User Commands\"\n", version);
  out += ".SH NAME\njarvis \\- " + roff(name_line(app.get_description())) + "\n";
  out += ".SH SYNOPSIS\n.B jarvis\n\\fICOMMAND\\fR [\\fIOPTIONS\\fR]\n";
  // The formatter directly: App::help() answers with the help of the parsed
  // subcommand, which here is `manpage` itself.
  std::string top_help = app.get_formatter()->make_help(&app, "jarvis", CLI::AppFormatMode::Normal);
  out += ".SH DESCRIPTION\n.nf\n" + roff(top_help) + ".fi\n.SH COMMANDS\n";
  for (const CLI::App* cmd : visible_commands(app)) {
    out += ".SS " + cmd->get_name() + "\n.nf\n";
    out += roff(cmd->help("jarvis")) + ".fi\n";
  }
  out += ".SH EXIT STATUS\n0 success, 1 input or analysis error, 2 usage error.\n";
  out +=
      ".SH ENVIRONMENT\n.TP\n.B JARVIS_ARCH_DIR\nextra GPU arch files (<NAME>.json), searched "
      "before the bundled ones.\n.TP\n.B JARVIS_TOKEN\nbearer token of `jarvis serve "
      "\\-\\-http`.\n";
  return out;
}

Runner add_completion(CLI::App& app) {
  auto shell = std::make_shared<std::string>();
  CLI::App* completion =
      app.add_subcommand("completion", "shell completion script (bash; zsh via bashcompinit)");
  completion->add_option("SHELL", *shell, "bash or zsh")
      ->required()
      ->check(CLI::IsMember({"bash", "zsh"}));
  return [&app, shell] {
    std::string script = bash_completion(app);
    if (*shell == "zsh") script = "autoload -U +X bashcompinit && bashcompinit\n" + script;
    fmt::print("{}", script);
    return 0;
  };
}

Runner add_manpage(CLI::App& app) {
  CLI::App* manpage = app.add_subcommand("manpage", "the jarvis(1) man page in roff");
  manpage->group("");  // hidden: the build runs it to install jarvis.1
  return [&app] {
    fmt::print("{}", man_page(app, version()));
    return 0;
  };
}

}  // namespace jarvis::cli
