// DataFrame-like primitives the report comparison is built from: pandas
// read_csv column typing, the outer merge and the descending sort, each with
// the exact row order pandas 1.5.3 / NumPy 1.24 produce (the versions the
// TraceLens reference comparisons were made with), because the comparison's
// row order is part of its output.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "report/table.h"

namespace jarvis::frame {

// The columns TraceLens's report comparison matches op rows on.
inline const std::vector<std::string> kOpKeys = {"name", "Input type", "Input Dims",
                                                 "Input Strides", "Concrete Inputs"};

// Gives a table read back from CSV (all text cells) the types pandas
// read_csv would infer per column: int64, float64, bool, or text. Cells
// spelled like pandas' default NA markers (empty, "nan", "NaN", "NULL", ...;
// not "None", which pandas < 2.0 keeps as text) become missing.
void infer_column_types(Table& table);

// pandas stores an integer column that holds missing values as float64, so
// 220 is written as "220.0" in every later subset of the rows, even one
// without missing values. This turns the int cells of such columns into
// doubles (and NaN doubles into missing cells) so later subsets keep the
// float formatting.
void materialize_float_columns(Table& table);

// Row order of an outer merge.
enum class MergeOrder {
  // pandas < 2.2: keys in order of first appearance (left table, then keys
  // found only in the right table); all rows with one key are grouped.
  FirstAppearance,
  // pandas >= 2.2: keys sorted lexicographically by the key tuple, missing last.
  Lexicographic,
};

// pandas.merge(left, right, on=keys, how="outer") followed by moving the keys
// to the front: columns are the keys, then left's other columns, then right's.
// Missing keys match missing keys; numbers match numerically (1 == 1.0);
// duplicate keys give the product of their rows (left-major). Both tables
// must hold every key column and share no other column name.
Table outer_merge(const Table& left, const Table& right, const std::vector<std::string>& keys,
                  MergeOrder order);

// Row indices that sort `values` descending, missing (NaN) last, as
// DataFrame.sort_values(ascending=False) does with its default unstable
// quicksort: ties come out in the order NumPy's introsort leaves them.
std::vector<size_t> argsort_descending(const std::vector<double>& values);

// The column as numbers: int/double cells as double, anything else NaN.
std::vector<double> numeric_column(const Table& table, size_t column);

// Rows `order` of `table`, in that order (same columns, same name).
Table take_rows(const Table& table, const std::vector<size_t>& order);

// Drops every column whose cells are all missing (DataFrame.dropna(axis=1,
// how="all")); a table without rows loses all its columns.
void drop_all_missing_columns(Table& table);

}  // namespace jarvis::frame
