"""The Python API (`import jarvis`) against the `jarvis` CLI.

Every DataFrame the API returns must equal, cell for cell and dtype for
dtype, the CSV the CLI writes for the same input and options, read back with
pandas.read_csv. The CLI runs as a separate process (JARVIS_BINARY), so the
API's option mapping, arch handling and sheet selection are checked against
an independent run. Inputs: small conformance traces from JARVIS_SHARED_DIR
(default <source>/../shared) and the rocprofv3 fixture in tests/rocprof.
Everything is written into temporary directories.

Run by ctest as `python_api`, or by hand:
  PYTHONPATH=build/python JARVIS_BINARY=build/jarvis /usr/bin/python3 tests/python/test_jarvis_api.py
"""

import gzip
import json
import os
import shutil
import subprocess
import tempfile
import threading
import unittest

import pandas
import pandas.testing

import jarvis

SOURCE_DIR = os.environ.get(
    "JARVIS_SOURCE_DIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
)
SHARED_DIR = os.environ.get("JARVIS_SHARED_DIR", os.path.join(SOURCE_DIR, "..", "shared"))
BINARY = os.environ.get("JARVIS_BINARY", os.path.join(SOURCE_DIR, "build", "jarvis"))
CONFORMANCE = os.path.join(SHARED_DIR, "conformance")
H100 = os.path.join(CONFORMANCE, "h100_bert-small", "trace.json.gz")
MI300 = os.path.join(CONFORMANCE, "mi300_bert-small", "trace.json.gz")
ROCPROF = os.path.join(SOURCE_DIR, "tests", "rocprof", "908_subset_results.json")


def run_cli(*args):
    done = subprocess.run([BINARY, *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise AssertionError(f"jarvis {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def read_csv(path):
    # A sheet without columns is one empty line: read_csv refuses it.
    try:
        return pandas.read_csv(path)
    except pandas.errors.EmptyDataError:
        return pandas.DataFrame()


def read_csv_dir(directory):
    return {
        name[: -len(".csv")]: read_csv(os.path.join(directory, name))
        for name in os.listdir(directory)
        if name.endswith(".csv")
    }


def sheets_in_stdout(stdout, directory):
    """(sheet, rows) in the order `jarvis report` prints "DIR/<sheet>.csv: N rows"
    ("1 row"), for the files in `directory`."""
    out = []
    for line in stdout.splitlines():
        path, _, rows = line.rpartition(": ")
        if os.path.dirname(path) == directory and rows.endswith((" rows", " row")):
            out.append((os.path.basename(path)[: -len(".csv")], int(rows.split()[0])))
    return out


class ApiTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        for path in (BINARY, H100, MI300, ROCPROF):
            if not os.path.exists(path):
                raise AssertionError(f"test input missing: {path}")
        cls.tmp = tempfile.mkdtemp(prefix="jarvis_python_api_")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def out_dir(self, name):
        return os.path.join(self.tmp, name)

    def assert_frames_equal(self, api, cli):
        """api: {sheet: DataFrame} from jarvis; cli: the CSVs read back."""
        self.assertEqual(sorted(api), sorted(cli))
        for name in cli:
            with self.subTest(sheet=name):
                pandas.testing.assert_frame_equal(api[name], cli[name], check_exact=True)

    def check_report(self, trace, cli_args, out):
        """trace's sheets == `jarvis report <cli_args> --out out`, in the CLI's order."""
        stdout = run_cli("report", *cli_args, "--out", out)
        order = sheets_in_stdout(stdout, os.path.join(out, "perf_report_csvs"))
        self.assertEqual(trace.sheet_names(), [name for name, _ in order])
        api = trace.sheets()
        self.assertEqual([len(api[name]) for name, _ in order], [rows for _, rows in order])
        cli = read_csv_dir(os.path.join(out, "perf_report_csvs"))
        self.assert_frames_equal(api, cli)
        return cli

    def test_one_version(self):
        # jarvis.__version__ is the CLI's version (both from CMake's project version).
        out = subprocess.run([BINARY, "--version"], capture_output=True, text=True, check=True).stdout
        self.assertIsNotNone(jarvis.__version__)
        self.assertEqual(out.split()[1], jarvis.__version__)

    def test_report_detected_arch(self):
        t = jarvis.load_trace(H100)
        # The GPU name detects the bundled H100 arch (TraceLens ran with it too).
        self.assertEqual(t.arch, "H100")
        self.assertEqual(t.source, "kineto")
        cli = self.check_report(t, [H100, "--arch", "H100"], self.out_dir("h100"))
        # The named accessors are the same sheets.
        for frame, name in (
            (t.gpu_timeline(), "gpu_timeline"),
            (t.ops_summary(), "ops_summary"),
            (t.kernel_summary(), "kernel_summary"),
            (t.gemm(), "GEMM"),
            (t.unified_perf_summary(), "unified_perf_summary"),
        ):
            pandas.testing.assert_frame_equal(frame, cli[name], check_exact=True)
        # TraceLens's own report of this trace has the same sheets.
        reference = os.path.join(CONFORMANCE, "h100_bert-small", "perf_report_csvs")
        self.assertEqual(sorted(t.sheet_names()), sorted(read_csv_dir(reference)))
        self.assertGreater(len(t.gemm()), 0)

    def test_report_no_arch_and_options(self):
        t = jarvis.load_trace(
            MI300,
            arch=False,
            kernel_summary=False,
            short_kernel_threshold_us=5,
            short_kernel_bins=20,
        )
        self.assertIsNone(t.arch)
        args = [MI300, "--arch", "none", "--no-kernel-summary", "--short-kernel-threshold-us", "5"]
        args += ["--short-kernel-bins", "20"]
        self.check_report(t, args, self.out_dir("mi300"))
        self.assertNotIn("kernel_summary", t.sheet_names())
        self.assertEqual(len(t.sheet("short_kernel_histogram")), 20)

    def test_rocprof_report(self):
        t = jarvis.load_trace(ROCPROF, kernel_details=True, topk_kernels=5)
        self.assertEqual(t.source, "rocprofv3")
        args = [ROCPROF, "--kernel-details", "--topk-kernels", "5"]
        out = self.out_dir("rocprof")
        self.check_report(t, args, out)
        self.assertEqual(len(t.sheet("kernel_details")), 5)
        # The fixture has counters: DIR/rocprof_counters/ holds them.
        counters = t.counters()
        self.assertEqual(sorted(counters), ["dispatch_counters", "kernel_counters"])
        self.assert_frames_equal(counters, read_csv_dir(os.path.join(out, "rocprof_counters")))
        self.assertEqual(jarvis.load_trace(H100).counters(), {})

    def test_info_matches_cli(self):
        info = jarvis.load_trace(MI300).info()
        printed = {}
        for line in run_cli("info", MI300).splitlines():
            key, _, value = line.partition(":")
            printed[key.strip()] = value.strip()
        self.assertEqual(info["path"], printed["trace"])
        for key in ("platform", "source", "gpu"):
            self.assertEqual(info[key], printed[key], key)
        for key in ("events", "cpu_op", "python", "runtime", "kernels", "memcpy", "memset"):
            self.assertEqual(info[key], int(printed[key]), key)
        self.assertEqual(info["json_bytes"], int(printed["json bytes"]))
        self.assertEqual(info["arch"], "MI300X")
        self.assertGreater(info["kernels"], 0)

    def test_insights_match_cli(self):
        out = os.path.join(self.tmp, "insights.json")
        run_cli("insights", H100, "--json", out)
        with open(out) as f:
            expected = json.load(f)
        self.assertEqual(jarvis.load_trace(H100).insights(), expected)

    def test_memory(self):
        # The peak of the primary device, from the raw [memory] events.
        with gzip.open(H100, "rt") as f:
            events = json.load(f)["traceEvents"]
        cuda = [e["args"]["Total Allocated"] for e in events
                if e.get("name") == "[memory]" and e.get("args", {}).get("Device Type") == 1
                and e["args"].get("Device Id") == 0]
        self.assertTrue(cuda)
        memory = jarvis.load_trace(H100).memory()
        self.assertEqual(memory["device"], "cuda:0")
        self.assertEqual(memory["peak"]["allocated_bytes"], max(cuda))
        self.assertLessEqual(len(memory["timeline"]), 40)
        cpu = jarvis.load_trace(H100).memory(device="cpu", max_rows=3)
        self.assertEqual(cpu["device"], "cpu")
        # A trace recorded without profile_memory=True says so by name.
        gpt2 = os.path.join(SHARED_DIR, "hw_pairs", "gpt2_train", "h100.json.gz")
        if not os.path.isfile(gpt2):  # a clone's tests/data/shared has no hw_pairs
            gpt2 = os.path.join(SOURCE_DIR, "examples", "example_trace.json.gz")
        with self.assertRaises(Exception) as caught:
            jarvis.load_trace(gpt2).memory()
        self.assertIn("profile_memory=True", str(caught.exception))

    def test_sql(self):
        # GPU events (the kernels table: kernels, memcpy, memset) per stream
        # from the raw events against the same query.
        with gzip.open(H100, "rt") as f:
            events = json.load(f)["traceEvents"]
        per_stream = {}
        for e in events:
            if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
                stream = e["args"]["stream"]
                per_stream[stream] = per_stream.get(stream, 0) + 1
        trace = jarvis.load_trace(H100)
        frame = trace.sql("SELECT stream, count(*) AS n FROM kernels GROUP BY stream ORDER BY stream")
        self.assertEqual(dict(zip(frame["stream"], frame["n"])), per_stream)
        with self.assertWarns(UserWarning):
            cut = trace.sql("SELECT uid FROM events", max_rows=5)
        self.assertEqual(len(cut), 5)
        with self.assertRaises(Exception) as caught:
            trace.sql("SELECT durr FROM kernels")
        self.assertIn("dur", str(caught.exception))
        with self.assertRaises(Exception):
            trace.sql("DELETE FROM kernels")

    def test_compare_matches_cli(self):
        out = self.out_dir("compare")
        run_cli("compare", H100, MI300, "--names", "h100", "mi300", "--out", out)
        cli = read_csv_dir(out)
        # Both archs are detected, so the hardware gap analysis is there.
        self.assertIn("hardware_gap_analysis", cli)
        by_path = jarvis.compare(H100, MI300, names=("h100", "mi300"))
        self.assert_frames_equal(by_path, cli)
        # Loaded traces give the same comparison.
        loaded = jarvis.compare(
            jarvis.load_trace(H100), jarvis.load_trace(MI300), names=("h100", "mi300")
        )
        self.assert_frames_equal(loaded, cli)

    def test_compare_sheet_group_and_report_dir(self):
        out = self.out_dir("compare_ops")
        reference = os.path.join(CONFORMANCE, "h100_bert-small", "perf_report_csvs")
        args = ["compare", reference, MI300, "--sheets", "ops_summary", "--arch-target", "none"]
        run_cli(*args, "--out", out)
        frames, notes = jarvis.compare(
            reference, MI300, sheets="ops_summary", arch_target=False, with_notes=True
        )
        self.assert_frames_equal(frames, read_csv_dir(out))
        self.assertTrue(any("hardware gap analysis skipped" in n for n in notes), notes)

    def test_sweep_matches_cli(self):
        root = os.path.join(self.tmp, "sweep_runs")
        for gpu, trace in (("h100", H100), ("mi300", MI300)):
            os.makedirs(os.path.join(root, gpu, "rank0"))
            shutil.copy(trace, os.path.join(root, gpu, "rank0", "trace.json.gz"))
        layout = "{gpu}/rank{rank}/*.json.gz"
        out = self.out_dir("sweep")
        run_cli("sweep", root, "--layout", layout, "--cache", "none", "--quiet", "--out", out)
        api = jarvis.sweep(root, layout=layout, cache=False)
        self.assert_frames_equal(api, read_csv_dir(out))
        self.assertEqual(sorted(api["gpu_timeline_All_Data"]["gpu"].unique()), ["h100", "mi300"])

    def test_concurrent_sheet_requests(self):
        # The report is built once, by whichever thread asks first, with the
        # GIL released; the other threads wait for it and read the same sheet.
        t = jarvis.load_trace(H100)
        results = [None] * 4

        def work(k):
            results[k] = t.sheet("ops_summary")

        threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for frame in results[1:]:
            pandas.testing.assert_frame_equal(frame, results[0], check_exact=True)

    def test_errors(self):
        missing = os.path.join(self.tmp, "no_such_trace.json.gz")
        with self.assertRaises(FileNotFoundError) as caught:
            jarvis.load_trace(missing)
        self.assertIn(missing, str(caught.exception))
        self.assertEqual(caught.exception.filename, missing)
        with self.assertRaises(FileNotFoundError):
            jarvis.compare(missing, H100)
        with self.assertRaises(FileNotFoundError):
            jarvis.sweep(os.path.join(self.tmp, "no_such_sweep"))

        broken = os.path.join(self.tmp, "broken.json")
        with open(broken, "w") as f:
            f.write('{"traceEvents": [')
        with self.assertRaises(ValueError) as caught:
            jarvis.load_trace(broken)
        self.assertIn(broken, str(caught.exception))

        with self.assertRaises(ValueError) as caught:
            jarvis.load_trace(H100, arch="NO_SUCH_GPU")
        self.assertIn("NO_SUCH_GPU", str(caught.exception))
        with self.assertRaises(ValueError):
            jarvis.load_trace(H100, kernel_details=True)  # rocprofv3 only
        with self.assertRaises(ValueError):
            jarvis.load_trace(ROCPROF, arch="MI300X")  # Kineto traces only
        with self.assertRaises(KeyError):
            jarvis.load_trace(H100).sheet("no_such_sheet")

        # A trace without GPU events loads, but has no report.
        empty = os.path.join(self.tmp, "no_gpu.json")
        op = {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1}
        with open(empty, "w") as f:
            json.dump({"traceEvents": [dict(op, ts=0, dur=5)]}, f)
        t = jarvis.load_trace(empty)
        with self.assertRaises(RuntimeError) as caught:
            t.sheet_names()
        self.assertIn("No GPU events", str(caught.exception))


if __name__ == "__main__":
    unittest.main(verbosity=2)
