"""Step timer and profiler driver of `jarvis ab` and `jarvis calibrate` (docs/ab.md).

jarvis starts the user's command with this folder first on PYTHONPATH; its
sitecustomize.py calls install() when JARVIS_AB_OUT names the result file.
Nothing in the user's script changes:

* a step ends when torch.optim.Optimizer.step returns (every optimizer; the
  hook is put on each optimizer class as its first instance is built), or
  when torch.profiler.profile.step is called, or when the function named by
  JARVIS_AB_STEP_FN ("module:function" or "module:Class.method") returns;
  the first of these that fires counts the steps, the others are ignored
  (a named function is the only one counted);
* clean mode (JARVIS_AB_MODE=clean): after JARVIS_AB_WARMUP steps, windows of
  JARVIS_AB_WINDOW steps are timed with the wall clock (and the process's CPU
  time); the device is synchronised only at window boundaries
  (torch.cuda.synchronize when CUDA or ROCm is in use), so the steps inside a
  window run as they would unobserved; each step's host time is kept too;
* JARVIS_AB_BARRIER / JARVIS_AB_BARRIER_N: after the warm-up, wait for that
  many processes (a clean and a profiled one run side by side);
* profile mode (JARVIS_AB_MODE=profile): after the warm-up, torch.profiler
  records 1 warm-up step and JARVIS_AB_PROFILE_STEPS steps with the settings
  of JARVIS_AB_PROFILER (record_shapes, with_stack, profile_memory) and
  writes a Kineto trace to JARVIS_AB_TRACE; when the script runs its own
  torch.profiler, the shim starts none and copies the trace the script
  exports. A PyTorch without Kineto (Debian's CPU build) records with the
  legacy profiler, whose events are written in Kineto's format.

The result (JSON, JARVIS_AB_OUT) holds the per-window step times, the
shim's own measured cost per step and the host; the program exits once the
measurement is complete (JARVIS_AB_EXIT_WHEN_DONE=0 lets it run on).
"""

import functools
import gzip
import importlib.abc
import json
import os
import platform
import shutil
import socket
import sys
import time

_TIMER = None


def _env_int(name, default, least):
    text = os.environ.get(name, "")
    try:
        value = int(text) if text else default
    except ValueError:
        value = default
    return max(value, least)


def host_info():
    """Where the run happened: the keys jarvis matches a calibration on."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    torch = sys.modules.get("torch")
    info = {
        "hostname": socket.gethostname(),
        "cpu_model": cpu,
        "python": platform.python_version(),
        "torch": getattr(torch, "__version__", "") if torch else "",
    }
    if torch is not None:
        try:
            info["kineto"] = bool(torch.autograd.kineto_available())
            if torch.cuda.is_available():
                info["device"] = torch.cuda.get_device_name(0)
            else:
                info["device"] = "cpu"
        except Exception:  # a broken CUDA setup still times on the host
            info.setdefault("device", "unknown")
    return info


def _sync():
    torch = sys.modules.get("torch")
    if torch is None:
        return
    try:
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.synchronize()
    except Exception:
        pass


def _barrier():
    """JARVIS_AB_BARRIER (a folder) and JARVIS_AB_BARRIER_N: wait until that
    many processes have arrived, so a paired clean and profiled process
    (`jarvis calibrate`) time their steps over the same seconds and the
    machine's load falls on both. Gives up after 120 s (a partner that
    failed) and times anyway."""
    folder = os.environ.get("JARVIS_AB_BARRIER", "")
    if not folder:
        return
    want = _env_int("JARVIS_AB_BARRIER_N", 2, 1)
    try:
        os.makedirs(folder, exist_ok=True)
        open(os.path.join(folder, f"{os.getpid()}.arrived"), "w").close()
        deadline = time.perf_counter() + 120
        while time.perf_counter() < deadline:
            if sum(1 for f in os.listdir(folder) if f.endswith(".arrived")) >= want:
                return
            time.sleep(0.001)
    except OSError:
        pass


def _write_json(path, value):
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(value, f, indent=1)
    os.replace(tmp, path)


def _write_trace(source_text, path, host):
    """The trace with the host in a top-level "jarvis_host" member (Kineto
    traces name no host), gzip-compressed when the name ends in .gz."""
    text = source_text.lstrip()
    if text.startswith("{"):
        text = "{\"jarvis_host\": " + json.dumps(host) + ", " + text[1:]
    tmp = f"{path}.tmp{os.getpid()}"
    opener = gzip.open if path.endswith(".gz") else open
    with opener(tmp, "wt", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def _legacy_to_kineto(events, host):
    """Kineto's JSON from the legacy profiler's FunctionEvents (a PyTorch
    built without Kineto exports an array without categories or shapes)."""
    pid = os.getpid()
    out = []
    # The legacy profiler names every step "ProfilerStep*": number them again.
    steps = sorted((e for e in events if e.name.startswith("ProfilerStep")),
                   key=lambda e: e.time_range.start)
    step_names = {id(e): f"ProfilerStep#{k + 1}" for k, e in enumerate(steps)}
    for e in events:
        start = float(e.time_range.start)
        dur = max(0.0, float(e.time_range.end) - start)
        if e.name == "[memory]":
            out.append({"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]",
                        "pid": pid, "tid": int(e.thread), "ts": start,
                        "args": {"Bytes": int(getattr(e, "cpu_memory_usage", 0) or 0)}})
            continue
        user_scope = int(getattr(e, "scope", 0) or 0) == 7 or e.name.startswith("ProfilerStep#")
        args = {}
        shapes = getattr(e, "input_shapes", None)
        if shapes:
            args["Input Dims"] = [list(s) if isinstance(s, (list, tuple)) else [] for s in shapes]
        out.append({"ph": "X", "cat": "user_annotation" if user_scope else "cpu_op",
                    "name": step_names.get(id(e), e.name), "pid": pid, "tid": int(e.thread), "ts": start, "dur": dur,
                    "args": args})
    meta = [{"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": "python3"}},
            {"name": "process_labels", "ph": "M", "pid": pid, "tid": 0, "args": {"labels": "CPU"}}]
    return json.dumps({"schemaVersion": 1, "deviceProperties": [], "traceName": "jarvis ab",
                       "displayTimeUnit": "ms", "jarvis_legacy_profiler": True,
                       "traceEvents": meta + out})


class _PostImport(importlib.abc.MetaPathFinder):
    """Runs a callback right after a module is executed (torch.optim.optimizer
    is patched when the script imports torch, never imported by the shim)."""

    def __init__(self):
        self.watch = {}

    def find_spec(self, name, path, target=None):
        callback = self.watch.get(name)
        if callback is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        original = loader.exec_module

        def exec_module(module):
            original(module)
            if self.watch.pop(name, None) is not None:
                callback(module)

        loader.exec_module = exec_module
        return spec

    def on_import(self, name, callback):
        module = sys.modules.get(name)
        if module is not None:
            callback(module)
        else:
            self.watch[name] = callback


class _Timer:
    def __init__(self):
        self.out = os.environ["JARVIS_AB_OUT"]
        self.mode = os.environ.get("JARVIS_AB_MODE", "clean")
        self.warmup = _env_int("JARVIS_AB_WARMUP", 3, 1)
        self.window = _env_int("JARVIS_AB_WINDOW", 10, 1)
        self.windows = _env_int("JARVIS_AB_WINDOWS", 3, 1)
        self.profile_steps = _env_int("JARVIS_AB_PROFILE_STEPS", 3, 1)
        self.settings = [s for s in os.environ.get("JARVIS_AB_PROFILER", "").split(",") if s]
        self.trace = os.environ.get("JARVIS_AB_TRACE", "")
        self.step_fn = os.environ.get("JARVIS_AB_STEP_FN", "")
        self.exit_when_done = os.environ.get("JARVIS_AB_EXIT_WHEN_DONE", "1") != "0"
        self.source = "function" if self.step_fn else None
        self.steps = 0
        self.window_start = 0.0
        self.window_cpu_start = 0.0
        self.window_step_ms = []
        self.window_cpu_step_ms = []
        self.host_step_ms = []
        self.profiled_step_ms = []
        self.profiled_cpu_step_ms = []
        self.last_step = 0.0
        self.last_cpu = 0.0
        self.done = False
        self.finished = False
        self.user_profiler = False
        self.profiler = None
        self.internal = False  # the shim's own calls into torch.profiler
        self.trace_written = ""
        self.shim_us_per_step = 0.0
        self.started = time.perf_counter()

    # -- the step hook ---------------------------------------------------------
    def on_step(self, source):
        if self.done:
            return
        if self.source is None:
            self.source = source
        elif source != self.source:
            return
        self.steps += 1
        n = self.steps
        if self.mode == "profile":
            self._profile_step(n)
            return
        now = time.perf_counter()
        if n > self.warmup:  # each step's host time (no device sync: the host's view)
            self.host_step_ms.append((now - self.last_step) * 1e3)
        self.last_step = now
        if n == self.warmup:
            _sync()
            _barrier()
            self.window_start = time.perf_counter()
            self.window_cpu_start = time.process_time()
        elif n > self.warmup and (n - self.warmup) % self.window == 0:
            _sync()
            now, cpu = time.perf_counter(), time.process_time()
            self.window_step_ms.append((now - self.window_start) * 1e3 / self.window)
            self.window_cpu_step_ms.append((cpu - self.window_cpu_start) * 1e3 / self.window)
            self.window_start, self.window_cpu_start = now, cpu
            if len(self.window_step_ms) == self.windows:
                self.finish()

    def _profile_step(self, n):
        now, cpu = time.perf_counter(), time.process_time()
        if n > self.warmup + 1 and (self.profiler is not None or self.user_profiler):
            self.profiled_step_ms.append((now - self.last_step) * 1e3)
            self.profiled_cpu_step_ms.append((cpu - self.last_cpu) * 1e3)
        self.last_step, self.last_cpu = now, cpu
        if self.user_profiler:
            if self.trace_written and n >= self.warmup + self.profile_steps:
                self.finish()
            return
        if n == self.warmup:
            _barrier()
            self._start_profiler()
        elif self.profiler is not None:
            self.internal = True
            try:
                self.profiler.step()
            finally:
                self.internal = False
            if self.trace_written:
                self.internal = True
                try:
                    self.profiler.stop()
                finally:
                    self.internal = False
                self.profiler = None
                self.finish()

    def _start_profiler(self):
        import torch
        from torch.profiler import ProfilerActivity, profile, schedule

        activities = [ProfilerActivity.CPU]
        if torch.cuda.is_available():
            activities.append(ProfilerActivity.CUDA)
        self.internal = True
        try:
            self.profiler = profile(
                activities=activities,
                record_shapes="record_shapes" in self.settings,
                with_stack="with_stack" in self.settings,
                profile_memory="profile_memory" in self.settings,
                schedule=schedule(wait=0, warmup=1, active=self.profile_steps, repeat=1),
                on_trace_ready=self._export)
            self.profiler.start()
        finally:
            self.internal = False

    def _export(self, prof):
        import torch

        if not self.trace:
            return
        host = host_info()
        if torch.autograd.kineto_available():
            tmp = f"{self.trace}.raw{os.getpid()}.json"
            prof.export_chrome_trace(tmp)
            with open(tmp, encoding="utf-8") as f:
                text = f.read()
            os.unlink(tmp)
        else:
            text = _legacy_to_kineto(prof.events(), host)
        _write_trace(text, self.trace, host)
        self.trace_written = self.trace

    def user_trace_exported(self, path):
        """The script's own profiler wrote `path`: keep a copy as the arm's trace."""
        if self.mode != "profile" or not self.trace or not os.path.isfile(path):
            return
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8") as f:
            text = f.read()
        if text.lstrip().startswith("["):  # a legacy export: no Kineto categories
            sys.stderr.write(f"jarvis ab: {path} is a legacy profiler export; kept as it is\n")
            shutil.copyfile(path, self.trace + ".legacy.json")
            return
        _write_trace(text, self.trace, host_info())
        self.trace_written = self.trace

    # -- the result ------------------------------------------------------------
    def finish(self, complete=True, reason=""):
        if self.finished:
            return
        self.done = True
        self.finished = True
        ordered = sorted(self.window_step_ms)
        result = {
            "mode": self.mode,
            "complete": complete,
            "reason": reason,
            "step_source": self.source or "",
            "steps_seen": self.steps,
            "warmup_steps": self.warmup,
            "window_steps": self.window,
            "window_step_ms": self.window_step_ms,
            "window_cpu_step_ms": self.window_cpu_step_ms,
            "host_step_ms": self.host_step_ms,
            "step_ms_median": ordered[len(ordered) // 2] if ordered else None,
            "profiled_step_ms": self.profiled_step_ms,
            "profiled_cpu_step_ms": self.profiled_cpu_step_ms,
            "profiler_settings": self.settings,
            "user_profiler": self.user_profiler,
            "trace": self.trace_written,
            "shim_us_per_step": self.shim_us_per_step,
            "host": host_info(),
            "pid": os.getpid(),
        }
        _write_json(self.out, result)
        if complete and self.exit_when_done:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(0)

    def at_exit(self):
        if self.finished:
            return
        need = (self.warmup + self.window * self.windows if self.mode == "clean"
                else self.warmup + self.profile_steps + 1)
        if self.source is None:
            why = ("no step was seen: no torch.optim optimizer stepped and no torch.profiler "
                   "step was called (name the step with --step-fn module:function)")
        else:
            why = (f"the program ended after {self.steps} steps ({self.source}); the "
                   f"measurement needs {need} (lower --warmup, --window or --windows)")
        self.finish(complete=False, reason=why)


def _wrap_step(fn, source):
    @functools.wraps(fn)
    def jarvis_ab_step(*args, **kwargs):
        result = fn(*args, **kwargs)
        _TIMER.on_step(source)
        return result

    jarvis_ab_step._jarvis_ab_wrapped = True
    return jarvis_ab_step


def _patch_optimizer(module):
    optimizer = module.Optimizer
    original_init = optimizer.__init__

    @functools.wraps(original_init)
    def init(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        cls = type(self)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_jarvis_ab_wrapped", False):
            cls.step = _wrap_step(step, "optimizer")

    optimizer.__init__ = init


def _patch_profiler(module):
    profile = module.profile
    original_step, original_start = profile.step, profile.start
    original_export = profile.export_chrome_trace

    def step(self, *args, **kwargs):
        result = original_step(self, *args, **kwargs)
        if not _TIMER.internal:
            _TIMER.on_step("profiler")
        return result

    def start(self, *args, **kwargs):
        if not _TIMER.internal:
            _TIMER.user_profiler = True
        return original_start(self, *args, **kwargs)

    def export_chrome_trace(self, path, *args, **kwargs):
        result = original_export(self, path, *args, **kwargs)
        if not _TIMER.internal and _TIMER.user_profiler:
            _TIMER.user_trace_exported(path)
        return result

    profile.step, profile.start, profile.export_chrome_trace = step, start, export_chrome_trace


def _patch_function(spec):
    module_name, _, qualname = spec.partition(":")

    def patch(module):
        owner = module
        parts = qualname.split(".")
        for part in parts[:-1]:
            owner = getattr(owner, part)
        setattr(owner, parts[-1], _wrap_step(getattr(owner, parts[-1]), "function"))

    return module_name, patch


def _measure_own_cost():
    """The hook's cost per step: a wrapped no-op against the bare one."""
    global _TIMER
    real = _TIMER
    probe = _Timer()
    probe.warmup = 1 << 60  # counts, never syncs or writes
    probe.source = "probe"
    _TIMER = probe

    def nothing():
        return None

    wrapped = _wrap_step(nothing, "probe")
    rounds = 20000
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(rounds):
            wrapped()
        t1 = time.perf_counter()
        for _ in range(rounds):
            nothing()
        t2 = time.perf_counter()
        best = min(best, ((t1 - t0) - (t2 - t1)) / rounds)
    _TIMER = real
    return max(best, 0.0) * 1e6


def install():
    global _TIMER
    if _TIMER is not None:
        return
    _TIMER = _Timer()
    _TIMER.shim_us_per_step = _measure_own_cost()
    hooks = _PostImport()
    sys.meta_path.insert(0, hooks)
    if _TIMER.step_fn:
        if ":" not in _TIMER.step_fn:
            sys.stderr.write(f"jarvis ab: --step-fn {_TIMER.step_fn}: expected module:function\n")
        else:
            hooks.on_import(*_patch_function(_TIMER.step_fn))
    hooks.on_import("torch.optim.optimizer", _patch_optimizer)
    hooks.on_import("torch.profiler.profiler", _patch_profiler)
    import atexit

    atexit.register(_TIMER.at_exit)
