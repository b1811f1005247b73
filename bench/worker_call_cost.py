#!/usr/bin/env python3
"""What running each analysis call in a forked worker costs (issue 60 point 3).

Starts `jarvis serve --stdio` twice on the same trace, once with
--isolate-calls off (the baseline, measured in the same run) and once with
--isolate-calls on, loads the trace, and times each tool call from request
to reply. A call in the server keeps what it derived (perf rows, the step
model) for the next call; a worker's derivations die with it, so the
repeated calls show that cost, and the first call the fork's own.

  bench/worker_call_cost.py JARVIS TRACE [--repeat N]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

CALLS = [
    ("ops_summary", lambda h, path: {"trace": h}),
    ("insights", lambda h, path: {"trace": h}),
    ("critical_path", lambda h, path: {"traces": [path]}),
    ("parent_chain", lambda h, path: {"trace": h, "uid": 0}),
]


class Server:
    def __init__(self, jarvis, root, isolate):
        self.proc = subprocess.Popen(
            [jarvis, "serve", "--stdio", "--root", root, "--isolate-calls", isolate],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env=dict(os.environ, JARVIS_NO_SNAPSHOT="1"))
        self.next_id = 0
        self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                    "clientInfo": {"name": "bench", "version": "0"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message):
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def request(self, method, params):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            reply = json.loads(self.proc.stdout.readline())
            if reply.get("id") == self.next_id:
                return reply

    def call(self, tool, args):
        start = time.perf_counter()
        reply = self.request("tools/call", {"name": tool, "arguments": args})
        return time.perf_counter() - start, reply

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def measure(jarvis, trace, isolate, repeat):
    server = Server(jarvis, os.path.dirname(os.path.abspath(trace)), isolate)
    _, loaded = server.call("load_trace", {"path": os.path.basename(trace)})
    handle = loaded["result"]["structuredContent"]["trace"]
    times = {}
    for tool, args in CALLS:
        runs = []
        for _ in range(repeat):
            seconds, reply = server.call(tool, args(handle, os.path.basename(trace)))
            if reply.get("result", {}).get("isError"):
                sys.exit(f"{tool} failed: {reply['result']['content'][0]['text']}")
            runs.append(seconds)
        times[tool] = runs
    server.close()
    return times


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("jarvis")
    parser.add_argument("trace")
    parser.add_argument("--repeat", type=int, default=3)
    a = parser.parse_args()
    base = measure(a.jarvis, a.trace, "off", a.repeat)
    isolated = measure(a.jarvis, a.trace, "on", a.repeat)
    print(f"trace: {a.trace}")
    print(f"{'tool':<16} {'first in server':>16} {'first in worker':>16} "
          f"{'again in server':>16} {'again in worker':>16} {'again: worker/server':>21}")
    for tool, _ in CALLS:
        b, w = base[tool], isolated[tool]
        again_b = statistics.median(b[1:]) if len(b) > 1 else b[0]
        again_w = statistics.median(w[1:]) if len(w) > 1 else w[0]
        print(f"{tool:<16} {b[0] * 1e3:13.1f} ms {w[0] * 1e3:13.1f} ms "
              f"{again_b * 1e3:13.1f} ms {again_w * 1e3:13.1f} ms {again_w / again_b:20.2f}x")


if __name__ == "__main__":
    main()
