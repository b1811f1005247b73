#!/usr/bin/env python3
"""Bytes of MCP results: tools/list and each tool's default result.

Runs a scripted session (the skills' standalone workflow) through
`jarvis serve --stdio` over the example trace (examples/example_trace.json.gz)
and a conformance trace, and prints the size of every JSON-RPC reply as the
client receives it (one line of compact JSON). Only the arguments a tool
needs are passed, so each number is the tool's default result.

    bench/result_bytes.py [--jarvis build/jarvis] [--shared ../shared]
                          [--protocol 2025-11-25] [--json FILE]

--before-estimate measures what the same calls cost before the compact-results
change (commit 525513b) on this binary: each call with that version's defaults
(top_n / max_operations as they were, every field) at protocol 2025-03-26, whose
text is the summary plus the data as JSON, plus the structuredContent a
2025-06-18 client also received (the old server sent the data twice). tools/list
before is rebuilt exactly from `git show 525513b:tools_schema/*.json`.

Results (before / after the compact-results change): bench/RESULTS.md.
Needs python3 (standard library only).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

BEFORE_COMMIT = "525513b"
# The defaults of the row-returning tools before the change (their schemas'
# top_n / max_operations), and every field (detail=full).
BEFORE_DEFAULTS = {
    "ops_summary": {"top_n": 20, "detail": "full"},
    "gemm_roofline": {"top_n": 50, "detail": "full"},
    "insights": {"top_n": 20, "detail": "full"},
    "analyze_category": {"max_operations": 20, "detail": "full"},
    "compare": {"top_n": 10, "detail": "full"},
    "parent_chain": {"detail": "full"},
    "category_filter": {"detail": "full"},
    "make_replay": {"detail": "full"},
}

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


class Session:
    before = False

    def __init__(self, jarvis, roots, protocol):
        args = [jarvis, "serve", "--stdio"]
        for r in roots:
            args += ["--root", r]
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)
        self.next_id = 1
        self.request("initialize", {"protocolVersion": protocol, "capabilities": {},
                                    "clientInfo": {"name": "result_bytes", "version": "0"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message):
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def request(self, method, params):
        rid = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"server exited during {method}")
            reply = json.loads(line)
            if reply.get("id") == rid:
                return len(line.rstrip("\n").encode()), reply

    def call(self, name, arguments):
        if self.before:
            arguments = {**arguments, **BEFORE_DEFAULTS.get(name, {})}
        size, reply = self.request("tools/call", {"name": name, "arguments": arguments})
        result = reply.get("result", {})
        if "error" in reply or result.get("isError"):
            text = reply.get("error") or result.get("content", [{}])[0].get("text", "")
            raise RuntimeError(f"{name} failed: {str(text)[:300]}")
        if self.before and "structuredContent" not in result:
            # The data a 2025-06-18 client also got as structuredContent.
            data = structured(result)
            data.pop("truncated", None)
            data.pop("next", None)
            size += len(',"structuredContent":'.encode()) + len(
                json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode())
        return size, result

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def structured(result):
    """structuredContent, or the JSON after the summary for older clients."""
    if "structuredContent" in result:
        return result["structuredContent"]
    text = result["content"][0]["text"]
    start = text.find("\n{")
    return json.loads(text[start + 1:] if start >= 0 else text)


def tools_list_bytes_at(commit):
    """tools/list at 2025-06-18+ as that commit's server wrote it: its schema
    files, sorted by name, serialized like nlohmann::json (sorted keys, compact)."""
    names = subprocess.run(["git", "-C", REPO, "ls-tree", "--name-only", commit, "tools_schema/"],
                           capture_output=True, text=True, check=True).stdout.split()
    defs = [json.loads(subprocess.run(["git", "-C", REPO, "show", f"{commit}:{n}"],
                                      capture_output=True, text=True, check=True).stdout)
            for n in names if n.endswith(".json")]
    defs.sort(key=lambda d: d["name"])
    reply = {"id": 2, "jsonrpc": "2.0", "result": {"tools": defs}}
    return len(json.dumps(reply, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode())


def session_rows(s, label, trace, out_dir):
    """The workflow of skills/performance-analysis.md on one trace: (tool, bytes) rows."""
    rows = []

    def run(tool, args, note=""):
        size, result = s.call(tool, args)
        rows.append((label, tool + (f" ({note})" if note else ""), size))
        return structured(result)

    loaded = run("load_trace", {"path": trace})
    handle = loaded["trace"]
    run("list_traces", {})
    ops = run("ops_summary", {"trace": handle})
    run("insights", {"trace": handle})
    run("gemm_roofline", {"trace": handle})
    top = ops["rows"][0]["name"] if ops.get("rows") else "aten::mm"
    run("parent_chain", {"trace": handle, "op_name": top})
    prepared = run("category_filter", {"trace": handle, "output_dir": out_dir})
    cats = [c["name"] for c in prepared["categories"]]
    biggest = {"size": 0}
    for cat in cats:
        size, result = s.call("analyze_category", {"output_dir": out_dir, "category": cat})
        if size > biggest["size"]:
            biggest = {"size": size, "cat": cat}
    if cats:
        rows.append((label, f"analyze_category (largest of {len(cats)}: {biggest['cat']})",
                     biggest["size"]))
    if "gemm" in cats:
        run("analyze_category", {"output_dir": out_dir, "category": "gemm", "write_draft": True},
            "gemm, write_draft")
    run("render_findings", {"output_dir": out_dir})
    run("make_replay", {"trace": handle, "output_dir": os.path.join(out_dir, "replay"),
                        "op": top})
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jarvis", default=os.path.join(REPO, "build", "jarvis"))
    ap.add_argument("--shared", default=os.path.join(os.path.dirname(REPO), "shared"))
    ap.add_argument("--protocol", default="2025-11-25")
    ap.add_argument("--conformance", default="h100_qwen1.5-0.5b")
    ap.add_argument("--json", help="also write the rows as JSON here")
    ap.add_argument("--before-estimate", action="store_true",
                    help="estimate the sizes before the compact-results change (see above)")
    a = ap.parse_args()
    if a.before_estimate:
        a.protocol = "2025-03-26"
        Session.before = True
    example = os.path.join(REPO, "examples", "example_trace.json.gz")
    conf_dir = os.path.join(a.shared, "conformance")
    conf = os.path.join(conf_dir, a.conformance, "trace.json.gz")
    with tempfile.TemporaryDirectory() as tmp:
        s = Session(a.jarvis, [tmp, os.path.dirname(example), conf_dir], a.protocol)
        size, _ = s.request("tools/list", {})
        if a.before_estimate:
            size = tools_list_bytes_at(BEFORE_COMMIT)
        rows = [("-", "tools/list", size)]
        rows += session_rows(s, "example", example, os.path.join(tmp, "example"))
        rows += session_rows(s, a.conformance, conf, os.path.join(tmp, "conformance"))
        other = os.path.join(conf_dir, "mi300" + a.conformance[4:], "trace.json.gz")
        if a.conformance.startswith("h100_") and os.path.exists(other):
            size, _ = s.call("compare", {"reference_trace": conf, "target_trace": other})
            rows.append((a.conformance + " vs mi300", "compare", size))
        s.close()
    width = max(len(r[1]) for r in rows)
    what = ("estimated before the compact-results change" if a.before_estimate
            else f"protocol {a.protocol}")
    print(f"{what}; bytes of each JSON-RPC reply line")
    print(f"| trace | call | bytes |\n|---|---|---:|")
    for label, call, size in rows:
        print(f"| {label} | {call:<{width}} | {size} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump([{"trace": t, "call": c, "bytes": b} for t, c, b in rows], f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
