"""`cmake --install` puts the package where Debian's Python finds it under the prefix, and it
imports from there."""

import os
import re
import subprocess
from pathlib import Path

BUILD = Path(os.environ.get("HDAT_BINARY_DIR", Path(__file__).resolve().parents[2] / "build"))
PYTHON = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else "python3"


def cache(name):
    m = re.search(rf"^{name}:[A-Z]+=(.*)$", (BUILD / "CMakeCache.txt").read_text(), flags=re.M)
    return m.group(1) if m else None


def test_the_configured_destination_is_on_debians_path():
    # Debian's Python looks in /usr/lib/python3/dist-packages and /usr/local/lib/python3.X/dist-packages:
    # the default destination is the one of the two for the prefix (relative to any other prefix).
    prefix, site = cache("CMAKE_INSTALL_PREFIX"), cache("HDAT_PYTHON_INSTALL_DIR")
    probe = "import sys; print(f'{sys.version_info[0]}.{sys.version_info[1]}'); print('\\n'.join(sys.path))"
    version, *path = subprocess.run([PYTHON, "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    assert site == ("lib/python3/dist-packages" if prefix == "/usr" else f"lib/python{version}/dist-packages")
    assert "/usr/lib/python3/dist-packages" in path
    assert f"/usr/local/lib/python{version}/dist-packages" in path


def test_install_into_a_prefix_and_import(tmp_path):
    r = subprocess.run(["cmake", "--install", str(BUILD), "--prefix", str(tmp_path), "--component", "python"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    package = tmp_path / cache("HDAT_PYTHON_INSTALL_DIR") / "hdat"
    assert (package / "__init__.py").exists() and list(package.glob("_core*.so"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(package.parent)
    out = subprocess.run([PYTHON, "-c", "import hdat; print(hdat.__file__); print(len(hdat.models()))"], capture_output=True, text=True,
                         env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    where, count = out.stdout.split()
    assert Path(where).parent == package and int(count) >= 1
