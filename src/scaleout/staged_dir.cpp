// An output directory that appears whole: written under a hidden staging
// directory beside it (same file system, so the rename is atomic), then
// renamed into place. A job killed half-way leaves only the hidden staging
// directory, never a partial OUT.
#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <system_error>

#include <fmt/format.h>

#include "scaleout/scaleout.h"

namespace jarvis::scaleout {
namespace {

namespace fs = std::filesystem;

fs::path make_staging_dir(const fs::path& out) {
  fs::path parent = out.parent_path().empty() ? fs::path(".") : out.parent_path();
  fs::create_directories(parent);
  std::string templ =
      (parent / fmt::format(".{}.partial-XXXXXX", out.filename().string())).string();
  if (!mkdtemp(templ.data()))
    throw std::runtime_error(fmt::format("cannot create a directory beside {}", out.string()));
  return templ;
}

}  // namespace

void write_dir_staged(const std::string& out_dir,
                      const std::function<void(const std::string&)>& write) {
  fs::path out = fs::path(out_dir).lexically_normal();
  if (!out.has_filename()) out = out.parent_path();
  fs::path staging = make_staging_dir(out);
  try {
    write(staging.string());
    std::error_code ec;
    fs::rename(staging, out, ec);  // fails when OUT exists: fill it file by file instead
    if (ec) {
      fs::create_directories(out);
      for (const auto& e : fs::directory_iterator(staging))
        fs::rename(e.path(), out / e.path().filename());
      fs::remove(staging);
    }
  } catch (...) {
    std::error_code ec;
    fs::remove_all(staging, ec);
    throw;
  }
}

}  // namespace jarvis::scaleout
