"""Runs the bad-input catalogue (bad_input_catalogue.py) in a subprocess under
``python -X faulthandler`` — a crash of the interpreter is a failure of every case — and
checks each case: its documented exception type and a message naming the culprit."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
from collections import Counter

import bad_input_catalogue
import pytest
from catalogue_core import KINDS

HERE = pathlib.Path(__file__).resolve().parent
NAMES = [c.name for c in bad_input_catalogue.CASES]


def test_the_catalogue_has_at_least_60_cases_with_unique_names():
    assert len(NAMES) >= 60
    assert len(set(NAMES)) == len(NAMES)


def test_every_case_belongs_to_a_known_class():
    counts = Counter(c.kind for c in bad_input_catalogue.CASES)
    assert set(counts) <= set(KINDS), set(counts) - set(KINDS)
    print("catalogue:", len(NAMES), "cases;", dict(sorted(counts.items())))


@pytest.fixture(scope="module")
def catalogue(tmp_path_factory):
    out = tmp_path_factory.mktemp("catalogue") / "results.json"
    proc = subprocess.run(
        [sys.executable, "-X", "faulthandler", str(HERE / "bad_input_catalogue.py"), str(out)],
        capture_output=True, text=True, timeout=240, cwd=HERE, check=False)
    results = {r["name"]: r for r in json.loads(out.read_text())} if out.exists() else {}
    return proc, results


def test_the_catalogue_process_exits_cleanly(catalogue):
    proc, results = catalogue
    assert proc.returncode == 0, f"exit {proc.returncode}:\n{proc.stderr[-4000:]}"
    assert "Fatal Python error" not in proc.stderr
    assert len(results) == len(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_bad_input(catalogue, name):
    proc, results = catalogue
    assert name in results, f"the catalogue never got to this case:\n{proc.stderr[-3000:]}"
    r = results[name]
    if r["known_bug"]:
        assert not r["ok"], f"fixed now: drop known_bug from this case ({r['known_bug']})"
        pytest.xfail(r["known_bug"])
    assert r["ok"], (f"expected {r['expected']} matching {r['pattern']!r}, got {r['got']}: "
                     f"{r['message']}\n{r.get('traceback', '')}")
