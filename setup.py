"""`pip install --no-build-isolation .` from a clone: CMake builds jarvis, and
the wheel holds

  jarvis/                       the Python module (import jarvis), site-packages
  bin/jarvis                    the command, in the environment's bin/
  lib/jarvis/libjarvis_*.so     the modules the command loads (../lib/jarvis
                                beside the binary, as in every install tree)
  share/man/man1/jarvis.1, share/bash-completion/completions/jarvis

Nothing is downloaded: setuptools, wheel, CMake, the compiler, pybind11 and
the libraries come from Debian (README.md, "Install"). setuptools works in
build-pip/ (git-ignored, apart from the CMake tree the README builds in build/)
and CMake builds in build-pip/temp.*/cmake; JARVIS_CMAKE_BUILD_DIR=DIR reuses a
configured CMake build directory instead (CI: the one its tests ran from),
which is brought up to date and installed from, so pip compiles nothing twice.
"""

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


def cmake_version():
    text = (ROOT / "CMakeLists.txt").read_text(encoding="utf-8")
    return re.search(r"project\(jarvis VERSION ([0-9.]+)", text).group(1)


def run(cmd):
    print("+ " + " ".join(str(c) for c in cmd), flush=True)
    subprocess.run([str(c) for c in cmd], check=True)


class CMakeBuild(build_ext):
    """Builds (or reuses) the CMake tree, installs it into a staging prefix,
    and hands its parts to the wheel."""

    def run(self):
        build_dir = os.environ.get("JARVIS_CMAKE_BUILD_DIR")
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 2)
        if build_dir:
            build_dir = Path(build_dir).resolve()
            if not (build_dir / "CMakeCache.txt").is_file():
                sys.exit(f"JARVIS_CMAKE_BUILD_DIR={build_dir}: no CMakeCache.txt there")
        else:
            build_dir = Path(self.build_temp).resolve() / "cmake"
            run(["cmake", "-S", ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
                 "-DBUILD_TESTING=OFF", "-DJARVIS_WERROR=OFF", "-DJARVIS_PYTHON=ON",
                 f"-DPython3_EXECUTABLE={sys.executable}"])
        run(["cmake", "--build", build_dir, "-j", jobs])
        stage = Path(self.build_temp).resolve() / "stage"
        shutil.rmtree(stage, ignore_errors=True)
        run(["cmake", "--install", build_dir, "--prefix", stage])

        # The extension, built for this interpreter.
        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        found = sorted(stage.glob("**/jarvis/_jarvis*.so"))
        module = next((f for f in found if f.name == "_jarvis" + suffix), None)
        if module is None:
            sys.exit(f"no jarvis/_jarvis{suffix} in the CMake install ({[str(f) for f in found]}): "
                     "the Python API needs pybind11-dev and python3-dev, and a build for "
                     f"{sys.executable}: configure it with -DJARVIS_PYTHON=ON "
                     f"-DPython3_EXECUTABLE={sys.executable} (a tree configured before "
                     "pybind11-dev was installed keeps JARVIS_PYTHON=OFF)")
        target = Path(self.get_ext_fullpath("jarvis._jarvis"))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(module, target)

        # The command and what it loads, as data under the environment's prefix.
        data = [("bin", [stage / "bin" / "jarvis"]),
                ("lib/jarvis", sorted((stage / "lib" / "jarvis").glob("*.so"))),
                ("share/man/man1", [stage / "share" / "man" / "man1" / "jarvis.1"]),
                ("share/bash-completion/completions",
                 [stage / "share" / "bash-completion" / "completions" / "jarvis"])]
        self.distribution.data_files = [(d, [str(f) for f in files]) for d, files in data]


setup(
    version=cmake_version(),
    packages=["jarvis"],
    package_dir={"": "python"},
    ext_modules=[Extension("jarvis._jarvis", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    # Not setuptools' default build/: that is the README's CMake build tree.
    options={"build": {"build_base": "build-pip"}},
    zip_safe=False,
)
