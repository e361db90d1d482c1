"""rdkafka on a Spark standalone cluster (scripts/spark-cluster.sh: a master, two workers).

Every job goes through the shipping recipe of docs/guide/spark.md: the wheel, a venv packed with venv-pack,
shipped with ``--archives``, submitted in client mode (the only deploy mode standalone
Spark allows for Python applications). The jobs are in cluster_helpers.py; the broker is
the session's Tansu, on 127.0.0.1 like the cluster (its Apache Kafka for the exactly-once
sink's transactions).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import pytest
from cluster_helpers import ROOT, Cluster, commits, executors_of
from helpers import read_log, wait_until

pytestmark = pytest.mark.spark

if shutil.which("java") is None:
    pytest.skip("a Spark cluster needs Java", allow_module_level=True)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A standalone master and two workers, started by the script and always stopped."""
    c = Cluster(tmp_path_factory.mktemp("spark-cluster"))
    try:
        c.start()
        yield c
    finally:
        c.stop()


def produce(tansu, topic: str, partitions: int, count: int, start: int = 0) -> None:
    """``count`` messages ``m<i>`` keyed ``k<i % 7>``, spread round-robin over the partitions."""
    from rdk.producer import Producer

    results: list = []
    with Producer(tansu.bootstrap_servers, on_queue_full="block") as producer:
        for p in range(partitions):
            payloads = [(b"k%d" % (i % 7), b"m%d" % i) for i in range(start + p, start + count,
                                                                        partitions)]
            producer.send(topic, p, payloads, on_delivery=lambda d, f: results.append((d, f)))
        assert producer.flush(60) == 0
    assert sum(d for d, _ in results) == count and not any(f for _, f in results), results


TASK = r"task (\d+)\.(\d+) in stage (\d+)\.\d+"


def tasks_in_flight(executor_log: Path) -> set[tuple[str, str, str]]:
    """(index, attempt, stage) of the tasks an executor's log shows started, not finished."""
    text = executor_log.read_text(errors="replace") if executor_log.exists() else ""
    return set(re.findall("Running " + TASK, text)) - set(re.findall("Finished " + TASK, text))


def run_again(task: tuple[str, str, str], app_dir_name: str, state: Path) -> bool:
    """Whether any executor of the application ran a later attempt of ``task``."""
    index, attempt, stage = task
    for log in state.glob(f"work-*/{app_dir_name}/*/stderr"):
        for i, a, s in re.findall("Running " + TASK, log.read_text(errors="replace")):
            if (i, s) == (index, stage) and int(a) > int(attempt):
                return True
    return False


def test_batch_read_and_write_on_the_cluster_with_rdk_from_the_wheel(cluster, tansu, new_topic):
    source, sink = new_topic(tansu, 4, "cl-in"), new_topic(tansu, 2, "cl-out")
    produce(tansu, source, 4, 2_000)

    result = cluster.submit("batch", bootstrap=tansu.bootstrap_servers, source=source, sink=sink)

    assert result["master"] == cluster.url
    assert result["read"] == 2_000 and result["partitions"] == 4
    # two executors, each importing rdk from the shipped archive, not from the source tree
    assert len({cwd for _, _, cwd in result["executors"]}) == 2, result["executors"]
    for rdk_file, python, cwd in result["executors"]:
        assert rdk_file.startswith(os.path.join(cwd, "env", "lib")), rdk_file
        assert python == os.path.join(cwd, "env", "bin", "python")
        assert cwd.startswith(str(cluster.state)), cwd
    assert not result["driver_rdk"].startswith(str(ROOT / "src")), result["driver_rdk"]
    written = {key: int(value) for rows in read_log(tansu.bootstrap_servers, sink, [0, 1]).values()
               for _, key, value in rows}
    assert written == {b"k%d" % k: n for k, n in Counter(i % 7 for i in range(2_000)).items()}


def test_available_now_stream_twice_with_a_checkpoint_counts_each_message_once(
        cluster, tansu, new_topic, tmp_path):
    topic = new_topic(tansu, 4, "cl-stream")
    produce(tansu, topic, 4, 3_000)
    args = {"bootstrap": tansu.bootstrap_servers, "topic": topic,
            "checkpoint": str(tmp_path / "checkpoint"), "output": str(tmp_path / "out"),
            "max_per_trigger": 1_500}

    first = cluster.submit("stream", **args)
    produce(tansu, topic, 4, 1_000, start=3_000)
    second = cluster.submit("stream", **args)  # a new application, the same checkpoint

    assert (first["processed"], second["processed"]) == (3_000, 1_000), (first, second)
    assert first["restarts"] == second["restarts"] == 0, (first, second)
    assert first["completed"] and second["completed"], (first, second)
    assert second["rows"] == 4_000
    for p, (rows, offsets, low, high) in second["per_partition"].items():
        assert (rows, offsets, low, high) == (1_000, 1_000, 0, 999), (p, second["per_partition"])
    assert sorted(second["per_partition"]) == ["0", "1", "2", "3"]


def test_executor_killed_mid_stream_every_message_still_counted_exactly_once(
        cluster, tansu, new_topic, tmp_path):
    topic = new_topic(tansu, 4, "cl-fault")
    total, per_trigger = 16_000, 1_600  # 10 micro-batches
    produce(tansu, topic, 4, total)
    checkpoint = tmp_path / "checkpoint"
    args = {"bootstrap": tansu.bootstrap_servers, "topic": topic, "checkpoint": str(checkpoint),
            "output": str(tmp_path / "out"), "max_per_trigger": per_trigger}
    worker = cluster.worker_pid(1)
    outcome: dict = {}

    def run() -> None:
        try:
            outcome["result"] = cluster.submit("stream", **args)
        except BaseException as e:
            outcome["error"] = e

    job = threading.Thread(target=run)
    job.start()
    try:
        # once two micro-batches are committed, kill worker 1's executor mid-task
        wait_until(lambda: commits(checkpoint) >= 2 or not job.is_alive(), timeout=240,
                   what="two committed micro-batches")
        assert job.is_alive(), outcome
        running = executors_of(worker)
        assert running, "worker 1 runs no executor"
        victim = max(running, key=lambda p: p.create_time())  # this application's
        executor_log = Path(victim.cwd()) / "stderr"
        wait_until(lambda: tasks_in_flight(executor_log) or not job.is_alive(), timeout=120,
                   what="a task running on worker 1's executor", interval=0.01)
        committed_at_kill = commits(checkpoint)
        victim.send_signal(signal.SIGKILL)
        assert job.is_alive(), outcome
        # the worker reports the loss and the master starts a replacement executor there
        wait_until(lambda: any(p.create_time() > victim.create_time() for p in executors_of(worker)),
                   timeout=120, what="a replacement executor on worker 1")
    finally:
        job.join(360)
    assert not job.is_alive(), "the streaming job did not end"
    assert "error" not in outcome, outcome.get("error")
    result = outcome["result"]

    # Spark re-ran the lost tasks inside the same query: it never stopped, so job_stream
    # did not restart it from the checkpoint (a restart would hide a failed query)
    assert (result["restarts"], result["failures"], result["completed"]) == (0, [], True), result
    assert result["processed"] == total, result
    assert committed_at_kill < total // per_trigger <= commits(checkpoint)
    assert "Lost executor" in Path(result["log"]).read_text(errors="replace")
    # the tasks the killed executor never finished ran again elsewhere
    lost = tasks_in_flight(executor_log)
    assert lost, "the executor's log shows no task in flight at the kill"
    app = executor_log.parent.parent.name
    assert all(run_again(task, app, cluster.state) for task in lost), lost
    assert result["rows"] == total, result
    for p, (rows, offsets, low, high) in result["per_partition"].items():
        assert (rows, offsets, low, high) == (4_000, 4_000, 0, 3_999), (p, result)


def test_standalone_cluster_deploy_mode_refuses_python_applications(cluster):
    done = subprocess.run(
        [cluster.spark_submit, "--master", cluster.url,
         "--deploy-mode", "cluster", "--archives", f"{cluster.archive}#env",
         "--conf", "spark.pyspark.python=./env/bin/python", str(ROOT / "tests/spark/cluster_helpers.py")],
        cwd=cluster.submit_dir, env=cluster.env, capture_output=True, text=True, timeout=120,
        check=False)
    assert done.returncode != 0
    assert ("Cluster deploy mode is currently not supported for python applications on "
            "standalone clusters") in done.stderr + done.stdout


def test_spark_bench_runs_on_the_cluster_with_the_packed_environment(cluster, tansu, tmp_path):
    """docs/performance.md's cluster run of bench/spark_bench.py (``--master``, ``--archive``
    as that page shows them; its block is exempt because this test runs it), small: 2 000
    messages, the count scenario, rdk against the ceiling, on the cluster only (the local run
    is tests/integration/test_bench_scripts.py's)."""
    out = tmp_path / "bench.json"
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "spark_bench.py"), "--broker", tansu.bootstrap_servers,
         "--messages", "2000", "--scenarios", "count", "--repeat", "1", "--warmup", "0",
         "--skip-naive", "--skip-jvm", "--cluster-only", "--master", cluster.url,
         "--archive", cluster.archive, "--json", str(out)],
        env=cluster.env, cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    data = json.loads(out.read_text())
    assert data["masters_run"] == [cluster.url]
    for master in data["masters_run"]:
        figures = data["scenarios_by_master"][master]["count"]
        assert figures["rdk"]["rows"] == 2000 and figures["ceiling"]["rows"] == 2000, (master, figures)


# Speculation that starts within a second of a task lagging: a copy once half of a stage's
# tasks are done and one runs 1.5x their median (the efficiency check would wait longer).
SPECULATION = {"spark.speculation": "true", "spark.speculation.interval": "100ms",
               "spark.speculation.quantile": "0.5", "spark.speculation.multiplier": "1.5",
               "spark.speculation.minTaskRuntime": "200ms",
               "spark.speculation.efficiency.enabled": "false",
               "spark.sql.execution.pythonUDF.arrow.enabled": "false",
               # the sink's writer gets rows in Arrow batches of 50, so mid-task
               "spark.sql.execution.arrow.maxRecordsPerBatch": "50"}


@pytest.mark.timeout(900)
def test_exactly_once_sink_keeps_one_attempt_of_a_speculated_task(cluster, kafka_cluster,
                                                                  new_topic, produce, tmp_path):
    """Issue 38's speculative execution: task 0 of micro-batch 1 stalls after the sink took
    some of its rows, until a speculative copy (on the other worker: the two have different
    host names) has got further. The exactly-once sink's output, read with
    read_committed, holds every row once; the at-least-once sink's, under the same fault,
    holds the stalled attempt's rows twice, so the check detects duplicates."""
    rows = 3_200  # 2 micro-batches of 1,600: 400 rows a task
    source = new_topic(kafka_cluster, 4, "cl-eos-in")
    for p in range(4):
        produce(kafka_cluster, source, p, [f"r-{i}".encode() for i in range(p, rows, 4)])
    modes = ("exactly-once", "at-least-once")
    runs = []
    for mode in modes:
        (tmp_path / mode / "markers").mkdir(parents=True)
        runs.append({"output": new_topic(kafka_cluster, 4, "cl-eos-out"),
                     "checkpoint": str(tmp_path / mode / "checkpoint"),
                     "markers": str(tmp_path / mode / "markers"),
                     "at_least_once": mode == "at-least-once"})
    done = cluster.submit("eos_speculation", spark_conf=SPECULATION,
                          bootstrap=kafka_cluster.bootstrap_servers, source=source, slow_batch=1,
                          runs=runs)
    results = dict(zip(modes, done["runs"], strict=True))
    for mode, result in results.items():
        # a second attempt ran while the first was alive and waiting: a speculative copy
        assert {"original-stalled", "attempt-0-started", "copy-1-passed-original"} <= set(
            result["markers"]) and not {"no-speculative-copy", "copy-started-before-a-stall"} & set(
            result["markers"]), (mode, result["markers"])
    expected = {f"r-{i}" for i in range(rows)}
    once = Counter(results["exactly-once"]["values"])
    assert set(once) == expected and sum(once.values()) == rows, (
        f"{sum(once.values())} rows, {len(once)} distinct; duplicated: "
        f"{[v for v, c in once.items() if c > 1][:10]}")
    # both attempts staged rows: the staging topic holds more than the output
    assert results["exactly-once"]["log_end"] > rows, results["exactly-once"]["log_end"]
    loose = Counter(results["at-least-once"]["values"])
    assert set(loose) == expected and sum(loose.values()) > rows, (
        sum(loose.values()), results["at-least-once"]["markers"])
