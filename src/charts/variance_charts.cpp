#include "charts/variance_charts.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

namespace jarvis::charts {

namespace {

size_t column_of(const Table& rows, std::string_view column) {
  int c = rows.col(column);
  if (c < 0)
    throw std::invalid_argument(fmt::format("table {} has no column '{}'", rows.name, column));
  return static_cast<size_t>(c);
}

std::string level_text(const Cell& cell) {
  if (cell.missing()) return "";
  if (cell.is_text()) return cell.text();
  return cell.to_csv_text(false);
}

double value_of(const Cell& cell) {
  if (!cell.is_text()) return cell.number();
  const std::string& s = cell.text();
  double v = NAN;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && p == s.data() + s.size() ? v : NAN;
}

bool parses_as_number(const std::string& s) {
  return std::isfinite(value_of(Cell(s)));
}

// Levels in first-appearance order, then numerically when all are numbers.
std::vector<std::string> levels_of(const Table& rows, size_t column) {
  std::vector<std::string> levels;
  for (const auto& row : rows.rows) {
    std::string level = column < row.size() ? level_text(row[column]) : "";
    if (std::find(levels.begin(), levels.end(), level) == levels.end()) levels.push_back(level);
  }
  if (std::all_of(levels.begin(), levels.end(), parses_as_number))
    std::stable_sort(levels.begin(), levels.end(), [](const std::string& a, const std::string& b) {
      return value_of(Cell(a)) < value_of(Cell(b));
    });
  return levels;
}

}  // namespace

std::vector<DistributionGroup> group_by_field(const Table& rows, std::string_view field,
                                              std::string_view value_column) {
  size_t f = column_of(rows, field), v = column_of(rows, value_column);
  std::vector<DistributionGroup> groups;
  for (const auto& level : levels_of(rows, f)) groups.push_back({level, {}});
  for (const auto& row : rows.rows) {
    if (f >= row.size() || v >= row.size()) continue;
    double value = value_of(row[v]);
    if (!std::isfinite(value)) continue;
    std::string level = level_text(row[f]);
    for (auto& g : groups)
      if (g.label == level) g.values.push_back(value);
  }
  return groups;
}

DistributionChart distribution_by_field(const Table& rows, std::string_view field,
                                        std::string_view value_column, std::string_view value_label,
                                        Unit unit, DistributionKind kind) {
  DistributionChart c;
  c.kind = kind;
  c.field_label = std::string(field);
  c.value_label = std::string(value_label);
  c.unit = unit;
  c.groups = group_by_field(rows, field, value_column);
  c.title = fmt::format("{} by {} ({})", value_label, field,
                        kind == DistributionKind::Box ? "box plot" : "violin plot");
  return c;
}

InteractionChart interaction_by_fields(const Table& rows, std::string_view x_field,
                                       std::string_view line_field, std::string_view value_column,
                                       std::string_view value_label, Unit unit) {
  size_t x = column_of(rows, x_field), l = column_of(rows, line_field),
         v = column_of(rows, value_column);
  InteractionChart c;
  c.title = fmt::format("{}: {} x {} interaction", value_label, x_field, line_field);
  c.x_label = std::string(x_field);
  c.line_label = std::string(line_field);
  c.value_label = std::string(value_label);
  c.unit = unit;
  c.x_levels = levels_of(rows, x);
  std::map<std::pair<std::string, std::string>, std::pair<double, size_t>> sums;
  for (const auto& row : rows.rows) {
    if (std::max({x, l, v}) >= row.size()) continue;
    double value = value_of(row[v]);
    if (!std::isfinite(value)) continue;
    auto& [sum, n] = sums[{level_text(row[l]), level_text(row[x])}];
    sum += value, ++n;
  }
  for (const auto& line_level : levels_of(rows, l)) {
    InteractionLine line{line_level, {}};
    for (const auto& x_level : c.x_levels) {
      auto it = sums.find({line_level, x_level});
      line.means.push_back(
          it == sums.end() ? NAN : it->second.first / static_cast<double>(it->second.second));
    }
    c.lines.push_back(std::move(line));
  }
  return c;
}

std::vector<NamedChart> variance_charts(const Table& rows, const VarianceSpec& spec) {
  std::vector<NamedChart> out;
  for (const auto& field : spec.fields) {
    out.push_back({"box_" + field,
                   fmt::format("Distribution of {} per {} value: box = quartiles, whiskers = "
                               "1.5 IQR, circles = outliers.",
                               spec.value_label, field),
                   distribution_by_field(rows, field, spec.value_column, spec.value_label,
                                         spec.unit, DistributionKind::Box)});
    out.push_back({"violin_" + field,
                   fmt::format("Density of {} per {} value (Gaussian kernel, Silverman bandwidth); "
                               "bar = IQR, dot = median.",
                               spec.value_label, field),
                   distribution_by_field(rows, field, spec.value_column, spec.value_label,
                                         spec.unit, DistributionKind::Violin)});
  }
  if (!spec.interaction_x.empty() && !spec.interaction_line.empty())
    out.push_back(
        {"interaction_" + spec.interaction_x + "_" + spec.interaction_line,
         "Mean per combination; lines that are not parallel mean the two fields interact.",
         interaction_by_fields(rows, spec.interaction_x, spec.interaction_line, spec.value_column,
                               spec.value_label, spec.unit)});
  return out;
}

}  // namespace jarvis::charts
