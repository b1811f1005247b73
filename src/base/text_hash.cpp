#include "base/text_hash.h"

// Header-only use: every XXH function is inlined into this file, so the
// binary needs no libxxhash at run time.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace jarvis {

uint64_t text_hash(std::string_view text) noexcept {
  return XXH3_64bits(text.data(), text.size());
}

}  // namespace jarvis
