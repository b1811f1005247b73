// json.dumps byte-for-byte: the JSON text Python's json module writes for the
// same value (ensure_ascii, Python float reprs, NaN / Infinity literals).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace jarvis::pycompat {

using ojson = nlohmann::ordered_json;

// json.dumps(value, indent=indent): one item a line, "key": value, empty
// containers as [] / {}; floats as repr() (1.0, 1e-05), NaN / Infinity /
// -Infinity as those bare words.
std::string py_json_dumps(const ojson& value, int indent = 2);

// round(v, ndigits) on a JSON number: floats Python-rounded (python_round),
// ints kept (Python's round(int, n) is the int), anything else unchanged.
ojson py_round_json(const ojson& v, int ndigits);

}  // namespace jarvis::pycompat
