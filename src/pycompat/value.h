// PyValue: the one Python value of jarvis: event args as recorded in a trace
// and Python literals read back from TraceLens's CSV cells
// (ast.literal_eval, pycompat/literal.h) are the same type.
//
// TraceLens works on Python objects and writes them with Python's repr (lists
// of shapes become tuples, strings get single quotes, floats use the shortest
// round-trip form). Keeping args in this shape lets every table print them
// byte-for-byte like the reference and lets perf models read them as numbers.
//
// Trace args are only None / bool / int / float / str / list (JSON); tuples
// and dicts come from literals. A dict keeps its entries in `list` as key,
// value, key, value, ... so the value stays as small as a list: a loaded trace
// holds millions of them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace jarvis::pycompat {

struct PyValue {
  enum class Kind : uint8_t { None, Bool, Int, Float, String, List, Tuple, Dict };

  Kind kind = Kind::None;
  bool b = false;
  int64_t i = 0;
  double f = 0.0;
  std::string s;
  std::vector<PyValue> list;  // List / Tuple items; Dict: key, value, key, value, ...

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
  bool is_seq() const { return kind == Kind::List || kind == Kind::Tuple; }
  bool is_dict() const { return kind == Kind::Dict; }
  bool is_string() const { return kind == Kind::String; }
  bool is_number() const { return kind == Kind::Int || kind == Kind::Float; }
  double as_double() const { return kind == Kind::Int ? static_cast<double>(i) : f; }
  size_t size() const { return list.size(); }  // items (a dict: 2 per entry)
  const PyValue& operator[](size_t k) const { return list[k]; }

  // Dict entries.
  size_t dict_size() const { return kind == Kind::Dict ? list.size() / 2 : 0; }
  const PyValue& dict_key(size_t k) const { return list[2 * k]; }
  const PyValue& dict_value(size_t k) const { return list[2 * k + 1]; }
  void add_entry(PyValue key, PyValue value) {
    list.push_back(std::move(key));
    list.push_back(std::move(value));
  }
  // The value of the dict entry whose key is the string `key`, or nullptr.
  const PyValue* get(std::string_view key) const;

  // Python truthiness.
  bool truthy() const;
  // Python repr(): lists [..], tuples (..), dicts {..}.
  std::string repr() const;
  // Python repr with lists rendered as tuples, as pandas shows TraceLens's
  // tuple-converted args: ((8944, 1024), (1024, 2816)), ('',), None, True.
  std::string repr_tuple() const;
  // Python repr with lists rendered as lists: [1, 2], ['GEMM'].
  std::string repr_list() const { return repr(); }
  // Python str(): strings unquoted, else repr.
  std::string str() const { return kind == Kind::String ? s : repr(); }
  // JSON text (lists and tuples as arrays, None as null, non-finite floats
  // as null, dict keys via str()).
  std::string to_json() const;
  // The same as a JSON value, dict entries in source order: equal to parsing
  // to_json(), except that a float stays a float (2.0, not 2).
  nlohmann::ordered_json to_ojson() const;

  friend bool operator==(const PyValue& a, const PyValue& b);
};

}  // namespace jarvis::pycompat

namespace jarvis {
using pycompat::PyValue;
}  // namespace jarvis
