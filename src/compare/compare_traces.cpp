#include "compare/compare_traces.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "critical_path/critical_path.h"
#include "explore/rocprof_trace.h"
#include "memory/memory.h"
#include "nsys/export.h"
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

// The share of the GPU span each side sits idle, from gpu_timeline's
// idle_time row (TraceLens's percent of total_time); nullopt without it.
std::optional<double> idle_pct(const Table& t, const std::string& tag) {
  for (size_t r = 0; r < t.rows.size(); ++r) {
    const Cell& type = t.rows[r][0];
    if (!type.is_text() || type.text() != "idle_time") continue;
    json pct = number_or_null(t, r, tag + "::percent");
    if (pct.is_number()) return pct.get<double>();
  }
  return std::nullopt;
}

// What the comparison can say of the steps, in one line: where a side's GPU
// sits idle most of the time, its step is set by the host (launches,
// Python, syncs), and neither a faster GPU nor faster kernels shorten it by
// more than its busy time; the kernel differences below are then not the
// step's.
constexpr double kHostBoundIdlePct = 50.0;

json step_verdict(const Table* timeline, const std::string& ref, const std::string& tgt,
                  const std::optional<StepBound>& ref_step,
                  const std::optional<StepBound>& tgt_step) {
  if (!timeline) return json();
  const auto ref_idle = idle_pct(*timeline, ref), tgt_idle = idle_pct(*timeline, tgt);
  if (!ref_idle || !tgt_idle) return json();
  // The critical path knows better than the idle share (GPT-2 training is
  // host-bound at a third idle: its GPU catches up at every optimizer step).
  const bool from_path = ref_step && tgt_step;
  const bool ref_host = from_path ? ref_step->host_bound() : *ref_idle >= kHostBoundIdlePct;
  const bool tgt_host = from_path ? tgt_step->host_bound() : *tgt_idle >= kHostBoundIdlePct;
  std::string text;
  if (ref_host && tgt_host)
    text = fmt::format(
        "Both runs' steps are host-bound (GPU idle {} {:.1f}%, {} {:.1f}%), so a faster GPU or "
        "faster kernels shorten them by at most their busy time; "
        "compare the host side (launch overhead, Python, syncs) before the kernels.",
        ref, *ref_idle, tgt, *tgt_idle);
  else if (ref_host || tgt_host)
    text = fmt::format(
        "{}'s step is host-bound (GPU idle {:.1f}%; {} {:.1f}%), so the kernel differences below "
        "reach its step only after its host side is fixed.",
        ref_host ? ref : tgt, ref_host ? *ref_idle : *tgt_idle, ref_host ? tgt : ref,
        ref_host ? *tgt_idle : *ref_idle);
  else
    text = fmt::format(
        "Both runs' steps are GPU-bound ({} {:.1f}% idle, {} {:.1f}%): kernel differences carry "
        "to the step.",
        ref, *ref_idle, tgt, *tgt_idle);
  return {{"reference_idle_pct", *ref_idle},
          {"target_idle_pct", *tgt_idle},
          {"reference_host_bound", ref_host},
          {"target_host_bound", tgt_host},
          {"method", from_path ? "critical path: most iterations bound by the host"
                               : "GPU idle at least 50% of the span"},
          {"text", text}};
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

namespace {

// The critical path's verdict on a trace's steps; none when no dependency
// graph can be built (no launches, no GPU work).
std::optional<StepBound> step_bound(const LoadedTrace& entry) {
  auto bound = entry.cached<std::optional<StepBound>>(
      "compare:step_bound", [&]() -> std::optional<StepBound> {
        try {
          auto tree = trace_call_tree(entry);
          const auto graph = critical_path::build_graph({{&entry.trace(), tree.get(), -1}});
          const auto a = critical_path::analyse(graph);
          StepBound b;
          b.iterations = a.iterations.size();
          for (const auto& it : a.iterations)
            b.host_bound_iterations += it.bound_by == critical_path::kBoundByHost;
          b.step_time_us = a.step_time_us;
          return b.iterations ? std::optional(b) : std::nullopt;
        } catch (const std::runtime_error&) {  // CriticalPathError, CollectiveError
          return std::nullopt;
        }
      });
  return *bound;
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
  if (nsys::is_nsys_trace(entry.trace())) side.capture = entry;
  if (!profile) {
    side.step = step_bound(entry);
    if (auto recorded = memory::analyse_memory_if_recorded(entry.trace()))
      side.memory = std::make_shared<const memory::MemoryAnalysis>(std::move(*recorded));
  }
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

namespace {

// The headline when the runs differ in dtype (an fp32 run against a bf16
// one): kernel gaps of 8-10x are then the dtype's, not the platform's.
std::string dtype_change_note(const HardwareGapAnalysis& gaps) {
  const auto changes = gaps.dtype_changes();
  if (changes.empty()) return "";
  std::map<std::string, int> pairs;
  double reference_us = 0, target_us = 0;
  const HardwareGapRow* largest = changes.front();
  for (const HardwareGapRow* r : changes) {
    pairs[r->input_type + " -> " + r->input_type_target]++;
    reference_us += r->sum_us_reference;
    target_us += r->sum_us_target;
    if (r->sum_us_reference > largest->sum_us_reference) largest = r;
  }
  std::string kinds;
  for (const auto& [pair, n] : pairs)
    kinds += fmt::format("{}{} ({} ops)", kinds.empty() ? "" : "; ", pair, n);
  std::string expected =
      largest->expected_ratio
          ? fmt::format(", the two dtypes' rooflines expect {:.2f}x", *largest->expected_ratio)
          : "";
  return fmt::format(
      "the runs differ in dtype: {} ops changed input types ({}), {:.2f} ms of reference kernel "
      "time -> {:.2f} ms on the target; the largest, {} {}, {:.2f} -> {:.2f} ms (measured "
      "{:.2f}x{}). Their rows in hardware_gap_analysis pair the two dtypes; compare runs of "
      "one dtype to judge the platform",
      changes.size(), kinds, reference_us / 1e3, target_us / 1e3, largest->name,
      largest->input_dims, largest->sum_us_reference / 1e3, largest->sum_us_target / 1e3,
      largest->measured_ratio, expected);
}

}  // namespace

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
    if (std::string dtype = dtype_change_note(*c.hardware_gaps); !dtype.empty())
      c.notes.insert(c.notes.begin(), std::move(dtype));
  }
  if (!options.output_dir.empty()) write_outputs(c, options.output_dir);
  return c;
}

namespace {

// The trace-only parts: what bounds each step, and the memory diff when
// both traces recorded memory.
constexpr size_t kMemoryDiffRows = 10;

TraceComparison with_steps(TraceComparison c, const PreparedReport& ref, const PreparedReport& tgt,
                           const CompareTracesOptions& options) {
  add_step_views(c, ref, tgt, options);
  c.step_reference = ref.step;
  c.step_target = tgt.step;
  if (ref.memory && tgt.memory)
    c.memory_diff =
        memory::memory_diff_json(memory::diff_memory(*ref.memory, *tgt.memory), kMemoryDiffRows);
  return c;
}

}  // namespace

TraceComparison compare_loaded_traces(const LoadedTrace& reference, const LoadedTrace& target,
                                      const CompareTracesOptions& options) {
  PreparedReport ref =
      prepare_loaded_trace(reference, options.reference_tag, options.arch_reference);
  PreparedReport tgt = prepare_loaded_trace(target, options.target_tag, options.arch_target);
  return with_steps(compare_prepared_reports(std::move(ref.report), std::move(tgt.report),
                                             std::move(ref.arch), std::move(tgt.arch), options),
                    ref, tgt, options);
}

TraceComparison compare_traces(const std::string& reference_path, const std::string& target_path,
                               const CompareTracesOptions& options) {
  TraceStore store;
  PreparedReport ref =
      side_from_path(store, reference_path, options.reference_tag, options.arch_reference, "REF");
  PreparedReport tgt =
      side_from_path(store, target_path, options.target_tag, options.arch_target, "TARGET");
  return with_steps(compare_prepared_reports(std::move(ref.report), std::move(tgt.report),
                                             std::move(ref.arch), std::move(tgt.arch), options),
                    ref, tgt, options);
}

void add_step_views(TraceComparison& c, const PreparedReport& ref, const PreparedReport& tgt,
                    const CompareTracesOptions& options) {
  if (!ref.capture || !tgt.capture) return;
  auto views = [&](const LoadedTrace& entry) {
    auto tree = trace_call_tree(entry);
    return entry.cached<std::optional<StepViews>>("compare:step_views:" + options.iterations, [&] {
      return step_views(entry.trace(), *tree, options.iterations);
    });
  };
  try {
    auto r = views(*ref.capture), t = views(*tgt.capture);
    if (!*r || !*t) return;
    c.step_views = compare_step_views(**r, **t, c.reference.tag, c.target.tag, options.iteration);
  } catch (const std::invalid_argument& e) {
    c.notes.push_back(fmt::format("step views skipped: {}", e.what()));
    return;
  }
  if (!options.output_dir.empty()) {
    std::string file = (fs::path(options.output_dir) / "step_views.json").string();
    write_file_atomic(file, c.step_views.dump(2) + "\n");
    c.files.push_back(file);
  }
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
          {"verdict", step_verdict(timeline, ref, tgt, step_reference, step_target)},
          {"memory", memory_diff},
          {"step_views", step_views},
          {"gpu_timeline", timeline ? gpu_timeline_side_by_side(*timeline, ref, tgt) : json()},
          {"ops_summary", ops ? ops_summary_side_by_side(*ops, ref, tgt, top_n) : json()},
          {"hardware_gaps", hardware_gaps ? hardware_gaps->to_json(top_n) : json()},
          {"sheets", sheets},
          {"notes", notes},
          {"files", files}};
}

}  // namespace jarvis
