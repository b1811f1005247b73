// A minimal ZIP archive writer (PKWARE APPNOTE 6.3, no ZIP64) for the replay
// package: the archive is built in memory so it can be written atomically.
#pragma once

#include <string>
#include <vector>

namespace jarvis::replay {

struct ZipMember {
  std::string name;  // path inside the archive, '/'-separated
  std::string data;  // file contents
};

// The bytes of a zip archive holding `members` in order, each stored with
// raw deflate (or stored as-is when deflate does not make it smaller).
// Throws std::runtime_error on zlib failure or when a member exceeds the
// 4 GiB / 65535-entry limits of a non-ZIP64 archive.
std::string make_zip(const std::vector<ZipMember>& members);

}  // namespace jarvis::replay
