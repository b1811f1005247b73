#pragma once
// Substring and prefix tests the readers and rules share (one definition: a
// unity build compiles several of their files as one unit).
#include <cctype>
#include <string_view>

namespace jarvis {

inline bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

// ASCII case-insensitive prefix test; `lower_prefix` is written in lower case.
inline bool starts_with_ci(std::string_view text, std::string_view lower_prefix) {
  if (text.size() < lower_prefix.size()) return false;
  for (size_t k = 0; k < lower_prefix.size(); ++k)
    if (std::tolower(static_cast<unsigned char>(text[k])) != lower_prefix[k]) return false;
  return true;
}

}  // namespace jarvis
