#include "pycompat/pandas_csv.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

namespace jarvis::pycompat {

bool pandas_is_na_text(std::string_view s) {
  static const char* const kNa[] = {
      "",     "nan",  "NaN",  "NA",     "N/A",     "NULL",     "None",    "null",     "n/a", "<NA>",
      "#N/A", "-NaN", "-nan", "1.#IND", "1.#QNAN", "#N/A N/A", "-1.#IND", "-1.#QNAN", "#NA"};
  for (const char* na : kNa)
    if (s == na) return true;
  return false;
}

bool pandas1_is_na_text(std::string_view s) {
  return s != "None" && pandas_is_na_text(s);
}

bool pandas_parse_int(std::string_view s, int64_t& out) {
  if (s.empty()) return false;
  size_t k = (s[0] == '-' || s[0] == '+') ? 1 : 0;
  if (k == s.size()) return false;
  for (size_t j = k; j < s.size(); ++j)
    if (!std::isdigit(static_cast<unsigned char>(s[j]))) return false;
  std::string text(s);
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0) return false;
  out = v;
  return true;
}

namespace {

// pandas' precise_xstrtod (see the header).
bool pandas_xstrtod(std::string_view s, double& out) {
  static const std::vector<double> kPow10 = [] {
    std::vector<double> e(309);
    for (int k = 0; k <= 308; ++k) e[k] = std::strtod(("1e" + std::to_string(k)).c_str(), nullptr);
    return e;
  }();
  size_t p = 0;
  bool negative = false;
  if (p < s.size() && (s[p] == '-' || s[p] == '+')) negative = s[p++] == '-';
  double number = 0;
  int exponent = 0, num_digits = 0, num_decimals = 0;
  constexpr int kMaxDigits = 17;
  auto digit = [&](size_t q) {
    return q < s.size() && std::isdigit(static_cast<unsigned char>(s[q]));
  };
  for (; digit(p); ++p) {
    if (num_digits < kMaxDigits) {
      number = number * 10. + (s[p] - '0');
      ++num_digits;
    } else {
      ++exponent;
    }
  }
  if (p < s.size() && s[p] == '.') {
    ++p;
    for (; num_digits < kMaxDigits && digit(p); ++p) {
      number = number * 10. + (s[p] - '0');
      ++num_digits;
      ++num_decimals;
    }
    while (digit(p)) ++p;
    exponent -= num_decimals;
  }
  if (num_digits == 0) return false;
  if (negative) number = -number;
  if (p < s.size() && (s[p] == 'e' || s[p] == 'E')) {
    ++p;
    bool neg_exp = false;
    if (p < s.size() && (s[p] == '-' || s[p] == '+')) neg_exp = s[p++] == '-';
    if (!digit(p)) return false;
    int n = 0;
    for (; digit(p); ++p) n = std::min(n * 10 + (s[p] - '0'), 100000);
    exponent += neg_exp ? -n : n;
  }
  if (p != s.size()) return false;
  if (exponent > 308) {
    number = negative ? -HUGE_VAL : HUGE_VAL;
  } else if (exponent > 0) {
    number *= kPow10[exponent];
  } else if (exponent < -308) {
    if (exponent < -616) {
      number = 0.;
    } else {
      number /= kPow10[-308 - exponent];
      number /= kPow10[308];
    }
  } else {
    number /= kPow10[-exponent];
  }
  out = number;
  return true;
}

}  // namespace

bool pandas_parse_float(std::string_view s, double& out) {
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0]))) return false;
  if (s == "inf" || s == "+inf" || s == "Infinity" || s == "+Infinity") {
    out = std::numeric_limits<double>::infinity();
    return true;
  }
  if (s == "-inf" || s == "-Infinity") {
    out = -std::numeric_limits<double>::infinity();
    return true;
  }
  return pandas_xstrtod(s, out);
}

bool pandas_is_true_text(std::string_view s) {
  return s == "True" || s == "TRUE" || s == "true";
}

bool pandas_is_false_text(std::string_view s) {
  return s == "False" || s == "FALSE" || s == "false";
}

}  // namespace jarvis::pycompat
