#!/usr/bin/env python3
"""Scores jarvis's judgment against expert findings (issue 48's evaluation set).

Each eval file (../shared/evals/*.json, and evals/*.json in this repo) names a
trace, the findings a GPU performance engineer would list (what, where, how
much, worst acceptable rank) and the claims that would be wrong for that
trace (regexes over finding titles); its README gives the scoring rules. This
runs `jarvis insights TRACE --json` and scores the ranked insights:

  found   some insight names the same ops or kernels as the finding's `where`
  ranked  the first such insight's rank is at most `rank_at_most`
  sized   its recoverable time lies within `recoverable_ms` (never above `time_ms`),
          each bound read to the precision it is written with (1.93 covers
          1.925-1.935: the experts round measured times);
          a [0, 0] finding is context: passed when nothing claims a saving there
  clean   no insight title matches a `wrong_claims` pattern

Prints one line per finding and wrong claim, and the score per trace and in
all. Exit status 1 when a trace cannot be analysed, an eval file is malformed,
or the score falls below --min-score (CI sets it to the score the project has
reached, so a change that makes the judgment worse turns CI red).

    tools/score_evals.py --jarvis build/jarvis [--shared ../shared] [--min-score N]
"""

import argparse
import fnmatch
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

# Words of a `where` text that name ops or kernels, not prose.
OP_RE = re.compile(r"\b(?:aten|vllm|sglang_profiler|aiter)::[A-Za-z0-9_]+|\b[A-Z][A-Za-z]+Backward\d\b")
KERNEL_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_:*]*[_*][A-Za-z0-9_:*]+")


def where_terms(where):
    """Op names (exact) and kernel-name patterns (fnmatch, * wildcards) of `where`."""
    ops = set(OP_RE.findall(where))
    # "aten::mul/add/pow" names aten::mul, aten::add and aten::pow.
    for m in re.finditer(r"\baten::([a-z_0-9]+(?:/[a-z_0-9]+)+)", where):
        ops.update("aten::" + name for name in m.group(1).split("/"))
    kernels = set()
    for word in KERNEL_RE.findall(where):
        if "::" in word and not word.startswith("cudnn") and not word.startswith("at::"):
            continue  # an op name, handled above
        if len(word.replace("*", "")) >= 6:
            kernels.add(word if "*" in word else "*" + word + "*")
    return ops, kernels


def rounding(value):
    """Half a unit of the last decimal a bound is written with: the experts write
    measured times rounded (1930.2 us as `1.93`), so 1.9302 ms is 1.93 ms. A
    bound written without decimals counts as written to 0.1 ms."""
    text = repr(float(value))
    if "e" in text or "E" in text:
        return 1e-9
    decimals = max(1, len(text.split(".")[1].rstrip("0")) if "." in text else 1)
    return 0.5 * 10 ** -decimals


def insight_names(insight):
    names = [insight.get("title", "")]
    names += insight.get("kernel_names", [])
    evidence = json.dumps(insight.get("evidence", {}))
    return names, evidence


def matches(insight, ops, kernels, pattern=None):
    names, evidence = insight_names(insight)
    text = " ".join(names) + " " + evidence
    if pattern and re.search(pattern, text):
        return True
    if any(re.search(r"(?<![A-Za-z_:])" + re.escape(op) + r"(?![A-Za-z_0-9])", text) for op in ops):
        return True
    for kernel in insight.get("kernel_names", []):
        if any(fnmatch.fnmatchcase(kernel, pattern) for pattern in kernels):
            return True
    return False


def run_insights(jarvis, trace):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "insights.json")
        proc = subprocess.run([jarvis, "insights", trace, "--json", out, "--top", "0", "-q"],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"jarvis insights {trace}: {proc.stderr.strip()}")
        with open(out) as f:
            data = json.load(f)
    return data["insights"] if isinstance(data, dict) else data


def parts_of(insight):
    """A finding that folds several into one change (evidence.own_part and
    evidence.symptoms: issue 73's one change, one finding) still names and
    sizes each part: a part is judged like a finding at its change's rank,
    by its own claim, its title and the ops it names (`where`)."""
    evidence = insight.get("evidence", {}) or {}
    parts = [evidence["own_part"]] if "own_part" in evidence else []
    parts += evidence.get("symptoms", [])
    return [{"rule": p.get("rule", ""), "title": p.get("title", ""),
             "evidence": {"where": p.get("where", [])},
             "recoverable_us_total": p.get("recoverable_us_total")} for p in parts]


def score_trace(jarvis, shared, path):
    with open(path) as f:
        spec = json.load(f)
    for key in ("trace", "findings"):
        if key not in spec:
            raise ValueError(f"{path}: no `{key}`")
    insights = run_insights(jarvis, os.path.join(shared, spec["trace"]))
    # (rank index, finding or part): a folded change's parts at its rank.
    entries = []
    for k, i in enumerate(insights):
        entries.append((k, i))
        entries += [(k, p) for p in parts_of(i)]
    name = os.path.splitext(os.path.basename(path))[0]
    points = total = 0
    lines = []
    for finding in spec["findings"]:
        ops, kernels = where_terms(finding["where"])
        # Optional: a regex over the insight's title and evidence (a cause with
        # no op or kernel of its own: a DataLoader, a sync), and which figure is
        # sized: the recoverable time over the trace (default) or the step
        # saving per step on the un-profiled model (the A/B evals, whose bands
        # come from re-runs timed without the profiler), or "evidence:KEY", a
        # per-step figure in us the finding's evidence gives for its change.
        pattern = finding.get("match")
        measure = finding.get("measure", "recoverable_total")
        low, high = finding["recoverable_ms"]
        context = high == 0
        hit = next((k for k, i in entries if matches(i, ops, kernels, pattern)), None)
        if context:
            # Context: passed when no insight claims a saving on those ops.
            claimed = [i for _, i in entries if matches(i, ops, kernels, pattern) and (i.get("recoverable_us_total") or 0) > 0]
            ok = not claimed
            total += 1
            points += ok
            lines.append(f"  {'PASS' if ok else 'FAIL'} {finding['id']}: context"
                         + ("" if ok else f" (claimed by {claimed[0]['rule']})"))
            continue
        total += 3
        if hit is None:
            lines.append(f"  FAIL {finding['id']}: not found")
            continue

        def judged(e):
            k, insight = entries[e]
            if measure.startswith("evidence:"):
                # A figure the finding's evidence gives for the whole change it
                # asks for (conv_layout_transposes: channels_last's what-if).
                saved = (insight.get("evidence", {}).get(measure[len("evidence:"):]) or 0) / 1000.0
            elif measure == "step_saving_per_step":
                value = insight.get("step_saving_us_per_step")
                if value is None:  # no what-if: the recoverable time per step
                    value = insight.get("recoverable_us_per_step")
                saved = (value or 0) / 1000.0
            else:
                saved = (insight.get("recoverable_us_total") or 0) / 1000.0
            rank = k + 1 <= finding["rank_at_most"]
            size = (low - rounding(low) <= saved <= high + rounding(high)
                    and saved <= finding["time_ms"] + rounding(finding["time_ms"]))
            return rank, size, saved

        # Of the insights naming these ops, the one the scoring favours most.
        candidates = [e for e, (k, i) in enumerate(entries) if matches(i, ops, kernels, pattern)]
        hit = max(candidates, key=lambda e: (sum(judged(e)[:2]), -e))
        rank_index, insight = entries[hit]
        part = "" if insight is insights[rank_index] else f" (part of {insights[rank_index]['rule']})"
        rank_ok, size_ok, saved_ms = judged(hit)
        points += 1 + rank_ok + size_ok
        lines.append(f"  {'PASS' if rank_ok and size_ok else 'PART'} {finding['id']}: found as "
                     f"#{rank_index + 1} {insight['rule']}{part} (rank <= {finding['rank_at_most']}: "
                     f"{'yes' if rank_ok else 'no'}; {saved_ms:.2f} ms in [{low}, {high}]: "
                     f"{'yes' if size_ok else 'no'})")
    for claim in spec.get("wrong_claims", []):
        total += 1
        pattern = re.compile(claim["pattern"])
        bad = [i for i in insights if pattern.search(i.get("title", ""))]
        points += not bad
        lines.append(f"  {'PASS' if not bad else 'FAIL'} no wrong claim: {claim['what']}"
                     + ("" if not bad else f" (said by {bad[0]['rule']}: {bad[0]['title'][:90]})"))
    return name, points, total, lines


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jarvis", required=True, help="the jarvis binary")
    parser.add_argument("--shared", default=os.path.join(here, "..", "..", "shared"))
    parser.add_argument("--evals", nargs="*", help="eval files (default: shared/evals/*.json and evals/*.json)")
    parser.add_argument("--min-score", type=float, default=0.0, help="fail below this score (0..1)")
    args = parser.parse_args()
    files = args.evals or sorted(glob.glob(os.path.join(args.shared, "evals", "*.json"))
                                 + glob.glob(os.path.join(here, "..", "evals", "*.json")))
    if not files:
        print("no eval files found", file=sys.stderr)
        return 1
    points = total = 0
    for path in files:
        name, p, t, lines = score_trace(args.jarvis, args.shared, path)
        print(f"{name}: {p}/{t}")
        print("\n".join(lines))
        points += p
        total += t
    score = points / total if total else 0.0
    print(f"eval score: {points}/{total} = {score:.3f} (minimum {args.min_score:.3f})")
    return 0 if score + 1e-9 >= args.min_score else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (RuntimeError, ValueError, KeyError, json.JSONDecodeError) as e:
        print(f"score_evals: {e}", file=sys.stderr)
        sys.exit(1)
