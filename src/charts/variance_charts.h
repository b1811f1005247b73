// Variance plots over plain tables (one row per run or kernel sample): box
// and violin of a value by a field, and the interaction of two fields. The
// sweep pages feed their tables here; nothing in this file knows about sweeps.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "charts/charts.h"
#include "report/table.h"

namespace jarvis::charts {

// Values of value_column grouped by the levels of field (cell text).
// Levels are sorted numerically when every level is a number, else kept in
// order of first appearance. Non-numeric values are skipped. Throws
// std::invalid_argument naming a missing column.
std::vector<DistributionGroup> group_by_field(const Table& rows, std::string_view field,
                                              std::string_view value_column);

DistributionChart distribution_by_field(const Table& rows, std::string_view field,
                                        std::string_view value_column, std::string_view value_label,
                                        Unit unit, DistributionKind kind);

// Mean of value_column per (x level, line level).
InteractionChart interaction_by_fields(const Table& rows, std::string_view x_field,
                                       std::string_view line_field, std::string_view value_column,
                                       std::string_view value_label, Unit unit);

struct VarianceSpec {
  std::string value_column, value_label;
  Unit unit = Unit::Microseconds;
  std::vector<std::string> fields;              // a box and a violin plot per field
  std::string interaction_x, interaction_line;  // both set: one interaction plot
};

// The charts of the spec, named <kind>_<field>.
std::vector<NamedChart> variance_charts(const Table& rows, const VarianceSpec& spec);

}  // namespace jarvis::charts
