"""`pip install .` into a virtual environment made with access to Debian's NumPy and pandas, offline
(--no-build-isolation: Debian's setuptools and wheel build it; --no-index: nothing is downloaded), then
hdat imported from outside the source tree and a tiny curve computed.

The default test builds the module in this build folder (HDAT_BUILD_DIR: up to date after the suite's
build, so pip only packages and installs it: seconds). The thorough one (HDAT_PIP_FRESH=1, ctest label
`thorough`) is what a user's first `pip install .` does: a copy of the source tree, CMake configured and
the libraries and module compiled from nothing in build-python/ (minutes)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

BUILD = Path(os.environ.get("HDAT_BINARY_DIR", ROOT / "build"))
PYTHON = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable
CURVE = """
import os, sys
import hdat
print(hdat.__file__)
r = hdat.curve("committee", t_max=2, n_points=3, quiet=True)
print(len(r.tables["curve.csv"]), r.exit_code)
print(os.environ.get("HDAT_DATA_DIR", ""))
"""


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "HDAT_DATA_DIR", "PIP_INDEX_URL", "PIP_FIND_LINKS")}
    env.update(extra)
    return env


def make_venv(where):
    subprocess.run([PYTHON, "-m", "venv", "--system-site-packages", str(where)], check=True, capture_output=True, timeout=300)
    return where / "bin" / "python"


def pip_install(python, source, env, timeout):
    r = subprocess.run([str(python), "-m", "pip", "install", "--no-build-isolation", "--no-index", "--no-deps", "-v", str(source)],
                       capture_output=True, text=True, env=env, timeout=timeout)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    return r


def check_installed(python, home, source_roots):
    """hdat imports from the venv (not from a source or build tree) and computes a curve there."""
    r = subprocess.run([str(python), "-c", CURVE], capture_output=True, text=True, env=clean_env(), cwd=home, timeout=300)
    assert r.returncode == 0, r.stderr
    where, rows_code, data = r.stdout.strip().splitlines()
    module = Path(where).resolve()
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], capture_output=True,
                               text=True, check=True).stdout.strip()).resolve()
    assert module.parent == site / "hdat", f"imported from {module}, not the venv's {site}"
    assert not any(str(module).startswith(str(Path(s).resolve())) for s in source_roots)
    rows, code = map(int, rows_code.split())
    assert code == 0 and rows >= 3
    # The bundled model travels with the package, so hdat.geometry() works with the source tree gone.
    assert Path(data) == module.parent / "data" and (Path(data) / "models" / "stories260K" / "stories260K.bin").is_file()


def test_pip_install_into_a_venv_from_this_build(tmp_path):
    python = make_venv(tmp_path / "venv")
    pip_install(python, ROOT, clean_env(HDAT_BUILD_DIR=str(BUILD)), timeout=600)
    check_installed(python, tmp_path, [ROOT, BUILD])
    # Nothing was written into the source tree (setuptools' scratch lives in the build folder).
    assert not list(ROOT.glob("*.egg-info")) and not list((ROOT / "python").glob("*.egg-info"))


@pytest.mark.skipif(os.environ.get("HDAT_PIP_FRESH") != "1", reason="the fresh pip build takes minutes: ctest -L thorough (HDAT_PIP_FRESH=1)")
def test_pip_install_builds_from_a_fresh_source_tree(tmp_path):
    source = tmp_path / "src"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(".git", "build", "build-*", "out", "__pycache__", "*.egg-info"))
    python = make_venv(tmp_path / "venv")
    env = clean_env(CMAKE_BUILD_PARALLEL_LEVEL=os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", "2"))
    r = pip_install(python, source, env, timeout=3600)
    cache = (source / "build-python" / "CMakeCache.txt").read_text()
    assert "HDAT_NATIVE:BOOL=OFF" in cache and "HDAT_BUILD_TESTS:BOOL=OFF" in cache  # portable, the module's targets only
    assert "hdat_python" in r.stdout
    shutil.rmtree(source)  # the installed package must not need its source tree
    check_installed(python, tmp_path, [source])
