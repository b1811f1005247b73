#!/usr/bin/env python3
"""Runs the documentation's runnable command blocks, as a reader would paste them.

A fenced ```bash / ```sh / ```console block is runnable when the line right
before its fence is an HTML comment (invisible on GitHub):

    <!-- doc-test expect="GPU busy" expect='"tools":[' needs="curl openssl" -->

Each block runs as one bash script (`set -e`; background jobs are killed at the
end) in a fresh temp directory that holds `examples/` (a link to the
repository's, so `examples/example_trace.json.gz` is the example trace), with
the built jarvis first on PATH. It passes when the script exits 0 and every
`expect` text (in double or single quotes) appears in its output (stdout and
stderr). `needs` names programs
the block uses; without one of them the block is reported skipped.

What a reader types but a test cannot, the runner substitutes, and says so:
  - segments of an `&&` chain that install packages or build (apt-get, sudo,
    cmake, ctest): the build is the one under test;
  - `build/jarvis` and `/usr/bin/jarvis` -> `jarvis` (the built binary);
  - `/data/traces` -> the temp directory; port 8765 -> a free port.
`$ ` prompts of console blocks are dropped; so are a console block's output
lines (lines without the prompt).

Files that must hold runnable blocks (so coverage cannot vanish unnoticed):
README.md, docs/cli.md, docs/mcp.md.

  run_doc_blocks.py --jarvis BUILD/jarvis --source SOURCE_DIR [FILE.md ...]
"""

import argparse
import os
import re
import shlex
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

MARK = re.compile(r"^\s*<!--\s*doc-test\b(.*?)-->\s*$")
ATTR = re.compile(r"""(\w+)=(?:"([^"]*)"|'([^']*)')""")
FENCE = re.compile(r"^```(bash|sh|console)\s*$")
SETUP = {"apt-get", "apt", "sudo", "cmake", "ctest"}
REQUIRED = ["README.md", "docs/cli.md", "docs/mcp.md"]
TIMEOUT_S = 180


def blocks(path):
    """(line number, attributes, language, text) of each marked block."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out = []
    for k, line in enumerate(lines):
        m = MARK.match(line)
        if not m:
            continue
        fence = FENCE.match(lines[k + 1]) if k + 1 < len(lines) else None
        if not fence:
            sys.exit(f"{path}:{k + 1}: a doc-test mark must sit right above a ```bash, "
                     "```sh or ```console fence")
        body = []
        for j in range(k + 2, len(lines)):
            if lines[j].startswith("```"):
                break
            body.append(lines[j])
        else:
            sys.exit(f"{path}:{k + 2}: unterminated code block")
        attrs = {}
        for key, double, single in ATTR.findall(m.group(1)):
            attrs.setdefault(key, []).append(double or single)
        out.append((k + 2, attrs, fence.group(1), body))
    return out


def script_of(lang, body, port, root):
    """The block as a bash script, and the notes on what was substituted."""
    notes = []
    logical, cont = [], ""
    for raw in body:
        line = raw
        if lang == "console":
            if not line.startswith("$ "):
                if not cont:
                    continue  # output shown in the doc
            else:
                line = line[2:]
        if line.rstrip().endswith("\\"):
            cont += line.rstrip()[:-1] + " "
            continue
        logical.append(cont + line)
        cont = ""
    script = []
    for line in logical:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = [p.strip() for p in line.split(" && ")]
        kept = []
        for p in parts:
            try:
                words = shlex.split(p, comments=True) if p else []
            except ValueError:  # a quote left open: not a command word we skip
                words = p.split()
            if words and words[0] in SETUP:
                notes.append(f"skipped setup: {p[:70]}{'...' if len(p) > 70 else ''}")
            else:
                kept.append(p)
        if kept:
            script.append(" && ".join(kept))
    text = "\n".join(script)
    for old, new in (("build/jarvis", "jarvis"), ("/usr/bin/jarvis", "jarvis"),
                     ("/data/traces", str(root)), ("8765", str(port))):
        if old in text:
            notes.append(f"{old} -> {new}")
            text = text.replace(old, new)
    return text, notes


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_block(path, line, attrs, lang, body, jarvis, source):
    where = f"{path.relative_to(source)}:{line}"
    missing = [n for v in attrs.get("needs", []) for n in v.split()
               if not any(Path(d, n).is_file() for d in os.environ.get("PATH", "").split(":"))]
    if missing:
        print(f"SKIP {where}: needs {' '.join(missing)}")
        return None
    with tempfile.TemporaryDirectory(prefix="doc-test-") as tmp:
        tmp = Path(tmp)
        (tmp / "examples").symlink_to(source / "examples")
        bindir = tmp / ".bin"
        bindir.mkdir()
        (bindir / "jarvis").symlink_to(jarvis)
        text, notes = script_of(lang, body, free_port(), tmp)
        if not text.strip():
            print(f"FAIL {where}: nothing left to run")
            return False
        prologue = "set -e\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n"
        env = dict(os.environ, PATH=f"{bindir}:{os.environ.get('PATH', '')}", HOME=str(tmp),
                   JARVIS_NO_SNAPSHOT="1")
        env.pop("JARVIS_TOKEN", None)
        try:
            proc = subprocess.run(["bash", "-c", prologue + text], cwd=tmp, env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  timeout=TIMEOUT_S, text=True, errors="replace")
            output, code = proc.stdout, proc.returncode
        except subprocess.TimeoutExpired as e:
            out = e.stdout or ""
            output = out.decode(errors="replace") if isinstance(out, bytes) else out
            code = f"timeout ({TIMEOUT_S} s)"
        lost = [e for e in attrs.get("expect", []) if e not in output]
        ok = code == 0 and not lost
        print(f"{'ok  ' if ok else 'FAIL'} {where} ({lang}, {len(text.splitlines())} line(s))")
        for n in notes:
            print(f"       {n}")
        if not ok:
            print(f"       exit: {code}; missing: {lost}\n------ script:\n{text}\n------ output:\n"
                  f"{output[-4000:]}\n------")
        return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jarvis", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("files", nargs="*")
    a = ap.parse_args()
    source = Path(a.source).resolve()
    jarvis = Path(a.jarvis).resolve()
    files = [source / f for f in a.files] or \
        [source / "README.md"] + sorted((source / "docs").glob("*.md"))
    failed = skipped = passed = 0
    for f in files:
        found = blocks(f)
        if not found and str(f.relative_to(source)) in REQUIRED:
            print(f"FAIL {f.relative_to(source)}: no <!-- doc-test --> block")
            failed += 1
        for line, attrs, lang, body in found:
            r = run_block(f, line, attrs, lang, body, jarvis, source)
            if r is None:
                skipped += 1
            elif r:
                passed += 1
            else:
                failed += 1
    print(f"{passed} block(s) passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
