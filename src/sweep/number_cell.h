#pragma once
// A number in the sweep's tables: NaN (no value) is an empty cell, as pandas
// writes a missing float.
#include <cmath>

#include "report/table.h"

namespace jarvis::sweep {

inline Cell number_cell(double v) {
  return std::isnan(v) ? Cell() : Cell(v);
}

}  // namespace jarvis::sweep
