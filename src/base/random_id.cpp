#include "base/random_id.h"

#include <sys/random.h>

#include <cerrno>
#include <stdexcept>
#include <string>
#include <vector>

namespace jarvis {

std::string random_hex(size_t bytes) {
  // The kernel's CSPRNG (getrandom(2), blocking only until it is seeded at
  // boot): no library to load for the few ids a process makes.
  std::vector<unsigned char> raw(bytes);
  size_t filled = 0;
  while (filled < bytes) {
    ssize_t got = ::getrandom(raw.data() + filled, bytes - filled, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error("getrandom failed: no random identifier available (errno " +
                               std::to_string(errno) + ")");
    }
    filled += static_cast<size_t>(got);
  }
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * bytes);
  for (unsigned char b : raw) {
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}

}  // namespace jarvis
