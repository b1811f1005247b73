// Golden-test harness: compares tables produced by jarvis with the TraceLens
// reference CSVs in /work/shared/conformance.
//
// Reference cells were written by pandas from Python objects, so a cell may
// hold a number, True/False, a Python literal (tuple / list / dict / str /
// None, possibly with NumPy wrappers such as np.float64(1.5)) or plain text.
// Cells are compared by parsed value: numbers (also those nested in
// structures) within a relative tolerance, dict key order ignored, list and
// tuple order significant. Empty, "nan" and "None" all mean "missing"
// (different pandas versions spell missing values differently).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "report/table.h"

namespace jarvis::golden {

bool cells_equal(std::string_view expected, std::string_view actual, double rel_tol = 1e-5);

struct Options {
  std::vector<std::string> key_columns;     // match rows by these (empty = by position)
  std::vector<std::string> ignore_columns;  // left out of header and cell checks
  double rel_tol = 1e-5;
  bool allow_extra_rows = false;  // actual may hold rows the reference lacks
  // A top-level integer in the reference ("220") must not come out as a
  // float ("220.0") and vice versa: pandas int/float column types matter.
  bool check_int_float = true;
  size_t max_problems = 20;  // problems recorded in Result::problems
};

struct Result {
  bool header_equal = false;
  size_t expected_rows = 0;
  size_t actual_rows = 0;
  size_t matched_rows = 0;
  size_t problem_count = 0;           // all problems, also those not recorded
  std::vector<std::string> problems;  // human-readable, first Options::max_problems
  bool ok() const;
  std::string summary() const;
};

// The text pandas would write for a cell of `table` (float columns as floats).
std::string cell_text(const Table& table, size_t row, size_t col);

Result compare_tables(const Table& expected, const Table& actual, const Options& options = {});
Result compare_csv_files(const std::string& expected_path, const std::string& actual_path,
                         const Options& options = {});

// Where the shared material is expected: $JARVIS_SHARED_DIR if set, else the
// build-time path (../shared beside the repository).
std::string configured_shared_dir();
// The repository's copy of part of it (tests/data/shared: the conformance,
// JAX, NCCL and legacy traces, MIT-licensed), for a fresh clone.
std::string repository_shared_copy();
// Root of the shared material: the configured directory, or the repository's
// copy when that directory does not exist.
std::string shared_dir();
// Every <shared>/conformance/*/ holding trace.json.gz, sorted, without trailing slash.
std::vector<std::string> conformance_dirs();
// Every Kineto trace (*.json.gz, TraceLens outputs left out) under <shared>'s
// ab_pairs, hw_pairs, conformance and legacy, sorted.
std::vector<std::string> shared_kineto_traces();

}  // namespace jarvis::golden
