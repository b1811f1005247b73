// The loader of jarvis's on-demand modules (src/base/module_loader.h).
#include <doctest/doctest.h>

#include <stdexcept>
#include <string>

#include "base/module_loader.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

TEST_CASE("module loader: a missing module is an error naming every path tried") {
  try {
    jarvis::load_module_entry("libjarvis_no_such_module.so", "entry");
    FAIL("no error");
  } catch (const std::runtime_error& e) {
    std::string what = e.what();
    CHECK(what.find("cannot load the jarvis module libjarvis_no_such_module.so") !=
          std::string::npos);
    // Beside the running binary, then ../lib/jarvis of an installed tree.
    CHECK(what.find("/libjarvis_no_such_module.so: no such file") != std::string::npos);
    CHECK(what.find("/lib/jarvis/libjarvis_no_such_module.so: no such file") != std::string::npos);
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
