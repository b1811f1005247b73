#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <cstdlib>

namespace {

// No test (nor a jarvis child process it starts) writes trace snapshots into
// $HOME: snapshots are off unless a test turns them on with its own cache
// directory (tests/trace/test_snapshot.cpp).
const bool kSnapshotsOff = [] {
  ::setenv("JARVIS_NO_SNAPSHOT", "1", 0);
  return true;
}();

}  // namespace
