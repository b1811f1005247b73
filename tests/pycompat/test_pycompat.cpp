// src/pycompat: the Python / pandas / NumPy emulation. Expected values are
// what CPython 3 and NumPy return for the same inputs (worked out by hand
// below where the IEEE rounding decides).
#include <doctest/doctest.h>

#include <type_traits>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "pycompat/json.h"
#include "pycompat/literal.h"
#include "pycompat/numeric.h"
#include "pycompat/pandas_csv.h"
#include "pycompat/repr.h"
#include "pycompat/text.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using namespace jarvis;
using namespace jarvis::pycompat;

namespace {

constexpr double kTwo53 = 9007199254740992.0;  // 2^53: from here on doubles step by 2

std::string nested_lists(int depth) {
  return std::string(static_cast<size_t>(depth), '[') +
         std::string(static_cast<size_t>(depth), ']');
}

}  // namespace

TEST_CASE("pycompat: repr() of floats") {
  CHECK(py_float_repr(0.1 + 0.2) == "0.30000000000000004");
  CHECK(py_float_repr(0.0) == "0.0");
  CHECK(py_float_repr(-0.0) == "-0.0");
  CHECK(py_float_repr(1e-07) == "1e-07");
  CHECK(py_float_repr(1e-05) == "1e-05");
  CHECK(py_float_repr(0.0001) == "0.0001");
  CHECK(py_float_repr(0.009158656) == "0.009158656");
  CHECK(py_float_repr(5308.2734375) == "5308.2734375");
  CHECK(py_float_repr(220.0) == "220.0");
  CHECK(py_float_repr(1e15) == "1000000000000000.0");
  CHECK(py_float_repr(1e16) == "1e+16");
  CHECK(py_float_repr(1e22) == "1e+22");
  CHECK(py_float_repr(123456789012345678.0) == "1.2345678901234568e+17");
  CHECK(py_float_repr(-2.5e-05) == "-2.5e-05");
  CHECK(py_float_repr(1154.1640000000002) == "1154.1640000000002");
  CHECK(py_float_repr(std::numeric_limits<double>::quiet_NaN()) == "nan");
  CHECK(py_float_repr(-std::numeric_limits<double>::infinity()) == "-inf");
}

TEST_CASE("pycompat: repr() of strings") {
  CHECK(py_str_repr("GEMM") == "'GEMM'");
  CHECK(py_str_repr("it's") == "\"it's\"");
  CHECK(py_str_repr("both ' and \"") == "'both \\' and \"'");
  CHECK(py_str_repr("a\nb\x01\x7f") == "'a\\nb\\x01\\x7f'");
  CHECK(py_str_repr("back\\slash") == "'back\\\\slash'");
}

TEST_CASE("pycompat: Python round() and np.round differ on the binary value") {
  // round(2.675, 2): 2.675 is stored as 2.67499999999999982236431605997495353221893310546875.
  CHECK(python_round(2.675, 2) == 2.67);
  // NumPy scales first: 2.675 * 100 rounds to exactly 267.5, and rint's tie
  // goes to the even 268.
  CHECK(numpy_round(2.675, 2) == 2.68);
  CHECK(python_round(0.125, 2) == 0.12);  // an exact tie: to even
  CHECK(python_round(0.375, 2) == 0.38);  // an exact tie: to even
  double negative_zero = python_round(-0.001, 2);
  CHECK(negative_zero == 0.0);
  CHECK(std::signbit(negative_zero));  // round(-0.001, 2) == -0.0
  // 0.0165 is slightly above the tie (0.01650000000000000091...), so Python
  // rounds up; NumPy scales first, 0.0165 * 1000 == 16.5 exactly, and rint's
  // tie goes to the even 16.
  CHECK(python_round(0.0165, 3) == 0.017);
  CHECK(numpy_round(0.0165, 3) == 0.016);
  CHECK(numpy_round(2.5, 0) == 2.0);
  CHECK(numpy_round(3.5, 0) == 4.0);
  CHECK(numpy_round(1234.5678, 2) == 1234.57);
  CHECK(std::isnan(python_round(std::numeric_limits<double>::quiet_NaN(), 2)));
}

TEST_CASE("pycompat: pandas groupby sum (Kahan) vs NumPy pairwise sum vs Series.sum") {
  // 2^53 followed by seven 1.0: the exact sum 2^53 + 7 is not a double.
  std::vector<double> v = {kTwo53, 1, 1, 1, 1, 1, 1, 1};
  // Naive left-to-right: every 2^53 + 1 ties back to 2^53.
  double naive = 0;
  for (double x : v) naive += x;
  CHECK(naive == kTwo53);
  // np.sum: one 8-wide block, ((2^53+1) + (1+1)) + ((1+1) + (1+1)) = 2^53 + 6.
  CHECK(numpy_sum(v) == kTwo53 + 6);
  // pandas groupby sum: Kahan compensation carries the lost ones; the last
  // step 2^53+6 + 1 ties to the even 2^53 + 8.
  CHECK(pandas_groupby_sum(v) == kTwo53 + 8);
  // Series.sum: seeded with the first value, the rest pairwise: 2^53 + 8 ones.
  std::vector<double> nine = {kTwo53, 1, 1, 1, 1, 1, 1, 1, 1};
  CHECK(pandas_series_sum(nine) == kTwo53 + 8);
  // NaN: skipped by groupby sum, 0 in Series.sum.
  std::vector<double> with_nan = {1.5, kNaN, 2.5};
  CHECK(pandas_groupby_sum(with_nan) == 4.0);
  CHECK(pandas_series_sum(with_nan) == 4.0);
  CHECK(pandas_groupby_mean(with_nan) == 2.0);
  CHECK(pandas_series_sum(std::vector<double>{}) == 0.0);
  // 0.1 * i for i < 300: the pairwise tree over 300 values (> 128 splits).
  std::vector<double> tenths(300);
  for (size_t i = 0; i < tenths.size(); ++i) tenths[i] = 0.1 * static_cast<double>(i);
  CHECK(numpy_sum(tenths) == doctest::Approx(4485.0));
  CHECK(pandas_series_sum(tenths) == doctest::Approx(4485.0));
}

TEST_CASE("pycompat: std with pandas' ddof=1 and NumPy's ddof=0") {
  std::vector<double> v = {2, 4, 4, 4, 5, 5, 7, 9};  // mean 5, squared deviations sum to 32
  CHECK(numpy_mean(v) == 5.0);
  CHECK(numpy_std(v) == 2.0);                                              // sqrt(32 / 8)
  CHECK(pandas_groupby_std(v) == doctest::Approx(std::sqrt(32.0 / 7.0)));  // sqrt(32 / 7)
  CHECK(std::isnan(pandas_groupby_std(std::vector<double>{1.0})));
  CHECK(std::isnan(numpy_mean(std::vector<double>{})));
}

TEST_CASE("pycompat: Python float()") {
  CHECK(python_float(" 1e-3 ") == 0.001);
  CHECK(python_float("+2.5") == 2.5);
  CHECK(python_float("-InFinity") == -std::numeric_limits<double>::infinity());
  CHECK(std::isnan(*python_float("nan")));
  CHECK_FALSE(python_float("").has_value());
  CHECK_FALSE(python_float("1.5x").has_value());
}

TEST_CASE("pycompat: pandas read_csv fields") {
  // pandas' STR_NA_VALUES, all 19 of them; pandas 1.x lacked "None".
  for (const char* na :
       {"", "nan", "NaN", "NA", "N/A", "NULL", "None", "<NA>", "#N/A", "-nan", "-NaN", "null",
        "n/a", "#NA", "#N/A N/A", "-1.#IND", "1.#IND", "1.#QNAN", "-1.#QNAN"}) {
    CHECK(pandas_is_na_text(na));
    CHECK(pandas1_is_na_text(na) == (std::string_view(na) != "None"));
  }
  CHECK_FALSE(pandas_is_na_text("0"));
  CHECK_FALSE(pandas_is_na_text("nan "));
  int64_t i = 0;
  CHECK(pandas_parse_int("-42", i));
  CHECK(i == -42);
  CHECK_FALSE(pandas_parse_int("4.0", i));
  CHECK_FALSE(pandas_parse_int("99999999999999999999", i));  // past int64: not an int column
  double d = 0;
  CHECK(pandas_parse_float("0.1", d));
  CHECK(d == 0.1);
  CHECK(pandas_parse_float("-.5", d));
  CHECK(d == -0.5);
  CHECK(pandas_parse_float("1e5", d));
  CHECK(d == 100000.0);
  CHECK(pandas_parse_float("-Infinity", d));
  CHECK(d == -std::numeric_limits<double>::infinity());
  CHECK_FALSE(pandas_parse_float(" 1", d));
  CHECK_FALSE(pandas_parse_float("1.5x", d));
  CHECK(pandas_is_true_text("TRUE"));
  CHECK(pandas_is_false_text("false"));
  CHECK_FALSE(pandas_is_true_text("yes"));
}

TEST_CASE("pycompat: ast.literal_eval") {
  PyValue v = parse_py_literal("[{'name': 'k', 'dur': np.float64(2.5)}, (1,), None, True]");
  CHECK(v.repr() == "[{'name': 'k', 'dur': 2.5}, (1,), None, True]");
  REQUIRE(v.list.size() == 4);
  const PyValue* dur = v.list[0].get("dur");
  REQUIRE(dur != nullptr);
  CHECK(dur->kind == PyValue::Kind::Float);
  CHECK(v.list[1].kind == PyValue::Kind::Tuple);
  CHECK(parse_py_literal("(1)").kind == PyValue::Kind::Int);  // parentheses, not a tuple
  CHECK(parse_py_literal("'a' \"b\"").s == "ab");             // adjacent strings concatenate
  CHECK(parse_py_literal("'\\u00b5\\n'").s == "\xC2\xB5\n");
  CHECK(parse_py_literal("np.float64(3)").kind == PyValue::Kind::Float);
  CHECK(parse_py_literal("-7").i == -7);
  CHECK(parse_py_literal("99999999999999999999").kind == PyValue::Kind::Float);  // past int64
  CHECK(parse_py_literal("{'a': (1, 2.0)}").to_ojson().dump() == R"({"a":[1,2.0]})");
  CHECK(parse_py_literal("[]").truthy() == false);
  CHECK(parse_py_literal("{}").truthy() == false);
  // One value type: a literal read back from a CSV cell is the type of a
  // recorded trace arg, reprs included (tuple-converted for the tables).
  static_assert(std::is_same_v<jarvis::PyValue, PyValue>);
  PyValue dims = parse_py_literal("[[8944, 1024], [1024, 2816]]");
  CHECK(dims.repr_tuple() == "((8944, 1024), (1024, 2816))");
  CHECK(dims.repr_list() == "[[8944, 1024], [1024, 2816]]");
  CHECK(dims.to_json() == "[[8944,1024],[1024,2816]]");
  CHECK(dims ==
        PyValue::make_list({PyValue::make_list({PyValue::integer(8944), PyValue::integer(1024)}),
                            PyValue::make_list({PyValue::integer(1024), PyValue::integer(2816)})}));
  PyValue dict = parse_py_literal("{'M': 4, 'dtype': 'bf16'}");
  CHECK(dict.dict_size() == 2);
  CHECK(dict.dict_key(1).s == "dtype");
  CHECK(dict.get("M")->i == 4);
  CHECK(dict.get("N") == nullptr);
  CHECK(dict.to_json() == R"({"M":4,"dtype":"bf16"})");
  CHECK(parse_py_literal("'x'").str() == "x");
  CHECK_FALSE(try_parse_py_literal("[1, 2").has_value());
  CHECK_FALSE(try_parse_py_literal("os.system('x')").has_value());
  try {
    parse_py_literal("[1] 2");
    FAIL("trailing text accepted");
  } catch (const LiteralError& e) {
    CHECK(e.reason() == LiteralError::Reason::TrailingText);
    CHECK(e.kind() == ErrorKind::InvalidInput);
  }
}

TEST_CASE("pycompat: the literal parser is depth-limited") {
  CHECK(parse_py_literal(nested_lists(kMaxLiteralDepth)).is_seq());
  try {
    parse_py_literal(nested_lists(kMaxLiteralDepth + 1));
    FAIL("a literal deeper than the limit parsed");
  } catch (const LiteralError& e) {
    CHECK(e.reason() == LiteralError::Reason::TooDeep);
    CHECK(std::string(e.what()) == "literal nested deeper than 100 levels");
  }
  // Deep enough to overflow the stack without the limit: still a clean error.
  CHECK_FALSE(try_parse_py_literal(nested_lists(200000)).has_value());
  CHECK_FALSE(try_parse_py_literal(std::string(200000, '{')).has_value());
  std::string wrappers;
  for (int k = 0; k < 200000; ++k) wrappers += "np.float64(";
  CHECK_FALSE(try_parse_py_literal(wrappers + "1").has_value());
}

TEST_CASE("pycompat: json.dumps(indent=2) byte for byte") {
  ojson v = ojson::object();
  v["a"] = ojson::array({1, ojson{{"b", nullptr}}});
  v["e"] = "\xF0\x9F\x98\x80";  // U+1F600: a surrogate pair under ensure_ascii
  v["n"] = std::numeric_limits<double>::quiet_NaN();
  v["x"] = 1e-05;
  v["y"] = 1e16;
  v["z"] = ojson::object();
  CHECK(py_json_dumps(v) ==
        "{\n  \"a\": [\n    1,\n    {\n      \"b\": null\n    }\n  ],\n"
        "  \"e\": \"\\ud83d\\ude00\",\n  \"n\": NaN,\n  \"x\": 1e-05,\n  \"y\": 1e+16,\n"
        "  \"z\": {}\n}");
  CHECK(py_json_dumps(ojson{{"a", 1.0}, {"b", ojson::array()}, {"c", "\xC2\xB5"}}) ==
        "{\n  \"a\": 1.0,\n  \"b\": [],\n  \"c\": \"\\u00b5\"\n}");
  CHECK(py_round_json(ojson(2.675), 2) == ojson(2.67));
  CHECK(py_round_json(ojson(7), 2) == ojson(7));
}

TEST_CASE("pycompat: JSON string escaping with and without ensure_ascii") {
  std::string out;
  append_json_string(out, "q\"\\\b\f\n\r\t\x01\x7f\xC2\xB5", true);
  CHECK(out == "\"q\\\"\\\\\\b\\f\\n\\r\\t\\u0001\x7f\\u00b5\"");
  out.clear();
  append_json_string(out, "\x01\xC2\xB5", false);
  CHECK(out == "\"\\u0001\xC2\xB5\"");
}

TEST_CASE("pycompat: ASCII case and UTF-8 helpers") {
  CHECK(ascii_lower("Cross_Device_REDUCE") == "cross_device_reduce");
  CHECK(ascii_lower("\xC3\x84X") == "\xC3\x84x");  // non-ASCII bytes kept
  CHECK(ascii_iequals("GeMM", "gemm"));
  CHECK_FALSE(ascii_iequals("gemm", "gem"));
  CHECK(ascii_icontains("void Cross_Device_Reduce<1>", "device_reduce"));
  CHECK(ascii_icontains("abc", ""));
  CHECK_FALSE(ascii_icontains("abc", "abcd"));
  CHECK(ascii_trim("  x y\t\n") == "x y");
  std::string utf8;
  append_utf8(utf8, 0x41);
  append_utf8(utf8, 0xB5);
  append_utf8(utf8, 0x20AC);
  append_utf8(utf8, 0x1F600);
  CHECK(utf8 == "A\xC2\xB5\xE2\x82\xAC\xF0\x9F\x98\x80");
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
