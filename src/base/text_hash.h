// A fast hash of text for the loader's hash tables (the string pool, the arg
// list index): XXH3 (Debian libxxhash-dev, inlined), several times faster
// than std::hash's MurmurHash on the kernel names and arg-list keys a load
// hashes once or twice per event.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace jarvis {

uint64_t text_hash(std::string_view text) noexcept;

// The hasher of an unordered container keyed by text; transparent, so a
// std::string-keyed map is searched with a string_view without a copy (a
// std::string key converts to the view).
struct TextHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const noexcept { return text_hash(s); }
};

}  // namespace jarvis
