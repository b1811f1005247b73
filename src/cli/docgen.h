// Shell completion and the man page, generated from the CLI11 application so
// they always list the commands and flags the binary really accepts.
#pragma once

#include <set>
#include <string>

#include "cli/commands.h"

namespace CLI {
class App;
}

namespace jarvis::cli {

// A bash completion script (zsh: `autoload bashcompinit && bashcompinit`
// first): command names, then each command's flags, else file names.
std::string bash_completion(const CLI::App& app);

// Every long flag a command accepts (option groups included), sorted.
std::set<std::string> long_flags(const CLI::App& cmd);

// A roff man page (section 1): NAME, SYNOPSIS, the top-level help and every
// command's --help text.
std::string man_page(const CLI::App& app, const std::string& version);

// `jarvis completion bash|zsh` and the hidden `jarvis manpage` (the build
// runs it to install jarvis.1).
Runner add_completion(CLI::App& app);
Runner add_manpage(CLI::App& app);

}  // namespace jarvis::cli
