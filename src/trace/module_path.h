// An nn.Module path as jarvis prints it (memory's module_path, SQL's
// ops.module): the instance names of the enclosing "nn.Module: X" frames,
// outermost first, joined by '/'. Bounded however deep and long the trace's
// nesting: past kModulePathKeep frames at each end the middle is elided
// ("A_0/B_1/.../(2,968 more)/Y_3/Z_1"), and a name longer than
// kModuleNameMax bytes is cut there, so a crafted trace of 3,000 nested
// modules costs each allocation or op a few KiB, not 60 KiB.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace jarvis {

inline constexpr size_t kModulePathKeep = 16;  // frames kept at each end
inline constexpr size_t kModuleNameMax = 256;  // bytes kept of one name

// `name_at(k)` for k in [0, depth) gives the k-th frame's instance name,
// outermost first.
template <class NameAt>
std::string join_module_path(size_t depth, NameAt name_at) {
  std::string path;
  auto add = [&](std::string_view name) {
    if (!path.empty()) path += '/';
    if (name.size() > kModuleNameMax) {
      size_t cut = kModuleNameMax;
      while (cut > 0 && (static_cast<unsigned char>(name[cut]) & 0xC0) == 0x80) --cut;
      path += name.substr(0, cut);
      path += "...";
    } else {
      path += name;
    }
  };
  if (depth <= 2 * kModulePathKeep) {
    for (size_t k = 0; k < depth; ++k) add(name_at(k));
    return path;
  }
  for (size_t k = 0; k < kModulePathKeep; ++k) add(name_at(k));
  add(fmt::format("...({} more)", depth - 2 * kModulePathKeep));
  for (size_t k = depth - kModulePathKeep; k < depth; ++k) add(name_at(k));
  return path;
}

}  // namespace jarvis
