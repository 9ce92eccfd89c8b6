#!/usr/bin/python3
"""tools/snapshot_compare.py on two small hand-made snapshots: every kind of difference it must report
(a number in the last bit, a JSON value, a missing or extra file, an exit code, a missing figure) and
every difference it must not (durations and rates, the snapshot's own folder, a figure's bytes, the
hash in a seed file's name), and the tolerance option."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.path.join(HERE, "..", "..", "tools", "snapshot_compare.py")


def write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def make_snapshot(root):
    """A snapshot as tools/snapshot.sh writes one, in miniature."""
    write(root, "snapshot.json", json.dumps({"root": root, "hdat": "/opt/hdat/bin/hdat", "threads": 1, "settings": "x", "only": ""}))
    write(root, "exit_codes.txt", "m/validate 0\nm/validate_broken 1\n")
    write(root, "m/validate.stdout", f"validate: theory vs simulation\n  verdict: AGREE\nwrote {root}/m/validate (0.52 s)\n")
    write(root, "m/validate/validate.csv", "t,quantity,theory,simulation,seconds_per_run\n0,M_0_0,0.1,0.10000000000000001,0.3\n1,M_0_0,0.25,0.2499,0.4\n")
    run = {"command_line": f"/opt/hdat/bin/hdat validate m --out {root}/m/validate", "wall_seconds": 1.5, "date": "2026-01-01T00:00:00Z",
           "host": "a", "git_revision": "abc", "validation": {"verdict": "agree", "per_size": [{"D": 100, "gap_rms": {"M": 0.01}}],
                                                             "theory_solver": {"rhs_calls": 120, "wall_seconds": 0.1}},
           "summary": "theory to t = 3 (0.05 s, 138 points/s)"}
    write(root, "m/validate/run.json", json.dumps(run, indent=2))
    write(root, "m/validate/validate.png", "PNG bytes 1")
    write(root, "m/validate/seeds/0123456789abcdef_D100_seed0_replica0.csv", "t,M_0_0\n0,0.1\n")


class SnapshotCompare(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.a = os.path.join(self.tmp, "before")
        self.b = os.path.join(self.tmp, "after_elsewhere")
        make_snapshot(self.a)
        make_snapshot(self.b)

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def compare(self, *options):
        r = subprocess.run([sys.executable, TOOL, self.a, self.b, *options], capture_output=True, text=True)
        return r.returncode, r.stdout

    def edit(self, rel, old, new):
        path = os.path.join(self.b, rel)
        with open(path) as f:
            text = f.read()
        self.assertIn(old, text)
        with open(path, "w") as f:
            f.write(text.replace(old, new, 1))

    def test_two_snapshots_of_the_same_run_in_different_folders_are_the_same(self):
        code, out = self.compare()
        self.assertEqual(code, 0, out)
        self.assertIn("SAME", out)

    def test_a_number_changed_in_its_last_digits_is_reported_with_its_column_and_row(self):
        self.edit("m/validate/validate.csv", "0.2499", "0.24990000000000001")
        self.edit("m/validate/validate.csv", "0.24990000000000001", "0.24990000000000004")
        code, out = self.compare()
        self.assertEqual(code, 1, out)
        self.assertIn("simulation: largest relative difference", out)
        self.assertIn("row 1", out)
        code, out = self.compare("--rtol", "1e-15")
        self.assertEqual(code, 0, out)

    def test_a_json_value_deep_inside_is_reported_with_its_path(self):
        self.edit("m/validate/run.json", '"rhs_calls": 120', '"rhs_calls": 121')
        code, out = self.compare()
        self.assertEqual(code, 1, out)
        self.assertIn("validation.theory_solver.rhs_calls: 120 -> 121", out)

    def test_a_verdict_and_an_exit_code_are_reported(self):
        self.edit("m/validate/run.json", '"verdict": "agree"', '"verdict": "disagree"')
        self.edit("exit_codes.txt", "m/validate_broken 1", "m/validate_broken 0")
        code, out = self.compare()
        self.assertEqual(code, 1, out)
        self.assertIn("validation.verdict", out)
        self.assertIn("m/validate_broken: exit 1 -> 0", out)

    def test_durations_rates_dates_hosts_and_revisions_are_not_compared(self):
        self.edit("m/validate/run.json", '"wall_seconds": 1.5', '"wall_seconds": 9.5')
        self.edit("m/validate/run.json", '"wall_seconds": 0.1', '"wall_seconds": 0.7')
        self.edit("m/validate/run.json", '"host": "a"', '"host": "b"')
        self.edit("m/validate/run.json", '"git_revision": "abc"', '"git_revision": "def"')
        self.edit("m/validate/run.json", "(0.05 s, 138 points/s)", "(0.11 s, 61.5 points/s)")
        self.edit("m/validate/validate.csv", ",0.3\n", ",0.9\n")
        self.edit("m/validate.stdout", "(0.52 s)", "(3.1 s)")
        code, out = self.compare()
        self.assertEqual(code, 0, out)

    def test_text_beside_a_masked_duration_is_still_compared(self):
        self.edit("m/validate/run.json", "theory to t = 3 (0.05 s", "theory to t = 4 (0.05 s")
        self.edit("m/validate.stdout", "verdict: AGREE", "verdict: DISAGREE")
        code, out = self.compare()
        self.assertEqual(code, 1, out)
        self.assertIn("summary", out)
        self.assertIn("DISAGREE", out)

    def test_a_step_added_to_the_snapshot_is_listed_by_name(self):
        write(self.b, "exit_codes.txt", "m/validate 0\nm/validate.resume 0\nm/validate_broken 1\n")
        code, out = self.compare()
        self.assertEqual(code, 1, out)
        self.assertIn("m/validate.resume: only after (exit 0)", out)
        self.assertNotIn("validate_broken", out)

    def test_files_only_on_one_side_are_listed(self):
        os.remove(os.path.join(self.b, "m/validate/validate.csv"))
        write(self.b, "m/validate/escape.csv", "D,escape_time\n100,3\n")
        code, out = self.compare()
        self.assertEqual(code, 1, out)
        self.assertIn("- m/validate/validate.csv (only before)", out)
        self.assertIn("+ m/validate/escape.csv (only after)", out)

    def test_figures_are_compared_by_existence_only(self):
        write(self.b, "m/validate/validate.png", "other PNG bytes")
        self.assertEqual(self.compare()[0], 0)
        os.remove(os.path.join(self.b, "m/validate/validate.png"))
        code, out = self.compare()
        self.assertEqual(code, 1, out)
        self.assertIn("validate.png (only before)", out)

    def test_the_hash_naming_persisted_seeds_is_a_note_not_a_difference(self):
        seeds = os.path.join(self.b, "m/validate/seeds")
        os.rename(os.path.join(seeds, "0123456789abcdef_D100_seed0_replica0.csv"), os.path.join(seeds, "fedcba9876543210_D100_seed0_replica0.csv"))
        code, out = self.compare()
        self.assertEqual(code, 0, out)
        self.assertIn("note: the simulation hash naming persisted seeds changed", out)
        self.edit("m/validate/seeds/fedcba9876543210_D100_seed0_replica0.csv", "0.1", "0.2")
        self.assertEqual(self.compare()[0], 1)

    def test_a_missing_folder_is_bad_usage(self):
        r = subprocess.run([sys.executable, TOOL, self.a, os.path.join(self.tmp, "none")], capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)


if __name__ == "__main__":
    unittest.main()
