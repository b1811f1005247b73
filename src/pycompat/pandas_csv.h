// How pandas.read_csv reads one CSV field: its default NA strings, the int /
// float / bool parsers its per-column dtype inference tries, and its default
// float parser (precise_xstrtod), which is not always correctly rounded.
// Table-level inference (a column is int when every field is, ...) is in
// report/pandas_roundtrip (pandas_roundtrip, the one CSV text round trip).
#pragma once

#include <cstdint>
#include <string_view>

namespace jarvis::pycompat {

// One of read_csv's default na_values ("", "nan", "NaN", "NA", "N/A", "NULL",
// "None", "<NA>", "#N/A", "-nan", "1.#IND", ...).
bool pandas_is_na_text(std::string_view s);
// The same list as pandas 1.x has it, without "None" (added in 2.0): what
// TraceLens's compare script read its reports with.
bool pandas1_is_na_text(std::string_view s);
// An integer field: optional sign, digits only, within int64.
bool pandas_parse_int(std::string_view s, int64_t& out);
// A float field as read_csv's default parser computes it: at most 17
// significant digits accumulated in a double, then one scaling by an exact
// power of ten; also inf / Infinity with a sign. False for anything else.
bool pandas_parse_float(std::string_view s, double& out);
// Boolean fields: True / TRUE / true and False / FALSE / false.
bool pandas_is_true_text(std::string_view s);
bool pandas_is_false_text(std::string_view s);

}  // namespace jarvis::pycompat
