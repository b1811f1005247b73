// base/utf8.h: text from binary inputs made valid UTF-8 once, at ingest.
#include <doctest/doctest.h>

#include <string>

#include "base/utf8.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using jarvis::valid_utf8;

TEST_CASE("valid_utf8 keeps valid text and replaces each invalid byte by U+FFFD") {
  const std::string fffd = "\xEF\xBF\xBD";
  for (const std::string& valid :
       {std::string(""), std::string("gemm_bf16"), std::string("caf\xC3\xA9"),
        std::string("\xE2\x82\xAC 5"), std::string("\xF0\x9F\x98\x80"), std::string("a\0b", 3)})
    CHECK(valid_utf8(valid) == valid);
  CHECK(valid_utf8("void \xFFgemm") == "void " + fffd + "gemm");
  CHECK(valid_utf8("\xC3") == fffd);                                   // truncated sequence
  CHECK(valid_utf8("\xC0\xAF") == fffd + fffd);                        // overlong '/'
  CHECK(valid_utf8("\xED\xA0\x80") == fffd + fffd + fffd);             // a surrogate
  CHECK(valid_utf8("\xF4\x90\x80\x80") == fffd + fffd + fffd + fffd);  // past U+10FFFF
  CHECK(valid_utf8("ok\xE2\x82") == "ok" + fffd + fffd);               // cut at the end
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
