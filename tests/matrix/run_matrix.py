#!/usr/bin/env python3
"""Real-trace matrix (issue 60 point 2): every trace of ../shared through every
CLI command and every MCP tool that reads a trace.

    run_matrix.py JARVIS SHARED_DIR [--jobs N] [--quick] [--traces REGEX] ...

CLI part: each (command, trace) runs in a fresh temp directory (its cwd and its
outputs), stdin closed, under a timeout. It passes when it exits 0, or 1 / 2
with a message on stderr that names the input file; it FAILs on a signal, any
other exit status, a timeout, a silent or anonymous error, or a temp file of an
interrupted write (`.NAME.tmp.XXXXXX`, `.DIR.tmp.PID`, `.DIR.old.PID`,
`.DIR.partial-XXXXXX`) left in its output directory.

MCP part: one `jarvis serve --stdio --isolate-calls on` process (every analysis
call in a worker process, as over HTTP; roots: a temp dir for outputs and
SHARED_DIR), initialized once; for each trace every tool that takes one. Each
reply must be a JSON-RPC result (isError allowed with a text) or an error other
than -32603 (internal); a timeout or the death of the server FAILs, naming the
call; the server must still answer a final tools/list and exit 0 on EOF.

Prints a table command x trace (ok / err / FAIL), every failure with its stderr
tail, the time per command, and the total wall time; exits 1 on any FAIL.
Stdlib only. Nothing is written into SHARED_DIR (checked) or the repository:
outputs go to a temp dir (--tmp), removed at the end unless --keep.
"""

import argparse
import concurrent.futures
import gzip
import json
import os
import queue
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

TRACE_SUFFIXES = (".json.gz", ".json", ".xplane.pb", ".sqlite")
SKIP_DIRS = {"node_modules", "perf_report_csvs", "category_data", "metadata",
             "category_findings", "system_findings", ".git"}
# Temp names of src/base/atomic_file.cpp (.NAME.tmp.XXXXXX), src/cli/cmd_report.cpp
# (.DIR.tmp.PID / .DIR.old.PID), src/base/output_guard.cpp (NAME.tmp.PID),
# src/scaleout/staged_dir.cpp (.DIR.partial-XXXXXX).
TEMP_NAME = re.compile(r"\.tmp\.[^/]*$|\.old\.\d+$|\.partial-[^/]*$")


def sniff_json_trace(path):
    """A plain .json is a trace when it holds traceEvents (Kineto) or is a
    rocprofv3 results file; category data, metadata, package.json are not."""
    try:
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rb") as f:
            head = f.read(1 << 16)
    except OSError:
        return True  # unreadable: let jarvis say so
    return b'"traceEvents"' in head or b'"rocprofiler-sdk-tool"' in head


def discover_traces(shared):
    """Every trace file under SHARED_DIR by extension, plus rocprofv3 CSV
    directories (*_kernel_trace.csv); paths relative to SHARED_DIR, sorted."""
    found = []
    for root, dirs, files in os.walk(shared):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
        if any(f.endswith("kernel_trace.csv") for f in files):
            found.append(os.path.relpath(root, shared))
        for name in sorted(files):
            if not name.endswith(TRACE_SUFFIXES):
                continue
            full = os.path.join(root, name)
            if name.endswith(".json") and not sniff_json_trace(full):
                continue
            found.append(os.path.relpath(full, shared))
    return sorted(found)


def discover_pairs(traces):
    """(label, reference, target): ab_pairs A vs B arms, hw_pairs H100 vs H200,
    nsys before vs after, conformance h100_X vs mi300_X."""
    pairs = []
    by_dir = {}
    for t in traces:
        by_dir.setdefault(os.path.dirname(t), []).append(t)
    # ab_pairs/s_NAME_A_*.ext vs s_NAME_B_*.ext
    arms = {}
    for t in traces:
        m = re.match(r"^(.*/)?s_(.+?)_([AB])_[^/]*$", t)
        if m:
            arms.setdefault((m.group(1) or "", m.group(2)), {}).setdefault(m.group(3), []).append(t)
    for (d, name), ab in sorted(arms.items()):
        if len(ab.get("A", [])) == 1 and len(ab.get("B", [])) == 1:
            pairs.append((f"{d}{name}:A-B", ab["A"][0], ab["B"][0]))
    # hw_pairs/<model>/h100.* vs h200.*, nsys/*before* vs *after*
    for d, files in sorted(by_dir.items()):
        names = {os.path.basename(f).split(".")[0]: f for f in files}
        if "h100" in names and "h200" in names:
            pairs.append((f"{d}:h100-h200", names["h100"], names["h200"]))
        for stem, f in sorted(names.items()):
            if stem.endswith("before") and stem[:-6] + "after" in names:
                pairs.append((f"{d}/{stem[:-7]}:before-after", f, names[stem[:-6] + "after"]))
    # conformance/h100_X/trace vs conformance/mi300_X/trace
    for t in traces:
        m = re.match(r"^(.*/)?h100_([^/]+)/([^/]+)$", t)
        if m:
            other = f"{m.group(1) or ''}mi300_{m.group(2)}/{m.group(3)}"
            if other in traces:
                pairs.append((f"{m.group(1) or ''}{m.group(2)}:h100-mi300", t, other))
    return pairs


# ---------------------------------------------------------------- CLI part

def cli_commands():
    """name -> argv builder (jarvis, trace, outdir)."""
    return {
        "info": lambda j, t, d: [j, "info", t],
        "report": lambda j, t, d: [j, "report", t, "--out", f"{d}/out"],
        "report-html": lambda j, t, d: [j, "report", t, "--html", f"{d}/report.html",
                                        "--svg-dir", f"{d}/svg"],
        "prepare": lambda j, t, d: [j, "prepare", t, "--out", f"{d}/out", "--analyze"],
        # the GPU of a trace that names none (nsys, HTA) or an unbundled one
        "prepare-h100": lambda j, t, d: [j, "prepare", t, "--out", f"{d}/out", "--analyze",
                                         "--platform", "H100"],
        "insights": lambda j, t, d: [j, "insights", t, "--json", f"{d}/insights.json"],
        "critical-path": lambda j, t, d: [j, "critical-path", t, "--out", f"{d}/out"],
        "what-if-gemm": lambda j, t, d: [j, "what-if", t, "--out", f"{d}/out",
                                         "--category", "gemm", "--factor", "0.5"],
        "what-if-gaps": lambda j, t, d: [j, "what-if", t, "--out", f"{d}/out",
                                         "--remove-launch-gaps"],
        "memory": lambda j, t, d: [j, "memory", t, "--out", f"{d}/out"],
        "collectives": lambda j, t, d: [j, "collectives", t, "--out", f"{d}/out"],
        "replay": lambda j, t, d: [j, "replay", t, "--out", f"{d}/out",
                                   "--category", "gemm", "--top", "2"],
        "sql": lambda j, t, d: [j, "sql", t, "SELECT count(*) FROM kernels",
                                "--format", "csv", "--out", f"{d}/query.csv"],
    }


def compare_command(j, ref, target, d):
    return [j, "compare", ref, target, "--out", f"{d}/out"]


def leftover_temps(directory):
    bad = []
    for root, dirs, files in os.walk(directory):
        for name in dirs + files:
            if TEMP_NAME.search(name):
                bad.append(os.path.relpath(os.path.join(root, name), directory))
    return bad


def signal_name(rc):
    n = -rc if rc < 0 else rc - 128
    try:
        return signal.Signals(n).name
    except ValueError:
        return f"signal {n}"


def tail(text, lines=6, chars=1200):
    text = text.strip()
    out = "\n".join(text.splitlines()[-lines:])
    return out[-chars:]


class Result:
    def __init__(self, part, command, trace, status, seconds, detail="", rc=None, argv=None,
                 stderr=""):
        self.part, self.command, self.trace = part, command, trace
        self.status, self.seconds, self.detail = status, seconds, detail
        self.rc, self.argv, self.stderr = rc, argv, stderr

    def as_dict(self):
        return {k: getattr(self, k) for k in
                ("part", "command", "trace", "status", "seconds", "detail", "rc", "argv", "stderr")}


def run_cli(jarvis, command, label, inputs, argv_of, work, timeout, env, keep, strict=False):
    """One CLI run in a fresh directory; returns a Result."""
    d = tempfile.mkdtemp(prefix="cli_", dir=work)
    argv = argv_of(d)
    start = time.monotonic()
    try:
        proc = subprocess.Popen(argv, cwd=d, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)
    except OSError as e:
        return Result("cli", command, label, "FAIL", 0.0, f"cannot start: {e}", argv=argv)
    try:
        out, err = proc.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = proc.communicate()
        timed_out = True
    seconds = time.monotonic() - start
    err = err.decode("utf-8", "replace")
    rc = proc.returncode
    temps = leftover_temps(d)
    status, detail = "ok", ""
    if timed_out:
        status, detail = "FAIL", f"timeout after {timeout:.0f} s (killed)"
    elif rc < 0 or rc > 128:
        status, detail = "FAIL", f"killed by {signal_name(rc)} (rc {rc})"
    elif rc in (1, 2):
        # exit 1 (input / analysis error) must name the file (docs/cli.md); a usage
        # error (2) names the flag, and the file only under --strict-messages.
        names = [os.path.basename(p) for p in inputs]
        if not err.strip():
            status, detail = "FAIL", f"exit {rc} with an empty stderr"
        elif (rc == 1 or strict) and not any(n in err for n in names):
            status, detail = "FAIL", f"exit {rc}: the message names no input file"
        else:
            status, detail = "err", f"exit {rc}"
    elif rc != 0:
        status, detail = "FAIL", f"unexpected exit status {rc}"
    if temps:
        status = "FAIL"
        detail = (detail + "; " if detail else "") + "temp files left: " + ", ".join(temps[:5])
    if not keep:
        shutil.rmtree(d, ignore_errors=True)
    return Result("cli", command, label, status, seconds, detail, rc=rc, argv=argv, stderr=tail(err))


# ---------------------------------------------------------------- MCP part

class ServerDied(Exception):
    pass


class McpClient:
    def __init__(self, argv, cwd, env, stderr_path):
        self.stderr_file = open(stderr_path, "wb")
        self.proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.stderr_file,
                                     start_new_session=True)
        self.replies = queue.Queue()
        self.next_id = 1
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            line = line.strip()
            if not line:
                continue
            try:
                msg = json.loads(line)
            except ValueError:
                self.replies.put(("garbage", line[:300].decode("utf-8", "replace")))
                continue
            if isinstance(msg, dict) and "id" in msg and ("result" in msg or "error" in msg):
                self.replies.put(("reply", msg))
            # notifications (progress, logging) and server requests are ignored
        self.replies.put(("eof", None))

    def send(self, msg):
        try:
            self.proc.stdin.write((json.dumps(msg) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as e:
            raise ServerDied(f"cannot write to the server: {e}")

    def request(self, method, params, timeout):
        """Returns the reply dict, or None on timeout; raises ServerDied."""
        rid = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                           "params": {"requestId": rid, "reason": "matrix timeout"}})
                return None
            try:
                kind, msg = self.replies.get(timeout=left)
            except queue.Empty:
                continue
            if kind == "eof":
                self.replies.put(("eof", None))
                raise ServerDied("the server closed stdout")
            if kind == "garbage":
                raise ServerDied(f"non-JSON line on stdout: {msg}")
            if msg.get("id") == rid:
                return msg
            # a late reply to a cancelled request: ignore

    def close(self, timeout=60):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            rc = None
        self.stderr_file.close()
        return rc


def reply_text(result):
    texts = [c.get("text", "") for c in result.get("content", []) if isinstance(c, dict)]
    return "\n".join(t for t in texts if t)


def mcp_calls_for_trace(path, out):
    """(label, tool, arguments) for one trace; `{T}` stands for the handle."""
    return [
        ("ops_summary", "ops_summary", {"trace": "{T}"}),
        ("ops_summary_by_path", "ops_summary", {"trace": path, "limit": 5}),
        ("insights", "insights", {"trace": "{T}"}),
        ("gemm_roofline", "gemm_roofline", {"trace": "{T}", "svg_path": f"{out}/roofline.svg"}),
        ("query_sql", "query_sql", {"trace": "{T}", "sql": "SELECT count(*) FROM kernels"}),
        ("query_sql_schema", "query_sql", {"trace": "{T}", "schema": True}),
        ("parent_chain_kernel", "parent_chain", {"trace": "{T}", "kernel_name": "{KERNEL}"}),
        ("parent_chain_uid", "parent_chain", {"trace": "{T}", "uid": "{UID}"}),
        ("memory_summary", "memory_summary", {"trace": "{T}"}),
        ("category_filter", "category_filter", {"trace": "{T}", "output_dir": f"{out}/cf"}),
        ("analyze_category", "analyze_category", {"output_dir": f"{out}/cf", "category": "gemm"}),
        ("render_report", "render_report", {"trace": "{T}", "output": f"{out}/report.html"}),
        ("make_replay", "make_replay", {"trace": "{T}", "output_dir": f"{out}/replay",
                                        "category": "gemm", "top": 2}),
        # the multi-rank tools take paths, not handles (their schemas)
        ("critical_path", "critical_path", {"traces": [path], "output_dir": f"{out}/cp"}),
        ("what_if_gemm", "what_if", {"traces": [path], "category": "gemm", "factor": 0.5,
                                     "output_dir": f"{out}/wi1"}),
        ("what_if_gaps", "what_if", {"traces": [path], "remove_launch_gaps": True,
                                     "output_dir": f"{out}/wi2"}),
        # needs two ranks: the same trace twice (a real multi-rank set is rare in ../shared)
        ("collective_report", "collective_report", {"traces": [path, path],
                                                    "output_dir": f"{out}/coll"}),
        ("kernel_counters", "kernel_counters", {"trace": "{T}"}),
    ]


def substitute(value, subs):
    if isinstance(value, str) and value in subs:
        return subs[value]
    if isinstance(value, list):
        return [substitute(v, subs) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, subs) for k, v in value.items()}
    return value


def run_mcp(jarvis, shared, traces, pairs, work, timeout, env, keep, log, tool_filter):
    """Returns (results, number of requests); a dead or hung server is one FAIL
    result naming the call it was answering."""
    results = []
    root = tempfile.mkdtemp(prefix="mcp_", dir=work)
    stderr_path = os.path.join(work, "mcp_server.stderr")
    # Every analysis call in a worker process (as an HTTP server runs them),
    # so the matrix checks that path on every real trace too.
    argv = [jarvis, "serve", "--stdio", "--isolate-calls", "on", "--root", root, "--root", shared]
    try:
        client = McpClient(argv, root, env, stderr_path)
    except OSError as e:
        return [Result("mcp", "server", "-", "FAIL", 0.0, f"cannot start {shlex.join(argv)}: {e}")], 0
    last = "initialize"
    n = [0]
    timeouts = [0]

    def record(label, trace, status, seconds, detail="", text=""):
        results.append(Result("mcp", label, trace, status, seconds, detail, stderr=tail(text)))
        if status == "FAIL":
            log(f"mcp FAIL {label} on {trace}: {detail}", True)

    def call(label, trace, method, params, writes_dir=None):
        nonlocal last
        last = f"{method} {label} on {trace}" if trace else f"{method} {label}"
        n[0] += 1
        start = time.monotonic()
        reply = client.request(method, params, timeout)
        seconds = time.monotonic() - start
        if reply is None:
            record(label, trace, "FAIL", seconds, f"no reply within {timeout:.0f} s (cancelled)")
            timeouts[0] += 1
            if timeouts[0] >= 2:  # a cancelled call still running blocks the next one
                raise ServerDied(f"two calls in a row got no reply within {timeout:.0f} s")
            return None
        timeouts[0] = 0
        status, detail, text = "ok", "", ""
        if "error" in reply:
            err = reply["error"]
            code = err.get("code")
            text = str(err.get("message", ""))
            if code == -32603:
                status, detail = "FAIL", f"JSON-RPC internal error -32603: {text[:300]}"
            else:
                status, detail = "err", f"JSON-RPC error {code}"
        else:
            result = reply.get("result")
            if not isinstance(result, dict):
                status, detail = "FAIL", "reply without a result object"
            elif result.get("isError"):
                text = reply_text(result)
                kind = (result.get("_meta") or {}).get("jarvis/errorKind", "")
                if not text.strip():
                    status, detail = "FAIL", "isError result without a text"
                elif kind == "internal":
                    status, detail = "FAIL", "isError with errorKind internal"
                else:
                    status, detail = "err", f"isError ({kind})" if kind else "isError"
        if writes_dir and os.path.isdir(writes_dir):
            temps = leftover_temps(writes_dir)
            if temps:
                status = "FAIL"
                detail = (detail + "; " if detail else "") + "temp files left: " + ", ".join(temps[:5])
        if method == "tools/call" and trace:
            record(label, trace, status, seconds, detail, text)
        elif status == "FAIL":
            record(label, trace or "-", status, seconds, detail, text)
        return reply

    fatal = None
    try:
        reply = call("initialize", None, "initialize", {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "jarvis-real-trace-matrix", "version": "1"}}, None)
        if reply is None or "result" not in reply:
            raise ServerDied("initialize failed")
        client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        for i, rel in enumerate(traces):
            path = os.path.join(shared, rel)
            out = tempfile.mkdtemp(prefix="t_", dir=root)
            t0 = time.monotonic()
            handle = path
            reply = call("load_trace", rel, "tools/call",
                         {"name": "load_trace", "arguments": {"path": path}}, None)
            if reply and isinstance(reply.get("result"), dict) and not reply["result"].get("isError"):
                sc = reply["result"].get("structuredContent") or {}
                handle = sc.get("trace") or path
            subs = {"{T}": handle, "{KERNEL}": None, "{UID}": 0}
            # the longest kernel and op, for parent_chain
            for lbl, sql, key in (
                    ("query_sql_top_kernel", "SELECT name FROM kernels ORDER BY dur DESC LIMIT 1",
                     "{KERNEL}"),
                    ("query_sql_top_op", "SELECT uid FROM ops ORDER BY dur DESC LIMIT 1", "{UID}")):
                r = call(lbl, rel, "tools/call", {"name": "query_sql", "arguments": {
                    "trace": handle, "sql": sql}}, None)
                try:
                    rows = r["result"]["structuredContent"]["rows"]
                    if rows and rows[0] and rows[0][0] is not None:
                        subs[key] = rows[0][0]
                except (TypeError, KeyError, IndexError):
                    pass
            if subs["{KERNEL}"] is None:
                subs["{KERNEL}"] = "gemm"
            for label, tool, args in mcp_calls_for_trace(path, out):
                if tool_filter and not tool_filter.search(label):
                    continue
                call(label, rel, "tools/call",
                     {"name": tool, "arguments": substitute(args, subs)}, out)
            if handle != path:
                call("unload_trace", rel, "tools/call",
                     {"name": "unload_trace", "arguments": {"trace": handle}}, None)
            if not keep:
                shutil.rmtree(out, ignore_errors=True)
            log(f"mcp [{i + 1}/{len(traces)}] {rel}: {time.monotonic() - t0:.1f} s")
        for label, ref, target in pairs:
            out = tempfile.mkdtemp(prefix="p_", dir=root)
            rp, tp = os.path.join(shared, ref), os.path.join(shared, target)
            for lbl, tool, args in (
                    ("compare", "compare", {"reference_trace": rp, "target_trace": tp,
                                            "output_dir": f"{out}/compare"}),
                    ("memory_diff", "memory_diff", {"reference": rp, "target": tp})):
                if tool_filter and not tool_filter.search(lbl):
                    continue
                call(lbl, label, "tools/call", {"name": tool, "arguments": args}, out)
            if not keep:
                shutil.rmtree(out, ignore_errors=True)
            log(f"mcp pair {label}")
        reply = call("tools/list", None, "tools/list", {}, None)
        if reply is None or "result" not in reply or not reply["result"].get("tools"):
            record("tools/list", "-", "FAIL", 0.0, "the final tools/list got no tool list")
    except ServerDied as e:
        fatal = f"the MCP part stopped ({e}) during: {last}"
    rc = client.close(timeout=60 if fatal is None else 10)
    if fatal is None and rc != 0:
        fatal = f"the server exited {rc if rc is None or rc >= 0 else signal_name(rc)} on EOF"
    if fatal is None and client.proc.returncode is not None and client.proc.returncode < 0:
        fatal = f"the server was killed by {signal_name(client.proc.returncode)}"
    if fatal:
        if client.proc.returncode is not None and client.proc.returncode < 0:
            fatal += f" (server killed by {signal_name(client.proc.returncode)})"
        with open(stderr_path, "rb") as f:
            err = f.read().decode("utf-8", "replace")
        results.append(Result("mcp", "server", "-", "FAIL", 0.0, fatal, stderr=tail(err, 15, 3000)))
    if not keep:
        shutil.rmtree(root, ignore_errors=True)
    return results, n[0]


# ---------------------------------------------------------------- reporting

def shared_state(shared):
    state = {}
    for root, dirs, files in os.walk(shared):
        dirs[:] = [d for d in dirs if d != "node_modules"]
        for name in dirs + files:
            p = os.path.join(root, name)
            try:
                st = os.lstat(p)
            except OSError:
                continue
            state[p] = (st.st_size, st.st_mtime_ns) if name in files else None
    return state


def print_table(results, part, commands, traces, out):
    cell = {(r.command, r.trace): r.status for r in results if r.part == part}
    if not cell:
        return
    width = max(len(t) for t in traces)
    heads = [c for c in commands if any((c, t) in cell for t in traces)]
    cw = [max(4, len(h)) for h in heads]
    out.write(f"\n{part.upper()} matrix (ok / err = clean error exit or isError / FAIL)\n")
    out.write(" " * width + " | " + " | ".join(h.ljust(w) for h, w in zip(heads, cw)) + "\n")
    out.write("-" * width + "-+-" + "-+-".join("-" * w for w in cw) + "\n")
    for t in traces:
        if not any((c, t) in cell for c in heads):
            continue
        out.write(t.ljust(width) + " | " +
                  " | ".join(cell.get((c, t), "").ljust(w) for c, w in zip(heads, cw)) + "\n")


def print_costs(results, part, out):
    per = {}
    for r in results:
        if r.part == part:
            per.setdefault(r.command, []).append(r)
    if not per:
        return
    out.write(f"\n{part.upper()} time per command (s): total / mean / max (trace of the max)\n")
    for c, rs in sorted(per.items(), key=lambda kv: -sum(r.seconds for r in kv[1])):
        total = sum(r.seconds for r in rs)
        worst = max(rs, key=lambda r: r.seconds)
        out.write(f"  {c:22s} {total:8.1f} {total / len(rs):7.2f} {worst.seconds:7.2f}  "
                  f"({worst.trace})\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("jarvis", help="the jarvis binary")
    ap.add_argument("shared", help="the shared trace directory (read only)")
    ap.add_argument("--jobs", type=int, default=2, help="CLI commands run in parallel (default 2)")
    ap.add_argument("--timeout", type=float, default=120.0,
                    help="seconds per CLI command and per MCP call (default 120)")
    ap.add_argument("--quick", action="store_true",
                    help="one trace per input directory kind (first of each top-level dir)")
    ap.add_argument("--traces", metavar="REGEX", help="only traces whose relative path matches")
    ap.add_argument("--commands", metavar="REGEX",
                    help="only CLI commands / MCP tool labels matching (e.g. 'report|sql')")
    ap.add_argument("--no-cli", action="store_true", help="skip the CLI part")
    ap.add_argument("--no-mcp", action="store_true", help="skip the MCP part")
    ap.add_argument("--no-pairs", action="store_true", help="skip compare / memory_diff on pairs")
    ap.add_argument("--no-snapshot", action="store_true",
                    help="parse every trace every time (JARVIS_NO_SNAPSHOT=1); by default the "
                         "snapshots go to a temp cache dir, so each trace is parsed about once")
    ap.add_argument("--strict-messages", action="store_true",
                    help="a usage error (exit 2) must name the input file too")
    ap.add_argument("--tmp", metavar="DIR", help="parent of the temp work dir (default $TMPDIR)")
    ap.add_argument("--keep", action="store_true", help="keep every output (prints where)")
    ap.add_argument("-v", "--verbose", action="store_true",
                    help="a line per CLI command and per trace of the MCP part")
    ap.add_argument("--json", metavar="FILE", help="also write every result as JSON")
    ap.add_argument("--list", action="store_true", help="list the traces and pairs, run nothing")
    args = ap.parse_args()

    wall0 = time.monotonic()
    jarvis = os.path.abspath(args.jarvis)
    shared = os.path.realpath(args.shared)
    if not os.path.isdir(shared):
        print(f"run_matrix: shared trace directory {args.shared} not found", file=sys.stderr)
        return 2
    if not (os.path.isfile(jarvis) and os.access(jarvis, os.X_OK)):
        print(f"run_matrix: jarvis binary {args.jarvis} not found", file=sys.stderr)
        return 2

    traces = discover_traces(shared)
    if args.quick:
        seen, quick = set(), []
        for t in traces:
            # one per top-level directory and suffix kind
            kind = (t.split("/")[0], next(s for s in TRACE_SUFFIXES + ("",) if t.endswith(s)))
            if kind not in seen:
                seen.add(kind)
                quick.append(t)
        traces = quick
    if args.traces:
        rx = re.compile(args.traces)
        traces = [t for t in traces if rx.search(t)]
    pairs = [] if args.no_pairs else [p for p in discover_pairs(discover_traces(shared))
                                      if p[1] in traces or p[2] in traces]
    if args.quick:
        pairs = pairs[:1] + [p for p in pairs if "h100-h200" in p[0]][:1]
    cmd_filter = re.compile(args.commands) if args.commands else None
    commands = {k: v for k, v in cli_commands().items() if not cmd_filter or cmd_filter.search(k)}
    do_compare = not cmd_filter or cmd_filter.search("compare")
    if args.list:
        for t in traces:
            print(t)
        for label, a, b in pairs:
            print(f"pair {label}: {a} vs {b}")
        return 0
    if not traces:
        print("run_matrix: no trace selected", file=sys.stderr)
        return 2

    work = tempfile.mkdtemp(prefix="jarvis_matrix_", dir=args.tmp)
    try:
        return run_all(args, jarvis, shared, traces, pairs, commands, do_compare, work, wall0)
    finally:
        if args.keep:
            print(f"outputs kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def run_all(args, jarvis, shared, traces, pairs, commands, do_compare, work, wall0):
    cmd_filter = re.compile(args.commands) if args.commands else None
    env = dict(os.environ)
    env["JARVIS_CACHE_DIR"] = os.path.join(work, "cache")  # snapshots and write ledger
    env.pop("JARVIS_NO_SNAPSHOT", None)
    if args.no_snapshot:
        env["JARVIS_NO_SNAPSHOT"] = "1"
    before = shared_state(shared)
    lock = threading.Lock()

    def log(msg, always=False):
        if args.verbose or always:
            with lock:
                print(msg, flush=True)

    print(f"jarvis: {jarvis}\nshared: {shared}\nwork:   {work}\n"
          f"{len(traces)} traces, {len(pairs)} pairs, {len(commands)} CLI commands, "
          f"jobs {args.jobs}, timeout {args.timeout:.0f} s", flush=True)
    results = []
    cli_seconds = mcp_seconds = 0.0

    # The MCP part is one server answering one request at a time: it runs
    # beside the CLI part (whose commands run --jobs at once), so both cores
    # stay busy and the matrix takes the longer of the two, not their sum.
    def mcp_part():
        t0 = time.monotonic()
        found, calls = run_mcp(jarvis, shared, traces, pairs, work, args.timeout, env, args.keep,
                               log, cmd_filter)
        return found, calls, time.monotonic() - t0

    mcp_pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    mcp_future = None if args.no_mcp else mcp_pool.submit(mcp_part)
    if not args.no_cli:
        t0 = time.monotonic()
        tasks = []  # trace-major: a trace's first command writes its snapshot
        for rel in traces:
            path = os.path.join(shared, rel)
            for name, build in commands.items():
                tasks.append((name, rel, [path], lambda d, b=build, p=path: b(jarvis, p, d)))
        if do_compare:
            for label, a, b in pairs:
                pa, pb = os.path.join(shared, a), os.path.join(shared, b)
                tasks.append(("compare", label, [pa, pb],
                              lambda d, pa=pa, pb=pb: compare_command(jarvis, pa, pb, d)))
        done = [0]

        def one(task):
            name, label, inputs, argv_of = task
            r = run_cli(jarvis, name, label, inputs, argv_of, work, args.timeout, env, args.keep,
                        args.strict_messages)
            with lock:
                done[0] += 1
                if args.verbose or r.status == "FAIL" or done[0] % 100 == 0:
                    mark = "" if r.status != "FAIL" else f"  {r.detail}"
                    print(f"[{done[0]}/{len(tasks)}] {r.status:4s} {r.seconds:6.1f}s {name} {label}"
                          f"{mark}", flush=True)
            return r

        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            results.extend(pool.map(one, tasks))
        cli_seconds = time.monotonic() - t0
    mcp_calls = 0
    if mcp_future is not None:
        mcp_results, mcp_calls, mcp_seconds = mcp_future.result()
        results.extend(mcp_results)
    mcp_pool.shutdown()

    after = shared_state(shared)
    if before != after:
        changed = sorted(set(before.items()) ^ set(after.items()))
        results.append(Result("cli", "shared-dir", "-", "FAIL", 0.0,
                              "the shared directory changed: " +
                              ", ".join(sorted({p for p, _ in changed})[:10])))

    out = sys.stdout
    cli_names = list(commands) + ["compare"]
    print_table(results, "cli", cli_names, traces + [p[0] for p in pairs], out)
    mcp_names = []
    for r in results:
        if r.part == "mcp" and r.command not in mcp_names:
            mcp_names.append(r.command)
    print_table(results, "mcp", mcp_names, traces + [p[0] for p in pairs], out)
    print_costs(results, "cli", out)
    print_costs(results, "mcp", out)

    fails = [r for r in results if r.status == "FAIL"]
    counts = {}
    for r in results:
        counts[(r.part, r.status)] = counts.get((r.part, r.status), 0) + 1
    if fails:
        out.write(f"\nFAILURES ({len(fails)})\n")
        for r in fails:
            out.write(f"- [{r.part}] {r.command} on {r.trace}: {r.detail}\n")
            if r.argv:
                out.write("    $ " + shlex.join(r.argv) + "\n")
            if r.stderr:
                out.write("".join(f"    | {line}\n" for line in r.stderr.splitlines()))
    wall = time.monotonic() - wall0
    out.write("\nSUMMARY: " + ", ".join(f"{p} {s}: {n}" for (p, s), n in sorted(counts.items())) +
              f"\nCLI part {cli_seconds:.1f} s (jobs {args.jobs}), MCP part {mcp_seconds:.1f} s "
              f"({mcp_calls} requests), total wall time {wall:.1f} s\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"wall_seconds": wall, "cli_seconds": cli_seconds, "mcp_seconds": mcp_seconds,
                       "results": [r.as_dict() for r in results]}, f, indent=1)
    out.write("RESULT: " + ("FAIL" if fails else "PASS") + "\n")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
