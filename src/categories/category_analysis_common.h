// Shared helpers of the agent-workflow engine (prepare / analyze / findings).
//
// TraceLens's orchestrator scripts work on pandas DataFrames read back from
// the perf-report CSVs and on Python literals stored in CSV cells; they write
// JSON with json.dump(indent=2). The Python / pandas / NumPy emulation itself
// is in src/pycompat (literals, sums, rounding, json.dumps); the helpers here
// apply it to report Tables and files:
//   * read_csv_typed / pandas_roundtrip (report/pandas_roundtrip.h, the one
//     CSV text round trip): pandas.read_csv's per-column dtype inference;
//   * cell_* / column_numbers: pandas scalars of a Table cell;
//   * write_json_atomic / read_json_file: json.dump / json.load of a file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "pycompat/literal.h"
#include "report/pandas_roundtrip.h"
#include "report/table.h"

namespace jarvis::analysis {

using ojson = nlohmann::ordered_json;

// The ops summary's kernel-time column (TraceLens's name, with the micro sign).
inline constexpr const char* kKernelSum = "Kernel Time (\xC2\xB5s)_sum";

// ast.literal_eval values of CSV cells (src/pycompat/literal.h).
using pycompat::parse_py_literal;
using pycompat::try_parse_py_literal;

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

// Column values as doubles (NaN for NA / non-numeric).
std::vector<double> column_numbers(const Table& table, std::string_view column);

// json.dumps(value, indent=2) (pycompat::py_json_dumps) written atomically.
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
