"""Bad input raises hdat.InputError (a ValueError) with the command line's message in Python's terms
(keyword arguments and params where the command line says --set and --config), naming the key; a
numerical failure raises hdat.NumericalError carrying what was computed before it."""

import json

import numpy as np
import pandas as pd
import pytest

import hdat
from conftest import cli, set_args

TINY = {"mc_samples": 512, "t_max": 5, "n_points": 5}


def in_python_terms(cli):
    """What the command line's message says, as a Python caller must read it (written out here, not
    taken from the package: the package's translation is what is tested)."""
    return cli.replace("(from --set)", "(from a keyword argument)").replace("(from --config)", "(from params)")


def cli_message(r):
    assert r.returncode == 2, r.stdout + r.stderr
    lines = [line for line in r.stderr.splitlines() if line.startswith("hdat: ")]
    assert len(lines) == 1, r.stderr
    return lines[0][len("hdat: "):]


# (description, Python keyword arguments, params, the command line's --set arguments, the key named)
CASES = [
    ("unknown key", {"Hx": 2}, None, ["--set", "Hx=2"], "Hx"),
    ("wrong type", {"H": "two"}, None, ["--set", "H=two"], "H"),
    ("out of range", {"eta": -1.0}, None, ["--set", "eta=-1.0"], "eta"),
    ("integer expected", {"H": 1.5}, None, ["--set", "H=1.5"], "H"),
    ("wrong shape (NumPy)", {"M0": np.zeros((3, 2))}, None, ["--set", "M0=[[0.0,0.0],[0.0,0.0],[0.0,0.0]]"], "M0"),
    ("list too long (nested params)", {}, {"prior": {"mean": [1, 2, 3]}}, ["--set", "prior.mean=[1,2,3]"], "prior.mean"),
    ("not a choice (dotted params)", {}, {"prior.kind": "laplace"}, ["--set", "prior.kind=laplace"], "prior.kind"),
    ("a dict keyword stands for its nested keys", {"prior": {"kind": "laplace"}}, None, ["--set", "prior.kind=laplace"], "prior.kind"),
    ("non-finite number", {"eta": float("nan")}, None, ["--set", "eta=nan"], "eta"),
]


@pytest.mark.parametrize("what, keys, params, sets, key", CASES, ids=[c[0] for c in CASES])
def test_bad_input_raises_the_command_lines_message(tmp_path, what, keys, params, sets, key):
    out = tmp_path / "python"
    with pytest.raises(hdat.InputError) as info:
        hdat.curve("specialization", params, out=out, **keys)
    e = info.value
    assert isinstance(e, ValueError)
    assert e.key == key and f"'{key}'" in str(e)
    config = []
    if params is not None:  # params plays --config: the message says so, as it does for a file
        (tmp_path / "config.json").write_text(json.dumps(params))
        config = ["--config", tmp_path / "config.json"]
        sets = []
    expected = cli_message(cli("curve", "specialization", *config, *sets, "--out", tmp_path / "cli"))
    assert str(e) == in_python_terms(expected)
    assert "--" not in str(e)
    assert not out.exists() and not (tmp_path / "cli").exists()  # nothing written, by either


def test_unknown_model_and_command(tmp_path):
    with pytest.raises(hdat.InputError) as info:
        hdat.curve("no-such-model")
    assert info.value.key == "model"
    assert str(info.value) == cli_message(cli("curve", "no-such-model", "--out", tmp_path / "a")).replace("parameter 'MODEL'", "parameter 'model'")
    commandless = [m for m in hdat.models() if "analyze" not in m.commands and "curve" in m.commands][0].name
    with pytest.raises(hdat.InputError) as info:
        hdat.analyze(commandless)
    assert str(info.value) == cli_message(cli("analyze", commandless, "--out", tmp_path / "b")).replace("parameter 'MODEL'", "parameter 'model'")


def test_python_side_options_are_input_errors_too():
    with pytest.raises(hdat.InputError) as info:
        hdat.curve("specialization", threads=-1)
    assert info.value.key == "threads"
    with pytest.raises(hdat.InputError) as info:
        hdat.curve("specialization", params=[1, 2])
    assert info.value.key == "params"
    with pytest.raises(hdat.InputError) as info:
        hdat.sweep("specialization", grid={})
    assert info.value.key == "grid"


def test_sweep_errors_are_the_command_lines(tmp_path):
    with pytest.raises(hdat.InputError) as info:
        hdat.sweep("specialization", grid={"H": "1:3"}, out=tmp_path / "p", **TINY)
    expected = cli_message(cli("sweep", "specialization", "--grid", "H=1:3", *set_args(TINY), "--out", tmp_path / "c"))
    assert expected == "parameter 'H': --grid H=1:3: expected key=start:stop:count, key=start:stop:count:log or key=[a,b,...]"
    assert str(info.value) == ("parameter 'H': grid={'H': '1:3'}: expected {key: 'start:stop:count'}, {key: 'start:stop:count:log'} "
                               "or {key: [a, b, ...]}")
    assert info.value.key == "H"
    assert not (tmp_path / "p").exists()


def test_numerical_failure_carries_what_was_computed(tmp_path):
    # Tolerances no step can meet: the integrator gives up, the command exits with 3 and keeps the rows before.
    keys = dict(TINY, rtol=1e-300, atol=1e-300)
    with pytest.raises(hdat.NumericalError) as info:
        hdat.curve("specialization", out=tmp_path / "py", **keys)
    r = info.value.result
    assert r is not None and r.exit_code == 3 and isinstance(info.value, RuntimeError)
    c = cli("curve", "specialization", *set_args(keys), "--out", tmp_path / "cli")
    assert c.returncode == 3
    expected = pd.read_csv(tmp_path / "cli" / "curve.csv", float_precision="round_trip")
    pd.testing.assert_frame_equal(r.tables["curve.csv"], expected)
    assert len(expected) >= 1  # the initial state at least
    assert (tmp_path / "py" / "curve.csv").read_bytes() == (tmp_path / "cli" / "curve.csv").read_bytes()
