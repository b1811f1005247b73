#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "pycompat/literal.h"
#include "pycompat/value.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

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

TEST_CASE("PyValue::to_ojson is the parsed to_json text") {
  // The typed conversion replaced ojson::parse(v.to_json()) in three places,
  // so the two must agree as values on every kind: nested tuples, dicts in
  // source order, non-finite floats as null, floats at full precision.
  std::vector<PyValue> values;
  for (const char* text : {"((8944, 1024), (1024, 2816))", "{'b': 1, 'a': [1.5, None, True]}",
                           "[-0.0, 0.1, 1e300, 'x\"y', 2.0]", "{'k': {'z': (), 'y': {}}}", "False"})
    values.push_back(jarvis::pycompat::parse_py_literal(text));
  values.push_back(PyValue::make_list(
      {PyValue::real(std::nan("")), PyValue::real(HUGE_VAL), PyValue::real(0.30000000000000004)}));
  for (const auto& v : values) {
    std::string text = v.to_json();
    CAPTURE(text);
    nlohmann::ordered_json typed = v.to_ojson();
    CHECK(typed == nlohmann::ordered_json::parse(text));
  }
  // Unlike the text, the typed value keeps a Python float a float (2.0 and
  // -0.0 print as 2 and -0 in to_json and would come back as ints).
  nlohmann::ordered_json floats = values[2].to_ojson();
  CHECK(floats[4].is_number_float());
  CHECK(floats.dump() == R"([-0.0,0.1,1e+300,"x\"y",2.0])");
  CHECK(values.back().to_ojson()[0].is_null());
  CHECK(values[1].to_ojson().begin().key() == "b");
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
