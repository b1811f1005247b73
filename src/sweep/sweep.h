// Sweeps: many profiled runs of one program under different configurations
// (NCCL threads x channels, batch sizes, ROCm versions, ...), each run one
// rank's trace or one TraceLens report directory.
//
// A layout pattern with named fields ("{threads}thread/nccl_{channel}channels/
// torch_profiler/rank{rank}/*.json*") finds the runs and gives each its field
// values; the fields become columns of every output. Each run is reduced to a
// small RunData (GPU timeline, GEMM rows with their instances and collective
// overlap, collective kernels, kernel names), analysed in parallel and cached
// by file identity, so the outputs are cheap to recompute from the cache.
// docs/sweeps.md describes every output and its columns.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/error.h"
#include "charts/charts.h"
#include "report/table.h"

namespace jarvis::sweep {

// A fault in the sweep as a whole (no run found, bad pattern, cancelled, ...).
class SweepError : public ErrorOf<ErrorKind::InvalidInput> {
 public:
  using ErrorOf::ErrorOf;
};

// ---- layout -----------------------------------------------------------------

// A compiled layout pattern: '/'-separated segments; in a segment `{name}` is a
// named field (one or more characters), `*` any characters, `?` one character,
// anything else literal. A field used twice must take the same value.
struct Layout {
  std::string pattern;
  std::vector<std::string> fields;  // in order of first appearance
};

// Throws SweepError naming the problem (empty segment, bad field name, ...).
Layout parse_layout(const std::string& pattern);

// The layouts tried, in order, when none is given: the seed's trace layout,
// then TraceLens report directories per thread setting.
const std::vector<std::string>& default_layouts();

// Trace: a PyTorch profiler (Kineto) trace; Rocprof: a rocprofv3 results file
// (timeline and kernel names only: it has no ops, so no GEMM rows).
enum class RunKind { Trace, ReportDir, ReportXlsx, Rocprof };
// trace | report | xlsx | rocprof
const char* run_kind_name(RunKind kind);

struct RunInput {
  std::string path;      // absolute
  std::string relative;  // relative to the sweep root (the `run` column)
  RunKind kind = RunKind::Trace;
  std::vector<std::string> values;  // one per Layout::fields
};

struct RunFailure {
  std::string path;
  std::string reason;
};

struct Discovery {
  Layout layout;
  std::vector<RunInput> runs;        // sorted by field values (numbers numerically), then path
  std::vector<RunFailure> failures;  // matched paths that are no run (e.g. an xlsx)
};

// Walks `root` segment by segment. A final match is a run when it is a file
// ending in .json / .json.gz (a trace), an .xlsx report workbook, or a
// directory holding gpu_timeline.csv or GEMM.csv (a TraceLens
// perf_report_csvs directory).
//
// `admit` (optional) is asked about every directory before the walk enters
// it and every run before it is added, by the path as found (symlinks not
// yet followed): "" admits it, any other text refuses it and becomes the
// failure's reason (the MCP server refuses paths that resolve outside its
// roots; the CLI admits everything it can read, symlinks followed).
using AdmitPath = std::function<std::string(const std::string& path)>;
Discovery discover_runs(const std::string& root, const Layout& layout, const AdmitPath& admit = {});
// With no pattern: the first default layout that finds a run. Throws
// SweepError when none does.
Discovery discover_runs(const std::string& root, const std::string& pattern = "",
                        const AdmitPath& admit = {});

// ---- per-run data (what is cached) ---------------------------------------------

struct OverlapHit {
  std::string collective;  // collective kernel name
  double overlap_us = 0;
};

// One op instance of a GEMM row: its kernels' span and busy time.
struct GemmInstance {
  int64_t op_uid = -1;
  std::string kernel_name;    // the instance's longest kernel (the GEMM, not a memset)
  double start_us = 0;        // trace time of that kernel
  double end_us = 0;          // its end
  double kernel_time_us = 0;  // busy time of all the op's kernels (the sheet's Kernel Time)
  double overlap_us = 0;      // time under collective kernels on other streams (union)
  std::vector<OverlapHit> collectives;
};

// One row of TraceLens's GEMM sheet (op name + shape) with its instances.
struct GemmRow {
  std::string op;
  std::string shape;  // "M=.. N=.. K=.. ..." from the param columns
  std::string kernel_name;
  int64_t count = 0;
  double min_us = 0, max_us = 0, mean_us = 0, std_us = 0, sum_us = 0;
  std::vector<GemmInstance> instances;  // empty for report-directory runs
};

struct TimelineRow {
  std::string type;
  double time_ms = 0;
  double percent = 0;
};

// One collective kernel (trace runs) with the fields the NCCL tables need.
struct CollectiveRecord {
  std::string process_group, collective, dtype, kernel_name;
  std::vector<int64_t> group_ranks;
  int64_t in_msg_nelems = -1, group_size = 0, seq = 0;
  double msg_size_mb = 0, ts = 0, dur = 0, algbw = 0, busbw = 0;
};

// A coll_analysis-style group: counts and duration statistics (µs).
struct CollectiveGroup {
  std::string process_group, collective, dtype;
  int64_t group_size = 0;
  double msg_size_mb = 0;
  int64_t count = 0;
  double dur_sum = 0, dur_min = 0, dur_max = 0;
};

struct RunData {
  RunKind kind = RunKind::Trace;
  int64_t rank = -1;        // distributedInfo.rank when the trace has it
  double first_gpu_ts = 0;  // trace time of the run's first GPU event
  std::vector<TimelineRow> timeline;
  std::vector<GemmRow> gemms;
  std::vector<CollectiveRecord> collectives;  // trace runs only
  std::vector<CollectiveGroup> collective_groups;
  std::vector<std::string> kernel_names;  // distinct GPU kernel names, sorted
  // Trace runs: the duration of each iteration (ms), in trace order: the
  // per-iteration samples. ProfilerStep#N annotations (host side) when the
  // trace has two or more, else iterations detected as repeats of the launch
  // sequence (step_source says which); empty when neither.
  std::vector<double> step_ms;
  std::string step_source;  // "profiler_step" | "detected_repeats" | ""
  // Trace runs: total GPU time per kernel name (µs), the gate's per-kernel
  // metric. Sorted by name.
  std::vector<std::pair<std::string, double>> kernel_time_us;
  // Trace runs with steps: per kernel name (sorted), its GPU time (µs) in
  // each iteration of step_ms (same order and length). A kernel belongs to
  // the iteration whose host window holds its launch call (the ProfilerStep
  // annotation, or the detected iteration's launches up to the next one's),
  // because GPU work lags its launch and would spill into the next window;
  // kernels launched outside every window, or with no launch call, are in
  // none. The per-iteration samples of what_changed_kernels.
  std::vector<std::pair<std::string, std::vector<double>>> kernel_step_us;
  // Trace runs: the trace-health verdict (insights/trace_health.h: high /
  // medium / low and why), so a sweep says which runs cannot carry a
  // conclusion (a cut trace, a graph capture, an idle GPU). Empty for reports.
  std::string health_confidence;
  std::vector<std::string> health_warnings;
  // Trace runs: the work of one iteration read from the op shapes, for
  // layouts without a batch field: samples and tokens of the token
  // embedding's indices [batch, seq] (aten::embedding), else the batch of
  // the first convolution's input; NaN when the trace shows neither.
  // `work_shape` says which op and shape.
  double work_samples = std::numeric_limits<double>::quiet_NaN();
  double work_tokens = std::numeric_limits<double>::quiet_NaN();
  std::string work_shape;
};

// Analyses one trace (throws TraceError / std::runtime_error).
RunData analyse_trace(const std::string& path);
// Reads a TraceLens perf_report_csvs directory (gpu_timeline.csv, GEMM.csv,
// coll_analysis.csv, kernel_summary.csv; missing sheets give empty parts).
RunData read_report_dir(const std::string& dir);
// The same sheets from a report workbook (TraceLens perf_report.xlsx).
RunData read_report_xlsx(const std::string& path);
// A rocprofv3 JSON results file: the GPU timeline and kernel names of
// TraceLens's rocprof report.
RunData read_rocprof(const std::string& path);

// Cache file contents (versioned JSON) and the file name for a run's identity.
std::string run_data_to_json(const RunData& data);
RunData run_data_from_json(const std::string& text);   // throws on a bad or old file
std::string cache_file_name(const std::string& path);  // from path + size + mtime

// ---- the whole sweep ------------------------------------------------------------

struct Run {
  RunInput input;
  RunData data;
  bool from_cache = false;
};

struct LoadOptions {
  std::string pattern;    // "" = default layouts
  size_t jobs = 0;        // 0 = hardware threads
  std::string cache_dir;  // "" = <cache dir>/sweeps (base/output_guard.h); "none" = no cache
  AdmitPath admit;        // see discover_runs
  // Called after each run (done, total, path); return false to cancel.
  std::function<bool(size_t, size_t, const std::string&)> progress;
};

struct Sweep {
  std::string root;
  Layout layout;
  std::vector<Run> runs;  // discovery order, failed runs left out
  std::vector<RunFailure> failures;
  size_t cache_hits = 0;
  size_t runs_parsed = 0;        // runs analysed from their files (cache misses, failed ones too)
  std::string cache_dir;         // "" when caching was off or impossible
  std::string cache_warning;     // why nothing was cached, "" when fine
  std::vector<bool> int_fields;  // per layout field: every run's value is an integer

  // Field names without "rank": the configuration key.
  std::vector<std::string> config_fields() const;
  std::string config_label(const Run& run) const;  // "threads=256 channel=28"
  int64_t rank_of(const Run& run) const;           // rank field, else trace rank, else -1
};

// Discovers and analyses every run (in parallel, at most `jobs` traces held at
// once). A `root` holding kSweepManifest (an OUT directory) is opened with
// load_analysed_sweep instead. Runs that fail are listed in Sweep::failures. Throws SweepError when
// no run is found or on cancellation.
Sweep load_sweep(const std::string& root, const LoadOptions& options = {});

// The traces of several ranks of one job (or any trace files) as a sweep
// without layout fields: one run per file, in the order given, all in one
// configuration, so collective_skew matches their collectives by rank (the
// traces' distributedInfo.rank). Paths relative to the files' common
// directory. Throws SweepError for a path that is no file, or every run failing.
Sweep load_sweep_files(const std::vector<std::string>& paths, const LoadOptions& options = {});

// load_sweep in three steps, for drivers that analyse the runs elsewhere (the
// MPI driver of src/scaleout analyses them on other processes).
struct SweepPlan {
  Sweep sweep;                 // root, layout, discovery failures, cache dir; no run yet
  std::vector<RunInput> runs;  // what to analyse, in discovery order
};
// What analysing one run gave: the run, or why it failed.
struct RunOutcome {
  std::optional<Run> run;
  std::optional<RunFailure> failure;
};
// Discovery and the cache directory. Throws SweepError when no run is found.
SweepPlan plan_sweep(const std::string& root, const LoadOptions& options);
// One run: from the cache when its entry is there and readable, else analysed
// (and then cached atomically: unique temp file + rename, so concurrent jobs
// sharing a cache never see a torn entry). Never throws for a bad run.
RunOutcome analyse_run(const RunInput& input, const std::string& cache_dir);
// The sweep from one outcome per run of `plan.runs` (same order), merged in
// that order. Throws SweepError when every run failed.
Sweep finish_sweep(SweepPlan plan, std::vector<RunOutcome> outcomes);

// ---- a sweep analysed elsewhere ---------------------------------------------------

// `jarvis sweep` leaves OUT/.jarvis-sweep.json (when it has a cache): the
// sweep's layout, runs, failures and each run's cache entry, so the sweep
// opens again from OUT and the cache alone (a cluster job's results on a
// laptop) without the traces and without parsing anything.
inline constexpr const char* kSweepManifest = ".jarvis-sweep.json";
std::string sweep_manifest_json(const Sweep& sweep);
bool is_analysed_sweep_dir(const std::string& dir);
// Throws SweepError naming the run whose cache entry is missing or unreadable.
// `cache_dir` "" (or "none") = the directory the manifest records.
Sweep load_analysed_sweep(const std::string& dir, const std::string& cache_dir);

// ---- outputs ---------------------------------------------------------------------

// Field columns for a run: numbers as ints when every value of the field is one
// (Sweep::int_fields, set by load_sweep from integer_fields).
void add_field_cells(const Sweep& sweep, const Run& run, std::vector<Cell>& row);
std::vector<bool> integer_fields(const Sweep& sweep);

// Per run: its fields, path, kind and the trace-health confidence and
// warnings (empty for report inputs, which carry no trace): run_health.
Table run_health_table(const Sweep& sweep);

// 1. Per run, the top_k GEMM rows by max - min kernel time, merged and sorted
//    by time_diff_us: gemm_variance. The cross-run view per kernel:
//    gemm_variance_by_kernel.
Table gemm_variance_table(const Sweep& sweep, size_t top_k);
Table gemm_kernel_spread_table(const Sweep& sweep);
// 2. Every instance of the rows of gemm_variance: gemm_variance_timestamps.
Table gemm_timestamps_table(const Sweep& sweep, size_t top_k);
// 3. Those instances with the collectives that overlapped them.
Table gemm_overlap_table(const Sweep& sweep, size_t top_k);
// 4. GPU timeline across configs (All_Data, Pivot_Time_ms, Pivot_Percent,
//    Summary_By_Config).
std::vector<Table> gpu_timeline_tables(const Sweep& sweep);
// 5. NCCL statistics per config (nccl_by_config).
Table nccl_table(const Sweep& sweep);
// Per configuration with two or more traced ranks, every collective instance
// matched across its ranks (process group + seq, clocks aligned as
// `jarvis collectives` aligns them), one row per rank: run, layout fields,
// aligned start, duration, wait for the last arrival and the instance's
// start / end skew (µs). Configurations whose ranks do not match are left
// out (nccl_by_config's note says why). collective_skew.
Table collective_skew_table(const Sweep& sweep);
// Why a table is empty (or partial), and what would fill it: "" when it has
// what the sweep can give. nccl_by_config: no collective kernel or
// coll_analysis row in any run. gemm_variance: no GEMM sheet / no op.
std::string nccl_empty_reason(const Sweep& sweep);
std::string gemm_empty_reason(const Sweep& sweep);
// Collectives a run holds: its collective kernels (trace runs) or the
// operation counts of its coll_analysis groups (report runs).
int64_t collective_count(const RunData& run);

// How configurations are made comparable when a field changes the work per
// step: batch fields (bs, batch, batch_size, mbs, gbs, ...) give time per
// sample, sequence-length fields (seq, seq_len, ...) and token fields
// (tokens, num_tokens) time per token (batch x seq when both). Time per step
// is the mean ProfilerStep#N duration of the config's runs; without steps
// the trace window's total_time stands for one step (said in `how`).
struct Normalisation {
  std::string unit;  // "sample" | "token" | "step" | "trace window"
  std::string how;   // e.g. "mean ProfilerStep time / batch (field bs)"
  double units_per_step = std::numeric_limits<double>::quiet_NaN();
  double step_ms = std::numeric_limits<double>::quiet_NaN();   // NaN without steps
  double steps = 0;                                            // mean steps per run
  double value_ms = std::numeric_limits<double>::quiet_NaN();  // ms per unit
};
Normalisation normalise(const Sweep& sweep, const std::vector<const Run*>& runs);

// The runs of each configuration (label, runs), in order of first appearance.
std::vector<std::pair<std::string, std::vector<const Run*>>> config_runs(const Sweep& sweep);

// Per-kernel attribution of what changed (what_changed_kernels).
struct KernelChangeOptions {
  size_t top_n = 5;  // kernels per configuration
  // A config label ("threads=256 channel=28"); "" = the median configuration
  // by normalised time (the lower middle one of an even count).
  std::string reference;
  double alpha = 0.05;  // before the Bonferroni correction over the kernels compared
};
// The reference configuration's label. Throws SweepError naming the
// configurations when options.reference is none of them.
std::string kernel_reference(const Sweep& sweep, const KernelChangeOptions& options);

// 4c. Per configuration other than the reference, the top_n kernels by
//     absolute change of GPU time per unit of work (per step, sample or
//     token: normalised as rank_by_normalised is) against the reference
//     configuration, with the change in µs and %, and whether it is beyond
//     the noise: the Mann-Whitney test on the per-run values when the runs
//     can reach the corrected alpha (alpha / kernels compared), else on the
//     per-iteration values (kernel_step_us), else "cannot tell". Empty for
//     sweeps without per-kernel times (report runs) or with one configuration.
Table what_changed_kernels_table(const Sweep& sweep, const KernelChangeOptions& options = {});
// Why what_changed_kernels is empty ("" when it is not).
std::string kernel_changes_empty_reason(const Sweep& sweep);
// One line with the key numbers: the largest change, its kernel, verdict and
// noise, and how many rows are beyond noise.
std::string kernel_changes_summary(const Table& kernels);
// Per configuration label, its top kernel changes against the reference as
// one text (what_changed's kernel_changes column), or why there are none.
std::map<std::string, std::string> kernel_change_texts(const Sweep& sweep,
                                                       const KernelChangeOptions& options);
// A kernel name for one line of text: long names keep their start and end.
std::string short_kernel(const std::string& name);

// 4b. Per configuration, what changed against the sweep's median
//     configuration (total, busy, idle, communication, GEMM total) and
//     whether the configuration can explain it: busy flat and idle moving is
//     host-side time; steps inside one run spreading as much as
//     configurations do is noise; NCCL fields with no collective cannot act;
//     and the kernels that changed most against the reference configuration
//     (`kernel_changes`, from what_changed_kernels) (what_changed).
Table what_changed_table(const Sweep& sweep, const KernelChangeOptions& options = {});

// The rocprofv3 counters of the kernels of gemm_variance, per configuration:
// each run's nearest rocprof_traces/ directory (the seed's layout), each
// rocprofv3 output in it, one row per matched kernel with the counters' means
// and the derived metrics (docs/rocprof.md). Empty when no run has one.
Table gemm_counters_table(const Sweep& sweep, size_t top_k);

// Every output table of a sweep, in sheet order (gemm_counters only when some
// configuration has rocprofv3 outputs).
std::vector<Table> sweep_tables(const Sweep& sweep, size_t top_k,
                                const KernelChangeOptions& kernel_changes = {});
// Writes OUT/<table>.csv for every table and, when xlsx_path is set, one
// workbook with all of them. Returns the files written.
std::vector<std::string> write_sweep_outputs(const std::vector<Table>& tables,
                                             const std::string& out_dir,
                                             const std::string& xlsx_path);

// The seed's plots of gemm_variance: box and violin per layout field (and rank),
// and the interaction of the first two config fields; none for an empty table.
std::vector<charts::NamedChart> variance_charts(const Sweep& sweep, const Table& gemm_variance);
// The same as files: DIR/box_<field>.svg and violin_<field>.svg
// per layout field, and the interaction of the first two config fields.
std::vector<std::string> write_variance_svgs(const Sweep& sweep, const Table& gemm_variance,
                                             const std::string& dir);

// One self-contained HTML page (inline SVG, no external resource): summary,
// variance plots (box / violin per field, interaction), top-variance kernels,
// GPU timeline by config (chart + table), NCCL by config, kernels across runs,
// rocprofv3 counters and failed runs when present. `tables` = sweep_tables().
std::string sweep_html_page(const Sweep& sweep, const std::vector<Table>& tables);
// Two sweeps: each one's timeline by config side by side, then total time
// baseline vs candidate and the change tables. `comparison` = compare_sweeps().
std::string sweep_compare_html_page(const Sweep& base, const Sweep& cand,
                                    const std::vector<Table>& comparison,
                                    const std::string& base_label, const std::string& cand_label);

// ---- 6. rocprofv3 input -----------------------------------------------------------

struct RocprofConfig {
  std::vector<std::string> kernels;  // exact kernel names, sorted, distinct
  std::string regex;                 // kernel_include_regex
  std::string yaml;
  std::string json;
  std::string kernel_list;
};

// The regex that matches exactly `kernel_name` (anchored, every regex
// metacharacter escaped).
std::string exact_kernel_regex(const std::string& kernel_name);
// A rocprofv3 job tracing only `kernels` with the CU-utilisation counters.
RocprofConfig rocprof_config(std::vector<std::string> kernels);
// Whose kernels these are, from names only one vendor's libraries give
// (nvjet / sm90_ / cutlass / cublas vs Cijk_ / rocblas / hipblaslt / ck):
// "nvidia", "amd" or "unknown".
const char* kernel_vendor(const std::vector<std::string>& kernels);
// The NVIDIA follow-up of rocprof_config: an Nsight Compute command line
// profiling exactly these kernels (the same anchored regex, matched against
// the demangled name) with the metrics that answer the same question as the
// AMD counters: SM busy cycles and throughput (SQ_BUSY_CU_CYCLES), warps and
// waves (SQ_WAVES), tensor-pipe activity (SQ_INSTS_MFMA), instructions
// (SQ_INSTS_VALU), plus duration and DRAM throughput.
std::string nsight_compute_command(std::vector<std::string> kernels);
// Kernel names of a kernel_name column of a CSV (gemm_variance.csv or the
// seed's top5_gemm_kernels_time_variance.csv).
std::vector<std::string> kernels_from_csv(const std::string& csv_path);
// The three files a job at yaml_path is written as (FILE.yaml, FILE.json,
// FILE_kernel_list.txt); a path not ending in .yaml/.yml is refused.
std::vector<std::string> rocprof_config_files(const std::string& yaml_path);
// Writes those three files as one set. Returns the paths.
std::vector<std::string> write_rocprof_config(const RocprofConfig& config,
                                              const std::string& yaml_path);

// ---- 7. two sweeps -------------------------------------------------------------------

// Per config: the timeline totals; per (config, kernel): GEMM kernel mean time,
// baseline vs candidate, with the change and whether it lies inside the
// run-to-run noise of the two sweeps (see docs/sweeps.md).
std::vector<Table> compare_sweeps(const Sweep& base, const Sweep& cand);

}  // namespace jarvis::sweep
