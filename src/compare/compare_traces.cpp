#include "compare/compare_traces.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <stdexcept>

#include "explore/rocprof_trace.h"
#include "report/report.h"
#include "rocprof/report.h"

namespace jarvis {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The arch to use for one side: explicit name/path, "none", or detected.
std::string arch_choice(const std::string& requested, const Trace* trace) {
  if (requested == "none") return "";
  if (!requested.empty()) return requested;
  return trace ? detect_arch_name(*trace) : "";
}

// Runs `read` for the side called `role` ("REF" / "TARGET"), naming the side
// in the message of a plain std::runtime_error; trace and arch errors keep
// their type (callers tell them apart) and already name their file.
template <class F>
PreparedReport for_side(const std::string& role, F&& read) {
  try {
    return read();
  } catch (const TraceError&) {
    throw;
  } catch (const perf::GpuArchError&) {
    throw;
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(role + ": " + e.what());
  }
}

PreparedReport side_from_path(TraceStore& store, const std::string& path, const std::string& tag,
                              const std::string& requested_arch, const std::string& role) {
  return for_side(role, [&] {
    CompareInput input = detect_compare_input(path);
    if (input.kind != CompareInputKind::Trace)
      return prepare_report_input(input, tag, requested_arch);
    auto loaded = store.load(input.path);
    return prepare_loaded_trace(*loaded.entry, tag, requested_arch);
  });
}

// TraceLens's rocprof report (default sheets, TraceLens's units) of a
// rocprofv3 trace, cached on the entry; such a trace has no op tree.
std::shared_ptr<const Report> rocprof_report(const LoadedTrace& entry,
                                             const rocprof::Profile& profile) {
  return entry.cached<Report>("compare:rocprof_report", [&] {
    Report report;
    report.gpu_only = true;
    report.tables = rocprof::report_tables(profile, rocprof::ReportOptions{});
    return report;
  });
}

json number_or_null(const Table& t, size_t row, const std::string& column) {
  int c = t.col(column);
  if (c < 0) return json();
  const Cell& cell = t.rows[row][static_cast<size_t>(c)];
  if (!cell.is_number() || !std::isfinite(cell.number())) return json();
  return cell.number();
}

double number_or_zero(const Table& t, size_t row, const std::string& column) {
  json j = number_or_null(t, row, column);
  return j.is_number() ? j.get<double>() : 0.0;
}

json gpu_timeline_side_by_side(const Table& t, const std::string& ref, const std::string& tgt) {
  json rows = json::array();
  for (size_t r = 0; r < t.rows.size(); ++r) {
    const Cell& type = t.rows[r][0];
    rows.push_back({{"type", type.is_text() ? type.text() : ""},
                    {"reference_ms", number_or_null(t, r, ref + "::time ms")},
                    {"target_ms", number_or_null(t, r, tgt + "::time ms")},
                    {"diff_ms", number_or_null(t, r, "time ms__" + tgt + "_diff")},
                    {"diff_pct", number_or_null(t, r, "time ms__" + tgt + "_pct")},
                    {"reference_percent", number_or_null(t, r, ref + "::percent")},
                    {"target_percent", number_or_null(t, r, tgt + "::percent")}});
  }
  return rows;
}

// The top_n ops by the larger of their two times, so ops present on only
// one side still show when they matter.
json ops_summary_side_by_side(const Table& t, const std::string& ref, const std::string& tgt,
                              size_t top_n) {
  const std::string ms = "total_direct_kernel_time_ms";
  std::vector<size_t> order(t.rows.size());
  for (size_t r = 0; r < order.size(); ++r) order[r] = r;
  auto weight = [&](size_t r) {
    return std::max(number_or_zero(t, r, ref + "::" + ms), number_or_zero(t, r, tgt + "::" + ms));
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return weight(a) > weight(b); });
  if (top_n && order.size() > top_n) order.resize(top_n);
  json rows = json::array();
  for (size_t r : order) {
    const Cell& name = t.rows[r][0];
    rows.push_back({{"name", name.is_text() ? name.text() : ""},
                    {"reference_ms", number_or_null(t, r, ref + "::" + ms)},
                    {"target_ms", number_or_null(t, r, tgt + "::" + ms)},
                    {"diff_ms", number_or_null(t, r, ms + "__" + tgt + "_diff")},
                    {"diff_pct", number_or_null(t, r, ms + "__" + tgt + "_pct")},
                    {"reference_count", number_or_null(t, r, ref + "::Count")},
                    {"target_count", number_or_null(t, r, tgt + "::Count")},
                    {"reference_percent", number_or_null(t, r, ref + "::Percentage (%)")},
                    {"target_percent", number_or_null(t, r, tgt + "::Percentage (%)")}});
  }
  return rows;
}

json arch_name(const std::optional<GpuArch>& arch) {
  return arch ? json(arch->name) : json();
}

void write_outputs(TraceComparison& c, const std::string& dir) {
  c.files = write_compare_csvs(c.result, dir);
  if (!c.hardware_gaps) return;
  std::string csv = (fs::path(dir) / "hardware_gap_analysis.csv").string();
  write_file_atomic(csv, c.hardware_gaps->table().to_csv());
  std::string js = (fs::path(dir) / "hardware_gap_analysis.json").string();
  write_file_atomic(js, c.hardware_gaps->to_json(0, true).dump(2) + "\n");
  c.files.push_back(csv);
  c.files.push_back(js);
}

}  // namespace

PreparedReport prepare_loaded_trace(const LoadedTrace& entry, const std::string& tag,
                                    const std::string& requested_arch) {
  std::string arch = arch_choice(requested_arch, &entry.trace());
  PreparedReport side;
  if (!arch.empty()) side.arch = perf::load_gpu_arch(arch);
  auto profile = analysis::rocprof_profile(entry);
  auto report =
      profile ? rocprof_report(entry, *profile) : trace_report(entry, arch.empty() ? "none" : arch);
  side.report = NamedReport{tag, report->tables, entry.path()};
  normalize_report(side.report);
  return side;
}

PreparedReport prepare_report_dir(const std::string& dir, const std::string& tag,
                                  const std::string& requested_arch) {
  return prepare_report_input({CompareInputKind::ReportDir, dir}, tag, requested_arch);
}

PreparedReport prepare_report_xlsx(const std::string& path, const std::string& tag,
                                   const std::string& requested_arch) {
  return prepare_report_input({CompareInputKind::ReportXlsx, path}, tag, requested_arch);
}

PreparedReport prepare_report_input(const CompareInput& input, const std::string& tag,
                                    const std::string& requested_arch) {
  if (input.kind == CompareInputKind::Trace)
    throw std::invalid_argument(input.path + ": a trace, not a report");
  PreparedReport side;
  side.report = input.kind == CompareInputKind::ReportXlsx ? load_report_xlsx(input.path, tag)
                                                           : load_report_dir(input.path, tag);
  std::string arch = arch_choice(requested_arch, nullptr);
  if (!arch.empty()) side.arch = perf::load_gpu_arch(arch);
  return side;
}

TraceComparison compare_prepared_reports(NamedReport reference, NamedReport target,
                                         std::optional<GpuArch> arch_reference,
                                         std::optional<GpuArch> arch_target,
                                         const CompareTracesOptions& options) {
  TraceComparison c;
  c.reference = std::move(reference);
  c.target = std::move(target);
  c.arch_reference = std::move(arch_reference);
  c.arch_target = std::move(arch_target);
  c.result = compare_reports({c.reference, c.target}, options.compare);
  c.notes = c.result.notes;
  if (!c.arch_reference || !c.arch_target) {
    c.notes.push_back("hardware gap analysis skipped: no GPU arch known for " +
                      std::string(!c.arch_reference ? "the reference" : "the target") +
                      " (give arch_reference / arch_target)");
  } else if (!c.reference.sheet("unified_perf_summary") ||
             !c.target.sheet("unified_perf_summary")) {
    c.notes.push_back("hardware gap analysis skipped: unified_perf_summary missing from a report");
  } else {
    c.hardware_gaps = analyze_hardware_gaps(c.reference, c.target, *c.arch_reference,
                                            *c.arch_target, options.gaps);
  }
  if (!options.output_dir.empty()) write_outputs(c, options.output_dir);
  return c;
}

TraceComparison compare_loaded_traces(const LoadedTrace& reference, const LoadedTrace& target,
                                      const CompareTracesOptions& options) {
  PreparedReport ref =
      prepare_loaded_trace(reference, options.reference_tag, options.arch_reference);
  PreparedReport tgt = prepare_loaded_trace(target, options.target_tag, options.arch_target);
  return compare_prepared_reports(std::move(ref.report), std::move(tgt.report), std::move(ref.arch),
                                  std::move(tgt.arch), options);
}

TraceComparison compare_traces(const std::string& reference_path, const std::string& target_path,
                               const CompareTracesOptions& options) {
  TraceStore store;
  PreparedReport ref =
      side_from_path(store, reference_path, options.reference_tag, options.arch_reference, "REF");
  PreparedReport tgt =
      side_from_path(store, target_path, options.target_tag, options.arch_target, "TARGET");
  return compare_prepared_reports(std::move(ref.report), std::move(tgt.report), std::move(ref.arch),
                                  std::move(tgt.arch), options);
}

json TraceComparison::summary(size_t top_n) const {
  const std::string& ref = reference.tag;
  const std::string& tgt = target.tag;
  json sheets = json::array();
  for (const auto& t : result.tables) sheets.push_back({{"name", t.name}, {"rows", t.rows.size()}});
  const Table* timeline = result.table("gpu_timeline");
  const Table* ops = result.table("ops_summary");
  return {{"reference", {{"tag", ref}, {"arch", arch_name(arch_reference)}}},
          {"target", {{"tag", tgt}, {"arch", arch_name(arch_target)}}},
          {"gpu_timeline", timeline ? gpu_timeline_side_by_side(*timeline, ref, tgt) : json()},
          {"ops_summary", ops ? ops_summary_side_by_side(*ops, ref, tgt, top_n) : json()},
          {"hardware_gaps", hardware_gaps ? hardware_gaps->to_json(top_n) : json()},
          {"sheets", sheets},
          {"notes", notes},
          {"files", files}};
}

}  // namespace jarvis
