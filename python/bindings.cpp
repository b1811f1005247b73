// jarvis._jarvis: the engine behind `import jarvis` (python/jarvis/__init__.py).
//
// Sheets cross the boundary as the exact CSV bytes `jarvis report` writes
// (Table::to_csv); the Python side reads them with pandas.read_csv, so a
// DataFrame equals the CLI's CSV read back by pandas, cell for cell and
// dtype for dtype (pandas' own inference of ints, floats, NaN and text).
// Every engine call runs with the GIL released; engine errors become Python
// exceptions (see translate_errors).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "compare/compare_traces.h"
#include "explore/trace_store.h"
#include "insights/insights.h"
#include "memory/memory.h"
#include "perf/gpu_arch.h"
#include "report/report.h"
#include "rocprof/counters.h"
#include "rocprof/profile.h"
#include "rocprof/report.h"
#include "sql/sql.h"
#include "sweep/sweep.h"
#include "trace/loader.h"
#include "tree/call_tree.h"

namespace py = pybind11;
namespace fs = std::filesystem;

namespace jarvis::python {
namespace {

// A path that does not exist: FileNotFoundError, with the path as its
// `filename`, before the engine reports it in its own words.
class NotFound : public std::runtime_error {
 public:
  explicit NotFound(const std::string& path)
      : std::runtime_error("No such file or directory: " + path), path_(path) {}
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

void require_exists(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw NotFound(path);
}

// Bad input (a broken trace, an unknown arch, a bad layout) is the caller's
// ValueError; a missing file FileNotFoundError; file-system failures OSError.
// Anything else keeps pybind11's mapping (std::runtime_error: RuntimeError,
// e.g. "No GPU events found in the trace").
void translate_errors(std::exception_ptr error) {
  try {
    if (error) std::rethrow_exception(error);
  } catch (const NotFound& e) {
    py::object args = py::make_tuple(ENOENT, std::strerror(ENOENT), e.path());
    PyErr_SetObject(PyExc_FileNotFoundError, args.ptr());
  } catch (const TraceError& e) {
    PyErr_SetString(PyExc_ValueError, e.what());
  } catch (const perf::GpuArchError& e) {
    PyErr_SetString(PyExc_ValueError, e.what());
  } catch (const sweep::SweepError& e) {
    PyErr_SetString(PyExc_ValueError, e.what());
  } catch (const fs::filesystem_error& e) {
    PyErr_SetString(PyExc_OSError, e.what());
  }
}

// Tables as (sheet name, CSV bytes) pairs, in sheet order. Bytes, not str:
// pandas decodes them exactly as it decodes the CSV file.
using Sheets = std::vector<std::pair<std::string, py::bytes>>;

Sheets to_sheets(const std::vector<Table>& tables) {
  std::vector<std::pair<std::string, std::string>> texts;
  {
    py::gil_scoped_release release;
    for (const Table& t : tables) texts.emplace_back(t.name, t.to_csv());
  }
  Sheets out;
  for (auto& [name, text] : texts) out.emplace_back(name, py::bytes(text));
  return out;
}

// Report options given from Python (keyword arguments of jarvis.load_trace).
struct LoadSettings {
  std::optional<std::string> arch;  // nullopt: detect; "none": no arch
  bool include_python_frames = false;
  bool kernel_summary = true;
  bool short_kernel_study = true;
  double short_kernel_threshold_us = 10.0;
  int short_kernel_bins = 100;
  bool collective_analysis = true;
  std::optional<bool> rocprof;  // nullopt: detect by content
  bool kernel_details = false;
  std::optional<size_t> topk_kernels;
  bool fix_rocprof_units = false;
};

// What `jarvis info` prints, counted once at load.
struct TraceInfo {
  std::string path, platform, source, gpu;
  size_t events = 0, cpu_op = 0, python = 0, runtime = 0, kernels = 0, memcpy = 0, memset = 0;
  uint64_t json_bytes = 0;
};

TraceInfo count_events(const Trace& trace, bool rocprof) {
  size_t counts[16] = {};
  for (const Event& e : trace.events) counts[static_cast<size_t>(e.cat)]++;
  auto n = [&](Cat c) { return counts[static_cast<size_t>(c)]; };
  TraceInfo info;
  info.platform = platform_name(trace.platform);
  info.source = rocprof ? "rocprofv3" : "kineto";
  info.gpu = trace.gpu_name();
  info.events = trace.events.size();
  info.cpu_op = n(Cat::CpuOp);
  info.python = n(Cat::PythonFunction);
  info.runtime = n(Cat::CudaRuntime) + n(Cat::CudaDriver);
  info.kernels = n(Cat::Kernel);
  info.memcpy = n(Cat::GpuMemcpy);
  info.memset = n(Cat::GpuMemset);
  info.json_bytes = trace.json_bytes;
  return info;
}

void check_settings(const LoadSettings& s, bool rocprof) {
  if (s.short_kernel_bins < 1) throw std::invalid_argument("short_kernel_bins must be >= 1");
  if (s.topk_kernels && !s.kernel_details)
    throw std::invalid_argument("topk_kernels needs kernel_details=True");
  if (s.topk_kernels && *s.topk_kernels < 1)
    throw std::invalid_argument("topk_kernels must be >= 1");
  if (rocprof) {
    if ((s.arch && *s.arch != "none") || s.include_python_frames)
      throw std::invalid_argument("arch and include_python_frames do not apply to rocprofv3 input");
  } else if (s.kernel_details || s.topk_kernels || s.fix_rocprof_units) {
    throw std::invalid_argument(
        "kernel_details, topk_kernels and fix_rocprof_units apply to rocprofv3 input only");
  }
}

ReportOptions report_options(const LoadSettings& s) {
  ReportOptions o;
  o.kernel_summary = s.kernel_summary;
  o.short_kernel_study = s.short_kernel_study;
  o.short_kernel_threshold_us = s.short_kernel_threshold_us;
  o.short_kernel_bins = s.short_kernel_bins;
  o.include_python_frames = s.include_python_frames;
  o.collective_analysis = s.collective_analysis;
  return o;
}

rocprof::ReportOptions rocprof_options(const LoadSettings& s) {
  return rocprof::ReportOptions::from_shared(report_options(s), s.kernel_details, s.topk_kernels,
                                             s.fix_rocprof_units);
}

// One loaded trace (Kineto or rocprofv3) and its report, built on first use.
class LoadedFile {
 public:
  LoadedFile(std::string path, LoadSettings settings)
      : path_(std::move(path)), settings_(std::move(settings)) {
    require_exists(path_);
    rocprof_ = settings_.rocprof ? *settings_.rocprof : rocprof::is_rocprof_input(path_);
    check_settings(settings_, rocprof_);
    if (rocprof_) {
      profile_ = std::make_unique<rocprof::Profile>(rocprof::load_profile(path_));
      info_ = count_events(rocprof::to_trace(*profile_), true);
    } else {
      trace_ = std::make_unique<Trace>(load_trace(path_));
      info_ = count_events(*trace_, false);
      resolve_arch();
    }
    info_.path = path_;
  }

  const std::string& path() const { return path_; }
  bool is_rocprof() const { return rocprof_; }
  const TraceInfo& info() const { return info_; }
  const std::optional<GpuArch>& arch() const { return arch_; }
  const Trace& trace() const { return *trace_; }  // PyTorch traces only

  // The trace as the SQL engine reads it (a TraceStore entry: the event
  // store, call tree and report its tables bind), loaded on first use.
  const LoadedTrace& sql_trace() {
    std::lock_guard lock(mutex_);
    if (!sql_entry_) sql_entry_ = sql_store_.load(path_).entry;
    return *sql_entry_;
  }
  const rocprof::Profile* profile() const { return profile_.get(); }

  // Call with the GIL released: the first caller builds, the others wait.
  const Report& report() {
    std::lock_guard lock(mutex_);
    if (!report_) report_ = std::make_unique<Report>(build());
    return *report_;
  }

  std::vector<insights::Insight> insights() {
    if (rocprof_)
      throw std::invalid_argument("insights need a PyTorch profiler trace, not rocprofv3 output");
    std::lock_guard lock(mutex_);
    // Like `jarvis insights`: over the TraceLens call tree (no python frames).
    std::optional<CallTree> plain;
    if (settings_.include_python_frames) plain.emplace(*trace_);
    auto context =
        insights::make_context(*trace_, plain ? *plain : tree_locked(), arch_ ? &*arch_ : nullptr);
    return insights::run_insights(context);
  }

 private:
  // arch=None detects the bundled arch from the GPU name (as the MCP tools
  // and `jarvis report --html` do); "none" turns roofline columns off.
  void resolve_arch() {
    std::string name = settings_.arch ? *settings_.arch : detect_arch_name(*trace_);
    if (!name.empty() && name != "none") arch_ = perf::load_gpu_arch(name);
  }

  const CallTree& tree_locked() {
    if (!tree_)
      tree_ = std::make_unique<CallTree>(*trace_, TreeOptions{settings_.include_python_frames});
    return *tree_;
  }

  Report build() {
    Report report;
    if (rocprof_) {
      report.gpu_only = true;
      report.tables = rocprof::report_tables(*profile_, rocprof_options(settings_));
      return report;
    }
    ReportOptions o = report_options(settings_);
    o.arch = arch_ ? &*arch_ : nullptr;
    return build_report(*trace_, tree_locked(), o);
  }

  TraceStore sql_store_;
  std::shared_ptr<const LoadedTrace> sql_entry_;
  std::string path_;
  LoadSettings settings_;
  bool rocprof_ = false;
  std::unique_ptr<Trace> trace_;
  std::unique_ptr<rocprof::Profile> profile_;
  TraceInfo info_;
  std::optional<GpuArch> arch_;
  std::mutex mutex_;  // guards tree_ and report_
  std::unique_ptr<CallTree> tree_;
  std::unique_ptr<Report> report_;
};

using File = std::shared_ptr<LoadedFile>;

std::shared_ptr<LoadedFile> load(const std::string& path, const LoadSettings& settings) {
  py::gil_scoped_release release;
  return std::make_shared<LoadedFile>(path, settings);
}

const Report& report_of(LoadedFile& file) {
  py::gil_scoped_release release;
  return file.report();
}

py::dict info_dict(const LoadedFile& file) {
  const TraceInfo& i = file.info();
  py::dict d;
  d["path"] = i.path;
  d["platform"] = i.platform;
  d["source"] = i.source;
  d["gpu"] = i.gpu.empty() ? py::object(py::none()) : py::object(py::str(i.gpu));
  d["arch"] = file.arch() ? py::object(py::str(file.arch()->name)) : py::object(py::none());
  d["events"] = i.events;
  d["cpu_op"] = i.cpu_op;
  d["python"] = i.python;
  d["runtime"] = i.runtime;
  d["kernels"] = i.kernels;
  d["memcpy"] = i.memcpy;
  d["memset"] = i.memset;
  d["json_bytes"] = i.json_bytes;
  return d;
}

std::vector<std::string> sheet_names(LoadedFile& file) {
  std::vector<std::string> names;
  for (const Table& t : report_of(file).tables) names.push_back(t.name);
  return names;
}

py::bytes sheet_csv(LoadedFile& file, const std::string& name) {
  const Report& report = report_of(file);
  const Table* table = report.find(name);
  if (!table) {
    std::string known;
    for (const Table& t : report.tables) known += (known.empty() ? "" : ", ") + t.name;
    throw py::key_error("no sheet '" + name + "' in this report (sheets: " + known + ")");
  }
  std::string text;
  {
    py::gil_scoped_release release;
    text = table->to_csv();
  }
  return py::bytes(text);
}

// `jarvis report`'s DIR/rocprof_counters/ sheets: none without counters.
Sheets counter_sheets(const LoadedFile& file) {
  std::vector<Table> tables;
  if (const rocprof::Profile* profile = file.profile(); profile && !profile->counters.empty()) {
    py::gil_scoped_release release;
    tables = {rocprof::dispatch_counters_table(*profile),
              rocprof::kernel_counters_table(rocprof::kernel_counters(*profile))};
  }
  return to_sheets(tables);
}

// The insights as JSON text (`jarvis insights --json`'s array).
std::string insights_json(LoadedFile& file) {
  py::gil_scoped_release release;
  nlohmann::json all = nlohmann::json::array();
  for (const auto& i : file.insights()) all.push_back(insights::to_json(i));
  return all.dump();
}

// The device-memory analysis (`memory_summary`'s JSON) as text: a trace
// recorded without profile_memory=True raises ValueError naming the setting.
std::string memory_json(LoadedFile& file, const std::string& device, size_t max_rows,
                        size_t timeline_points) {
  if (file.is_rocprof())
    throw std::invalid_argument("memory needs a PyTorch profiler trace, not rocprofv3 output");
  py::gil_scoped_release release;
  const memory::MemoryAnalysis analysis = memory::analyse_memory(file.trace());
  memory::SummaryOptions options;
  options.device = device;
  options.max_rows = max_rows;
  options.timeline_points = timeline_points;
  return memory::memory_summary_json(analysis, options).dump();
}

// One SQL query over the trace (docs/sql.md): its rows as CSV bytes, and
// why they were cut ("" when whole).
std::pair<py::bytes, std::string> sql_csv(LoadedFile& file, const std::string& query,
                                          size_t max_rows, int64_t timeout_ms) {
  if (file.is_rocprof())
    throw std::invalid_argument("sql needs a PyTorch profiler trace, not rocprofv3 output");
  std::string text, truncation;
  {
    py::gil_scoped_release release;
    sql::QueryLimits limits;
    limits.max_rows = max_rows;
    limits.timeout_ms = timeout_ms;
    sql::QueryResult result = sql::run_query(file.sql_trace(), query, limits);
    text = result.table.to_csv();
    truncation = result.truncation;
  }
  return {py::bytes(text), truncation};
}

// ---- compare -------------------------------------------------------------------

// One side of jarvis.compare: a loaded trace, or a path (trace file or
// report directory) read as `jarvis compare` reads it.
using Side = std::variant<File, std::string>;

PreparedReport prepare_side(TraceStore& store, const Side& side, const std::string& tag,
                            const std::string& arch) {
  if (const File* loaded = std::get_if<File>(&side)) {
    LoadedFile& file = **loaded;
    if (file.is_rocprof())
      throw std::invalid_argument("compare needs PyTorch profiler traces, not rocprofv3 output");
    if (!arch.empty())
      throw std::invalid_argument(
          "arch_reference / arch_target apply to paths; a loaded trace keeps its load_trace arch");
    PreparedReport p{NamedReport{tag, file.report().tables}, file.arch(), {}, nullptr, {}};
    normalize_report(p.report);
    return p;
  }
  const std::string& path = std::get<std::string>(side);
  require_exists(path);
  if (fs::is_directory(path)) return prepare_report_dir(path, tag, arch);
  return prepare_loaded_trace(*store.load(path).entry, tag, arch);
}

struct CompareSettings {
  std::string reference_tag = "reference", target_tag = "target";
  std::string arch_reference, arch_target;
  std::vector<std::string> sheets = {"all"};
  std::string merge_order = "first-appearance";
  double gap_threshold = 1.2;
  double min_share_pct = 1.0;
};

CompareTracesOptions compare_options(const CompareSettings& s) {
  CompareTracesOptions o;
  o.reference_tag = s.reference_tag;
  o.target_tag = s.target_tag;
  o.arch_reference = s.arch_reference;
  o.arch_target = s.arch_target;
  if (s.sheets.empty()) throw std::invalid_argument("sheets needs a sheet group");
  o.compare.sheet_groups = s.sheets;
  if (s.merge_order == "first-appearance")
    o.compare.merge_order = frame::MergeOrder::FirstAppearance;
  else if (s.merge_order == "lexicographic")
    o.compare.merge_order = frame::MergeOrder::Lexicographic;
  else
    throw std::invalid_argument("merge_order is 'first-appearance' or 'lexicographic', not '" +
                                s.merge_order + "'");
  if (!(s.gap_threshold >= 0) || !(s.min_share_pct >= 0))
    throw std::invalid_argument("gap_threshold and min_share_pct must be non-negative");
  o.gaps.gap_threshold = s.gap_threshold;
  o.gaps.min_target_share = s.min_share_pct / 100.0;
  return o;
}

// The sheets `jarvis compare` writes (hardware_gap_analysis last, when both
// archs are known) and the comparison's notes.
std::pair<Sheets, std::vector<std::string>> compare(const Side& reference, const Side& target,
                                                    const CompareSettings& settings) {
  CompareTracesOptions options = compare_options(settings);
  std::vector<Table> tables;
  std::vector<std::string> notes;
  {
    py::gil_scoped_release release;
    // A private cache: the traces are freed when the comparison returns.
    TraceCache cache;
    TraceStore store(cache);
    PreparedReport ref =
        prepare_side(store, reference, options.reference_tag, options.arch_reference);
    PreparedReport tgt = prepare_side(store, target, options.target_tag, options.arch_target);
    TraceComparison c = compare_prepared_reports(std::move(ref.report), std::move(tgt.report),
                                                 std::move(ref.arch), std::move(tgt.arch), options);
    tables = std::move(c.result.tables);
    if (c.hardware_gaps) tables.push_back(c.hardware_gaps->table());
    notes = std::move(c.notes);
  }
  return {to_sheets(tables), notes};
}

// ---- sweep -----------------------------------------------------------------------

Sheets sweep_sheets(const std::string& root, const std::string& layout, size_t top_k, size_t jobs,
                    const std::string& cache) {
  require_exists(root);
  if (top_k < 1) throw std::invalid_argument("top_k must be >= 1");
  std::vector<Table> tables;
  {
    py::gil_scoped_release release;
    sweep::LoadOptions o;
    o.pattern = layout;
    o.jobs = jobs;
    o.cache_dir = cache;
    tables = sweep::sweep_tables(sweep::load_sweep(root, o), top_k);
  }
  return to_sheets(tables);
}

}  // namespace
}  // namespace jarvis::python

PYBIND11_MODULE(_jarvis, m) {
  using namespace jarvis::python;
  m.doc() = "jarvis engine bindings; use the `jarvis` package (jarvis.load_trace, ...)";
  m.attr("__version__") = JARVIS_VERSION;
  py::register_exception_translator(translate_errors);

  py::class_<LoadedFile, File>(m, "LoadedFile")
      .def_property_readonly("path", &LoadedFile::path)
      .def_property_readonly("is_rocprof", &LoadedFile::is_rocprof)
      .def_property_readonly("arch",
                             [](const LoadedFile& f) -> std::optional<std::string> {
                               if (!f.arch()) return std::nullopt;
                               return f.arch()->name;
                             })
      .def("info", &info_dict)
      .def("sheet_names", &sheet_names)
      .def("sheet_csv", &sheet_csv, py::arg("name"))
      .def("counter_sheets", &counter_sheets)
      .def("insights_json", &insights_json)
      .def("memory_json", &memory_json, py::arg("device"), py::arg("max_rows"),
           py::arg("timeline_points"))
      .def("sql_csv", &sql_csv, py::arg("query"), py::arg("max_rows"), py::arg("timeout_ms"));

  m.def(
      "load",
      [](const std::string& path, std::optional<std::string> arch, bool include_python_frames,
         bool kernel_summary, bool short_kernel_study, double short_kernel_threshold_us,
         int short_kernel_bins, bool collective_analysis, std::optional<bool> rocprof,
         bool kernel_details, std::optional<size_t> topk_kernels, bool fix_rocprof_units) {
        LoadSettings s;
        s.arch = std::move(arch);
        s.include_python_frames = include_python_frames;
        s.kernel_summary = kernel_summary;
        s.short_kernel_study = short_kernel_study;
        s.short_kernel_threshold_us = short_kernel_threshold_us;
        s.short_kernel_bins = short_kernel_bins;
        s.collective_analysis = collective_analysis;
        s.rocprof = rocprof;
        s.kernel_details = kernel_details;
        s.topk_kernels = topk_kernels;
        s.fix_rocprof_units = fix_rocprof_units;
        return load(path, s);
      },
      py::arg("path"), py::arg("arch"), py::arg("include_python_frames"), py::arg("kernel_summary"),
      py::arg("short_kernel_study"), py::arg("short_kernel_threshold_us"),
      py::arg("short_kernel_bins"), py::arg("collective_analysis"), py::arg("rocprof"),
      py::arg("kernel_details"), py::arg("topk_kernels"), py::arg("fix_rocprof_units"));

  m.def(
      "compare",
      [](const Side& reference, const Side& target, const std::string& reference_tag,
         const std::string& target_tag, const std::string& arch_reference,
         const std::string& arch_target, const std::vector<std::string>& sheets,
         const std::string& merge_order, double gap_threshold, double min_share_pct) {
        CompareSettings s{reference_tag, target_tag,  arch_reference, arch_target,
                          sheets,        merge_order, gap_threshold,  min_share_pct};
        return compare(reference, target, s);
      },
      py::arg("reference"), py::arg("target"), py::arg("reference_tag"), py::arg("target_tag"),
      py::arg("arch_reference"), py::arg("arch_target"), py::arg("sheets"), py::arg("merge_order"),
      py::arg("gap_threshold"), py::arg("min_share_pct"));

  m.def("sweep", &sweep_sheets, py::arg("root"), py::arg("layout"), py::arg("top_k"),
        py::arg("jobs"), py::arg("cache"));
  m.def("bundled_archs", &jarvis::perf::bundled_gpu_arch_names);
}
