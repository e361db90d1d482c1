"""The focused benchmark scripts still run end to end (tiny sizes; smoke, never speed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"


def run(script: str, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "RDK_BROKERS"}
    done = subprocess.run([sys.executable, str(BENCH / script), *args], capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT, env=env, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def test_consumer_bench_reports_every_client_on_the_mock_cluster():
    done = run("consumer_bench.py", "--broker", "mock", "--messages", "80000", "--passes", "1",
               "--clients", "rdk", "confluent", "rdk-fetch")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["broker"] == "mock" and result["messages_per_pass"] == 80000
    for name in ("rdk", "confluent", "rdk-fetch"):
        assert result[name]["median"] > 0, (name, result[name], done.stderr[-2000:])
    assert result["rdk_vs_confluent"] > 0


def test_aio_bench_reports_every_peer_on_the_mock_cluster(tmp_path):
    out = tmp_path / "aio.json"
    run("aio_bench.py", "--broker", "mock", "--messages", "20000", "--latency-messages", "50",
        "--sizes", "100", "--passes", "1", "--out", str(out))
    report = json.loads(out.read_text())
    assert report["command"] and report["date"] and len(report["load_before"]) == 3
    results = report["results"]
    for scenario in ("consume 100 B", "produce 100 B"):
        for name, row in results[scenario].items():
            assert not row["errors"] and row["median"] > 0, (scenario, name, row)
    assert "rdk.aio" in results["consume 100 B"] and "rdk sync" in results["consume 100 B"]
    for name in ("rdk.aio", "rdk sync"):
        assert 0 < results["latency"][name]["p50_ms"] <= results["latency"][name]["p99_ms"]
    assert results["latency"]["errors"] == []


def test_latency_mix_times_every_pairing():
    done = run("latency_mix.py", "--rounds", "1", "--rate", "2000", "--seconds", "2")
    rows = [r for r in map(str.split, done.stdout.splitlines())
            if len(r) > 7 and r[0] == "producer" and r[2] == "consumer"]
    assert sorted((r[1], r[3]) for r in rows) == sorted(
        (p, c) for p in ("rdk", "confluent") for c in ("rdk", "confluent"))
    for r in rows:
        p50, p99 = float(r[5]), float(r[7])
        assert 0 < p50 <= p99, r


@pytest.mark.spark
def test_spark_bench_compares_rdk_with_the_ceiling_and_the_naive_way(tmp_path):
    out = tmp_path / "spark.json"
    run("spark_bench.py", "--messages", "20000", "--repeat", "1", "--warmup", "0",
        "--json", str(out), timeout=600)
    results = json.loads(out.read_text())["results"]
    assert set(results) == {"ceiling", "rdk", "naive"}
    assert all(r["both_s"] > 0 for r in results.values())


def spark_bench_on_kafka(kafka_cluster, out, *extra: str) -> dict:
    """bench/spark_bench.py on the session's Apache Kafka, 20 000 messages, one timed run:
    its JSON (``--broker kafka``, which starts a node of its own, differs only in the start)."""
    run("spark_bench.py", "--broker", kafka_cluster.bootstrap_servers, "--skip-naive",
        "--messages", "20000", "--repeat", "1", "--warmup", "0", *extra, "--json", str(out),
        timeout=600)
    return json.loads(out.read_text())


@pytest.mark.spark
@pytest.mark.kafka
def test_spark_bench_runs_every_scenario_against_the_jvm_connector(kafka_cluster, tmp_path):
    """Issue 29: groupBy, parquet, stream and sink besides count, 1 KiB values, rows/s and
    MB/s, against Spark's JVM connector on the session's Kafka (one run: the suite's time)."""
    data = spark_bench_on_kafka(kafka_cluster, tmp_path / "spark-scenarios.json", "--scenarios",
                                "count,groupby,parquet,stream,sink", "--value-size", "1024",
                                "--max-offsets-per-trigger", "10000")
    assert data["broker"] == kafka_cluster.bootstrap_servers
    assert set(data["results"]) == {"ceiling", "rdk", "jvm"}  # every count checked by the bench
    assert all(r["both_s"] > 0 for r in data["results"].values())
    assert data["value_size"] == 1024 and data["messages"] == 20000
    assert data["machine"]["cpus"] > 0 and data["versions"]["spark"]
    assert len(data["loadavg_start"]) == 3 and len(data["loadavg_end"]) == 3
    scenarios = data["scenarios"]
    assert set(scenarios) == {"count", "groupby", "parquet", "stream", "sink"}
    for name, figures in scenarios.items():
        for contender in ("ceiling", "rdk", "jvm"):
            f = figures[contender]
            assert f["rows"] == 20000 and f["rows_per_s"] > 0, (name, contender, f)
            assert f["mb_per_s"] == pytest.approx(f["rows_per_s"] * 1024 / 1e6), (name, contender)
        assert set(figures["ratios"]) == {"rdk/jvm", "rdk/ceiling"}, name
    for contender in ("rdk", "jvm"):  # the bench fails loudly otherwise; the JSON says so too
        assert scenarios["sink"][contender]["verified"], scenarios["sink"][contender]
        assert scenarios["sink"][contender]["topic_messages"] == [20000]


@pytest.mark.spark
@pytest.mark.kafka
def test_spark_latency_times_rows_from_produce_to_foreach_batch(kafka_cluster, tmp_path):
    """Issue 37: produce -> foreachBatch latency on the session's Apache Kafka, rdkafka only
    (each connector is a driver process of its own, ~30 s: the JVM connector's run differs
    only in the format's name, and the differential tests cover that connector)."""
    out = tmp_path / "latency.json"
    run("spark_latency.py", "--broker", kafka_cluster.bootstrap_servers, "--rate", "200",
        "--seconds", "1", "--warmup", "0.5", "--passes", "1", "--connectors", "rdkafka",
        "--json", str(out), timeout=600)
    report = json.loads(out.read_text())
    assert [r["connector"] for r in report["runs"]] == ["rdkafka"]
    for r in report["runs"]:  # every measured row came (the bench fails otherwise)
        assert r["rows"] == 200 and r["warmup_rows"] > 0, r
        assert 0 < r["p50_ms"] <= r["p99_ms"] <= r["max_ms"], r
        assert r["micro_batch_ms"]["addBatch"] >= 0 and r["micro_batches"] >= 1, r
    assert set(report["median"]) == {"rdkafka"} and report["command"].startswith("python")
