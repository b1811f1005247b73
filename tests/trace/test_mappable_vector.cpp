// MappableVector: std::vector's value semantics whether it owns its elements
// or views memory kept alive by a shared owner (a mapped snapshot file).
#include <doctest/doctest.h>

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "trace/mappable_vector.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using jarvis::MappableVector;

namespace {

// Memory a view can point into, shared the way a file mapping is.
std::shared_ptr<void> backing(std::vector<int64_t> values) {
  return std::make_shared<std::vector<int64_t>>(std::move(values));
}
int64_t* backing_data(const std::shared_ptr<void>& owner) {
  return static_cast<std::vector<int64_t>*>(owner.get())->data();
}

}  // namespace

TEST_CASE("MappableVector: owned, it behaves as a vector") {
  MappableVector<int64_t> v;
  CHECK(v.empty());
  for (int64_t i = 0; i < 1000; ++i) v.push_back(i * 3);
  REQUIRE(v.size() == 1000);
  CHECK_FALSE(v.is_view());
  CHECK(v[999] == 2997);
  CHECK(v.back() == 2997);
  int64_t sum = 0;
  for (int64_t x : v) sum += x;
  CHECK(sum == 3 * 999 * 1000 / 2);
  const int64_t more[] = {-1, -2};
  v.append(more, more + 2);
  CHECK(v.size() == 1002);
  CHECK(v[1001] == -2);
  v.resize(10);
  CHECK(v.size() == 10);
  v.clear();
  CHECK(v.empty());
  CHECK(v.capacity() >= 1002);  // clear keeps the capacity for reuse
  v.shrink_to_fit();
  CHECK(v.capacity() == 0);
}

TEST_CASE("MappableVector: a view reads in place, copies and growth are owned") {
  auto owner = backing({10, 20, 30, 40});
  int64_t* mem = backing_data(owner);
  auto view = MappableVector<int64_t>::view(owner, mem + 1, 3);
  REQUIRE(view.is_view());
  CHECK(view.size() == 3);
  CHECK(view.capacity() == 3);
  CHECK(view.data() == mem + 1);
  CHECK(view[0] == 20);
  CHECK(view.back() == 40);

  // A write through the view is the viewed memory's.
  view[0] = 21;
  CHECK(mem[1] == 21);

  // A copy owns its elements.
  MappableVector<int64_t> copy = view;
  CHECK_FALSE(copy.is_view());
  copy[0] = 99;
  CHECK(view[0] == 21);
  CHECK(mem[1] == 21);
  MappableVector<int64_t> assigned;
  assigned.push_back(5);
  assigned = view;
  CHECK_FALSE(assigned.is_view());
  CHECK(assigned.size() == 3);
  CHECK(assigned[2] == 40);

  // A move keeps the view (and its owner alive).
  std::weak_ptr<void> watch = owner;
  owner.reset();
  MappableVector<int64_t> moved = std::move(view);
  CHECK(moved.is_view());
  CHECK(view.empty());  // NOLINT(bugprone-use-after-move): moved-from is empty
  CHECK_FALSE(watch.expired());
  CHECK(moved[2] == 40);

  // Growing copies out of the view first; the old memory is released.
  moved.push_back(50);
  CHECK_FALSE(moved.is_view());
  CHECK(watch.expired());
  REQUIRE(moved.size() == 4);
  CHECK(moved[0] == 21);
  CHECK(moved[3] == 50);

  // shrink_to_fit keeps a view as it is; clear detaches it.
  auto owner2 = backing({1, 2});
  auto view2 = MappableVector<int64_t>::view(owner2, backing_data(owner2), 2);
  view2.shrink_to_fit();
  CHECK(view2.is_view());
  view2.clear();
  CHECK_FALSE(view2.is_view());
  CHECK(view2.empty());
  CHECK(backing_data(owner2)[1] == 2);
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
