"""The benchmark harness in quick mode, as CI runs it: every contender, every scenario, on
the mock cluster and Tansu the harness starts itself. It asserts that every contender
produced and consumed every message (the harness's own checks and, again here, the counts
in bench/results.json), never how fast."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "bench" / "run.py"


def load_harness():
    spec = importlib.util.spec_from_file_location("rdk_bench_run_under_test", RUN)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def quick_results(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench") / "results.json"
    done = subprocess.run([sys.executable, str(RUN), "--quick", "--out", str(out)],
                          capture_output=True, text=True, timeout=400, cwd=ROOT, check=False)
    assert out.exists(), f"no results written; stderr:\n{done.stderr[-3000:]}"
    return done, json.loads(out.read_text())


def expected_count(scenario: dict) -> int:
    if scenario["kind"] == "latency":
        return int(scenario["rate"] * scenario["quick_duration"])
    return scenario["quick_count"]


def test_quick_bench_runs_every_contender_on_both_brokers_and_every_run_verifies(quick_results):
    done, results = quick_results
    failed = [(r["broker"], r["scenario"], r["contender"], r["status"], r["problem"])
              for r in results["runs"] if r["status"] != "ok"]
    assert failed == [], f"runs that did not verify: {failed}\nstderr:\n{done.stderr[-3000:]}"
    assert done.returncode == 0, done.stderr[-3000:]
    seen = {(r["broker"], r["scenario"], r["contender"]) for r in results["runs"]}
    wanted = {(b, s["name"], c) for b in ("mock", "tansu") for s in results["scenarios"]
              for c in s["contenders"]}
    assert seen == wanted
    assert {"rdk", "confluent-kafka", "kafka-python", "native C"} <= {c for _, _, c in seen}


def test_quick_bench_every_contender_produced_and_consumed_every_message(quick_results):
    _, results = quick_results
    scenarios = {s["name"]: s for s in results["scenarios"]}
    for run in results["runs"]:
        scenario = scenarios[run["scenario"]]
        result = run["result"]
        where = f"{run['broker']} {run['scenario']} {run['contender']}"
        if scenario["kind"] == "paused_rss":
            assert result["count"] > 0, where  # received its first batch, then paused
            assert result["peak_rss"] >= result["baseline_rss"] > 0, where
            continue
        assert result["count"] == expected_count(scenario), where
        assert result.get("errors", 0) == 0, where
        if scenario["kind"] == "latency":
            assert result["produced"] == expected_count(scenario), where
            assert result["duplicates"] == 0 and 0 <= result["p50_ms"] <= result["p99_ms"], where


def test_quick_bench_reports_table_settings_and_targets(quick_results):
    done, results = quick_results
    assert "broker: mock" in done.stdout and "broker: tansu" in done.stdout
    assert "linger.ms=5" in done.stdout and "acks=all" in done.stdout
    assert results["quick"] is True and results["settings"]["producer"]["compression.type"] == "none"
    states = {(t["broker"], t["scenario"]): t["state"] for t in results["targets"]}
    assert len(states) == 12 and set(states.values()) <= {"holds", "MISSED"}


def test_mock_topics_get_enough_partitions_that_retention_keeps_every_message():
    bench = load_harness()
    by_name = {s.name: s for s in bench.SCENARIOS}
    consume, paused = by_name["consume_objects"], by_name["paused_rss"]
    limit = 5 * 1024 * 1024  # the mock cluster's per-partition retention
    for scenario, messages in ((consume, consume.count), (paused, paused.count // paused.size)):
        parts = bench.partitions_for(scenario, "mock", scenario.count)
        per_partition = messages / parts * (scenario.size + bench.RECORD_OVERHEAD)
        assert per_partition < limit, (scenario.name, parts)
    assert bench.partitions_for(by_name["produce_100b"], "mock", 1_000_000) == 4
    assert bench.partitions_for(consume, "tansu", consume.count) == 4


def test_bad_command_line_names_the_bad_value(capsys):
    bench = load_harness()
    with pytest.raises(SystemExit):
        bench.main(["--contenders", "rdk,nonesuch"])
    assert "nonesuch" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        bench.main(["--repeat", "0"])
    assert "--repeat must be >= 1" in capsys.readouterr().err


# ---- the scale family (issue 15) ---------------------------------------------------------

SCALE_QUICK = ["part2048_consume", "size1048576_produce", "workers_64"]


@pytest.fixture(scope="module")
def scale_quick_results(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench-scale") / "scale.json"
    done = subprocess.run([sys.executable, str(RUN), "--family", "scale", "--quick",
                           "--scenarios", ",".join(SCALE_QUICK), "--out", str(out)],
                          capture_output=True, text=True, timeout=400, cwd=ROOT, check=False)
    assert out.exists(), f"no results written; stderr:\n{done.stderr[-3000:]}"
    return done, json.loads(out.read_text())


def test_quick_scale_family_verifies_every_run_on_both_brokers(scale_quick_results):
    done, results = scale_quick_results
    assert results["family"] == "scale"
    bad = [(r["broker"], r["scenario"], r["contender"], r["status"], r["problem"])
           for r in results["runs"] if r["status"] not in ("ok", "unsupported")]
    assert bad == [], f"runs that did not verify: {bad}\nstderr:\n{done.stderr[-3000:]}"
    assert done.returncode == 0, done.stderr[-3000:]
    seen = {(r["broker"], r["scenario"], r["contender"]) for r in results["runs"]}
    wanted = {(b, s["name"], c) for b in ("mock", "tansu") for s in results["scenarios"]
              for c in s["contenders"]}
    assert seen == wanted and {s["name"] for s in results["scenarios"]} == set(SCALE_QUICK)
    for run in results["runs"]:
        if run["status"] == "unsupported":  # a broker refusing 1 MiB says why
            assert run["scenario"] == "size1048576_produce" and run["problem"], run
            continue
        where = f"{run['broker']} {run['scenario']} {run['contender']}"
        assert run["result"]["count"] > 0 and run["result"].get("errors", 0) == 0, where


def test_quick_scale_family_reports_offset_files_pool_cpu_and_sweep_tables(scale_quick_results):
    done, results = scale_quick_results
    for broker in ("mock", "tansu"):
        cells = results["summary"][broker]["part2048_consume"]
        assert cells["rdk"]["offset_files_per_s"] > 0 and cells["rdk"]["start_seconds"] > 0
        assert "offset_files_per_s" not in cells["rdk no-op store"]  # nothing written
        pool = results["summary"][broker]["workers_64"]
        assert pool["rdk pool 2"]["workers"] == 2
        assert pool["rdk pool 2"]["cpu_us_per_msg_per_process"] > 0
    assert "partition sweep (100 B), consume into objects" in done.stdout
    assert "x no-op store" in done.stdout
    targets = {(t["broker"], t["scenario"], t["figure"]) for t in results["targets"]}
    assert ("mock", "part2048_consume", "vs_noop") in targets


def test_scale_family_counts_fit_the_mock_cluster_and_the_default_family_is_core():
    bench = load_harness()
    assert [s.name for s in bench.family_scenarios("core")] == [s.name for s in bench.SCENARIOS]
    assert all(s.family == "scale" for s in bench.SCALE_SCENARIOS)
    assert bench.build_parser().parse_args([]).family == "core"
    names = {s.name: s for s in bench.SCALE_SCENARIOS}
    limit = 5 * 1024 * 1024  # the mock cluster's per-partition retention
    for s in bench.SCALE_SCENARIOS:
        if s.kind not in ("consume", "arrow", "paused_rss"):
            continue
        job = bench.make_job(s, "mock", "", "t", False, 60)
        per_partition = job["count"] / job["partitions"] * (s.size + bench.RECORD_OVERHEAD)
        assert per_partition < limit, s.name
        assert job["chunk"] * s.size <= 64 * 1024 * 1024, s.name  # the send pool stays small
    # 4 partitions on the mock: as many 100 B messages as it keeps; Tansu: the full million
    assert 100_000 < bench.make_job(names["part4_consume"], "mock", "", "t", False, 60)["count"] \
        < 200_000
    assert bench.make_job(names["part4_consume"], "tansu", "", "t", False, 60)["count"] == 1_000_000
    big = bench.make_job(names["size1048576_produce"], "mock", "", "t", False, 60)
    assert big["producer"]["message.max.bytes"] > 1024 * 1024 + 1024
    # every partition gets sends in the partition sweep
    produce = bench.make_job(names["part2048_produce"], "tansu", "", "t", False, 60)
    assert -(-produce["count"] // produce["chunk"]) >= 2048
