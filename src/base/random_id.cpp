#include "base/random_id.h"

#include <openssl/rand.h>

#include <stdexcept>
#include <vector>

namespace jarvis {

std::string random_hex(size_t bytes) {
  std::vector<unsigned char> raw(bytes);
  if (bytes > 0 && RAND_bytes(raw.data(), static_cast<int>(bytes)) != 1)
    throw std::runtime_error("OpenSSL RAND_bytes failed: no random identifier available");
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
