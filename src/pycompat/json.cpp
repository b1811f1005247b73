#include "pycompat/json.h"

#include <cmath>
#include <cstdint>

#include "pycompat/numeric.h"
#include "pycompat/repr.h"

namespace jarvis::pycompat {

namespace {

void dump_value(std::string& out, const ojson& v, int indent, int level);

void newline(std::string& out, int indent, int level) {
  out += '\n';
  out.append(static_cast<size_t>(indent * level), ' ');
}

// An array or object: one item a line at level + 1, the closing bracket
// back at `level`; empty ones as [] / {}.
void dump_container(std::string& out, const ojson& v, int indent, int level) {
  const bool object = v.is_object();
  if (v.empty()) {
    out += object ? "{}" : "[]";
    return;
  }
  out += object ? '{' : '[';
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (it != v.begin()) out += ',';
    newline(out, indent, level + 1);
    if (object) {
      append_json_string(out, it.key(), true);
      out += ": ";
    }
    dump_value(out, it.value(), indent, level + 1);
  }
  newline(out, indent, level);
  out += object ? '}' : ']';
}

void dump_value(std::string& out, const ojson& v, int indent, int level) {
  switch (v.type()) {
    case ojson::value_t::null:
      out += "null";
      break;
    case ojson::value_t::boolean:
      out += v.get<bool>() ? "true" : "false";
      break;
    case ojson::value_t::number_integer:
      out += std::to_string(v.get<int64_t>());
      break;
    case ojson::value_t::number_unsigned:
      out += std::to_string(v.get<uint64_t>());
      break;
    case ojson::value_t::number_float: {
      double d = v.get<double>();
      if (std::isnan(d))
        out += "NaN";
      else if (std::isinf(d))
        out += d > 0 ? "Infinity" : "-Infinity";
      else
        out += py_float_repr(d);
      break;
    }
    case ojson::value_t::string:
      append_json_string(out, v.get_ref<const std::string&>(), true);
      break;
    case ojson::value_t::array:
    case ojson::value_t::object:
      dump_container(out, v, indent, level);
      break;
    default:
      out += "null";
      break;
  }
}

}  // namespace

std::string py_json_dumps(const ojson& value, int indent) {
  std::string out;
  dump_value(out, value, indent, 0);
  return out;
}

ojson py_round_json(const ojson& v, int ndigits) {
  if (v.is_number_integer()) return v;
  if (v.is_number_float()) return python_round(v.get<double>(), ndigits);
  return v;
}

}  // namespace jarvis::pycompat
