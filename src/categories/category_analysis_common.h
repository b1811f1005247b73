// Shared helpers of the agent-workflow engine (prepare / analyze / findings).
//
// TraceLens's orchestrator scripts work on pandas DataFrames read back from
// the perf-report CSVs and on Python literals stored in CSV cells; they write
// JSON with json.dump(indent=2). The helpers here reproduce exactly those
// conventions so the files jarvis writes carry the same values and types:
//   * PyLit / parse_py_literal: ast.literal_eval of a cell (tuples, lists,
//     dicts, strings, numbers, None/True/False, np.float64(x) wrappers);
//   * infer_pandas_types: read_csv's per-column dtype inference;
//   * pandas_sum: Series.sum() (NaN skipped, numpy pairwise summation);
//   * py_round: Python's round(x, n);
//   * py_json_dump: json.dump(..., indent=2) with Python float reprs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/table.h"

namespace jarvis::analysis {

using ojson = nlohmann::ordered_json;

struct PyLitEntry;

// A Python literal value as ast.literal_eval returns it.
struct PyLit {
  enum class Kind { None, Bool, Int, Float, Str, List, Tuple, Dict };
  Kind kind = Kind::None;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;
  std::vector<PyLit> items;  // List / Tuple
  // Dict, in source order. The element type is declared below: a
  // std::pair<PyLit, PyLit> here would instantiate pair with an incomplete
  // PyLit, which clang rejects.
  std::vector<PyLitEntry> entries;

  bool is_seq() const { return kind == Kind::List || kind == Kind::Tuple; }
  bool is_number() const { return kind == Kind::Int || kind == Kind::Float; }
  double number() const { return kind == Kind::Int ? static_cast<double>(i) : f; }
  // Python truthiness.
  bool truthy() const;
  // Value of a dict entry whose key is the string `key`, or nullptr.
  const PyLit* get(std::string_view key) const;
  std::string repr() const;  // Python repr()
  std::string str() const;   // Python str(): strings unquoted, else repr
  ojson to_json() const;     // tuples as arrays, dict keys via str()
};

// One dict entry (key, value), with pair-like member names.
struct PyLitEntry {
  PyLit first;
  PyLit second;
  PyLitEntry(PyLit key, PyLit value) : first(std::move(key)), second(std::move(value)) {}
};

// Parses a Python literal; throws std::invalid_argument when the text is not
// one (as ast.literal_eval raises).
PyLit parse_py_literal(std::string_view text);
// Same, but std::nullopt instead of throwing.
std::optional<PyLit> try_parse_py_literal(std::string_view text);

// Re-types the text cells of a parsed CSV the way pandas.read_csv infers
// column dtypes: all-integer columns without blanks become ints, numeric
// columns (blanks allowed) doubles (blank = NaN), True/False columns bools,
// everything else stays text (blank = missing).
Table infer_pandas_types(const Table& text_table);
// read_csv_file + infer_pandas_types.
Table read_csv_typed(const std::string& path);

// A cell is NA when missing or a NaN double.
bool is_na(const Cell& c);
// The cell of `table` at row/column name, or nullptr when the column is absent.
const Cell* cell_at(const Table& table, size_t row, std::string_view column);
// Numeric value of a cell (NaN when NA or not a number).
double cell_number(const Cell* c);
// Text of a text cell, "" otherwise.
std::string cell_text(const Cell* c);
// Cell as JSON the way json.dump writes the pandas scalar.
ojson cell_to_json(const Cell& c);

// Series.sum(): NaN skipped, numpy's pairwise summation order.
double pandas_sum(const std::vector<double>& values);
// Column values as doubles (NaN for NA / non-numeric).
std::vector<double> column_numbers(const Table& table, std::string_view column);

// Python round(x, ndigits) for floats (correctly rounded, ties to even).
double py_round(double x, int ndigits);
// numpy's round for np.float64 values (pandas sums and Series arithmetic):
// rint(x * 10^n) / 10^n. Differs from py_round on ties such as 0.0165.
double np_round(double x, int ndigits);
// round() applied to a JSON number: ints stay ints (Python round(int, n)).
ojson py_round_json(const ojson& v, int ndigits);

// json.dumps(value, indent=2) byte-for-byte (ensure_ascii, Python float repr,
// NaN/Infinity literals).
std::string py_json_dump(const ojson& value, int indent = 2);
void write_json_atomic(const std::string& path, const ojson& value);
// Parses a JSON file (NaN literals accepted as null); throws runtime_error.
ojson read_json_file(const std::string& path);

// `op category` → (normalized key, display name) as orchestrator_prepare does.
std::pair<std::string, std::string> normalize_category(const Cell* op_category);

// torch_dtype_map: "c10::BFloat16" → "bf16", ... ; "" when unmapped.
std::string torch_dtype_precision(std::string_view dtype);

// True when `name` is a safe category / file stem: [a-z0-9_]+, 1..64 chars.
bool is_valid_category_name(std::string_view name);

}  // namespace jarvis::analysis
