"""Ctrl-C interrupts a long run promptly (hdat.Interrupted, a KeyboardInterrupt, carrying the finished
part), the next call runs normally, and other Python threads keep running while C++ computes."""

import os
import signal
import threading
import time

import numpy as np
import pytest

import hdat

# A specialization curve far longer than the test waits (90 s). The model looks at the interrupt flag
# at its observation times only, so they are dense here (the first one at t_max / 1000: with the
# defaults that first interval alone runs 15 s, on the command line too).
LONG = {"t_max": 1e3, "n_points": 100000, "mc_samples": 2048, "threads": 1}


def sigint_after(seconds):
    """SIGINT to this process after `seconds`, as Ctrl-C in a terminal or a notebook's interrupt."""
    timer = threading.Timer(seconds, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    return timer


def test_ctrl_c_stops_a_long_curve_promptly_and_keeps_what_was_finished(tmp_path):
    timer = sigint_after(1.0)
    start = time.monotonic()
    try:
        with pytest.raises(hdat.Interrupted) as info:
            hdat.curve("specialization", out=tmp_path / "run", quiet=True, **LONG)
    finally:
        timer.cancel()
    elapsed = time.monotonic() - start
    assert isinstance(info.value, KeyboardInterrupt)
    assert elapsed < 1.0 + 3.0, f"took {elapsed:.1f} s to stop after Ctrl-C"
    r = info.value.result
    assert r is not None and r.exit_code == 130
    assert (tmp_path / "run" / "run.json").exists()  # written, as the command line does on exit 130
    assert 1 <= len(r.tables["curve.csv"]) < LONG["n_points"] + 1
    # The interrupt flag is cleared: the next call runs to its end.
    try:
        again = hdat.curve("specialization", mc_samples=512, t_max=5, n_points=5, quiet=True, threads=1)
    except KeyboardInterrupt:
        pytest.fail("the interrupt flag was left up: the next call was interrupted too")
    assert again.exit_code == 0 and len(again.table) == 6


def test_ctrl_c_stops_a_python_right_hand_side():
    def f(t, x):
        time.sleep(1e-4)
        return -1e-9 * x

    timer = sigint_after(0.5)
    try:
        with pytest.raises(hdat.Interrupted) as info:
            hdat.integrate(f, np.ones(2), np.linspace(0, 1e9, 1000), max_step=1.0)
    finally:
        timer.cancel()
    partial = info.value.result
    assert partial is not None and partial.status == "failed" and "interrupted" in partial.message
    assert hdat.integrate(lambda t, x: -x, [1.0], [0, 1]).ok


def test_other_threads_run_while_a_command_computes():
    # A thread that needs the GIL every millisecond: while C++ computes (over a second) it never
    # waits long, because the calling thread waits without the GIL.
    stamps = []
    stop = threading.Event()

    def tick():
        while not stop.is_set():
            stamps.append(time.monotonic())
            time.sleep(0.001)

    worker = threading.Thread(target=tick)
    worker.start()
    try:
        r = hdat.curve("specialization", mc_samples=8000, t_max=50, n_points=20, quiet=True, threads=1)
    finally:
        stop.set()
        worker.join()
    assert r.exit_code == 0 and r.info["wall_seconds"] > 0.5
    longest = max(b - a for a, b in zip(stamps, stamps[1:]))
    assert longest < 0.25, f"the other thread waited {longest:.2f} s for the GIL"


def test_progress_is_shown_and_can_be_turned_off(tmp_path, capsys):
    # C++ writes its progress on descriptor 2; with sys.stderr elsewhere (a notebook, pytest's
    # capture) it is copied there while the run lasts.
    grid = {"eta": [0.5, 1.0]}
    hdat.sweep("specialization", grid=grid, out=tmp_path / "a", mc_samples=512, t_max=5, n_points=5)
    assert "sweep specialization (curve): 2 points on" in capsys.readouterr().err
    hdat.sweep("specialization", grid=grid, out=tmp_path / "b", quiet=True, mc_samples=512, t_max=5, n_points=5)
    assert capsys.readouterr().err == ""


def test_two_python_threads_run_commands_at_once(capsys):
    # Each call has its own worker; the results are those of the same calls one after the other.
    keys = [dict(mc_samples=512, t_max=5, n_points=5, eta=eta, threads=1) for eta in (0.5, 2.0)]
    results = [None, None]

    def work(i):
        results[i] = hdat.curve("specialization", **keys[i])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(2):
        alone = hdat.curve("specialization", quiet=True, **keys[i])
        assert results[i] is not None and results[i].table.equals(alone.table)
    assert hdat.curve("specialization", quiet=True, **keys[0]).exit_code == 0
