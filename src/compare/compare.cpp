#include "compare/compare.h"
#include "base/output_guard.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>
#include <set>
#include <stdexcept>

#include "compare/compare_frame.h"
#include "report/xlsx_read.h"

namespace jarvis {

namespace {

using frame::MergeOrder;

// How one sheet is compared (TraceLens SHEETS_COMPARE_CONFIG).
struct SheetConfig {
  std::vector<std::string> keys;
  std::vector<std::string> diff_cols;
  std::vector<std::string> cols_to_delete;  // from every report
  std::string sort_col;
};

const SheetConfig kOpsSummary{{"name"},
                              {"total_direct_kernel_time_ms", "Count"},
                              {"total_direct_kernel_time_sum"},
                              "total_direct_kernel_time_ms"};
const SheetConfig kKernelSummary{
    {"Kernel name"},
    {"Kernel duration (µs)_sum", "Kernel duration (µs)_mean", "Kernel duration (µs)_count"},
    {"Kernel duration (µs)_min", "Kernel duration (µs)_max", "Parent op category"},
    "Kernel duration (µs)_sum"};
// Older (and rocprof) kernel summaries, keyed by kernel `name`.
const SheetConfig kKernelSummaryLegacy{
    {"name"},
    {"Total Kernel Time (ms)", "Mean Kernel Time (µs)", "Count"},
    {"Total Kernel Time (µs)", "Median Kernel Time (µs)", "Std Kernel Time (µs)",
     "Min Kernel Time (µs)", "Max Kernel Time (µs)", "Category"},
    "Total Kernel Time (ms)"};

// Per-op sheets split into intersect / only_baseline / only_variant, in
// processing order ("ops_all" is the legacy name of ops_unique_args).
const std::vector<std::pair<std::string, SheetConfig>>& main_sheets() {
  static const std::vector<std::pair<std::string, SheetConfig>> sheets = {
      {"ops_all",
       {frame::kOpKeys,
        {"total_direct_kernel_time_sum", "total_direct_kernel_time_mean", "operation_count"},
        {},
        "total_direct_kernel_time_sum"}},
      {"ops_unique_args",
       {frame::kOpKeys,
        {"total_direct_kernel_time_sum", "total_direct_kernel_time_mean", "operation_count"},
        {},
        "total_direct_kernel_time_sum"}},
      {"unified_perf_summary",
       {frame::kOpKeys,
        {"Kernel Time (µs)_sum", "Kernel Time (µs)_mean", "operation_count"},
        {},
        "Kernel Time (µs)_sum"}},
  };
  return sheets;
}

// Roofline sheets and the short names of their result sheets.
const std::vector<std::pair<std::string, std::string>> kRooflineSheets = {
    {"GEMM", "GEMM"},
    {"SDPA_fwd", "SDPA_fwd"},
    {"SDPA_bwd", "SDPA_bwd"},
    {"CONV_fwd", "CONV_fwd"},
    {"CONV_bwd", "CONV_bwd"},
    {"UnaryElementwise", "un_eltwise"},
    {"BinaryElementwise", "bin_eltwise"}};
const std::vector<std::string> kRooflineDiffCols = {"Kernel Time (µs)_sum", "Kernel Time (µs)_mean",
                                                    "name_count", "TFLOPS/s_mean", "TB/s_mean"};
// Op-identity columns every variant drops (they equal the baseline's).
const std::vector<std::string> kRooflineVariantDrops = {
    "GFLOPS_first",     "Data Moved (MB)_first", "FLOPS/Byte_first",     "Input type_first",
    "Input Dims_first", "Input Strides_first",   "Concrete Inputs_first"};

// The group is in CompareOptions::sheet_groups by its own name.
bool named(const CompareOptions& options, const std::string& group) {
  const auto& g = options.sheet_groups;
  return std::find(g.begin(), g.end(), group) != g.end();
}

bool wants(const CompareOptions& options, const std::string& group) {
  return named(options, group) || named(options, "all");
}

bool has_sheet(const NamedReport& report, const std::string& name) {
  return report.sheet(name) != nullptr;
}

// A sheet only one side has (a BERT trace has no SDPA sheet a vLLM trace
// has) has nothing to be compared with: it is skipped, not an error.
bool all_have_sheet(const std::vector<NamedReport>& reports, const std::string& name) {
  return std::all_of(reports.begin(), reports.end(),
                     [&](const NamedReport& r) { return has_sheet(r, name); });
}

// "report '<tag>'", plus where it was read from when known.
std::string describe(const NamedReport& report) {
  std::string text = "report '" + report.tag + "'";
  return report.source.empty() ? text : text + " (" + report.source + ")";
}

const Table& require_sheet(const NamedReport& report, const std::string& name) {
  const Table* t = report.sheet(name);
  if (!t) throw std::runtime_error(describe(report) + " has no sheet '" + name + "'");
  return *t;
}

// The tags of the reports without `sheet`, e.g. "'a', 'b'".
std::string lacking(const std::vector<NamedReport>& reports, const std::string& sheet) {
  std::string out;
  for (const auto& r : reports)
    if (!has_sheet(r, sheet)) out += (out.empty() ? "'" : ", '") + r.tag + "'";
  return out;
}

// A sheet of a group chosen by name must be in every report (TraceLens
// raises); under "all" a sheet some report lacks is skipped with a note, so a
// kernel-only (rocprof) report still compares with a PyTorch one on the
// sheets both have.
bool sheet_everywhere(const std::vector<NamedReport>& reports, const CompareOptions& options,
                      const std::string& group, const std::string& sheet,
                      std::vector<std::string>& notes) {
  if (all_have_sheet(reports, sheet)) return true;
  if (named(options, group)) {
    if (!has_sheet(reports[0], sheet) && sheet != "gpu_timeline")
      throw std::runtime_error(sheet + " sheet not found in " + describe(reports[0]));
    for (const auto& r : reports) require_sheet(r, sheet);
  }
  notes.push_back("sheet '" + sheet + "' skipped: not in report " + lacking(reports, sheet));
  return false;
}

// Per-op and roofline sheets are compared when every report has them; one
// that only some reports have is noted (TraceLens looks at the first only).
bool sheet_in_every_report(const std::vector<NamedReport>& reports, const std::string& sheet,
                           std::vector<std::string>& notes) {
  if (all_have_sheet(reports, sheet)) return true;
  if (std::any_of(reports.begin(), reports.end(),
                  [&](const NamedReport& r) { return has_sheet(r, sheet); }))
    notes.push_back("sheet '" + sheet + "' skipped: not in report " + lacking(reports, sheet));
  return false;
}

// Sheets of different styles cannot be merged: a PyTorch-trace
// kernel_summary is keyed by "Kernel name", a rocprof-style one by "name".
// An error for a group chosen by name, a note under "all".
bool keys_everywhere(const std::vector<NamedReport>& reports, const std::vector<Table>& tables,
                     const std::vector<std::string>& keys, const CompareOptions& options,
                     const std::string& group, std::vector<std::string>& notes) {
  for (size_t i = 0; i < tables.size(); ++i)
    for (const auto& k : keys) {
      if (tables[i].col(k) >= 0) continue;
      std::string why = describe(reports[i]) + " has no column '" + k +
                        "' to match rows on (is one report PyTorch-style and the other "
                        "kernel-only/rocprof-style?)";
      if (named(options, group))
        throw std::runtime_error("sheet '" + tables[i].name + "' of " + why);
      notes.push_back("sheet '" + tables[i].name + "' skipped: " + why);
      return false;
    }
  return true;
}

void drop_columns(Table& table, const std::vector<std::string>& names) {
  std::vector<size_t> keep;
  for (size_t c = 0; c < table.columns.size(); ++c)
    if (std::find(names.begin(), names.end(), table.columns[c]) == names.end()) keep.push_back(c);
  if (keep.size() == table.columns.size()) return;
  table = table.select_columns(keep);
}

Table prefix_columns(Table table, const std::string& tag, const std::vector<std::string>& keys) {
  for (auto& c : table.columns)
    if (std::find(keys.begin(), keys.end(), c) == keys.end()) c = tag + "::" + c;
  return table;
}

// Python re.match(r".*__.*_diff|.*__.*_pct", col): "__" followed, anywhere
// later, by "_diff" or "_pct".
bool looks_like_diff_column(const std::string& col) {
  size_t p = col.find("__");
  if (p == std::string::npos) return false;
  return col.find("_diff", p + 2) != std::string::npos ||
         col.find("_pct", p + 2) != std::string::npos;
}

// The tag of a diff/pct column (Python re.search(r"__(.+?)_(diff|pct)$")),
// or "" when the column is not one.
std::string diff_column_tag(const std::string& col) {
  for (size_t p = col.find("__"); p != std::string::npos; p = col.find("__", p + 1)) {
    std::string rest = col.substr(p + 2);
    for (std::string suffix : {"_diff", "_pct"}) {
      if (rest.size() > suffix.size() &&
          rest.compare(rest.size() - suffix.size(), suffix.size(), suffix) == 0)
        return rest.substr(0, rest.size() - suffix.size());
    }
  }
  return "";
}

size_t require_column(const Table& table, const std::string& column, const std::string& what) {
  int c = table.col(column);
  if (c < 0) throw std::runtime_error(what + ": no column '" + column + "'");
  return static_cast<size_t>(c);
}

Cell subtract(const Cell& variant, const Cell& base) {
  if (!variant.is_number() || !base.is_number()) return Cell();
  if (variant.is_int() && base.is_int())
    return Cell(std::get<int64_t>(variant.v) - std::get<int64_t>(base.v));
  return Cell(variant.number() - base.number());
}

Cell percent_of(const Cell& diff, const Cell& base) {
  if (!diff.is_number() || !base.is_number() || base.number() == 0) return Cell();
  return Cell(100.0 * (diff.number() / base.number()));
}

// Adds "<d>__<tag>_diff" / "<d>__<tag>_pct" for every diff column and variant.
void add_diff_columns(Table& merged, const std::vector<std::string>& tags,
                      const std::vector<std::string>& diff_cols, const std::string& sheet) {
  for (const auto& d : diff_cols) {
    size_t base = require_column(merged, tags[0] + "::" + d,
                                 "sheet '" + sheet + "' of report '" + tags[0] + "'");
    for (size_t t = 1; t < tags.size(); ++t) {
      size_t var = require_column(merged, tags[t] + "::" + d,
                                  "sheet '" + sheet + "' of report '" + tags[t] + "'");
      merged.columns.push_back(d + "__" + tags[t] + "_diff");
      merged.columns.push_back(d + "__" + tags[t] + "_pct");
      for (auto& row : merged.rows) {
        Cell diff = subtract(row[var], row[base]);
        Cell pct = percent_of(diff, row[base]);
        row.push_back(diff);
        row.push_back(pct);
      }
    }
  }
}

Table reorder_columns(const Table& table, const std::vector<std::string>& keys) {
  std::vector<size_t> order;
  for (const auto& k : keys) order.push_back(static_cast<size_t>(table.col(k)));
  auto is_key = [&](const std::string& c) {
    return std::find(keys.begin(), keys.end(), c) != keys.end();
  };
  for (size_t c = 0; c < table.columns.size(); ++c)
    if (!is_key(table.columns[c]) && looks_like_diff_column(table.columns[c])) order.push_back(c);
  for (size_t c = 0; c < table.columns.size(); ++c)
    if (!is_key(table.columns[c]) && !looks_like_diff_column(table.columns[c])) order.push_back(c);
  return table.select_columns(order);
}

// TraceLens build_df_dff: prefix, outer-merge, diff/pct columns, reorder.
Table build_diff(const std::vector<Table>& tables, const std::vector<std::string>& tags,
                 const std::vector<std::string>& keys, const std::vector<std::string>& diff_cols,
                 MergeOrder order) {
  std::string sheet = tables[0].name;
  Table merged = prefix_columns(tables[0], tags[0], keys);
  for (size_t i = 1; i < tables.size(); ++i)
    merged = frame::outer_merge(merged, prefix_columns(tables[i], tags[i], keys), keys, order);
  merged.name = sheet;
  add_diff_columns(merged, tags, diff_cols, sheet);
  frame::materialize_float_columns(merged);
  return reorder_columns(merged, keys);
}

Table sorted_descending(const Table& table, const std::string& column) {
  size_t c = require_column(table, column, "sheet '" + table.name + "'");
  return frame::take_rows(table, frame::argsort_descending(frame::numeric_column(table, c)));
}

std::vector<Table> load_all(const std::vector<NamedReport>& reports, const std::string& sheet) {
  std::vector<Table> tables;
  for (const auto& r : reports) tables.push_back(require_sheet(r, sheet));
  return tables;
}

std::vector<std::string> tags_of(const std::vector<NamedReport>& reports) {
  std::vector<std::string> tags;
  for (const auto& r : reports) tags.push_back(r.tag);
  return tags;
}

// ops_summary / kernel_summary: one merged table sorted by the baseline
// (nothing when the reports' sheets do not share their key column).
std::optional<Table> compare_summary(const std::vector<NamedReport>& reports,
                                     const std::string& sheet, const CompareOptions& options,
                                     std::vector<std::string>& notes) {
  std::vector<Table> tables = load_all(reports, sheet);
  const SheetConfig* config = sheet == "ops_summary" ? &kOpsSummary : &kKernelSummary;
  if (sheet == "kernel_summary" && tables[0].col(config->keys[0]) < 0)
    config = &kKernelSummaryLegacy;
  if (!keys_everywhere(reports, tables, config->keys, options, sheet, notes)) return std::nullopt;
  for (size_t i = 0; i < tables.size(); ++i) {
    auto drops = config->cols_to_delete;
    if (i > 0) drops.push_back("Cumulative Percentage (%)");
    drop_columns(tables[i], drops);
  }
  auto tags = tags_of(reports);
  Table merged = build_diff(tables, tags, config->keys, config->diff_cols, options.merge_order);
  Table result = sorted_descending(merged, tags[0] + "::" + config->sort_col);
  result.name = sheet;
  return result;
}

// Keeps keys, the columns of `kept` tags and the diff/pct columns of those
// tags, then drops all-missing columns (TraceLens _strip_other_tags).
Table strip_other_tags(const Table& table, const std::set<std::string>& kept) {
  std::vector<std::string> drop;
  for (const auto& col : table.columns) {
    std::string diff_tag = diff_column_tag(col);
    size_t sep = col.find("::");
    if (sep == std::string::npos && diff_tag.empty()) continue;
    std::string tag = sep != std::string::npos ? col.substr(0, sep) : diff_tag;
    if (!kept.count(tag)) drop.push_back(col);
  }
  Table out = table;
  drop_columns(out, drop);
  frame::drop_all_missing_columns(out);
  return out;
}

Table select_sorted(const Table& merged, const std::vector<size_t>& rows,
                    const std::string& sort_column, const std::string& name) {
  Table subset = frame::take_rows(merged, rows);
  Table sorted = sorted_descending(subset, sort_column);
  sorted.name = name;
  return sorted;
}

// TraceLens split_df_diff: per variant, rows present in both / only the
// baseline / only the variant (judged by the first diff column).
void split_diff(const Table& merged, const std::string& name, const std::vector<std::string>& tags,
                const std::string& diff_col, const std::string& sort_col, std::vector<Table>& out) {
  const std::string& base = tags[0];
  size_t base_c = require_column(merged, base + "::" + diff_col, "sheet '" + name + "'");
  for (size_t t = 1; t < tags.size(); ++t) {
    const std::string& tag = tags[t];
    size_t var_c = require_column(merged, tag + "::" + diff_col, "sheet '" + name + "'");
    std::vector<size_t> both, base_only, var_only;
    for (size_t r = 0; r < merged.rows.size(); ++r) {
      bool has_base = !merged.rows[r][base_c].missing();
      bool has_var = !merged.rows[r][var_c].missing();
      if (has_base && has_var) both.push_back(r);
      if (has_base && !has_var) base_only.push_back(r);
      if (!has_base && has_var) var_only.push_back(r);
    }
    out.push_back(strip_other_tags(
        select_sorted(merged, both, base + "::" + sort_col, name + "_intersect_" + tag),
        {base, tag}));
    out.push_back(strip_other_tags(
        select_sorted(merged, base_only, base + "::" + sort_col, name + "_only_baseline_" + tag),
        {base}));
    out.push_back(strip_other_tags(
        select_sorted(merged, var_only, tag + "::" + sort_col, name + "_only_variant_" + tag),
        {tag}));
  }
}

void compare_main_sheets(const std::vector<NamedReport>& reports, const CompareOptions& options,
                         CompareResult& result) {
  auto tags = tags_of(reports);
  for (const auto& [sheet, config] : main_sheets()) {
    if (!sheet_in_every_report(reports, sheet, result.notes)) continue;
    std::vector<Table> tables = load_all(reports, sheet);
    if (!keys_everywhere(reports, tables, config.keys, options, "ops_all", result.notes)) continue;
    Table merged = build_diff(tables, tags, config.keys, config.diff_cols, options.merge_order);
    split_diff(merged, sheet, tags, config.diff_cols[0], config.sort_col, result.tables);
  }
}

std::vector<std::string> param_columns(const Table& table) {
  std::vector<std::string> params;
  for (const auto& c : table.columns)
    if (c.rfind("param:", 0) == 0) params.push_back(c);
  return params;
}

void compare_roofline_sheets(const std::vector<NamedReport>& reports, const CompareOptions& options,
                             CompareResult& result) {
  auto tags = tags_of(reports);
  for (const auto& [sheet, short_name] : kRooflineSheets) {
    if (!sheet_in_every_report(reports, sheet, result.notes)) continue;
    std::vector<Table> tables = load_all(reports, sheet);
    for (size_t i = 1; i < tables.size(); ++i) drop_columns(tables[i], kRooflineVariantDrops);
    // Keys: name + the param columns every report has, in byte order.
    std::vector<std::string> common = param_columns(tables[0]);
    for (size_t i = 1; i < tables.size(); ++i) {
      auto other = param_columns(tables[i]);
      std::erase_if(common, [&](const std::string& c) {
        return std::find(other.begin(), other.end(), c) == other.end();
      });
    }
    std::sort(common.begin(), common.end());
    std::vector<std::string> keys = {"name"};
    keys.insert(keys.end(), common.begin(), common.end());
    bool any_empty = std::any_of(tables.begin(), tables.end(), [](const Table& t) {
      return t.rows.empty() || t.columns.empty();
    });
    if (any_empty) {
      result.notes.push_back("roofline sheet '" + sheet +
                             "' skipped: empty in at least one report");
      continue;
    }
    if (!keys_everywhere(reports, tables, keys, options, "roofline", result.notes)) continue;
    Table merged = build_diff(tables, tags, keys, kRooflineDiffCols, options.merge_order);
    split_diff(merged, short_name, tags, kRooflineDiffCols[0], "Kernel Time (µs)_sum",
               result.tables);
  }
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ", ") + i;
  return out;
}

// Why nothing was compared: each report's sheets, so the user sees the mismatch.
std::string nothing_shared(const std::vector<NamedReport>& reports, const CompareOptions& options) {
  std::string text = describe(reports[0]);
  for (size_t i = 1; i < reports.size(); ++i) text += " and " + describe(reports[i]);
  text += " have no sheet both sides share (sheet groups: " + join(options.sheet_groups) + ")";
  for (const auto& r : reports) {
    std::vector<std::string> names;
    for (const auto& t : r.sheets) names.push_back(t.name);
    text += "; '" + r.tag + "' has " + (names.empty() ? "no sheets" : join(names));
  }
  return text;
}

void check_inputs(const std::vector<NamedReport>& reports, const CompareOptions& options) {
  if (reports.size() < 2) throw std::runtime_error("need at least two reports to compare");
  std::set<std::string> seen;
  for (const auto& r : reports) {
    if (r.tag.empty()) throw std::runtime_error("report tags must not be empty");
    if (!seen.insert(r.tag).second)
      throw std::runtime_error("report tags must be unique; '" + r.tag + "' is used twice");
  }
  const auto& groups = compare_sheet_groups();
  for (const auto& g : options.sheet_groups)
    if (std::find(groups.begin(), groups.end(), g) == groups.end())
      throw std::runtime_error("unknown sheet group '" + g +
                               "' (use gpu_timeline, ops_summary, kernel_summary, ops_all, "
                               "roofline or all)");
}

// A sheet read back from CSV text, typed as pandas read_csv types it; a
// zero-byte or header-less file is an empty sheet.
Table typed_sheet(Table t) {
  if (t.columns.size() == 1 && t.columns[0].empty() && t.rows.empty()) t.columns.clear();
  frame::infer_column_types(t);
  return t;
}

}  // namespace

const Table* NamedReport::sheet(const std::string& name) const {
  for (const auto& t : sheets)
    if (t.name == name) return &t;
  return nullptr;
}

const Table* CompareResult::table(const std::string& name) const {
  for (const auto& t : tables)
    if (t.name == name) return &t;
  return nullptr;
}

const std::vector<std::string>& compare_sheet_groups() {
  static const std::vector<std::string> groups = {"gpu_timeline", "ops_summary", "kernel_summary",
                                                  "ops_all",      "roofline",    "all"};
  return groups;
}

CompareResult compare_reports(const std::vector<NamedReport>& reports,
                              const CompareOptions& options) {
  check_inputs(reports, options);
  CompareResult result;
  auto tags = tags_of(reports);
  if (wants(options, "gpu_timeline") &&
      sheet_everywhere(reports, options, "gpu_timeline", "gpu_timeline", result.notes)) {
    std::vector<Table> tables = load_all(reports, "gpu_timeline");
    if (keys_everywhere(reports, tables, {"type"}, options, "gpu_timeline", result.notes)) {
      Table t = build_diff(tables, tags, {"type"}, {"time ms"}, options.merge_order);
      t.name = "gpu_timeline";
      result.tables.push_back(std::move(t));
    }
  }
  for (const std::string sheet : {"ops_summary", "kernel_summary"}) {
    if (!wants(options, sheet) || !sheet_everywhere(reports, options, sheet, sheet, result.notes))
      continue;
    if (auto t = compare_summary(reports, sheet, options, result.notes))
      result.tables.push_back(std::move(*t));
  }
  if (wants(options, "ops_all")) compare_main_sheets(reports, options, result);
  if (wants(options, "roofline")) compare_roofline_sheets(reports, options, result);
  if (result.tables.empty()) throw std::runtime_error(nothing_shared(reports, options));
  return result;
}

NamedReport load_report_dir(const std::string& dir, const std::string& tag) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw std::runtime_error(dir + ": not a directory of report CSVs");
  NamedReport report;
  report.tag = tag;
  report.source = dir;
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.is_regular_file() && entry.path().extension() == ".csv")
      files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    note_input_file(f);  // never a target of this process's writes
    report.sheets.push_back(typed_sheet(read_csv_file(f.string())));
  }
  return report;
}

NamedReport load_report_xlsx(const std::string& path, const std::string& tag) {
  NamedReport report;
  report.tag = tag;
  report.source = path;
  note_input_file(path);
  report.sheets = read_xlsx_workbook(path);
  // Cells come back as text, as from a CSV file: pandas read_excel then
  // types each column as read_csv does, whole-number floats as ints.
  for (auto& t : report.sheets) frame::infer_column_types(t);
  return report;
}

// compare's one CSV text round trip, kept textual on purpose: a report side
// built from a trace must hold exactly the cells the same report has when read
// from its CSV files, including what the file format itself does (blank lines
// of one-column sheets dropped, the second header row of a two-level sheet
// read as a data row), which report/pandas_roundtrip's in-memory typing does
// not model.
void normalize_report(NamedReport& report) {
  for (auto& t : report.sheets) t = typed_sheet(parse_csv(t.to_csv(), t.name));
}

std::vector<std::string> write_compare_csvs(const CompareResult& result, const std::string& dir) {
  auto dir_lock = lock_output_dir(dir);
  std::vector<std::string> paths;
  for (const auto& t : result.tables) {
    std::string path = (std::filesystem::path(dir) / (t.name + ".csv")).string();
    write_file_atomic(path, t.to_csv());
    paths.push_back(path);
  }
  return paths;
}

}  // namespace jarvis
