#include "trace/value.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace jarvis {

std::string py_float_repr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == 0.0) return std::signbit(v) ? "-0.0" : "0.0";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  // sci = [-]d[.ddd]e[+-]XX
  bool negative = sci[0] == '-';
  size_t pos = negative ? 1 : 0;
  size_t epos = sci.find('e');
  std::string digits;
  for (size_t k = pos; k < epos; ++k)
    if (sci[k] != '.') digits.push_back(sci[k]);
  int exp10 = std::atoi(sci.c_str() + epos + 1);
  std::string out = negative ? "-" : "";
  if (exp10 < -4 || exp10 >= 16) {
    out += digits[0];
    if (digits.size() > 1) {
      out += '.';
      out.append(digits, 1, std::string::npos);
    }
    char ebuf[16];
    std::snprintf(ebuf, sizeof ebuf, "e%c%02d", exp10 < 0 ? '-' : '+', std::abs(exp10));
    out += ebuf;
    return out;
  }
  if (exp10 < 0) {
    out += "0.";
    out.append(static_cast<size_t>(-exp10 - 1), '0');
    out += digits;
    return out;
  }
  size_t int_len = static_cast<size_t>(exp10) + 1;
  if (digits.size() <= int_len) {
    out += digits;
    out.append(int_len - digits.size(), '0');
    out += ".0";
  } else {
    out.append(digits, 0, int_len);
    out += '.';
    out.append(digits, int_len, std::string::npos);
  }
  return out;
}

std::string py_str_repr(std::string_view s) {
  bool has_single = s.find('\'') != std::string_view::npos;
  bool has_double = s.find('"') != std::string_view::npos;
  char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out;
  out.reserve(s.size() + 2);
  out += quote;
  for (unsigned char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == static_cast<unsigned char>(quote)) {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += quote;
  return out;
}

namespace {

void append_repr(const PyValue& v, bool lists_as_tuples, std::string& out) {
  switch (v.kind) {
    case PyValue::Kind::None:
      out += "None";
      return;
    case PyValue::Kind::Bool:
      out += v.b ? "True" : "False";
      return;
    case PyValue::Kind::Int:
      out += std::to_string(v.i);
      return;
    case PyValue::Kind::Float:
      out += py_float_repr(v.f);
      return;
    case PyValue::Kind::String:
      out += py_str_repr(v.s);
      return;
    case PyValue::Kind::List:
      out += lists_as_tuples ? '(' : '[';
      for (size_t k = 0; k < v.list.size(); ++k) {
        if (k) out += ", ";
        append_repr(v.list[k], lists_as_tuples, out);
      }
      if (lists_as_tuples && v.list.size() == 1) out += ',';
      out += lists_as_tuples ? ')' : ']';
      return;
  }
}

void append_json_string(std::string_view s, std::string& out) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

void append_json(const PyValue& v, std::string& out) {
  switch (v.kind) {
    case PyValue::Kind::None:
      out += "null";
      return;
    case PyValue::Kind::Bool:
      out += v.b ? "true" : "false";
      return;
    case PyValue::Kind::Int:
      out += std::to_string(v.i);
      return;
    case PyValue::Kind::Float: {
      if (!std::isfinite(v.f)) {
        out += "null";
        return;
      }
      char buf[64];
      auto res = std::to_chars(buf, buf + sizeof buf, v.f);
      out.append(buf, res.ptr);
      return;
    }
    case PyValue::Kind::String:
      append_json_string(v.s, out);
      return;
    case PyValue::Kind::List:
      out += '[';
      for (size_t k = 0; k < v.list.size(); ++k) {
        if (k) out += ',';
        append_json(v.list[k], out);
      }
      out += ']';
      return;
  }
}

}  // namespace

std::string PyValue::repr_tuple() const {
  std::string out;
  append_repr(*this, true, out);
  return out;
}

std::string PyValue::repr_list() const {
  std::string out;
  append_repr(*this, false, out);
  return out;
}

std::string PyValue::to_json() const {
  std::string out;
  append_json(*this, out);
  return out;
}

bool operator==(const PyValue& a, const PyValue& b) {
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case PyValue::Kind::None:
      return true;
    case PyValue::Kind::Bool:
      return a.b == b.b;
    case PyValue::Kind::Int:
      return a.i == b.i;
    case PyValue::Kind::Float:
      return a.f == b.f;
    case PyValue::Kind::String:
      return a.s == b.s;
    case PyValue::Kind::List:
      return a.list == b.list;
  }
  return false;
}

}  // namespace jarvis
