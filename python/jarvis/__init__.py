"""jarvis: AMD TraceLens's performance report sheets for PyTorch profiler traces,
as pandas DataFrames.

    import jarvis
    t = jarvis.load_trace("trace.json.gz")        # arch detected from the GPU name
    t.ops_summary()                               # == pandas.read_csv(".../ops_summary.csv")
    t.sheet_names(); t.sheet("GEMM"); t.info(); t.insights()
    jarvis.compare("h100.json.gz", "mi300.json.gz")   # {sheet: DataFrame}
    jarvis.sweep("sweep_dir", layout="{bs}/rank{rank}/*.json.gz")

Every DataFrame equals the CSV that `jarvis report TRACE --out DIR` (or
`jarvis compare` / `jarvis sweep`) writes, read back with pandas.read_csv:
the engine hands over those exact CSV bytes. Errors raise FileNotFoundError
(missing path), ValueError (bad trace, arch, option or layout), KeyError
(unknown sheet) or RuntimeError (e.g. no GPU events in the trace).
"""

import io
import json
import os

from . import _jarvis

__version__ = _jarvis.__version__  # the version of the build, as `jarvis --version`

__all__ = ["Trace", "load_trace", "compare", "sweep", "bundled_archs"]


def _frame(csv_bytes):
    """A sheet's CSV bytes as pandas.read_csv reads the same file."""
    import pandas

    # A sheet without columns is written as an empty line, which read_csv
    # refuses (EmptyDataError): it is an empty DataFrame.
    if not csv_bytes.strip():
        return pandas.DataFrame()
    return pandas.read_csv(io.BytesIO(csv_bytes))


def _frames(sheets):
    return {name: _frame(csv) for name, csv in sheets}


def _arch_arg(arch):
    """None: detect; False or "none": no arch; else a bundled name or a path."""
    if arch is False:
        return "none"
    return None if arch is None else os.fspath(arch)


class Trace:
    """A loaded trace (Kineto .json/.json.gz, or rocprofv3 output) and its
    TraceLens report, built on the first sheet asked for."""

    def __init__(self, loaded):
        self._loaded = loaded

    @property
    def path(self):
        return self._loaded.path

    @property
    def arch(self):
        """Name of the GPU arch used for roofline columns, or None."""
        return self._loaded.arch

    @property
    def source(self):
        return "rocprofv3" if self._loaded.is_rocprof else "kineto"

    def __repr__(self):
        return f"jarvis.Trace({self.path!r}, source={self.source!r}, arch={self.arch!r})"

    def info(self):
        """Platform, GPU, arch and event counts (what `jarvis info` prints)."""
        return self._loaded.info()

    def sheet_names(self):
        """The report's sheets, in TraceLens's order."""
        return self._loaded.sheet_names()

    def sheet(self, name):
        """One sheet as a DataFrame; KeyError when the report has none by that name."""
        return _frame(self._loaded.sheet_csv(name))

    def sheets(self):
        """Every sheet: {name: DataFrame}, in sheet order."""
        return {name: self.sheet(name) for name in self.sheet_names()}

    def gpu_timeline(self):
        return self.sheet("gpu_timeline")

    def ops_summary(self):
        return self.sheet("ops_summary")

    def ops_summary_by_category(self):
        return self.sheet("ops_summary_by_category")

    def ops_unique_args(self):
        return self.sheet("ops_unique_args")

    def unified_perf_summary(self):
        return self.sheet("unified_perf_summary")

    def kernel_summary(self):
        return self.sheet("kernel_summary")

    def gemm(self):
        return self.sheet("GEMM")

    def counters(self):
        """rocprofv3 input with counters: {sheet: DataFrame} of what `jarvis
        report` writes to DIR/rocprof_counters/ (empty dict otherwise)."""
        return _frames(self._loaded.counter_sheets())

    def insights(self):
        """The insight rules' findings, ranked by recoverable time: a list of
        dicts as `jarvis insights --json` writes them."""
        return json.loads(self._loaded.insights_json())

    def sql(self, query, max_rows=100000, timeout_ms=10000):
        """One read-only SQL query over the trace's tables (events, ops,
        kernels, annotations, gpu_timeline, collectives, memory, the report's
        sheets; docs/sql.md) as a DataFrame. Rows past max_rows are cut with
        a warning; a query past timeout_ms raises."""
        import warnings

        csv, truncation = self._loaded.sql_csv(query, max_rows, timeout_ms)
        if truncation:
            warnings.warn(f"jarvis sql: result cut ({truncation})")
        return _frame(csv)

    def memory(self, device="", max_rows=20, timeline_points=40):
        """Device memory from the trace's [memory] events (recorded with
        profile_memory=True): a dict as the MCP tool memory_summary returns it
        (peak, timeline, steps, allocations live at the peak, leaks, findings).
        device: "cuda:0", "hip:0", "cpu"; "" is the primary device. A trace
        without memory events raises ValueError naming profile_memory=True."""
        return json.loads(self._loaded.memory_json(device, max_rows, timeline_points))


def load_trace(
    path,
    arch=None,
    *,
    include_python_frames=False,
    kernel_summary=True,
    short_kernel_study=True,
    short_kernel_threshold_us=10.0,
    short_kernel_bins=100,
    collective_analysis=True,
    rocprof=None,
    kernel_details=False,
    topk_kernels=None,
    fix_rocprof_units=False,
):
    """Loads a trace; the options are those of `jarvis report`.

    arch: a bundled GPU arch name ("H100", "MI300X", see bundled_archs()), an
    arch JSON path, None to detect it from the trace's GPU name, or False /
    "none" for no roofline columns (what `jarvis report --out` does without
    --arch). rocprof: None detects rocprofv3 output by content; the
    kernel_details, topk_kernels and fix_rocprof_units options apply to it only.
    """
    loaded = _jarvis.load(
        os.fspath(path),
        _arch_arg(arch),
        include_python_frames,
        kernel_summary,
        short_kernel_study,
        float(short_kernel_threshold_us),
        int(short_kernel_bins),
        collective_analysis,
        rocprof,
        kernel_details,
        topk_kernels,
        fix_rocprof_units,
    )
    return Trace(loaded)


def _side(x):
    return x._loaded if isinstance(x, Trace) else os.fspath(x)


def compare(
    reference,
    target,
    *,
    names=("reference", "target"),
    arch_reference=None,
    arch_target=None,
    sheets="all",
    merge_order="first-appearance",
    gap_threshold=1.2,
    min_share_pct=1.0,
    with_notes=False,
):
    """TraceLens's report comparison (`jarvis compare`): {sheet: DataFrame}.

    reference / target: a Trace from load_trace, a trace path or a report
    directory of <sheet>.csv files; reference is the baseline, target the
    platform to improve. arch_*: as load_trace's arch, for paths only.
    sheets: a group or list of groups (gpu_timeline, ops_summary,
    kernel_summary, ops_all, roofline, all). hardware_gap_analysis is
    included when both archs are known. with_notes=True returns
    (sheets, notes), notes saying what was skipped and why.
    """
    groups = [sheets] if isinstance(sheets, str) else list(sheets)

    def arch_text(arch):
        return _arch_arg(arch) or ""

    tables, notes = _jarvis.compare(
        _side(reference),
        _side(target),
        names[0],
        names[1],
        arch_text(arch_reference),
        arch_text(arch_target),
        groups,
        merge_order,
        float(gap_threshold),
        float(min_share_pct),
    )
    frames = _frames(tables)
    return (frames, notes) if with_notes else frames


def sweep(root, layout=None, *, top_k=5, jobs=0, cache=None):
    """A sweep's tables (`jarvis sweep`): {table: DataFrame}.

    layout: a run pattern with named fields, e.g.
    "bs{batch}/rank{rank}/*.json.gz" (None: the default layouts). jobs: runs
    analysed in parallel (0: all cores). cache: per-run cache directory (None:
    ROOT/.jarvis-sweep-cache; False or "none": no cache).
    """
    cache_dir = "none" if cache is False else ("" if cache is None else os.fspath(cache))
    return _frames(_jarvis.sweep(os.fspath(root), layout or "", int(top_k), int(jobs), cache_dir))


def bundled_archs():
    """Names of the bundled GPU arch files."""
    return _jarvis.bundled_archs()
