// PyValue: a small Python-like value used for event args that end up in reports
// (its reprs use pycompat's py_float_repr / py_str_repr).
//
// TraceLens works on Python objects and writes them with Python's repr (lists of
// shapes become tuples, strings get single quotes, floats use the shortest
// round-trip form). Keeping args in this shape lets every table print them
// byte-for-byte like the reference and lets perf models read them as numbers.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace jarvis {

struct PyValue {
  enum class Kind : uint8_t { None, Bool, Int, Float, String, List };

  Kind kind = Kind::None;
  bool b = false;
  int64_t i = 0;
  double f = 0.0;
  std::string s;
  std::vector<PyValue> list;

  static PyValue none() { return {}; }
  static PyValue boolean(bool v) {
    PyValue p;
    p.kind = Kind::Bool;
    p.b = v;
    return p;
  }
  static PyValue integer(int64_t v) {
    PyValue p;
    p.kind = Kind::Int;
    p.i = v;
    return p;
  }
  static PyValue real(double v) {
    PyValue p;
    p.kind = Kind::Float;
    p.f = v;
    return p;
  }
  static PyValue string(std::string v) {
    PyValue p;
    p.kind = Kind::String;
    p.s = std::move(v);
    return p;
  }
  static PyValue make_list(std::vector<PyValue> v) {
    PyValue p;
    p.kind = Kind::List;
    p.list = std::move(v);
    return p;
  }

  bool is_none() const { return kind == Kind::None; }
  bool is_list() const { return kind == Kind::List; }
  bool is_string() const { return kind == Kind::String; }
  bool is_number() const { return kind == Kind::Int || kind == Kind::Float; }
  double as_double() const { return kind == Kind::Int ? static_cast<double>(i) : f; }
  size_t size() const { return list.size(); }
  const PyValue& operator[](size_t k) const { return list[k]; }

  // Python repr with lists rendered as tuples, as pandas shows TraceLens's
  // tuple-converted args: ((8944, 1024), (1024, 2816)), ('',), None, True.
  std::string repr_tuple() const;
  // Python repr with lists rendered as lists: [1, 2], ['GEMM'].
  std::string repr_list() const;
  // JSON text (lists as arrays, None as null).
  std::string to_json() const;

  friend bool operator==(const PyValue& a, const PyValue& b);
};

}  // namespace jarvis
