// make_zip (replay_zip.h): the archive writer from its module,
// libjarvis_zip.so (cmake/replay.cmake, src/replay/zip/).
#include "replay/replay_zip.h"

#include <mutex>

#include "base/module_loader.h"

namespace jarvis::replay {

std::string make_zip(const std::vector<ZipMember>& members) {
  static std::mutex mu;
  static ZipModuleEntry entry = nullptr;
  {
    std::lock_guard lock(mu);  // loaded once; a failed load throws, the next call tries again
    if (!entry)
      entry =
          reinterpret_cast<ZipModuleEntry>(load_module_entry("libjarvis_zip.so", kZipModuleEntry));
  }
  std::string out;
  entry(members, out);
  return out;
}

}  // namespace jarvis::replay
