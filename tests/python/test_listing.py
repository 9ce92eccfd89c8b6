"""hdat.models(), hdat.describe() and hdat.parameters() say what `hdat list` and `hdat list MODEL` say."""

import json
import re

import hdat
from conftest import cli


def test_models_are_the_registry_of_the_command_line():
    text = cli("list", check=0).stdout
    if not hdat._model._registered:  # models declared in Python are listed too
        assert hdat.describe() == text
    names = re.findall(r"^  (\S+) ", text, flags=re.M)
    built = [m for m in hdat.models() if m.name not in hdat._model._registered]  # not those declared in Python (test_own_model.py)
    assert [m.name for m in built] == names
    for m in built:
        assert m.summary and m.commands
        assert f"commands: {', '.join(m.commands)}" in text


def test_every_key_as_hdat_list_model_shows_it():
    for m in [m for m in hdat.models() if m.name not in hdat._model._registered]:
        text = cli("list", m.name, check=0).stdout
        assert hdat.describe(m.name) == text
        table = hdat.parameters(m.name)
        # Each key is two lines: "  KEY  DEFAULT  MEANING" then "  (TYPE[, RANGE][; only when CONDITION])".
        lines = text.split("\n")
        start = next(i for i, line in enumerate(lines) if line.startswith("parameters ")) + 1
        keys = []
        for first, second in zip(lines[start::2], lines[start + 1::2]):
            if not first.strip():
                break
            key = first.split()[0]
            keys.append(key)
            row = table.loc[key]
            default = "(unset)" if row["default"] is None else json.dumps(row["default"], separators=(",", ":"))
            assert first.split()[1].replace(" ", "") == default.replace(" ", "")[:len(first.split()[1])], key
            assert row["meaning"] in first, key
            inside = second.strip()[1:-1]
            expected = row["type"] + (f", {row['range']}" if row["range"] else "") + (f"; only when {row['applies_when']}" if row["applies_when"] else "")
            assert inside == expected, key
            if row["range"]:
                assert row["low"] is not None or row["high"] is not None
            if row["type"] == "choice":
                assert row["choices"] and (row["default"] is None or row["default"] in row["choices"])
        assert keys == list(table.index), m.name


def test_result_summary_and_repr_are_readable():
    r = hdat.curve("specialization", mc_samples=512, t_max=5, n_points=5, quiet=True, threads=1)
    text = repr(r)
    assert text.startswith("<hdat curve specialization: exit code 0; curve.csv (6 rows x")
    assert r.summary.strip() in text and str(r) == r.summary.rstrip()
    assert r["curve"] is r.tables["curve.csv"] and r.table is r.tables["curve.csv"]
    assert r.equivalent.startswith("hdat curve specialization --out ")
    assert "--set mc_samples=512" in r.equivalent
    assert r.info["command_line"].startswith("python: hdat.curve('specialization', mc_samples=512")
    assert r.config["mc_samples"] == 512 and r.config["prior"]["kind"] == "gaussian"
