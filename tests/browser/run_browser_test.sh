#!/usr/bin/env bash
# Browser test of the HTML report kinds: builds each page with the jarvis CLI
# (single-trace report; findings page with an embedded chart; sweep pages;
# the memory page), then loads them in headless Chromium (check_pages.py).
# Fails on any console error, failed request or request leaving the file;
# screenshots go to OUTDIR. The memory charts of the report and of the memory
# page must show allocated and reserved and a peak marker labelled with the
# peak `jarvis memory` prints. The report must open with its verdict section,
# link its annotated trace and draw a timeline that zooms; the report's and the
# sweep page's charts fill the page, their tables neither scroll sideways nor
# grow tall rows, legends are whole and roof labels clear the circles.
#
#   run_browser_test.sh JARVIS SHARED_DIR OUTDIR CHROMIUM PYTHON3
set -euo pipefail
jarvis="$1"; shared="$2"; out="$3"; chromium="${4:-}"; python="${5:-}"
if [ -z "$chromium" ] || [ ! -x "$chromium" ]; then
  echo "chromium not found: install the Debian package 'chromium' (CI does)" >&2; exit 1
fi
if [ -z "$python" ] || [ ! -x "$python" ]; then
  echo "python3 not found" >&2; exit 1
fi
trace="$shared/conformance/h100_bert-small/trace.json.gz"
rm -rf "$out"; mkdir -p "$out/pages" "$out/findings/category_findings"
"$jarvis" report "$trace" --html "$out/pages/report.html" --svg-dir "$out/findings/charts"
cat > "$out/findings/category_findings/gemm_findings.md" <<'MD'
# GEMM findings

## Overview
GEMMs take most of the kernel time of this BERT step; most shapes are memory bound.

![GEMM roofline](../charts/gemm_roofline.svg)

## Key Bottlenecks

| Priority | Op | Time share |
|---|---|---|
| High | aten::addmm (512 x 512) | see the top-ops chart |

![Top ops](../charts/top_ops.svg)
MD
"$jarvis" render-findings "$out/findings" --out "$out/pages/findings.html"
# The sweep page (real H100 DDP sweep) and the two-sweep comparison (the two
# TraceLens report sweeps of the MI300 NCCL study). The repository's copy of
# ../shared (a fresh clone's, tests/data/shared) holds no sweeps: then the
# sweep pages are left out, and said so.
sweep_pages=() sweep_layout=()
if [ -d "$shared/sweeps" ]; then
  "$jarvis" sweep "$shared/sweeps/h100_gpt2_ddp" --out "$out/sweep" --cache none --quiet \
    --html "$out/pages/sweep.html" >/dev/null
  mi300="$shared/sweeps/tracelens_mi300_nccl_sweep"
  "$jarvis" sweep-compare "$mi300/compare_test" "$mi300/compare_test_ops" --out "$out/sweep_compare" \
    --layout '{threads}thread/perf_*_perf_report_csvs' --cache none --quiet \
    --html "$out/pages/sweep_compare.html" --labels baseline candidate >/dev/null
  sweep_pages=("$out/pages/sweep.html" "$out/pages/sweep_compare.html")
  sweep_layout=(--layout "$out/pages/sweep.html")
else
  echo "note: $shared has no sweeps/ (the repository's copy of ../shared holds none): the sweep" \
       "and sweep-compare pages are not tested here" >&2
fi
# The memory page of a trace with CUDA and CPU [memory] events.
qwen="$shared/conformance/h100_qwen1.5-0.5b/trace.json.gz"
"$jarvis" memory "$qwen" --html "$out/pages/memory.html" --progress none > "$out/memory.txt"
"$jarvis" memory "$trace" --progress none > "$out/report_memory.txt"
# The peaks as the CLI prints them, one per device in page order:
# "cuda:0: peak 96.6 MiB allocated ..." and "also cpu: peak ... allocated ...".
peaks() {
  sed -n -E 's/^(also )?[a-z0-9:]+: (peak .*) allocated \(.*/\2/p' "$1" | paste -sd '|' -
}
"$python" "$(dirname "$0")/check_pages.py" "$chromium" "$out/screenshots" \
  --memory-peaks "$out/pages/report.html=$(peaks "$out/report_memory.txt")" \
  --first-section "$out/pages/report.html=verdict" \
  --layout "$out/pages/report.html" "${sweep_layout[@]}" \
  --timeline "$out/pages/report.html" \
  --memory-peaks "$out/pages/memory.html=$(peaks "$out/memory.txt")" \
  "$out/pages/report.html" "$out/pages/findings.html" "${sweep_pages[@]}" "$out/pages/memory.html"
