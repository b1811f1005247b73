// Durations in printed text (issue 76 point 6): a saving of 67776-90368 us
// reads "67.8-90.4 ms", not "67776.0-90368.0 us".
#include <doctest/doctest.h>

#include "base/duration_text.h"

namespace {
namespace JARVIS_TEST_FILE {

using namespace jarvis;

TEST_SUITE("duration_text") {
  TEST_CASE("durations print in us below a millisecond, else ms or s") {
    CHECK(duration_text(12.34) == "12.3 us");
    CHECK(duration_text(999.9) == "999.9 us");
    CHECK(duration_text(1020.4) == "1.02 ms");
    CHECK(duration_text(67776.0) == "67.8 ms");
    CHECK(duration_text(2.5e6) == "2.50 s");
    // The unit follows the rounded value: no "1000.0 us" or "1000.0 ms".
    CHECK(duration_text(999.96) == "1.00 ms");
    CHECK(duration_text(999'999.9) == "1.00 s");
    CHECK(duration_text(999'940.0) == "999.9 ms");
  }

  TEST_CASE("a range takes the unit and precision of its larger end") {
    CHECK(duration_range_text(67776.0, 90368.0) == "67.8-90.4 ms");
    CHECK(duration_range_text(1020.4, 1340.2) == "1.02-1.34 ms");
    CHECK(duration_range_text(290.4, 387.2) == "290.4-387.2 us");
    CHECK(duration_range_text(700.0, 1400.0) == "0.70-1.40 ms");
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
