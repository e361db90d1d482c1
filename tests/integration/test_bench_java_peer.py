"""bench/java_peer.py in quick mode: on one Apache Kafka node it starts itself, rdk, rdk
Arrow, confluent-kafka, the Java client (Kafka's ProducerPerformance, ConsumerPerformance and
EndToEndLatency) and native C each produce a positive figure on every path at every size
(100 B, 1 KiB, 10 KiB) and every partition count (4, 64, 1 024) of the matrix, in three cells
with tiny counts (the suite's time), and the JSON has the shape the table printer reads (never
how fast)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "java_peer.py"
PEERS = ("rdk", "rdk Arrow", "confluent-kafka", "java", "native C")
PRODUCERS = ("rdk", "confluent-kafka", "java", "native C")  # rdk Arrow only consumes


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    pytest.importorskip("confluent_kafka")
    from rdk.errors import RdkError
    from rdk.testing import kafka_libs

    if shutil.which("java") is None:
        pytest.skip("no java on PATH (scripts/setup.sh)")
    try:
        kafka_libs()
    except RdkError as e:
        pytest.skip(str(e))
    out = tmp_path_factory.mktemp("java_peer") / "java_peer.json"
    # --duration as docs/performance.md shows it (that block is exempt: this test runs it)
    done = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--duration", "2", "--out", str(out)],
                          capture_output=True, text=True, timeout=600, cwd=ROOT, check=False)
    assert out.exists(), f"no JSON written; stderr:\n{done.stderr[-3000:]}"
    return done, out, json.loads(out.read_text())


def test_quick_run_succeeds_and_prints_the_tables(quick):
    done, _, _ = quick
    assert done.returncode == 0, done.stderr[-3000:]
    assert ("| path | size | partitions | rdk | rdk Arrow | confluent-kafka | Java client | "
            "native C |") in done.stdout
    assert "| rate | linger | peer | p50 | p99 | p99.9 |" in done.stdout
    assert "| goal | ratio | holds |" in done.stdout


CELLS = [(100, 4), (1024, 64), (10240, 1024)]


def test_every_peer_has_positive_throughput_on_both_paths_at_every_size_and_count(quick):
    _, _, data = quick
    assert data["meta"]["quick"] is True
    runs = data["runs"]
    for kind in ("produce", "consume"):
        for peer in PRODUCERS if kind == "produce" else PEERS:
            mine = [r for r in runs if r["kind"] == kind and r["peer"] == peer]
            assert sorted((r["size"], r["partitions"]) for r in mine) == \
                CELLS, (kind, peer)
            for r in mine:
                assert r["problem"] == "", r
                assert r["msgs_per_s"] > 0 and r["mb_per_s"] > 0, r
                assert r["cpu_us_per_msg"] > 0, r  # every peer's own CPU per message (issue 35)
                assert r["peak_rss_mib"] > 0, r  # its own process's VmHWM, even a short one
    assert not [r for r in runs if r["kind"] == "produce" and r["peer"] == "rdk Arrow"]
    cells = data["summary"]["throughput"]
    assert set(cells) == {f"{k} {s}B {p}p" for k in ("produce", "consume") for s, p in CELLS}
    for cell in cells.values():
        assert set(cell["peers"]) == set(PRODUCERS if cell["kind"] == "produce" else PEERS)
        for stats in cell["peers"].values():
            assert stats["msgs_per_s"]["median"] > 0 and stats["msgs_per_s"]["min"] > 0
            assert stats["mb_per_s"]["median"] > 0
            assert stats["peak_rss_mib"]["median"] > 0
    goals = {g["goal"] for g in data["summary"]["goals"]}
    assert "produce 1024B 64p: rdk >= 1 x confluent-kafka" in goals
    assert "consume 10240B 1024p: rdk peak RSS <= 1.2 x confluent-kafka's" in goals


def test_latency_has_every_percentile_for_each_peer_and_the_java_reference(quick):
    _, _, data = quick
    lat = [r for r in data["runs"] if r["kind"] == "latency"]
    assert sorted(r["peer"] for r in lat) == ["confluent-kafka", "rdk"]
    e2e = [r for r in data["runs"] if r["kind"] == "java_e2e"]
    assert len(e2e) == 1
    for r in lat + e2e:
        assert r["problem"] == "", r
        assert 0 <= r["p50_ms"] <= r["p99_ms"] <= r["p999_ms"], r
    for r in lat:
        assert r["p50_ms"] > 0, r
    # EndToEndLatency prints whole milliseconds (a fast p50 is 0); its average is exact
    assert e2e[0]["raw"]["avg_ms"] > 0 and e2e[0]["rate"] > 0
    for r in lat:
        assert r["raw"]["count"] == r["raw"]["produced"] > 0
    assert set(data["summary"]["latency"]) == {"1000/s linger 5", "java_e2e"}
    assert data["summary"]["goals"], "no goal was checked"


def test_table_printer_reads_the_json_alone(quick):
    _, out, _ = quick
    done = subprocess.run([sys.executable, str(SCRIPT), "--table", "--out", str(out)],
                          capture_output=True, text=True, timeout=60, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr
    assert "| produce | 100 B | 4 |" in done.stdout
    assert "| consume | 10240 B | 1024 |" in done.stdout
    assert "**Peak RSS**" in done.stdout
    assert "Java EndToEndLatency" in done.stdout
