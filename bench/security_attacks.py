#!/usr/bin/env python3
# Issue 24 attacks against a live `jarvis serve --http` (gzip bomb, deep nesting,
# slow clients, session flood): the status each gets and the server's peak RSS.
# usage: bench/security_attacks.py build/jarvis
import http.client, json, os, socket, subprocess, sys, time, zlib, threading
binary = sys.argv[1]
SHARED = os.environ.get("JARVIS_SHARED_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared"))
srv = subprocess.Popen([binary, "serve", "--http", "127.0.0.1:0", "--root", SHARED], stderr=subprocess.PIPE, text=True)
line = srv.stderr.readline()
port = int(line.rsplit(":", 1)[1].split("/")[0])
def rss():
    for l in open(f"/proc/{srv.pid}/status"):
        if l.startswith("VmHWM"): return int(l.split()[1]) // 1024
def post(body, headers, timeout=30):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    h = {"Content-Type": "application/json", "Accept": "application/json"}; h.update(headers)
    c.request("POST", "/mcp", body=body, headers=h)
    r = c.getresponse(); return r.status, r.read()
init = json.dumps({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}})
print("baseline peak RSS MB", rss())
# 1. gzip bomb: 2 GiB of one JSON string in ~2 MB of gzip
co = zlib.compressobj(9, zlib.DEFLATED, 31)
parts = [co.compress(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"')]
chunk = b"a" * (1 << 20)
for _ in range(2048): parts.append(co.compress(chunk))
parts.append(co.compress(b'"}}')); parts.append(co.flush())
bomb = b"".join(parts)
t = time.time(); st, _ = post(bomb, {"Content-Encoding": "gzip"}); dt = time.time() - t
print(f"gzip bomb: {len(bomb)/1e6:.1f} MB gzip -> 2 GiB: status {st} in {dt:.2f} s, server peak RSS MB {rss()}")
# 2. deep nesting 200k
deep = '{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"x":' + "["*200000 + "]"*200000 + "}}"
t = time.time(); st, b = post(deep, {}); print(f"deep 200k: status {st} code {json.loads(b)['error']['code']} in {time.time()-t:.3f} s")
# 3. slowloris: 32 connections one byte a second, then a normal request
socks = []
for _ in range(32):
    s = socket.create_connection(("127.0.0.1", port)); s.send(b"POST /mcp HTTP/1.1\r\n"); socks.append(s)
stop = False
def drip():
    while not stop:
        for s in socks:
            try: s.send(b"X")
            except OSError: pass
        time.sleep(1)
th = threading.Thread(target=drip); th.start()
time.sleep(0.5)
t = time.time(); st, _ = post(init, {}); print(f"slowloris x32 (workers 32): initialize status {st} in {time.time()-t:.3f} s")
stop = True; th.join()
# 4. 300 sessions: never 503
codes = set()
for _ in range(300): codes.add(post(init, {})[0])
print("300 initializes, statuses", sorted(codes))
print("final peak RSS MB", rss())
srv.terminate(); srv.wait()
