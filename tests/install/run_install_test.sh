#!/usr/bin/env bash
# The installed tree works on its own: install to a temp prefix, move the
# prefix, run the moved binary from another directory with JARVIS_ARCH_DIR
# unset, and compare its report (roofline columns need the compiled-in arch
# files) with the build tree's, file for file. Also checks the man page and
# the bash completion that the install adds.
#   run_install_test.sh BUILD_DIR SOURCE_DIR WITH_PYTHON(1|0)
set -euo pipefail
build="$1"
src="$2"
with_python="${3:-0}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
unset JARVIS_ARCH_DIR

cmake --install "$build" --prefix "$work/prefix" >/dev/null
mv "$work/prefix" "$work/moved"
bin="$work/moved/bin/jarvis"
mkdir "$work/elsewhere"
cd "$work/elsewhere"

version="$("$bin" --version)"
[[ "$version" == "jarvis "* ]] || { echo "FAIL: --version printed '$version'"; exit 1; }

trace="$src/examples/example_trace.json.gz"
"$bin" report "$trace" --out "$work/installed" --arch H100 --no-xlsx >/dev/null
"$build/jarvis" report "$trace" --out "$work/built" --arch H100 --no-xlsx >/dev/null
diff -r "$work/installed/perf_report_csvs" "$work/built/perf_report_csvs" ||
  { echo "FAIL: the moved install's report differs from the build tree's"; exit 1; }
grep -q "Roofline" "$work/installed/perf_report_csvs/"*.csv ||
  { echo "FAIL: no roofline columns: the installed binary did not find the H100 arch"; exit 1; }
# Detection from the trace's GPU name, with no arch flag, also works installed;
# the workbook comes from the moved tree's xlsx module.
"$bin" report "$trace" --out "$work/detected" | grep -q "^arch: " ||
  { echo "FAIL: report printed no arch line"; exit 1; }
python3 -c "import sys, zipfile; sys.exit(zipfile.ZipFile(sys.argv[1]).testzip() is not None)" \
  "$work/detected/perf_report.xlsx" ||
  { echo "FAIL: the moved install's perf_report.xlsx is not a valid workbook"; exit 1; }

# `serve --http` loads the HTTP transport module from the moved tree.
"$bin" serve --http 127.0.0.1:0 2>"$work/serve.log" &
serve_pid=$!
for _ in $(seq 100); do
  grep -q "listening on" "$work/serve.log" && break
  sleep 0.1
done
kill "$serve_pid"
wait "$serve_pid" 2>/dev/null || true
grep -q "listening on http://127.0.0.1:" "$work/serve.log" ||
  { echo "FAIL: the moved install's serve --http did not start:"; cat "$work/serve.log"; exit 1; }

# `replay` writes its package archive through the zip module of the moved tree.
"$bin" replay "$trace" --category GEMM --out "$work/replay" >/dev/null ||
  { echo "FAIL: the moved install's replay failed"; exit 1; }
python3 -c "import sys, zipfile; sys.exit(zipfile.ZipFile(sys.argv[1]).testzip() is not None)" \
  "$work/replay/replay_package.zip" ||
  { echo "FAIL: the moved install's replay package is not a valid zip"; exit 1; }

# `render-findings` renders markdown through the markdown module of the moved tree.
mkdir -p "$work/findings/category_findings"
printf '# GEMM\n\n| op | ms |\n|---|---|\n| mm | 1.5 |\n' >"$work/findings/category_findings/gemm.md"
"$bin" render-findings "$work/findings" >/dev/null ||
  { echo "FAIL: the moved install's render-findings failed"; exit 1; }
grep -q "<td>1.5</td>" "$work/findings/findings.html" ||
  { echo "FAIL: the moved install's findings page has no rendered table"; exit 1; }

man_page="$work/moved/share/man/man1/jarvis.1"
head -1 "$man_page" | grep -q '^\.TH JARVIS 1' || { echo "FAIL: $man_page is not a man page"; exit 1; }
for cmd in report compare sweep serve; do
  grep -q "^\.SS $cmd\$" "$man_page" || { echo "FAIL: man page lacks command $cmd"; exit 1; }
done
completion="$work/moved/share/bash-completion/completions/jarvis"
words="$(bash -c "source '$completion'; COMP_WORDS=(jarvis repo); COMP_CWORD=1; _jarvis; echo \${COMPREPLY[*]}")"
[ "$words" = "report" ] || { echo "FAIL: completing 'repo' gave '$words'"; exit 1; }
flags="$(bash -c "source '$completion'; COMP_WORDS=(jarvis report --no-x); COMP_CWORD=2; _jarvis; echo \${COMPREPLY[*]}")"
[ "$flags" = "--no-xlsx" ] || { echo "FAIL: completing 'report --no-x' gave '$flags'"; exit 1; }
[ -f "$work/moved/share/jarvis/skills/gemm-analysis.md" ] || { echo "FAIL: skills not installed"; exit 1; }
# The installed docs (issue 50): every relative link resolves in the moved
# tree, and the README's example trace is there to run.
doc="$work/moved/share/doc/jarvis"
python3 "$src/tests/install/check_doc_links.py" "$doc" ||
  { echo "FAIL: broken links in the installed docs"; exit 1; }
"$bin" report "$doc/examples/example_trace.json.gz" --out "$work/example" --no-xlsx >/dev/null ||
  { echo "FAIL: the installed example trace does not report"; exit 1; }
cmp -s "$work/example/perf_report_csvs/gpu_timeline.csv" "$work/built/perf_report_csvs/gpu_timeline.csv" ||
  { echo "FAIL: the installed example trace's gpu_timeline differs from the source tree's"; exit 1; }
# The man page names jarvis once and describes jarvis, not its hidden `manpage` command.
grep -q '^jarvis \\- GPU performance analysis' "$man_page" ||
  { echo "FAIL: man page NAME line"; exit 1; }
# Completion offers a flag's values, not file names.
values="$(bash -c "source '$completion'; COMP_WORDS=(jarvis report t --progress pl); COMP_CWORD=4; _jarvis; echo \${COMPREPLY[*]}")"
[ "$values" = "plain" ] || { echo "FAIL: completing '--progress pl' gave '$values'"; exit 1; }
# The Python module from the moved prefix: its DataFrames equal the installed
# CLI's CSVs cell for cell (built when pybind11 and Python headers exist).
pkg="$work/moved/lib/python3/dist-packages"
if [ "$with_python" = 1 ]; then
  PYTHONPATH="$pkg" /usr/bin/python3 - "$trace" "$work/installed/perf_report_csvs" <<'PY'
import os, sys
import pandas as pd
import jarvis
trace, csv_dir = sys.argv[1], sys.argv[2]
assert os.path.dirname(jarvis.__file__).startswith(os.environ["PYTHONPATH"]), jarvis.__file__
t = jarvis.load_trace(trace, arch="H100")
names = sorted(f[:-4] for f in os.listdir(csv_dir) if f.endswith(".csv"))
assert sorted(t.sheet_names()) == names, (t.sheet_names(), names)
for name in names:
    pd.testing.assert_frame_equal(t.sheet(name), pd.read_csv(os.path.join(csv_dir, name + ".csv")))
print(f"python module from the moved prefix: {len(names)} sheets equal the CSVs")
PY
fi
echo "install tree OK: $version, report identical to the build tree's"
