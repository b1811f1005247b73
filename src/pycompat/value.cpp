#include "pycompat/value.h"

#include <charconv>
#include <cmath>

#include "pycompat/repr.h"

namespace jarvis::pycompat {

namespace {

void append_repr(const PyValue& v, bool lists_as_tuples, std::string& out) {
  using Kind = PyValue::Kind;
  switch (v.kind) {
    case Kind::None:
      out += "None";
      return;
    case Kind::Bool:
      out += v.b ? "True" : "False";
      return;
    case Kind::Int:
      out += std::to_string(v.i);
      return;
    case Kind::Float:
      out += py_float_repr(v.f);
      return;
    case Kind::String:
      out += py_str_repr(v.s);
      return;
    case Kind::List:
    case Kind::Tuple: {
      bool tuple = v.kind == Kind::Tuple || lists_as_tuples;
      out += tuple ? '(' : '[';
      for (size_t k = 0; k < v.list.size(); ++k) {
        if (k) out += ", ";
        append_repr(v.list[k], lists_as_tuples, out);
      }
      if (tuple && v.list.size() == 1) out += ',';
      out += tuple ? ')' : ']';
      return;
    }
    case Kind::Dict:
      out += '{';
      for (size_t k = 0; k < v.dict_size(); ++k) {
        if (k) out += ", ";
        append_repr(v.dict_key(k), lists_as_tuples, out);
        out += ": ";
        append_repr(v.dict_value(k), lists_as_tuples, out);
      }
      out += '}';
      return;
  }
}

void append_json(const PyValue& v, std::string& out) {
  using Kind = PyValue::Kind;
  switch (v.kind) {
    case Kind::None:
      out += "null";
      return;
    case Kind::Bool:
      out += v.b ? "true" : "false";
      return;
    case Kind::Int:
      out += std::to_string(v.i);
      return;
    case Kind::Float: {
      if (!std::isfinite(v.f)) {
        out += "null";
        return;
      }
      char buf[64];
      auto res = std::to_chars(buf, buf + sizeof buf, v.f);
      out.append(buf, res.ptr);
      return;
    }
    case Kind::String:
      append_json_string(out, v.s, false);
      return;
    case Kind::List:
    case Kind::Tuple:
      out += '[';
      for (size_t k = 0; k < v.list.size(); ++k) {
        if (k) out += ',';
        append_json(v.list[k], out);
      }
      out += ']';
      return;
    case Kind::Dict:
      out += '{';
      for (size_t k = 0; k < v.dict_size(); ++k) {
        if (k) out += ',';
        append_json_string(out, v.dict_key(k).str(), false);
        out += ':';
        append_json(v.dict_value(k), out);
      }
      out += '}';
      return;
  }
}

}  // namespace

const PyValue* PyValue::get(std::string_view key) const {
  for (size_t k = 0; k < dict_size(); ++k)
    if (dict_key(k).kind == Kind::String && dict_key(k).s == key) return &dict_value(k);
  return nullptr;
}

bool PyValue::truthy() const {
  switch (kind) {
    case Kind::None:
      return false;
    case Kind::Bool:
      return b;
    case Kind::Int:
      return i != 0;
    case Kind::Float:
      return f != 0.0;  // NaN is truthy, as in Python
    case Kind::String:
      return !s.empty();
    case Kind::List:
    case Kind::Tuple:
    case Kind::Dict:
      return !list.empty();
  }
  return false;
}

std::string PyValue::repr() const {
  std::string out;
  append_repr(*this, false, out);
  return out;
}

std::string PyValue::repr_tuple() const {
  std::string out;
  append_repr(*this, true, out);
  return out;
}

std::string PyValue::to_json() const {
  std::string out;
  append_json(*this, out);
  return out;
}

nlohmann::ordered_json PyValue::to_ojson() const {
  using ojson = nlohmann::ordered_json;
  switch (kind) {
    case Kind::None:
      return nullptr;
    case Kind::Bool:
      return b;
    case Kind::Int:
      return i;
    case Kind::Float:
      return std::isfinite(f) ? ojson(f) : ojson(nullptr);
    case Kind::String:
      return s;
    case Kind::List:
    case Kind::Tuple: {
      ojson arr = ojson::array();
      for (const auto& item : list) arr.push_back(item.to_ojson());
      return arr;
    }
    case Kind::Dict: {
      ojson obj = ojson::object();
      for (size_t k = 0; k < dict_size(); ++k) obj[dict_key(k).str()] = dict_value(k).to_ojson();
      return obj;
    }
  }
  return nullptr;
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
    case PyValue::Kind::Tuple:
    case PyValue::Kind::Dict:
      return a.list == b.list;
  }
  return false;
}

}  // namespace jarvis::pycompat
