// The replay package archive, written with libzip into memory so it can be
// written atomically. Every member carries the same fixed timestamp and mode,
// so the same members give byte-identical archives (reproducible packages).
#pragma once

#include <string>
#include <vector>

namespace jarvis::replay {

struct ZipMember {
  std::string name;  // path inside the archive, '/'-separated
  std::string data;  // file contents
};

// The bytes of a zip archive holding `members` in order, deflated (libzip
// stores a member as-is when deflate would not shrink it). Throws
// std::runtime_error with libzip's message on failure, and when the zip
// module (libjarvis_zip.so) cannot be loaded.
std::string make_zip(const std::vector<ZipMember>& members);

// The zip module's entry point (extern "C", so dlsym finds it by this name):
// writes the archive's bytes into `out`; throws as make_zip does.
inline constexpr const char* kZipModuleEntry = "jarvis_make_zip";
using ZipModuleEntry = void (*)(const std::vector<ZipMember>& members, std::string& out);

}  // namespace jarvis::replay
