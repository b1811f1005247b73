// Writes the embedded shim files (shim.h).
#include "ab/shim.h"

#include <filesystem>

#include "base/atomic_file.h"

namespace jarvis::ab {

std::string write_shim(const std::string& dir) {
  std::filesystem::create_directories(dir);
  for (const ShimFile& f : shim_files())
    write_file_atomic((std::filesystem::path(dir) / f.name).string(), f.text);
  return dir;
}

}  // namespace jarvis::ab
