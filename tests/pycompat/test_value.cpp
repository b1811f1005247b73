#include <doctest/doctest.h>

#include "pycompat/value.h"

using jarvis::PyValue;

TEST_CASE("python tuple repr of shapes") {
  auto shape = [](std::initializer_list<int64_t> dims) {
    std::vector<PyValue> v;
    for (auto d : dims) v.push_back(PyValue::integer(d));
    return PyValue::make_list(std::move(v));
  };
  PyValue dims = PyValue::make_list({shape({8944, 1024}), shape({1024, 2816})});
  CHECK(dims.repr_tuple() == "((8944, 1024), (1024, 2816))");
  PyValue one = PyValue::make_list({shape({16, 559, 1})});
  CHECK(one.repr_tuple() == "((16, 559, 1),)");
  PyValue types = PyValue::make_list({PyValue::string("c10::BFloat16"), PyValue::string("")});
  CHECK(types.repr_tuple() == "('c10::BFloat16', '')");
  CHECK(PyValue::make_list({PyValue::string("GEMM")}).repr_list() == "['GEMM']");
  CHECK(PyValue::string("it's").repr_tuple() == "\"it's\"");
}
