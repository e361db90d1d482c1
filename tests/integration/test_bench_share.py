"""bench/share_bench.py in quick mode: on one Apache Kafka node it starts itself, rdk's
ShareConsumer, the Java client's KafkaShareConsumer, Kafka's ShareConsumerPerformance and
(when installed with one) confluent-kafka's ShareConsumer each receive every record of the
topic with a positive figure, and the JSON has the shape the table printer reads (never how
fast)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "share_bench.py"


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    from rdk.errors import RdkError
    from rdk.testing import kafka_libs

    if shutil.which("java") is None or shutil.which("javac") is None:
        pytest.skip("no java/javac on PATH (scripts/setup.sh)")
    try:
        kafka_libs()
    except RdkError as e:
        pytest.skip(str(e))
    out = tmp_path_factory.mktemp("share_bench") / "share_bench.json"
    # --repeat as docs/performance.md shows it (that block is exempt: this test runs it)
    done = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--repeat", "1", "--out", str(out)],
                          capture_output=True, text=True, timeout=240, cwd=ROOT, check=False)
    assert out.exists(), f"no JSON written; stderr:\n{done.stderr[-3000:]}"
    return done, out, json.loads(out.read_text())


def _peers(data):
    return {"rdk", "java", "java-tool"} | (
        {"confluent-kafka"} if data["meta"]["confluent_share_consumer"] else set())


def test_quick_run_succeeds_and_prints_the_table(quick):
    done, _, _ = quick
    assert done.returncode == 0, done.stderr[-3000:]
    assert "| partitions | members | rdk.ShareConsumer | Java KafkaShareConsumer |" in done.stdout


def test_every_peer_received_everything_with_a_positive_figure(quick):
    _, _, data = quick
    meta = data["meta"]
    assert meta["quick"] is True and meta["size"] == 100
    plan = meta["plan"]
    runs = data["runs"]
    assert {r["peer"] for r in runs} == _peers(data)
    assert len(runs) == len(_peers(data)) * len(plan["members"]) * len(plan["partitions"])
    for r in runs:
        assert r["problem"] == "", r
        assert r["expected"] == plan["count"], r
        assert r["count"] == r["expected"], r
        assert r["msgs_per_s"] > 0, r
        if "per_member" in r:
            assert len(r["per_member"]) == r["members"] and sum(r["per_member"]) == r["count"]
    for cell in data["summary"].values():
        assert set(cell["peers"]) == _peers(data)
        for stats in cell["peers"].values():
            assert stats["median"] > 0 and stats["min"] > 0
        assert cell["rdk_over_java"] > 0


def test_table_printer_reads_the_json_alone(quick):
    _, out, data = quick
    done = subprocess.run([sys.executable, str(SCRIPT), "--table", "--out", str(out)],
                          capture_output=True, text=True, timeout=60, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr
    members = data["meta"]["plan"]["members"][0]
    assert f"| 4 | {members} |" in done.stdout
