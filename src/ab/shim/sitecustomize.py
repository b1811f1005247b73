# jarvis ab / jarvis calibrate: loaded by Python at start-up because jarvis
# puts this folder first on PYTHONPATH (docs/ab.md). It installs the step
# timer of jarvis_ab_shim.py when JARVIS_AB_OUT names its result file, then
# runs the sitecustomize this one shadows (Debian's, a virtualenv's), if any.
import os
import sys


def _jarvis_ab_chain():
    here = os.path.dirname(os.path.abspath(__file__))
    for entry in sys.path:
        if not entry or os.path.abspath(entry) == here:
            continue
        candidate = os.path.join(entry, "sitecustomize.py")
        if os.path.isfile(candidate):
            with open(candidate, encoding="utf-8") as f:
                code = compile(f.read(), candidate, "exec")
            exec(code, {"__name__": "sitecustomize", "__file__": candidate})
            return


try:
    _jarvis_ab_chain()
except Exception as error:  # the shadowed file's failure is not ours to hide
    sys.stderr.write(f"jarvis ab: the shadowed sitecustomize failed: {error}\n")

if os.environ.get("JARVIS_AB_OUT"):
    import jarvis_ab_shim

    jarvis_ab_shim.install()
