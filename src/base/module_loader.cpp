#include "base/module_loader.h"

#include <dlfcn.h>

#include <filesystem>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace jarvis {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> candidates(const char* file) {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  fs::path dir = exe.parent_path();
  return {dir / file, dir.parent_path() / "lib" / "jarvis" / file};
}

void* find_module_entry(const char* file, const char* entry) {
  std::string tried;
  for (const fs::path& path : candidates(file)) {
    std::error_code ec;
    if (!fs::exists(path, ec)) {
      tried += "\n  " + path.string() + ": no such file";
      continue;
    }
    // RTLD_NOW: a module that does not match the binary fails here, with the
    // missing symbol named, rather than in the middle of a command.
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      tried += "\n  " + path.string() + ": " + ::dlerror();
      continue;
    }
    if (void* symbol = ::dlsym(handle, entry)) return symbol;
    tried += "\n  " + path.string() + ": no " + entry + " in it";
  }
  throw std::runtime_error(std::string("cannot load the jarvis module ") + file +
                           " (reinstall jarvis, or build its target); tried:" + tried);
}

}  // namespace

void* load_module_entry(const char* file, const char* entry) {
  static std::mutex mu;
  static std::map<std::pair<std::string, std::string>, void*> found;  // null until found
  std::lock_guard lock(mu);
  void*& symbol = found[{file, entry}];
  if (!symbol) symbol = find_module_entry(file, entry);
  return symbol;
}

}  // namespace jarvis
