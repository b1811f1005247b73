// NumPy's default (unstable) argsort, as pandas 1.5.3 / NumPy 1.24 run it for
// DataFrame.sort_values: tied rows of TraceLens's tables come out in the order
// this algorithm leaves them, so reproducing a sheet row for row needs it.
#pragma once

#include <cstddef>
#include <vector>

namespace jarvis::numpy {

// np.argsort(values, kind="quicksort"): ascending, NaN last, ties in
// introsort order (not stable).
std::vector<size_t> argsort(const std::vector<double>& values);

// Row indices that sort `values` descending, missing (NaN) last, as
// DataFrame.sort_values(ascending=False) does (pandas nargsort: reverse,
// argsort ascending, reverse back).
std::vector<size_t> argsort_descending(const std::vector<double>& values);

}  // namespace jarvis::numpy
