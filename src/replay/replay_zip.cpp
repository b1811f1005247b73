// make_zip (replay_zip.h): the archive writer from its module,
// libjarvis_zip.so (cmake/replay.cmake, src/replay/zip/).
#include "replay/replay_zip.h"

#include "base/module_loader.h"

namespace jarvis::replay {

std::string make_zip(const std::vector<ZipMember>& members) {
  auto entry =
      reinterpret_cast<ZipModuleEntry>(load_module_entry("libjarvis_zip.so", kZipModuleEntry));
  std::string out;
  entry(members, out);
  return out;
}

}  // namespace jarvis::replay
