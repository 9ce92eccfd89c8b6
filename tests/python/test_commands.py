"""Every model's commands from Python equal the command line's for the same keys: the tables (as
DataFrames and as files), run.json, and every other file; Result.save writes exactly those files.
Small settings; the comparison runs `hdat` twice so that what legitimately differs between two runs
(clocks, the command line) is found, checked to be only that, and left out."""

import json
import shutil

import pandas as pd
import pytest

import hdat
from conftest import VOLATILE, cli, compare_folders, files_of, mask, set_args

SPEC = {"mc_samples": 512, "t_max": 5, "n_points": 5}
SPEC_SIM = dict(SPEC, D=100, seeds=2, test_size=200)
POL = {"T": 3, "t_max": 10, "points": 5, "figures": False}
TIED = {"T": 1, "alphas": [0.2, 0.4], "d": 20, "seeds": 1, "bayes": False}
COMMITTEE = {"K": 2, "M": 2, "t_max": 5, "n_points": 5}
COMMITTEE_SIM = dict(COMMITTEE, N=100, seeds=2, test_size=200)
SINKS = {"width": 16, "heads": 2, "steps": 20, "batch": 8, "n_train": 200, "n_eval": 50, "eval_every": 10, "vocab": 20, "n_tokens": 5}

# Small settings of every command of every model: each model declares its own (ModelEntry::small, in its
# register.cpp), so a model added to the tree brings them (test_every_registered_command_is_covered).
# Dotted keys go through params.
SMALL = {(m.name, command): settings for m in hdat.models() for command, settings in m.small.items()}
ELSEWHERE = {("geometry", "geometry"): "test_geometry_of_exported_maps (hdat.geometry)"}


def split_keys(keys):
    return {k: v for k, v in keys.items() if "." in k}, {k: v for k, v in keys.items() if "." not in k}


def test_every_registered_command_is_covered():
    # (models declared in Python by other tests of this session are not the build's: test_own_model.py)
    registered = {(m.name, c) for m in hdat.models() if m.name not in hdat._model._registered for c in m.commands}
    missing = registered - set(SMALL) - set(ELSEWHERE)
    assert not missing, f"give these commands small settings in their model's register.cpp (ModelEntry::small): {sorted(missing)}"


def check_tables(result, folder):
    """Each table equals pandas' reading of the command line's CSV, column for column, bit for bit
    (clock columns such as seconds_per_run only in name)."""
    assert set(result.tables) <= set(files_of(folder))
    for name, frame in result.tables.items():
        expected = pd.read_csv(folder / name, float_precision="round_trip", dtype={"hash": str} if name == "sweep.csv" else None)
        assert list(frame.columns) == list(expected.columns), name
        clocks = [c for c in frame.columns if VOLATILE.search(c)]
        pd.testing.assert_frame_equal(frame.drop(columns=clocks), expected.drop(columns=clocks), check_exact=True, obj=name)


@pytest.mark.parametrize("model, command", sorted(SMALL), ids=[f"{m}-{c}" for m, c in sorted(SMALL)])
def test_python_equals_the_command_line(tmp_path, model, command):
    keys = SMALL[(model, command)]
    dotted, simple = split_keys(keys)
    result = hdat.run(model, command, dotted or None, threads=1, quiet=True, **simple)
    runs = [cli(command, model, *set_args(keys), "--threads", 1, "--quiet", "--out", tmp_path / f"cli{i}") for i in (1, 2)]
    assert runs[0].returncode == runs[1].returncode == result.exit_code, runs[0].stderr
    saved = result.save(tmp_path / "python")
    assert mask((saved / "run.json").read_text(), saved) == mask((result.dir / "run.json").read_text(), result.dir)
    assert json.loads((result.dir / "run.json").read_text()) == result.info
    excluded = compare_folders(saved, tmp_path / "cli1", tmp_path / "cli2")
    print(f"{model} {command}: fields left out of the comparison: {sorted(excluded)}")
    check_tables(result, tmp_path / "cli1")
    # The command line's summary is the Result's.
    first = result.summary.strip().splitlines()[0]
    assert mask(first) == mask(runs[0].stdout.strip().splitlines()[0])


def test_geometry_of_exported_maps(tmp_path):
    # The sinks model exports its attention maps in the geometry format; both front ends analyse them.
    sinks = hdat.simulate("sinks", threads=1, quiet=True, **SINKS)
    maps = sinks.files["attention_maps.json"]
    keys = {"bootstrap": 50, "random_repeats": 4, "plots": False}
    result = hdat.geometry(maps=maps, threads=1, quiet=True, **keys)
    for i in (1, 2):
        cli("geometry", "--maps", maps, *set_args(keys), "--threads", 1, "--quiet", "--out", tmp_path / f"cli{i}", check=0)
    excluded = compare_folders(result.save(tmp_path / "python"), tmp_path / "cli1", tmp_path / "cli2")
    print(f"geometry: fields left out of the comparison: {sorted(excluded)}")
    check_tables(result, tmp_path / "cli1")
    assert result.info["maps_file"] == str(maps)
    # The same maps given as Python data (lists / NumPy) give the same tables.
    data = json.loads(maps.read_text())
    again = hdat.geometry(maps=data["maps"], threads=1, quiet=True, **keys)
    for name, frame in result.tables.items():
        pd.testing.assert_frame_equal(again.tables[name], frame, check_exact=True)


def test_geometry_of_the_checkpoint_names_its_model_and_plots_its_own_figures(tmp_path):
    # run.json's "model" names the hdat model; the checkpoint's shape has its own key (it once replaced
    # "model", and `hdat plot` then fell back to the generic figures, which failed on the object).
    keys = {"documents": 2, "tokens": 32, "bootstrap": 10, "random_repeats": 2, "sparsify.documents": 1, "export_maps": 0}
    result = hdat.geometry(threads=1, quiet=True, **keys)
    assert result.model == "geometry"
    assert result.info["checkpoint"]["n_layers"] == 5 and result.info["source"] == "checkpoint"
    cli("geometry", *set_args(dict(keys, plots=False)), "--threads", 1, "--quiet", "--out", tmp_path / "g", check=0)
    assert json.loads((tmp_path / "g" / "run.json").read_text())["model"] == "geometry"
    if shutil.which("gnuplot"):
        r = cli("plot", tmp_path / "g", check=0)
        assert "generic" not in r.stdout + r.stderr and (tmp_path / "g" / "taxonomy.png").exists()


def test_sweep_equals_the_command_line_and_resumes(tmp_path):
    base = dict(SPEC, eta=1.0)
    grid = {"eta": [0.5, 1.0], "prior.scale": "0.5:1.5:2"}
    result = hdat.sweep("specialization", grid=grid, observables=["final:risk", "info:bayes_risk"], out=tmp_path / "python",
                        threads=1, quiet=True, **base)
    assert list(result.table.columns[:4]) == ["eta", "prior.scale", "final_risk", "bayes_risk"]
    assert len(result.table) == 4 and (result.table["status"] == "ok").all()
    args = ["--grid", "eta=[0.5,1.0]", "--grid", "prior.scale=0.5:1.5:2", "--observable", "final:risk", "--observable", "info:bayes_risk",
            *set_args(base), "--threads", 1, "--quiet"]
    for i in (1, 2):
        cli("sweep", "specialization", *args, "--out", tmp_path / f"cli{i}", check=0)
    excluded = compare_folders(tmp_path / "python", tmp_path / "cli1", tmp_path / "cli2")
    print(f"sweep: fields left out of the comparison: {sorted(excluded)}")
    expected = pd.read_csv(tmp_path / "cli1" / "sweep.csv", float_precision="round_trip", dtype={"hash": str})
    pd.testing.assert_frame_equal(result.table.drop(columns="wall_seconds"), expected.drop(columns="wall_seconds"), check_exact=True)
    # A point's record, with its tables.
    point = result.point(0)
    assert point["status"] == "ok" and "curve.csv" in point["tables"]
    # The same call again finds every point finished.
    again = hdat.sweep("specialization", grid=grid, observables=["final:risk", "info:bayes_risk"], out=tmp_path / "python", threads=1,
                       quiet=True, **base)
    assert "computed 0" in again.report and "4 found finished" in again.report
    pd.testing.assert_frame_equal(again.table.drop(columns="wall_seconds"), result.table.drop(columns="wall_seconds"))


def test_plot_draws_the_command_lines_figures(tmp_path):
    result = hdat.curve("specialization", threads=1, quiet=True, **SPEC)
    shutil.copytree(result.dir, tmp_path / "cli")
    cli("plot", tmp_path / "cli", check=0)
    figures = hdat.plot(result, out=tmp_path / "python")
    assert figures and all(f.exists() and f.suffix == ".png" for f in figures)
    assert sorted(files_of(tmp_path / "python")) == sorted(files_of(tmp_path / "cli"))
    for name in files_of(tmp_path / "cli"):
        if name.endswith(".gp"):  # the gnuplot scripts, data included, differ only in the folder's name
            ours = (tmp_path / "python" / name).read_text().replace(str(tmp_path / "python"), "DIR")
            theirs = (tmp_path / "cli" / name).read_text().replace(str(tmp_path / "cli"), "DIR")
            assert ours == theirs, name
    assert "<img src=\"data:image/png;base64," in figures._repr_html_()
