#include <algorithm>

#include "cli/commands.h"

namespace jarvis::cli {

std::string flag_value(const Args& args, const std::string& flag) {
  for (size_t k = 0; k + 1 < args.size(); ++k)
    if (args[k] == flag) return args[k + 1];
  return "";
}

bool has_flag(const Args& args, const std::string& flag) {
  return std::find(args.begin(), args.end(), flag) != args.end();
}

std::vector<std::string> positionals(const Args& args,
                                     const std::vector<std::string>& value_flags) {
  std::vector<std::string> out;
  for (size_t k = 0; k < args.size(); ++k) {
    if (std::find(value_flags.begin(), value_flags.end(), args[k]) != value_flags.end()) {
      ++k;
      continue;
    }
    if (args[k].rfind("--", 0) == 0) continue;
    out.push_back(args[k]);
  }
  return out;
}

}  // namespace jarvis::cli
