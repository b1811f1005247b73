# %% [markdown]
# # jarvis from Python
#
# The TraceLens report sheets of a PyTorch profiler trace as pandas DataFrames.
# Cells are separated by `# %%` (VS Code / Jupytext notebooks); as a script:
#
#     cmake --build build --target _jarvis jarvis
#     PYTHONPATH=build/python /usr/bin/python3 examples/python_api.py

# %%
import os

import jarvis

here = os.path.dirname(os.path.abspath(__file__)) if "__file__" in globals() else "examples"
trace_path = os.path.join(here, "example_trace.json.gz")

# The GPU arch (roofline columns) is detected from the trace's GPU name;
# arch="MI300X", a JSON path, or arch=False (none) choose it instead.
t = jarvis.load_trace(trace_path)
print(t)
print(t.info())

# %% Every sheet `jarvis report` writes, in TraceLens's order
print(t.sheet_names())

# %% GPU busy / idle time
print(t.gpu_timeline())

# %% The ops that launched the most GPU time
ops = t.ops_summary()
print(ops.head(10).to_string())

# %% GEMMs with their roofline: achieved TFLOPS and the share of the roofline bound
gemm = t.gemm()
cols = ["name", "param: M", "param: N", "param: K", "Kernel Time (µs)_sum", "TFLOPS/s_mean"]
cols += ["Roofline Bound_first", "Pct Roofline_mean"]
print(gemm[cols].head().to_string())

# %% Kernels by time (names shortened for the printout)
kernels = t.kernel_summary()
kernels["Kernel name"] = kernels["Kernel name"].str.slice(0, 60)
cols = ["Parent op category", "Kernel name", "Kernel duration (µs)_sum"]
cols += ["Percent of kernels time (%)"]
print(kernels[cols].head(10).to_string())

# %% Any sheet by name: the same DataFrame as pandas.read_csv on the CLI's CSV
unified = t.sheet("unified_perf_summary")
print(unified.groupby("op category")["Kernel Time (µs)_sum"].sum().sort_values(ascending=False))

# %% Insights: expert rules ranked by the time a fix could recover
for insight in t.insights()[:5]:
    print(f"[{insight['severity']}] {insight['rule']}: {insight['title']}")

# %% Compare two traces (reference first, target second): {sheet: DataFrame}.
# Here the trace against itself, under two arch assumptions.
h100 = jarvis.load_trace(trace_path, arch="H100")
mi300 = jarvis.load_trace(trace_path, arch="MI300X")
sheets = jarvis.compare(h100, mi300, names=("h100", "mi300"))
print(list(sheets))
print(sheets["gpu_timeline"].to_string())

# %% Errors are Python exceptions
try:
    jarvis.load_trace("no_such_trace.json.gz")
except FileNotFoundError as e:
    print("FileNotFoundError:", e)
