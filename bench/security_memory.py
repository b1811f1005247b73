#!/usr/bin/env python3
# 30 HTTP sessions loading the conformance traces (load_trace + ops_summary each):
# the server's peak RSS with and without --max-memory.
# usage: bench/security_memory.py build/jarvis [--max-memory 64M]
import http.client, json, subprocess, sys, glob, os
binary = sys.argv[1]; extra = sys.argv[2:]
SHARED = os.environ.get("JARVIS_SHARED_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared"))
traces = sorted(glob.glob(os.path.join(SHARED, "conformance/*/trace.json.gz")))
srv = subprocess.Popen([binary, "serve", "--http", "127.0.0.1:0", "--root", SHARED] + extra, stderr=subprocess.PIPE, text=True)
port = int(srv.stderr.readline().rsplit(":", 1)[1].split("/")[0])
def hwm():
    for l in open(f"/proc/{srv.pid}/status"):
        if l.startswith("VmHWM"): return int(l.split()[1]) // 1024
def post(body, sid=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    h = {"Content-Type": "application/json", "Accept": "application/json"}
    if sid: h["Mcp-Session-Id"] = sid
    c.request("POST", "/mcp", body=json.dumps(body), headers=h); r = c.getresponse()
    return r.getheader("Mcp-Session-Id"), json.loads(r.read() or b"null")
errors = 0
for k in range(30):
    sid, _ = post({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}})
    _, r = post({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"load_trace","arguments":{"path":traces[k % len(traces)]}}}, sid)
    _, r2 = post({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"ops_summary","arguments":{"trace":"t1"}}}, sid)
    errors += bool(r["result"].get("isError")) + bool(r2["result"].get("isError"))
print(f"{' '.join(extra) or 'no budget'}: 30 sessions x {len(traces)} distinct traces, tool errors {errors}, server peak RSS {hwm()} MB")
srv.terminate(); srv.wait()
