"""`pip install .`: the package hdat (python/hdat/) and its compiled half hdat._core, built by CMake.

setuptools copies the pure-Python files; the extension's build_ext configures the CMake project with
only what the module needs (no tests, benchmarks or program) and builds the target hdat_python, then
copies the module and the bundled model (data/models, found by hdat.geometry()) into the package.

Environment:
  HDAT_BUILD_DIR   an existing CMake build folder of this source tree to build the module in (its
                   configuration is kept: an up-to-date build is reused as it is); default build-python/,
                   configured here and kept, so a second `pip install .` rebuilds only what changed
  HDAT_CMAKE_ARGS  extra CMake options for a new build-python/ (README, "Build options"), e.g.
                   -DHDAT_NATIVE=ON: machine code for this machine's CPU only (default OFF here: a wheel
                   or a venv on a shared file system may be used by other machines; results are the same)
  CMAKE_BUILD_PARALLEL_LEVEL   compile jobs (default: the number of cores)
"""

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


def project_version():
    """The one version of hdat: CMakeLists.txt's project(hdat VERSION x.y.z)."""
    m = re.search(r"project\(hdat\s+VERSION\s+([0-9][0-9.]*)", (ROOT / "CMakeLists.txt").read_text())
    if not m:
        raise RuntimeError("CMakeLists.txt: no project(hdat VERSION ...)")
    return m.group(1)


def build_folder():
    given = os.environ.get("HDAT_BUILD_DIR")
    return (Path(given).resolve(), True) if given else (ROOT / "build-python", False)


class CMakeBuild(build_ext):
    """build_ext for the one extension hdat._core: CMake builds it, setuptools places it."""

    def build_extension(self, ext):
        build, given = build_folder()
        if not given:
            self.configure(build)
        elif not (build / "CMakeCache.txt").exists():
            raise RuntimeError(f"HDAT_BUILD_DIR={build}: not a configured CMake build folder (no CMakeCache.txt)")
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 2)
        self.spawn(["cmake", "--build", str(build), "--target", "hdat_python", "-j", jobs])
        built = sorted((build / "python" / "hdat").glob("_core*.so"))
        if len(built) != 1:
            raise RuntimeError(f"expected one compiled module in {build / 'python' / 'hdat'}, found {[p.name for p in built]}")
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built[0], target)
        # The bundled model travels inside the package; hdat/__init__.py points hdat's data folder at it.
        data = target.parent / "data" / "models"
        shutil.rmtree(data, ignore_errors=True)
        shutil.copytree(ROOT / "data" / "models", data)

    def configure(self, build):
        cache = build / "CMakeCache.txt"
        args = ["cmake", "-S", str(ROOT), "-B", str(build)]
        if not cache.exists() and shutil.which("ninja"):
            args += ["-G", "Ninja"]
        # Only the libraries and the module: no tests, benchmarks, program, install rules. Portable
        # machine code unless HDAT_CMAKE_ARGS says otherwise (it comes last and wins).
        args += ["-DCMAKE_BUILD_TYPE=Release", "-DHDAT_PYTHON=ON", f"-DPython3_EXECUTABLE={sys.executable}",
                 "-DHDAT_BUILD_TESTS=OFF", "-DHDAT_BUILD_BENCHMARKS=OFF", "-DHDAT_BUILD_TOOLS=OFF", "-DHDAT_INSTALL=OFF"]
        if not cache.exists():
            args += ["-DHDAT_NATIVE=OFF"]
        args += shlex.split(os.environ.get("HDAT_CMAKE_ARGS", ""))
        self.spawn(args)


build, _ = build_folder()
scratch = build / "setuptools"  # setuptools' own build and egg-info folders: out of the source tree's way
scratch.mkdir(parents=True, exist_ok=True)

setup(
    version=project_version(),
    packages=["hdat"],
    package_dir={"hdat": "python/hdat"},
    ext_modules=[Extension("hdat._core", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    options={"build": {"build_base": str(scratch / "build")}, "egg_info": {"egg_base": str(scratch)}},
    zip_safe=False,
)
