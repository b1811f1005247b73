"""jarvis calibrate and jarvis ab on CPU PyTorch (ctest ab_cpu; docs/ab.md).

1. `jarvis calibrate` fits the profiler costs of this host on its built-in
   workload and stores them under a temp JARVIS_CONFIG_DIR.
2. `jarvis ab` runs two CPU variants of one training loop: arm A prepares
   each batch in Python (nested lists, then torch.tensor), arm B reuses a
   prepared tensor. Checked from the files it wrote: truth.json in the
   format of ../shared/ab_pairs/truth.json; the measured saving (A - B, from
   the clean runs) above the noise (every pair of processes agrees on its
   sign); the table's ratio of it to jarvis's prediction.
3. The un-profiled estimate of arm A's trace within 20 % of arm A's clean
   step, the two recorded side by side (a clean and a profiled process
   started together: on a shared host the speed moves by 2x between
   processes run seconds apart, docs/ab.md); the median of three pairs.
Exits 77 (skipped) without torch. Needs JARVIS_BINARY."""
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time

try:
    import torch  # noqa: F401
except ImportError:
    print("skipped: needs PyTorch (Debian: python3-torch) for this interpreter", sys.executable)
    sys.exit(77)

JARVIS = os.environ["JARVIS_BINARY"]

VARIANT = r'''
import sys, torch
torch.set_num_threads(1)
torch.manual_seed(0)
prep = "--prep" in sys.argv
model = torch.nn.Sequential(*[torch.nn.Linear(64, 64) for _ in range(4)])
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
fixed = torch.randn(32, 64)
for step in range(100000):  # the shim ends the run once it has measured
    if prep:  # the batch built in Python, element by element
        rows = [[((i * 64 + j + step) % 97) / 97.0 for j in range(64)] for i in range(32)]
        for _ in range(80):
            rows = [[v * 0.5 + 0.25 for v in row] for row in rows]
        x = torch.tensor(rows)
    else:
        x = fixed
    optimizer.zero_grad()
    loss = model(x).square().mean()
    loss.backward()
    optimizer.step()
'''


def run(cmd, env):
    started = time.time()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    print(f"$ {' '.join(cmd)}  ({time.time() - started:.1f} s)")
    print(done.stdout)
    if done.returncode != 0:
        print(done.stderr)
        sys.exit(f"failed with status {done.returncode}")
    return done.stdout


def paired_estimate(env, ab_out, script, folder):
    """One clean and one profiled process of arm A, started together; the
    ratio of jarvis's un-profiled estimate of the trace to the clean step."""
    os.makedirs(folder)
    shim = os.path.join(ab_out, ".shim")  # the shim jarvis ab wrote
    common = dict(env, PYTHONPATH=shim + os.pathsep + env.get("PYTHONPATH", ""),
                  JARVIS_AB_BARRIER=os.path.join(folder, "barrier"), JARVIS_AB_BARRIER_N="2",
                  JARVIS_AB_WARMUP="3", JARVIS_AB_WINDOW="10", JARVIS_AB_WINDOWS="3",
                  JARVIS_AB_PROFILE_STEPS="30", JARVIS_AB_PROFILER="record_shapes")
    clean_out, profiled_out = os.path.join(folder, "clean.json"), os.path.join(folder, "profiled.json")
    trace = os.path.join(folder, "trace.json.gz")
    procs = [subprocess.Popen([sys.executable, script, "--prep"], stdout=subprocess.DEVNULL,
                              env=dict(common, JARVIS_AB_MODE="clean", JARVIS_AB_OUT=clean_out)),
             subprocess.Popen([sys.executable, script, "--prep"], stdout=subprocess.DEVNULL,
                              env=dict(common, JARVIS_AB_MODE="profile", JARVIS_AB_OUT=profiled_out,
                                       JARVIS_AB_TRACE=trace))]
    for p in procs:
        p.wait(timeout=240)
    clean = json.load(open(clean_out))
    # The median single step, as the estimate is the trace's median step less
    # its records: a time slice of another process that falls into a step
    # moves a window's mean, not the median (on a CPU a step's host time is
    # the step).
    windows = sorted(clean["window_step_ms"])
    steps = sorted(clean["host_step_ms"][:30])
    clean_ms = steps[len(steps) // 2]
    arm = {"trace": "trace.json.gz", "step_ms_clean": clean_ms, "step_ms_clean_runs": [clean_ms]}
    truth = os.path.join(folder, "truth.json")
    with open(truth, "w") as f:
        json.dump({"paired": {"A_profiled": arm, "B_same": arm}}, f)
    table = os.path.join(folder, "table.json")
    run([JARVIS, "ab", "--truth", truth, "--json", table, "-q"], env)
    row = json.load(open(table))[0]
    estimate = row["a_estimated_unprofiled_step_ms"]
    with gzip.open(trace, "rt") as f:
        profiled = sorted(e["dur"] / 1e3 for e in json.load(f)["traceEvents"]
                          if e.get("name", "").startswith("ProfilerStep#"))
    print(f"  pair: clean median step {clean_ms:.3f} ms (windows {[round(w, 3) for w in windows]}), "
          f"profiled steps median {profiled[len(profiled) // 2]:.3f} ms, un-profiled estimate "
          f"{estimate:.3f} ms "
          f"({row.get('calibration')})")
    return estimate / clean_ms


def main():
    failures = []

    def check(ok, what):
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            failures.append(what)

    with tempfile.TemporaryDirectory(prefix="jarvis_ab_cpu_") as tmp:
        env = dict(os.environ, JARVIS_CONFIG_DIR=os.path.join(tmp, "config"),
                   JARVIS_CACHE_DIR=os.path.join(tmp, "cache"), JARVIS_NO_SNAPSHOT="1")
        env.pop("JARVIS_CALIBRATION", None)

        # 1. calibrate
        def calibrate(work):
            run([JARVIS, "calibrate", "--python", sys.executable, "--work-dir",
                 os.path.join(tmp, work), "--runs", "1", "--window", "15", "--windows", "2",
                 "--profile-steps", "3", "-q"], env)

        calibrate("calibrate")
        folder = os.path.join(tmp, "config", "calibration")
        files = [f for f in os.listdir(folder) if f.endswith(".json")] if os.path.isdir(folder) else []
        check(len(files) == 1, f"one calibration stored under JARVIS_CONFIG_DIR ({files})")
        calibration = json.load(open(os.path.join(folder, files[0]))) if files else {}
        host = calibration.get("host", {})
        check(host.get("torch") == torch.__version__, "the calibration names this torch")
        settings = {s["setting"]: s for s in calibration.get("settings", [])}
        check(set(settings) == {"plain", "shapes", "shapes_stack", "shapes_memory"},
              "four profiler settings measured")
        # The plain setting's op cost from its own figures: (recorded - clean beside it)
        # over the ops per step and the gap the fit used.
        plain = settings.get("plain", {})
        model = calibration.get("model", {})
        gap = plain.get("op_gap_us") or model.get("fallback_op_gap_us") or 1.0
        if model.get("fallback_op_gap_us"):
            gap = model["fallback_op_gap_us"]
        # Paired: each setting's excess is over the clean process run beside it.
        check(all(s.get("clean_beside_us", 0) > 0 for s in settings.values()),
              "each profiled setting ran beside a clean process")
        expected = (plain.get("recorded_step_us", 0) - plain.get("clean_beside_us", 0)) / (
            gap * max(plain.get("ops_per_step", 1), 1))
        check(abs(model.get("op_gaps", -1) - max(0.0, min(expected, 100.0))) < 1e-6 * max(1, expected),
              f"op cost = (recorded - clean) / (gap x ops) = {expected:.3f} gaps")

        # 2. ab
        script = os.path.join(tmp, "variant.py")
        with open(script, "w") as f:
            f.write(VARIANT)
        def ab_run(out):
            return run([JARVIS, "ab", "--a", f"'{sys.executable}' '{script}' --prep",
                        "--b", f"'{sys.executable}' '{script}'", "--out", out, "--name",
                        "cpu_prep", "--label-a", "python_batch", "--label-b", "tensor_batch",
                        "--window", "20", "--windows", "5", "--profile-steps", "5", "-q"], env)

        # Each clean process's figure is the median of five windows of 20
        # steps (B's step is ~1 ms: a window of 10 was one time slice of
        # another process). A run whose clean processes differ by more than
        # the saving (one B process 10x slower than the other under a load
        # average of 5 on the 2 cores) is noise by the tool's own verdict; it
        # is run once more before the saving is judged (docs/ab.md).
        for attempt in range(2):
            out = os.path.join(tmp, f"ab_{attempt}")
            printed = ab_run(out)
            truth = json.load(open(os.path.join(out, "truth.json")))
            arms = truth.get("cpu_prep", {})
            runs_a = arms.get("A_python_batch", {}).get("step_ms_clean_runs", [0])
            runs_b = arms.get("B_tensor_batch", {}).get("step_ms_clean_runs", [0])
            if min(runs_a) - max(runs_b) > 0:
                break
            print(f"noise (A runs {runs_a}, B runs {runs_b}): run again")
        truth = json.load(open(os.path.join(out, "truth.json")))
        exp = truth.get("cpu_prep", {})
        a, b = exp.get("A_python_batch", {}), exp.get("B_tensor_batch", {})
        for arm, name in ((a, "A"), (b, "B")):
            check(len(arm.get("step_ms_clean_runs", [])) == 2, f"{name}: two clean processes")
            runs = arm.get("step_ms_clean_runs", [0])
            check(abs(arm.get("step_ms_clean", 0) - sum(runs) / len(runs)) < 1e-9,
                  f"{name}: step_ms_clean is the mean of its runs")
            for key in ("step_ms_median", "step_ms_min", "step_ms_max", "steps_per_rep", "reps",
                        "trace"):
                check(key in arm, f"{name}: truth.json field {key}")
            trace = os.path.join(out, arm.get("trace", "missing"))
            check(os.path.isfile(trace), f"{name}: its trace {trace}")
            if os.path.isfile(trace):
                with gzip.open(trace, "rt") as f:
                    t = json.load(f)
                check(t.get("jarvis_host", {}).get("torch") == torch.__version__,
                      f"{name}: the trace names its host")
        check("changed" in exp and "_timing" in truth and "_torch" in truth,
              "truth.json: changed, _timing, _torch")
        saving = a.get("step_ms_clean", 0) - b.get("step_ms_clean", 0)
        low = min(a.get("step_ms_clean_runs", [0])) - max(b.get("step_ms_clean_runs", [0]))
        print(f"measured saving {saving:.3f} ms per step, lowest process pair {low:.3f} ms")
        check(low > 0, "the measured saving is above the noise (every process pair)")
        table = json.load(open(os.path.join(out, "ab_table.json")))
        check(len(table) == 1, "one table row")
        row = table[0] if table else {}
        check(abs(row.get("measured_saving_ms", 0) - saving) < 1e-9, "the table's measured saving")
        predicted = row.get("predicted_saving_ms")
        check(predicted is not None and predicted > 0, f"a prediction ({predicted} ms)")
        if predicted:
            check(abs(row.get("ratio_measured_to_predicted", 0) - saving / predicted) < 1e-9,
                  f"ratio measured / predicted = {saving / predicted:.2f}")
        check("this host's" in row.get("calibration", ""), "the prediction used this host's calibration")
        check(row.get("verdict") == "B faster", f"the table's verdict ({row.get('verdict')})")
        check(row.get("finding_chosen_by") == "host-only", "a CPU trace: the host-only model")

        # 3. The un-profiled estimate of arm A's trace against arm A's clean
        # step, each recorded beside the other: a clean and a profiled
        # process of arm A started together, both waiting for the other
        # after the warm-up (the shim's barrier), so their steps run over the
        # same seconds. On the shared 2-core host the speed moves by 2x
        # between processes run seconds apart (docs/ab.md, "The un-profiled
        # estimate of a CPU step"); side by side, two clean processes agree
        # within ~12 %. jarvis estimates the profiled trace (this host's
        # calibration, named by the trace) through `jarvis ab --truth`.
        # The legacy profiler's per-event cost on this VM moves with the
        # host's load by up to 10x within minutes (docs/ab.md): a
        # calibration fitted under another load is stale, so a miss is
        # judged once more after calibrating again.
        for attempt in range(2):
            if attempt:
                print("recalibrating: the calibration may be stale (docs/ab.md)")
                calibrate("calibrate_again")
            ratios = sorted(paired_estimate(env, out, script,
                                            os.path.join(tmp, f"paired_{attempt}_{k}"))
                            for k in range(3))
            print(f"paired estimate / clean: {[round(r, 3) for r in ratios]}")
            if abs(ratios[1] - 1) <= 0.2:
                break
        check(abs(ratios[1] - 1) <= 0.2,
              f"the un-profiled estimate of arm A within 20 % of its clean step recorded beside "
              f"it (median of three pairs: {ratios[1]:.3f})")
        check("| cpu_prep |" in printed, "the table printed")
    if failures:
        sys.exit(f"{len(failures)} check(s) failed")


if __name__ == "__main__":
    main()
