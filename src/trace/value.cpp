#include "trace/value.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "pycompat/repr.h"

namespace jarvis {

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
      out += pycompat::py_float_repr(v.f);
      return;
    case PyValue::Kind::String:
      out += pycompat::py_str_repr(v.s);
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
      pycompat::append_json_string(out, v.s, false);
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
