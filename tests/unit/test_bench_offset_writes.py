"""bench/offset_write_bench.py at tiny counts: both ways run in their own processes, every
commit writes the right values (the child checks its last file), and the JSON has the
figures the docs cite, each a positive number (never how fast)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_offset_write_bench_runs_both_ways_and_writes_its_figures(tmp_path):
    out = tmp_path / "offset_writes.json"
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "offset_write_bench.py"), "--partitions", "16",
         "--commits", "2", "--gap", "0.6", "--repeat", "2", "--dir", str(tmp_path),
         "--out", str(out)], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(out.read_text())
    assert set(result["summary"]) == {"rename", "swap"}
    for figures in result["summary"].values():
        assert figures["runs"] == 2
        assert figures["commit_wall_ms"] > 0 and figures["commit_cpu_ms"] >= 0
    assert [r["way"] for r in result["runs"]] == ["rename", "swap", "swap", "rename"]  # alternating
    assert all(len(r["wall_s"]) == 2 for r in result["runs"])
    assert result["meta"]["command"].startswith("python bench/offset_write_bench.py")
    assert [n for n in tmp_path.iterdir() if n.name != "offset_writes.json"] == []  # cleaned up
