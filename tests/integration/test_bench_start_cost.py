"""bench/start_cost.py in quick mode: it runs both contenders at two small partition counts on
a mock cluster it starts itself and writes a JSON whose every figure is a positive number
(never how fast), plus the plot next to it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "start_cost.py"
CONTENDERS = ("rdk", "confluent-kafka")


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    pytest.importorskip("confluent_kafka")
    pytest.importorskip("matplotlib")
    out = tmp_path_factory.mktemp("start_cost") / "start_cost.json"
    done = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--out", str(out)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT, check=False)
    assert out.exists(), f"no JSON written; stderr:\n{done.stderr[-3000:]}"
    return done, out, json.loads(out.read_text())


def numbers(node, path="$"):
    """Every number in a JSON tree, with its path (booleans are not numbers here)."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield from numbers(v, f"{path}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from numbers(v, f"{path}[{i}]")
    elif isinstance(node, (int, float)) and not isinstance(node, bool):
        yield path, node


def test_quick_run_succeeds_and_prints_the_tables(quick):
    done, _, _ = quick
    assert done.returncode == 0, done.stderr[-3000:]
    assert "| partitions | contender |" in done.stdout
    assert "| goal |" in done.stdout


def test_every_point_has_every_figure_for_both_contenders(quick):
    _, _, data = quick
    assert data["meta"]["quick"] is True
    assert [p["partitions"] for p in data["points"]] == [4, 64]
    for p in data["points"]:
        assert p["short_count"] > 0
        for c in CONTENDERS:
            runs = p["runs"][c]
            assert len(runs["fresh"]) == len(runs["reused"]) == data["meta"]["repeat"]
            for r in runs["fresh"]:
                assert "failed" not in r, r
                assert r["count"] == p["short_count"]
            fresh, reused = p["summary"][c]["fresh"], p["summary"][c]["reused"]
            for figure in ("build_s", "start_s", "first_batch_s", "e2e_msgs_per_s",
                           "steady_msgs_per_s", "peak_rss"):
                assert set(fresh[figure]) == {"min", "median", "max"}
            assert {"start_s", "peak_rss"} <= set(reused)
    assert data["goals"], "no goal was evaluated"
    assert {g["status"] for g in data["goals"]} <= {"holds", "MISSED"}


def test_every_figure_is_a_positive_number(quick):
    _, _, data = quick
    found = list(numbers(data))
    assert len(found) > 50
    bad = [(path, v) for path, v in found if not v > 0]
    assert not bad, bad


def test_the_plot_is_written_next_to_the_json(quick):
    _, out, _ = quick
    png = out.with_suffix(".png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_alone_redraws_tables_and_png_from_the_json(quick):
    """``--plot`` (docs/performance.md): tables and PNG again from the JSON, no run."""
    _, out, _ = quick
    png = out.with_suffix(".png")
    png.unlink()
    done = subprocess.run([sys.executable, str(SCRIPT), "--plot", "--out", str(out)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "rdk" in done.stdout, done.stdout[-2000:]
