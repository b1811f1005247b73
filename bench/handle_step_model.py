#!/usr/bin/env python3
"""critical_path and what_if on a load_trace handle against the same job by path (issue 75 point 3).

Starts `jarvis serve --stdio` on the trace's directory, loads the trace, and times
`critical_path` and `what_if` (category gemm x 0.5) once on the handle (the step model
load_trace built: its graph and analyses) and once on the trace's path (a graph built for
that call, as a handle call did before), from request to reply.

  bench/handle_step_model.py JARVIS TRACE [--isolate-calls on|off]
"""
import argparse
import json
import os
import subprocess
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("jarvis")
    ap.add_argument("trace")
    ap.add_argument("--isolate-calls", default="off", choices=["on", "off"])
    args = ap.parse_args()
    trace = os.path.abspath(args.trace)
    server = subprocess.Popen(
        [args.jarvis, "serve", "--stdio", "--root", os.path.dirname(trace), "--isolate-calls",
         args.isolate_calls], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def call(i, method, params):
        server.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method,
                                       "params": params}) + "\n")
        server.stdin.flush()
        while True:
            reply = json.loads(server.stdout.readline())
            if reply.get("id") == i:
                return reply

    call(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                           "clientInfo": {"name": "bench", "version": "0"}})
    server.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
    server.stdin.flush()

    def tool(i, name, arguments):
        start = time.time()
        reply = call(i, "tools/call", {"name": name, "arguments": arguments})
        if reply["result"].get("isError"):
            raise SystemExit(f"{name} failed: {reply['result']['content'][0]['text']}")
        return time.time() - start, reply["result"].get("structuredContent", {})

    seconds, loaded = tool(1, "load_trace", {"path": trace})
    print(f"load_trace {seconds:.2f} s")
    handle = loaded["trace"]
    gemm = {"category": "gemm", "factor": 0.5}
    calls = [("critical_path", {"trace": handle}), ("critical_path", {"traces": [trace]}),
             ("what_if", dict(gemm, trace=handle)), ("what_if", dict(gemm, traces=[trace]))]
    for k, (name, arguments) in enumerate(calls):
        seconds, _ = tool(10 + k, name, arguments)
        print(f"{name} on the {'handle' if 'trace' in arguments else 'path'}: {seconds:.2f} s")
    server.stdin.close()
    server.wait()


if __name__ == "__main__":
    main()
