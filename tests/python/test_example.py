"""The worked example of docs/python.md runs (small sizes) and ends in its figure."""

import os
import subprocess
import sys

from conftest import ROOT


def test_the_worked_example_runs_to_its_figure(tmp_path):
    env = dict(os.environ, MPLBACKEND="Agg")
    r = subprocess.run([sys.executable, str(ROOT / "examples" / "python" / "specialization.py"), str(tmp_path), "--quick"], capture_output=True,
                       text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    figure = tmp_path / "specialization.png"
    assert figure.exists() and figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and figure.stat().st_size > 20000
    for run, table in (("curve", "curve.csv"), ("simulate", "sim.csv"), ("phase", "sweep.csv")):
        assert (tmp_path / run / table).exists() and (tmp_path / run / "run.json").exists()
    assert "standard errors" in r.stdout
