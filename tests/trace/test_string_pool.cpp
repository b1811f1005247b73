// StringPool keeps its texts in blocks it owns: every view stays valid and
// equal to the interned text across block boundaries, for texts larger than
// a block, and after the pool is moved; ids are dense and repeat for equal
// texts; a pool made without name flags answers 0 where the default pool
// classifies the name.
#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include "trace/trace.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using namespace jarvis;

TEST_CASE("StringPool: texts in owned blocks, stable views, dense ids") {
  StringPool pool;
  std::vector<std::string> texts;
  for (int k = 0; k < 5000; ++k)
    texts.push_back("kernel_" + std::to_string(k) + "_" +
                    std::string(static_cast<size_t>(k % 97), 'x'));
  texts.push_back(std::string(200 * 1024, 'y'));  // larger than any block
  texts.push_back("");
  texts.push_back("after the large one");
  std::vector<std::string_view> views;
  for (size_t k = 0; k < texts.size(); ++k) {
    CHECK(pool.intern(texts[k]) == k);
    views.push_back(pool.view(static_cast<uint32_t>(k)));
  }
  for (size_t k = 0; k < texts.size(); ++k) CHECK(pool.intern(texts[k]) == k);  // found again
  CHECK(pool.size() == texts.size());
  StringPool moved = std::move(pool);
  for (size_t k = 0; k < texts.size(); ++k) {
    CHECK(moved.view(static_cast<uint32_t>(k)) == texts[k]);
    CHECK(views[k].data() == moved.view(static_cast<uint32_t>(k)).data());
    uint32_t id = 0;
    REQUIRE(moved.find(texts[k], id));
    CHECK(id == k);
  }
  uint32_t id = 0;
  CHECK_FALSE(moved.find("never interned", id));
}

TEST_CASE("StringPool: name flags computed unless the pool is made without them") {
  StringPool classified;
  StringPool plain(/*name_flags=*/false);
  for (std::string_view name : {"ncclDevKernel_AllReduce_Sum_f32", "ampere_sgemm_128x64_nn"}) {
    uint32_t a = classified.intern(name), b = plain.intern(name);
    CHECK(classified.flags(a) == name_flags_of(name));
    CHECK(plain.flags(b) == 0);
    CHECK(plain.view(b) == name);
  }
  CHECK((classified.flags(0) & kNameCommunication) != 0);
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
