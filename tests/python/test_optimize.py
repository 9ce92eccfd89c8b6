"""hdat.optimize: the same optimisation and files as `hdat optimize`, bad options as InputError."""

import json

import pandas as pd
import pytest

import hdat
from conftest import cli

KEYS = dict(K=2, M=1, eta=1.0, noise=0.2, init_std=0.0)


def test_optimize_matches_the_command_line(tmp_path):
    r = hdat.optimize("committee", ["dropout_keep", "test_scale"], intervals=5, t_final=2, bounds={"test_scale": (0, 1)}, quiet=True,
                      out=tmp_path / "py", **KEYS)
    assert r.exit_code == 0
    table = r.tables["baselines.csv"]
    assert list(table["schedule"]) == ["optimal", "constant", "step_decay", "cosine", "power_law"]
    assert (table["objective"].iloc[0] <= table["objective"] + 1e-12).all()
    sets = [f"--set={k}={v}" for k, v in KEYS.items()]
    cli("optimize", "committee", *sets, "--control", "dropout_keep", "--control", "test_scale", "--intervals", "5", "--t-final", "2",
        "--bounds", "test_scale=0:1", "--quiet", "--out", tmp_path / "cli", check=0)
    # The same optimisation; the module is position-independent code, so the last bits may differ.
    ours = json.loads((tmp_path / "py" / "schedule.json").read_text())
    theirs = json.loads((tmp_path / "cli" / "schedule.json").read_text())
    assert ours["controls"][0]["values"] == pytest.approx(theirs["controls"][0]["values"], rel=1e-9, abs=1e-12)
    assert ours["final"]["test_scale"] == pytest.approx(theirs["final"]["test_scale"], rel=1e-9)
    other = pd.read_csv(tmp_path / "cli" / "baselines.csv")
    assert list(other["schedule"]) == list(table["schedule"])
    assert table["objective"].to_numpy() == pytest.approx(other["objective"].to_numpy(), rel=1e-9)


@pytest.mark.parametrize("options,key", [({"control": "learning_rate"}, "control"), ({"intervals": 0}, "intervals"),
                                         ({"bounds": {"dropout_keep": (0.9, 0.1)}}, "bounds"), ({"objective": "time_to_target"}, "target"),
                                         ({"confirm": 200, "confirm_theory": {"eta": 0.5}}, "confirm_theory"),
                                         ({"confirm": 200, "confirm_theory": [("rtol", 1e-8)]}, "confirm_theory")])
def test_bad_options_raise_input_error(tmp_path, options, key):
    control = options.pop("control", "dropout_keep")
    with pytest.raises(hdat.InputError) as e:
        hdat.optimize("committee", control, t_final=1, quiet=True, out=tmp_path / "bad", **options, **KEYS)
    assert e.value.key == key
    assert not (tmp_path / "bad").exists()


def test_confirm_predicts_with_the_given_theory_settings(tmp_path):
    r = hdat.optimize("committee", "eta", intervals=2, t_final=1, baselines=False, confirm=500, confirm_seeds=4,
                      confirm_theory={"rtol": 1e-8}, quiet=True, out=tmp_path / "confirm", K=2, M=1, eta=1.0, noise=0.2, init_std=0.5)
    assert r.exit_code == 0
    confirm = json.loads((tmp_path / "confirm" / "run.json").read_text())["optimize"]["confirm"]
    assert confirm["predicting_theory"] == {"rtol": 1e-8}
    assert list(r.tables["confirm.csv"]["schedule"]) == ["optimal", "constant"]
