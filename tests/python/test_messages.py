"""Messages that guide: a misspelt key, model, command, option, choice or observable gets the nearest
name suggested; a malformed JSON file is located by line and column; a command-line syntax error shows
the right form; Python says the same in its own terms. Through the built program and through the module."""

import json
import re

import pytest

import hdat
from conftest import cli

TINY = {"mc_samples": 512, "t_max": 5, "n_points": 5}


def refused(r, out=None):
    """The one message of a run refused as bad input (exit 2, one line, nothing written)."""
    assert r.returncode == 2, r.stdout + r.stderr
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("hdat: "), r.stderr
    if out is not None:
        assert not out.exists()
    return lines[0][len("hdat: "):]


# (what, the command line after `hdat`, the suggestion the message must make)
MISSPELT = [
    ("key", ["curve", "specialization", "--set", "etaa=0.5"], "did you mean 'eta'?"),
    ("key, letters swapped", ["curve", "specialization", "--set", "eat=0.5"], "did you mean 'eta'?"),
    ("key without its prefix", ["curve", "specialization", "--set", "kind=signs"], "did you mean 'prior.kind'?"),
    ("model", ["curve", "specializaton"], "did you mean 'specialization'?"),
    ("model, - for _", ["curve", "tied_attention"], "did you mean 'tied-attention'?"),
    ("command", ["curv", "specialization"], "did you mean 'curve'?"),
    ("command, swapped", ["valdiate", "specialization"], "did you mean 'validate'?"),
    ("option", ["curve", "specialization", "--sett", "eta=0.5"], "did you mean '--set'?"),
    ("choice", ["curve", "specialization", "--set", "activation=sotfmax"], "did you mean 'softmax'?"),
    ("sweep mode", ["sweep", "specialization", "--grid", "H=[1,2]", "--mode", "simulat"], "did you mean 'simulate'?"),
    ("observable form", ["sweep", "specialization", "--grid", "H=[1,2]", "--observable", "fnal:risk"], "did you mean 'final'?"),
    ("grid key", ["sweep", "specialization", "--grid", "etta=[0.5,1]"], "did you mean 'eta'?"),
]


@pytest.mark.parametrize("what, args, hint", MISSPELT, ids=[c[0] for c in MISSPELT])
def test_a_misspelt_name_gets_the_nearest_suggested(tmp_path, what, args, hint):
    out = tmp_path / "out"
    message = refused(cli(*args, "--out", out), out)
    assert hint in message


def test_nothing_is_suggested_for_a_name_far_from_every_candidate(tmp_path):
    message = refused(cli("curve", "specialization", "--set", "zzzzzz=1", "--out", tmp_path / "o"))
    assert "did you mean" not in message and "allowed keys: " in message


def test_every_single_typo_of_every_key_suggests_a_key_one_edit_away():
    # Property over every model and key of 4+ letters: drop a letter, or swap two -> the suggestion
    # is a key at most one edit from the typo (the intended one unless another is as near).
    checked = 0
    for model in hdat.models():
        keys = list(hdat.parameters(model.name).index)
        for key in keys:
            if len(key) < 4:
                continue
            for typo in {key[1:], key[:2] + key[3:], key[0] + key[2] + key[1] + key[3:]} - set(keys):
                with pytest.raises(hdat.InputError) as info:
                    if model.name == "geometry":
                        hdat.geometry(**{typo: 1})
                    else:
                        hdat.run(model.name, model.commands[0], **{typo: 1})
                m = re.search(r"did you mean '([^']+)'\?", str(info.value))
                assert m, f"{model.name}: no suggestion for {typo!r} (from {key!r}): {info.value}"
                assert m.group(1) in keys
                checked += 1
    assert checked > 100


@pytest.mark.parametrize("args, right", [
    (["--set", "eta", "0.5"], "write --set eta=0.5"),
    (["--set", "eta=", "0.5"], "write --set eta=0.5"),
    (["--set", "eta", "=0.5"], "write --set eta=0.5"),
])
def test_set_with_a_space_shows_the_right_form(tmp_path, args, right):
    message = refused(cli("curve", "specialization", *args, "--out", tmp_path / "o"), tmp_path / "o")
    assert right in message and "not expected" not in message


def test_grid_with_a_space_shows_the_right_form(tmp_path):
    message = refused(cli("sweep", "specialization", "--grid", "H", "1:3", "--out", tmp_path / "o"), tmp_path / "o")
    assert "write --grid H=1:3" in message


def test_set_without_a_value_shows_the_right_form(tmp_path):
    message = refused(cli("curve", "specialization", "--set", "eta", "--out", tmp_path / "o"), tmp_path / "o")
    assert "key=value" in message and "--set eta=" in message


def test_a_bare_assignment_is_shown_as_a_set(tmp_path):
    message = refused(cli("curve", "specialization", "eta=0.5", "--out", tmp_path / "o"), tmp_path / "o")
    assert "--set eta=0.5" in message


def test_a_missing_option_shows_the_usage(tmp_path):
    message = refused(cli("curve", "specialization"))
    assert "--out" in message and "usage: hdat curve MODEL" in message and "--set key=value" in message


# A config file with an error at a known place: (text, line, column of the offending character).
MALFORMED = [
    ('{\n  "eta": 0.5,\n  "H": 2 "L": 4\n}\n', 3, 10),  # a missing comma: the unexpected "L"
    ('{\n  "eta": 0.5,\n}\n', 3, 1),                    # a trailing comma: the unexpected }
    ('{"eta": 0.5, "H": tru}', 1, 19),                  # a misspelt literal, where it starts
    ('{\n\n    "eta": 0.5\n', 3, 15),                   # not closed: just after the last character
]


@pytest.mark.parametrize("text, line, column", MALFORMED)
def test_a_malformed_config_is_located_by_line_and_column(tmp_path, text, line, column):
    path = tmp_path / "c.json"
    path.write_text(text)
    message = refused(cli("curve", "specialization", "--config", path, "--out", tmp_path / "o"), tmp_path / "o")
    assert f"line {line}, column {column}:" in message, message
    assert str(path) in message


def test_a_malformed_maps_file_is_located_too(tmp_path):
    path = tmp_path / "maps.json"
    path.write_text('{"maps": [\n  {"layer": 0 "head": 0}\n]}\n')
    message = refused(cli("geometry", "--maps", path, "--out", tmp_path / "o"), tmp_path / "o")
    assert "line 2, column 15:" in message, message


# From Python: the same content, Python's names (no option of the command line in the text).
def python_error(call):
    with pytest.raises(hdat.InputError) as info:
        call()
    text = str(info.value)
    assert not re.search(r"(?<![\w-])--[a-z]", text), text
    return info.value


def test_python_suggests_the_same_names_in_its_own_terms(tmp_path):
    e = python_error(lambda: hdat.curve("specialization", etaa=0.5))
    assert e.key == "etaa" and "(from a keyword argument)" in str(e) and "did you mean 'eta'?" in str(e)
    cli_text = refused(cli("curve", "specialization", "--set", "etaa=0.5", "--out", tmp_path / "o"))
    assert str(e) == cli_text.replace("(from --set)", "(from a keyword argument)")

    e = python_error(lambda: hdat.curve("specialization", params={"prior": {"knd": "signs"}}))
    assert "(from params)" in str(e) and "did you mean 'prior.kind'?" in str(e)

    e = python_error(lambda: hdat.curve("specializaton"))
    assert e.key == "model" and "did you mean 'specialization'?" in str(e)

    e = python_error(lambda: hdat.curve("specialization", activation="sotfmax"))
    assert "did you mean 'softmax'?" in str(e)


def test_python_sweep_messages_name_its_arguments(tmp_path):
    e = python_error(lambda: hdat.sweep("specialization", grid={"H": [1, 2]}, observables=["fnal:risk"], **TINY))
    assert e.key == "observables" and "did you mean 'final'?" in str(e)
    e = python_error(lambda: hdat.sweep("specialization", grid={"H": [1, 2]}, mode="simulat", **TINY))
    assert e.key == "mode" and "did you mean 'simulate'?" in str(e) and "mode takes theory, simulate or one of its commands" in str(e)
    e = python_error(lambda: hdat.sweep("specialization", grid={"etta": [0.5, 1]}, **TINY))
    assert e.key == "etta" and "grid={'etta': [0.5,1]}" in str(e) and "did you mean 'eta'?" in str(e)
    assert "hdat.parameters(model)" in str(e)


def test_a_python_maps_file_is_located_too(tmp_path):
    path = tmp_path / "maps.json"
    path.write_text('{"maps": [\n  {"layer": 0 "head": 0}\n]}\n')
    e = python_error(lambda: hdat.geometry(maps=path, out=tmp_path / "o"))
    assert e.key == "maps" and "line 2, column 15:" in str(e)


def test_options_named_inside_a_message_become_keyword_arguments(tmp_path):
    r = hdat.curve("committee", t_max=2, n_points=3, quiet=True, out=tmp_path / "c")
    e = python_error(lambda: hdat.plot(r, heatmap=True, lines=True))
    assert e.key == "heatmap" and "choose heatmap= or lines=, not both" in str(e)
    cli_text = refused(cli("plot", tmp_path / "c", "--heatmap", "--lines"))
    assert cli_text == "parameter '--heatmap': choose --heatmap or --lines, not both"
