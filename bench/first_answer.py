#!/usr/bin/env python3
"""The agent's first answer against the report on the same trace (issue 75).

Tiles the GPT-2 trace of ../shared/hw_pairs (x4 and x32; x256, 1.3 GB of JSON,
with --big) into a temporary directory, measures the single-threaded floor
(gunzip + a simdjson pass, from jarvis_bench in the same run, malloc on 2 MiB
pages as jarvis's is), then the wall
time and peak RSS of `jarvis report`, `jarvis insights`, `jarvis
critical-path` and the MCP first answer: `load_trace` (its health block with
the un-profiled estimate) and `insights` over HTTP on a server with workers
(--isolate-calls on, the HTTP default), then `insights` again in the same
session with other arguments (what a second call pays). Each cell is the best of --repeat runs, in
a fresh process each (the server: a fresh server each); its ratio to the
report is beside it. The runs go round by round (report, insights,
critical-path, MCP, then again), so that a slow spell of the machine reaches
every cell alike.

  cold: no snapshot (JARVIS_NO_SNAPSHOT=1): every run parses the JSON.
  warm: the trace's snapshot and its step model's graph file exist (a primed
        JARVIS_CACHE_DIR in the temp dir: `jarvis info` wrote the snapshot, one MCP
        session before the measured ones wrote the graph, critical_path/graph_file.h,
        as an agent's earlier session on the trace does). That priming session is
        the first answer with the snapshot only; its load + insights is printed in
        the split column ("first session").

The header gives the machine's cost of fresh memory (fresh_memory_rates): on
a virtual machine whose host takes freed pages back, a page's first touch is
10-25x slower two seconds after it was freed than at once, and a cell that
meets such pages reads that much slower (docs/performance.md, "Session 42").

Peak RSS: the child's ru_maxrss from wait4 for the CLI. For the server, the
memory the machine gives the server and its workers together, sampled every
10 ms from /proc: the server's RSS plus each worker's pages of its own
(smaps_rollup Private_Clean + Private_Dirty: what it allocated or copied on
writing; read exactly when its RSS grew 16 MB or every 0.5 s, in between the
last exact figure plus its RSS growth: server_memory_mb says why); a worker's
pages still shared with the server (the parsed trace,
the step model, read copy-on-write) are counted once, in the server's RSS.
This is the sum the server's --max-memory budget counts (mcp/worker_call.h
tree_memory). Summing the processes' RSS instead counts the shared pages
twice (x32: 305 MB for 172 MB); that sum is printed too (rss sum), with the
server's own VmHWM.

After the first answer the same session calls `insights` again with other
arguments (detail=full: every row with its uid lists; a fresh worker before
the analysis was kept on the trace) and `query_sql` "SELECT 1", the fixed
cost of a call in a worker (fork, frames, exit).

    bench/first_answer.py [--build /work/build] [--repeat 3] [--big] [--tmp DIR]
                          [--modes cold,warm]
"""
from __future__ import annotations

import argparse
import http.client
import json
import mmap
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def run_measured(cmd: list[str], env: dict) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of one run of `cmd`."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(cmd)} failed: {err[-2000:]}")
    return wall, usage.ru_maxrss / 1024.0


def children_of(pid: int) -> list[int]:
    kids = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                kids += [int(c) for c in f.read().split()]
    except OSError:
        pass
    return kids


def own_rss_mb(pid: int) -> float:
    """A worker's pages of its own (smaps_rollup Private_*), MB; 0 when gone."""
    total = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith(("Private_Clean:", "Private_Dirty:")):
                    total += int(line.split()[1])
    except OSError:
        pass
    return total / 1024.0


def resident_mb(pid: int) -> float:
    """RSS of `pid` (statm, a counter: no page-table walk), MB; 0 when gone."""
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        return 0.0


# A worker's own pages are read exactly (smaps_rollup) when its resident set
# has grown this much since the last exact read, or this long after it.
EXACT_AFTER_GROWTH_MB = 16.0
EXACT_EVERY_S = 0.5


def server_memory_mb(pid: int, own_of: dict) -> tuple[float, float]:
    """(server RSS + its workers' own pages, server RSS + its workers' RSS), MB.

    A worker's own pages come from smaps_rollup, which walks its page tables
    (10 ms for an x256 insights worker, holding its mmap lock): read at a
    fixed rate it took a fifth of a core from the 2-core host and slowed the
    worker it measured (x256 insights 1.00 -> 1.17 s). Between exact reads a
    worker's own pages are the last exact figure plus what its resident set
    grew since (a page it allocates is its own; a page it copies on writing
    replaces a shared one in its resident set and waits for the next exact
    read, at most EXACT_EVERY_S later); own_of keeps, per worker, (exact own
    MB, RSS then, when)."""
    server = resident_mb(pid)
    if server == 0.0:
        return 0.0, 0.0
    own_total = rss_total = 0.0
    now = time.perf_counter()
    for k in children_of(pid):
        rss = resident_mb(k)
        rss_total += rss
        last = own_of.get(k)
        if last is None or rss - last[1] >= EXACT_AFTER_GROWTH_MB or now - last[2] >= EXACT_EVERY_S:
            last = own_of[k] = (own_rss_mb(k), rss, now)
        own_total += last[0] + max(0.0, rss - last[1])
    return server + own_total, server + rss_total


def vm_hwm_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM"):
                return int(line.split()[1]) / 1024.0
    return 0.0


class HttpServer:
    """`jarvis serve --http` with workers (--isolate-calls on)."""

    def __init__(self, jarvis: str, root: str, env: dict):
        self.proc = subprocess.Popen(
            [jarvis, "serve", "--http", "127.0.0.1:0", "--root", root, "--isolate-calls", "on"],
            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env)
        line = self.proc.stderr.readline()
        self.port = int(line.rsplit(":", 1)[1].split("/")[0])
        threading.Thread(target=self.proc.stderr.read, daemon=True).start()  # drain
        self.peak = 0.0
        self.peak_rss_sum = 0.0
        self.stop = False
        self.sampler = threading.Thread(target=self.sample, daemon=True)
        self.sampler.start()
        self.sid = None
        self.next_id = 0
        self.sid, _ = self.post("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                               "clientInfo": {"name": "bench", "version": "0"}})

    def sample(self):
        own_of = {}
        while not self.stop:
            own, rss_sum = server_memory_mb(self.proc.pid, own_of)
            self.peak = max(self.peak, own)
            self.peak_rss_sum = max(self.peak_rss_sum, rss_sum)
            time.sleep(0.01)

    def post(self, method: str, params: dict):
        self.next_id += 1
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.sid:
            headers["Mcp-Session-Id"] = self.sid
        body = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        conn.request("POST", "/mcp", body=json.dumps(body), headers=headers)
        reply = conn.getresponse()
        data = json.loads(reply.read() or b"null")
        return reply.getheader("Mcp-Session-Id"), data

    def call(self, tool: str, args: dict) -> tuple[float, dict]:
        start = time.perf_counter()
        _, reply = self.post("tools/call", {"name": tool, "arguments": args})
        seconds = time.perf_counter() - start
        result = reply.get("result", {})
        if "error" in reply or result.get("isError"):
            sys.exit(f"{tool} failed: {json.dumps(reply)[:2000]}")
        return seconds, result

    def close(self) -> tuple[float, float]:
        """(peak of the server's RSS + its workers' own pages, the server's VmHWM), MB."""
        hwm = vm_hwm_mb(self.proc.pid)
        self.stop = True
        self.sampler.join()
        self.proc.terminate()
        self.proc.wait(timeout=60)
        return self.peak, hwm


def mcp_first_answer(jarvis: str, trace: str, env: dict) -> dict:
    server = HttpServer(jarvis, os.path.dirname(trace), env)
    load_s, loaded = server.call("load_trace", {"path": os.path.basename(trace)})
    handle = loaded["structuredContent"]["trace"]
    insights_s, _ = server.call("insights", {"trace": handle})
    again_s, _ = server.call("insights", {"trace": handle, "detail": "full"})
    fixed_s, _ = server.call("query_sql", {"trace": handle, "sql": "SELECT 1"})
    rss_sum = server.peak_rss_sum
    peak, hwm = server.close()
    return {"load": load_s, "insights": insights_s, "again": again_s, "fixed": fixed_s,
            "peak": peak, "hwm": hwm, "rss_sum": rss_sum}


def floor_of(bench: str, jarvis: str, trace: str, repeat: int) -> tuple[float, float]:
    """The floor (gunzip + parse, one thread) wall s, and the JSON's MB, from jarvis_bench.

    With malloc on 2 MiB pages, as jarvis runs (it asks glibc for them at start:
    src/base/malloc_policy.h): on the VMs measured, 4 KiB pages make the floor's
    fresh buffers most of its time (x32: 1.0 s instead of 0.22 s)."""
    env = dict(os.environ, GLIBC_TUNABLES="glibc.malloc.hugetlb=1")
    out = subprocess.run([bench, "--jarvis", jarvis, "--cmd", "info", "--repeat", str(repeat),
                          trace], check=True, capture_output=True, text=True, env=env).stdout
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) > 4 and cells[0].endswith(os.path.basename(trace)):
            return float(cells[3].split()[0]), float(cells[2])
    sys.exit(f"no floor for {trace} in jarvis_bench's output:\n{out}")


def first_touch_s(mb: int) -> float:
    """Seconds to write one byte into each 4 KiB page of `mb` MB of fresh
    anonymous memory on 2 MiB pages (as jarvis's allocations are): the page
    faults and the zeroing, with the time of the same writes again (the
    loop's own cost) taken off."""
    n = mb << 20
    m = mmap.mmap(-1, n, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    if hasattr(mmap, "MADV_HUGEPAGE"):
        m.madvise(mmap.MADV_HUGEPAGE)
    ones = b"\x01" * (n // 4096)
    start = time.perf_counter()
    m[::4096] = ones
    first = time.perf_counter() - start
    start = time.perf_counter()
    m[::4096] = ones
    again = time.perf_counter() - start
    m.close()
    return max(1e-6, first - again)


def fresh_memory_rates(mb: int = 256, idle_s: float = 3.0) -> tuple[float, float]:
    """GB/s of fresh memory's first touch (see first_touch_s): taken again at
    once after it was freed, and after `idle_s` of idle. A virtual machine
    whose balloon reports free pages to its host (Linux's free page
    reporting, 2 s after they are freed) gets them back from the host on
    their next first touch, an order of magnitude slower: the rate after idle
    is what every fresh page of a run costs when the machine sat idle before
    it (an agent's next call, seconds after the last)."""
    first_touch_s(mb)  # pages freed just now, for the measurement at once
    at_once = mb / 1024 / first_touch_s(mb)
    time.sleep(idle_s)
    after_idle = mb / 1024 / first_touch_s(mb)
    return at_once, after_idle


def best(runs: list[tuple[float, float]]) -> tuple[float, float]:
    return min(r[0] for r in runs), min(r[1] for r in runs)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.environ.get("JARVIS_BUILD", os.path.join(ROOT, "build")))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--big", action="store_true", help="also x256 (1.3 GB of JSON, 83 MB gzip)")
    ap.add_argument("--tmp", default=None, help="where the tiled traces go (default: $TMPDIR)")
    ap.add_argument("--modes", default="cold,warm")
    ap.add_argument("--copies", default=None, help="comma-separated tilings (default 4,32[,256])")
    args = ap.parse_args()
    shared = os.environ.get("JARVIS_SHARED_DIR", os.path.join(ROOT, "..", "shared"))
    jarvis = os.path.join(args.build, "jarvis")
    bench = os.path.join(args.build, "jarvis_bench")
    copies = [int(c) for c in args.copies.split(",")] if args.copies else (
        [4, 32, 256] if args.big else [4, 32])
    modes = args.modes.split(",")
    with tempfile.TemporaryDirectory(prefix="jarvis_first_answer.", dir=args.tmp) as tmp:
        rows = []
        for n in copies:
            trace = os.path.join(tmp, f"gpt2_x{n}.json.gz")
            subprocess.run([sys.executable, os.path.join(shared, "bench", "tile_trace.py"),
                            os.path.join(shared, "hw_pairs", "gpt2_train", "h100.json.gz"), trace,
                            "--copies", str(n)], check=True, capture_output=True)
            floor_s, json_mb = floor_of(bench, jarvis, trace, args.repeat)
            for mode in modes:
                env = dict(os.environ, JARVIS_CACHE_DIR=os.path.join(tmp, "cache"))
                env.pop("JARVIS_PROFILE_PHASES", None)
                if mode == "cold":
                    env["JARVIS_NO_SNAPSHOT"] = "1"
                else:
                    env.pop("JARVIS_NO_SNAPSHOT", None)
                    run_measured([jarvis, "info", trace], env)  # writes the snapshot
                    primed = mcp_first_answer(jarvis, trace, env)  # and the graph file
                out = os.path.join(tmp, "out")
                cmds = {
                    "report": [jarvis, "report", trace, "--out", out + "_report", "--force"],
                    "insights": [jarvis, "insights", trace, "--json", out + "_insights.json"],
                    "critical-path": [jarvis, "critical-path", trace, "--out", out + "_cp"],
                }
                # Round by round, one run of each: a virtual machine's slow
                # spells (whole runs at half speed, minutes long) then reach
                # every cell alike instead of the ones measured during them.
                runs: dict[str, list[tuple[float, float]]] = {name: [] for name in cmds}
                mcp = []
                for _ in range(args.repeat):
                    for name, cmd in cmds.items():
                        runs[name].append(run_measured(cmd, env))
                    mcp.append(mcp_first_answer(jarvis, trace, env))
                cells = {name: best(r) for name, r in runs.items()}
                cells["mcp"] = (min(m["load"] + m["insights"] for m in mcp),
                                min(m["peak"] for m in mcp))
                rows.append((n, json_mb, floor_s, mode, cells, {
                    "load": min(m["load"] for m in mcp),
                    "insights": min(m["insights"] for m in mcp),
                    "again": min(m["again"] for m in mcp),
                    "fixed": min(m["fixed"] for m in mcp),
                    "rss_sum": min(m["rss_sum"] for m in mcp),
                    "hwm": min(m["hwm"] for m in mcp),
                    "first": primed["load"] + primed["insights"] if mode != "cold" else None}))
                print(f"x{n} {mode} done", file=sys.stderr)
    host = subprocess.run(["sh", "-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"],
                          capture_output=True, text=True).stdout.strip()
    at_once, after_idle = fresh_memory_rates()
    print(f"bench/first_answer.py, best of {args.repeat}: "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} x {host}, "
          f"load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}; fresh memory's first "
          f"touch {at_once:.1f} GB/s reused at once, {after_idle:.1f} GB/s after 3 s idle\n")
    print("| trace (JSON MB) | mode | floor s (2 MiB pages) | `report` | `insights` (CLI) | `critical-path` | "
          "MCP `load_trace` + `insights` (HTTP, workers; server + workers' own pages) | "
          "MCP split: load + insights, insights detail=full after, a worker call's fixed cost; "
          "server VmHWM, rss sum; warm: the priming session's load + insights |")
    print("|---|---|---:|---|---|---|---|---|")
    for n, json_mb, floor_s, mode, cells, mcp in rows:
        rep_s, rep_mb = cells["report"]

        def cell(name: str) -> str:
            s, mb = cells[name]
            return f"{s:.2f} s ({s / rep_s:.1f}x), {mb:.0f} MB ({mb / rep_mb:.1f}x)"

        print(f"| x{n} ({json_mb:.0f}) | {mode} | {floor_s:.2f} | {rep_s:.2f} s "
              f"({rep_s / floor_s:.2f}x floor), {rep_mb:.0f} MB | {cell('insights')} | "
              f"{cell('critical-path')} | {cell('mcp')} | {mcp['load']:.2f} + "
              f"{mcp['insights']:.2f} s, {mcp['again']:.2f} s, {mcp['fixed']:.3f} s; "
              f"{mcp['hwm']:.0f} MB, {mcp['rss_sum']:.0f} MB"
              + (f"; first session {mcp['first']:.2f} s" if mcp["first"] is not None else "")
              + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
