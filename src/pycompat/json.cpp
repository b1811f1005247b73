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

void dump_array(std::string& out, const ojson& v, int indent, int level) {
  if (v.empty()) {
    out += "[]";
    return;
  }
  out += '[';
  bool first = true;
  for (const auto& item : v) {
    if (!first) out += ',';
    first = false;
    newline(out, indent, level + 1);
    dump_value(out, item, indent, level + 1);
  }
  newline(out, indent, level);
  out += ']';
}

void dump_object(std::string& out, const ojson& v, int indent, int level) {
  if (v.empty()) {
    out += "{}";
    return;
  }
  out += '{';
  bool first = true;
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (!first) out += ',';
    first = false;
    newline(out, indent, level + 1);
    append_json_string(out, it.key(), true);
    out += ": ";
    dump_value(out, it.value(), indent, level + 1);
  }
  newline(out, indent, level);
  out += '}';
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
      dump_array(out, v, indent, level);
      break;
    case ojson::value_t::object:
      dump_object(out, v, indent, level);
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
