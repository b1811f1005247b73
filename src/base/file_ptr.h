// A FILE* closed at scope exit.
#pragma once

#include <cstdio>
#include <memory>

namespace jarvis {

struct FileCloser {
  void operator()(FILE* f) const { std::fclose(f); }  // unique_ptr never passes null
};
using FilePtr = std::unique_ptr<FILE, FileCloser>;

}  // namespace jarvis
