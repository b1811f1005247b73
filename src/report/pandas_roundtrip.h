// The one CSV text round trip: a Table as pandas reads back the CSV TraceLens
// wrote for it.
//
// TraceLens's orchestrator scripts do not work on the DataFrames its perf
// report built: they write them with DataFrame.to_csv(index=False) and read
// them back with pandas.read_csv, whose per-column dtype inference (ints,
// floats with NaN for blanks, True/False bools, text) and float parser
// (precise_xstrtod, not always correctly rounded) decide the values every
// later step sees. Reproducing TraceLens's numbers therefore needs that round
// trip, and it happens here only: prepare, category_filter, gemm_roofline and
// the category analyses call pandas_roundtrip (in memory, or on a CSV file
// through read_csv_typed) instead of re-parsing text themselves.
#pragma once

#include <string>

#include "report/table.h"

namespace jarvis {

// `table` as pandas.read_csv(StringIO(DataFrame.to_csv(index=False))) would
// type it: every cell first becomes the text to_csv writes for it (floats of
// a float column as "220.0", NaN / missing as blank, bools as True/False),
// then each column gets read_csv's dtype: all-integer columns without blanks
// become ints, numeric columns (blanks allowed) doubles (blank = NaN),
// True/False columns bools, anything else text (blank = missing). Equal to
// parsing Table::to_csv() with parse_csv and typing that, without building
// the text. Text-only tables (from parse_csv / read_csv_file) are typed as
// read_csv types the file they came from.
Table pandas_roundtrip(const Table& table);

// pandas.read_csv(path): read_csv_file, then pandas_roundtrip's typing.
Table read_csv_typed(const std::string& path);

}  // namespace jarvis
