"""The exactly-once stream sink (``exactlyOnce``) on Apache Kafka, under faults.

Each query runs as its own driver process (tests/spark/eos_query.py, local[2,4]: a failed
task is tried again) reading N distinct rows in 5 micro-batches and writing them through a
mapInArrow that injects the faults once each, after the sink took some of the faulty task's
rows: the mapInArrow's Python worker SIGKILLed (Spark retries the task, and the sink's
writer sees its input end early as if complete: the case a task-side commit gets wrong),
then the driver SIGKILLed mid-micro-batch and restarted from its checkpoint. The output,
read back with read_committed by format("rdkafka"), must hold every input row exactly once,
while the staging topic holds more rows than that (the faults hit mid-write). Copying every
staged attempt instead of the successful ones gives 300 duplicates here (checked by breaking
the filter), and ``eos_query.py --at-least-once`` shows the at-least-once sink duplicating
under the same worker fault.
"""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import wait_until

pytestmark = pytest.mark.spark

QUERY = Path(__file__).with_name("eos_query.py")
ROWS = 4000


@pytest.fixture
def topics(kafka_cluster, new_topic, produce):
    source = new_topic(kafka_cluster, 4, "eos-in")
    for p in range(4):
        produce(kafka_cluster, source, p, [f"r-{i}".encode() for i in range(p, ROWS, 4)])
    return source, new_topic(kafka_cluster, 2, "eos-out")


def run_query(kafka_cluster, source, output, tmp_path, faults, *extra, kill_driver=False):
    """Run eos_query.py once; with ``kill_driver``, SIGKILL its process group as soon as the
    query says it is mid-micro-batch, and return None; else return the printed values."""
    markers = tmp_path / "markers"
    markers.mkdir(exist_ok=True)
    cmd = [sys.executable, str(QUERY), kafka_cluster.bootstrap_servers, source, output,
           str(tmp_path / "checkpoint"), str(markers), "--faults", faults, *extra]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, cwd=Path(__file__).parents[2])
    try:
        if kill_driver:
            kill = markers / "kill-driver"
            wait_until(lambda: kill.exists() or proc.poll() is not None, 240,
                       "the query to reach its driver fault")
            assert kill.exists(), f"the query ended before its fault: {proc.communicate()[1][-3000:]}"
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
            kill.unlink()
            return None
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-4000:]
        return json.loads(out.strip().splitlines()[-1])
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
        _reap_group(proc.pid)


def _reap_group(pgid: int) -> None:
    """No JVM or Python worker of the killed driver may outlive the test."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        return


def log_end(kafka_cluster, topic: str) -> int:
    import rdk

    with rdk.Admin(kafka_cluster.bootstrap_servers, {"isolation.level": "read_uncommitted"}) as a:
        return sum(a.query_watermarks(topic, p)[1] for p in range(a.partition_count(topic)))


@pytest.mark.timeout(1500)  # a Spark driver per driver fault, and one more, one after the other
def test_exactly_once_across_an_upstream_worker_kill_and_a_driver_kill(kafka_cluster, topics,
                                                                       tmp_path):
    source, output = topics
    # RDK_EOS_FAULTS runs a longer campaign, e.g. "worker:0,driver:1,driver:2,driver:3"
    plan = os.environ.get("RDK_EOS_FAULTS", "worker:0,driver:1")
    for _ in range(plan.count("driver:")):
        run_query(kafka_cluster, source, output, tmp_path, plan, kill_driver=True)
    got = run_query(kafka_cluster, source, output, tmp_path, plan, "--read")
    fired = sorted(p.name for p in (tmp_path / "markers").glob("fired-*"))
    assert fired == sorted(f"fired-{kind}-{b}" for kind, b in
                           (f.split(":") for f in plan.split(",")))
    counts = collections.Counter(got)
    assert len(got) == ROWS and set(counts) == {f"r-{i}" for i in range(ROWS)}, (
        f"{len(got)} rows read, {len(counts)} distinct; duplicated: "
        f"{[v for v, c in counts.items() if c > 1][:10]}")
    # the faults hit mid-write: the staging topic holds the failed attempts' rows too
    assert log_end(kafka_cluster, f"{output}.rdk-staging") > ROWS


BOOT = {"kafka.bootstrap.servers": "localhost:9092"}


@pytest.mark.parametrize("options, named", [
    ({"exactlyOnce": "yes"}, "'exactlyOnce' must be 'true' or 'false'"),
    ({"exactlyOnce": "true", "kafka.transactional.id": "t"}, "'kafka.transactional.id' is not allowed"),
    ({"exactlyOnce": "true", "kafka.enable.idempotence": "false"}, "needs an idempotent producer"),
    ({"exactlyOnce": "true", "transactionalIdPrefix": "a b"}, "'transactionalIdPrefix' 'a b'"),
    ({"transactionalIdPrefix": "p"}, "needs option 'exactlyOnce'"),
    ({"stagingTopic": "s"}, "'stagingTopic' needs option 'exactlyOnce'"),
    ({"exactlyOnce": "true", "stagingTopic": "t"}, "'stagingTopic' must name another topic"),
    ({"exactlyOnce": "true", "topic": None}, "needs the 'topic' option"),
], ids=["not-a-bool", "transactional-id", "idempotence-off", "prefix-space", "prefix-alone",
        "staging-alone", "staging-is-topic", "no-topic"])
def test_exactly_once_options_are_checked(options, named):
    from rdk.errors import ConfigError
    from rdk.spark.options import parse_write_options

    given = {k: v for k, v in {**BOOT, "topic": "t", **options}.items() if v is not None}
    with pytest.raises(ConfigError, match=named):
        parse_write_options(given)


def test_exactly_once_options_parse():
    from rdk.spark.options import parse_write_options

    opts = parse_write_options({**BOOT, "topic": "t", "ExactlyOnce": "TRUE",
                                "transactionalIdPrefix": "orders", "stagingTopic": " s "})
    assert opts.exactly_once and opts.transactional_id_prefix == "orders"
    assert opts.staging_topic == "s"
    assert not parse_write_options({**BOOT, "topic": "t"}).exactly_once


def test_a_batch_write_refuses_exactly_once(spark, kafka_cluster, new_topic):
    topic = new_topic(kafka_cluster, 1, "eos-batch")
    df = spark.createDataFrame([("v",)], "value string")
    with pytest.raises(Exception, match="'exactlyOnce' is for streaming writes"):
        (df.write.format("rdkafka").mode("append")
         .option("kafka.bootstrap.servers", kafka_cluster.bootstrap_servers)
         .option("topic", topic).option("exactlyOnce", "true").save())
