"""The exactly-once stream sink (``exactlyOnce``) on Apache Kafka, under faults.

Each query runs as its own driver process (tests/spark/eos_query.py, local[2,4]: a failed
task is tried again) reading N distinct rows in 5 micro-batches from a 3-node Kafka and
writing them through a mapInArrow that injects the faults once each, at points the query
waits for: the mapInArrow's Python worker SIGKILLed after the sink staged some of the task's
rows (Spark retries the task, and the sink's writer sees its input end early as if complete:
the case a task-side commit gets wrong), the driver SIGKILLed mid-micro-batch and restarted
from its checkpoint, a staging partition's leader SIGKILLed mid-write, the copy's
transaction coordinator SIGKILLed mid-transaction. The output, read back with read_committed
by format("rdkafka"), must hold every input row exactly once, while the staging topic holds
more rows than that (the faults hit mid-write). Copying every staged attempt instead of the
successful ones gives 550 duplicates here (checked by breaking the filter); Spark's JVM
sink, run in the same driver (one micro-batch) under one worker kill, duplicates the killed
attempt's rows (asserted), and ``eos_query.py --at-least-once`` shows rdk's at-least-once
sink doing the same.
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
from conftest import send_all, spark_kafka_jars
from eos_query import fired_names
from helpers import kafka_unavailable, txn_coordinator, wait_until

pytestmark = pytest.mark.spark

QUERY = Path(__file__).with_name("eos_query.py")
ROWS = 4000


def run_query(kafka_cluster, source, output, tmp_path, faults, *extra, kill_driver=False,
              kill_broker=None):
    """Run eos_query.py once; with ``kill_driver``, SIGKILL its process group as soon as the
    query says it is mid-micro-batch, and return None; else return the printed values, and
    call ``kill_broker(info)`` each time the query asks for a broker kill, then let the query
    go on and call what ``kill_broker`` returned (if not None)."""
    markers = tmp_path / "markers"
    markers.mkdir(exist_ok=True)
    cmd = [sys.executable, str(QUERY), kafka_cluster.bootstrap_servers, source, output,
           str(tmp_path / "checkpoint"), str(markers), "--faults", faults, *extra]
    out, err = (tmp_path / "query.out").open("w+"), (tmp_path / "query.err").open("w+")
    proc = subprocess.Popen(cmd, stdout=out, stderr=err, text=True, start_new_session=True,
                            cwd=Path(__file__).parents[2])
    try:
        if kill_driver:
            kill = markers / "kill-driver"
            wait_until(lambda: kill.exists() or proc.poll() is not None, 240,
                       "the query to reach its driver fault")
            assert kill.exists(), f"the query ended before its fault: {_tail(err)}"
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
            kill.unlink()
            return None
        ask = markers / "kill-broker"
        while True:
            wait_until(lambda: ask.exists() or proc.poll() is not None, 300,
                       "the query to end or ask for a broker kill")
            if not ask.exists():
                break
            assert kill_broker is not None, "the plan has a broker fault: pass kill_broker"
            then = kill_broker(json.loads(ask.read_text()))
            ask.unlink()  # the query goes on
            if then is not None:
                then()
        assert proc.wait(30) == 0, _tail(err)
        out.seek(0)
        return json.loads(out.read().strip().splitlines()[-1])
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
        _reap_group(proc.pid)
        out.close()
        err.close()


def _tail(stream) -> str:
    stream.seek(0)
    return stream.read()[-4000:]


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


def assert_each_row_once(got: list[str], tmp_path: Path, plan: str) -> None:
    """Every fault of ``plan`` fired, and ``got`` holds each input row once."""
    fired = sorted(p.name for p in (tmp_path / "markers").glob("fired-*"))
    assert fired == fired_names(plan)
    counts = collections.Counter(got)
    assert len(got) == ROWS and set(counts) == {f"r-{i}" for i in range(ROWS)}, (
        f"{len(got)} rows read, {len(counts)} distinct; duplicated: "
        f"{[v for v, c in counts.items() if c > 1][:10]}")


@pytest.fixture
def three_brokers():
    """A 3-node Apache Kafka of this test's own (it kills nodes) with min.insync.replicas 2:
    an input of ROWS rows over 4 partitions and the output (2 partitions), both with 3
    replicas; the sink creates the staging topic like the output."""
    if reason := kafka_unavailable():
        pytest.skip(f"Apache Kafka: {reason}")
    from rdk.testing import KafkaCluster

    with KafkaCluster(3, config={"min.insync.replicas": 2}) as kc:
        for topic, parts in (("eos-in", 4), ("eos-out", 2), ("jvm-out", 2)):
            kc.create_topic(topic, parts, replication_factor=3)
        for p in range(4):
            send_all(kc.bootstrap_servers, "eos-in", p, [f"r-{i}".encode() for i in range(p, ROWS, 4)])
        yield kc


#: 11 faults over the 5 micro-batches (those of one micro-batch fire in turn, one per attempt of
#: task 0): 6 Python worker SIGKILLs, 3 driver SIGKILLs in a row, 2 broker SIGKILLs
PLAN = ("worker:0,worker:0,driver:1,driver:1,driver:2,worker:2,broker:2,worker:3,worker:3,"
        "worker:4,txn:4")


@pytest.mark.timeout(1500)  # a Spark driver per driver fault, and one more, one after the other
def test_exactly_once_across_worker_driver_and_broker_kills(three_brokers, tmp_path):
    """The default plan: the mapInArrow's Python worker SIGKILLed twice in micro-batch 0 (two
    attempts of task 0), the driver SIGKILLed mid-micro-batch three times in a row (twice in
    micro-batch 1, then in 2), each time the query restarted from its checkpoint, in
    micro-batch 2 a worker SIGKILL then the leader of the staging
    partition task 0 writes SIGKILLed while that task's next attempt is mid-write (restarted
    while the query goes on), two worker SIGKILLs in micro-batch 3, one in 4, and in 4 the
    copy's transaction coordinator SIGKILLed while the copy's transaction is open with its
    rows sent and delivered (not restarted: the query ends on 2 nodes)."""
    kc = three_brokers
    # RDK_EOS_FAULTS runs another campaign, e.g. "worker:0,driver:1,driver:2,driver:3"
    plan = os.environ.get("RDK_EOS_FAULTS", PLAN)
    killed: list[tuple[str, int]] = []

    def kill_broker(info: dict):
        if info["kind"] == "broker":  # task 0 is mid-write, holding its next rows
            victim = kc.leader(info["topic"], info["partition"])
            kc.kill(victim)
            killed.append(("staging partition 0 leader", victim))
            return lambda: kc.restart(victim)  # back before the next kill; the query goes on
        victim = txn_coordinator(kc, info["transactional_id"])  # the copy's transaction is open
        roles = [f"{t}[{p}]" for t in ("eos-out", "eos-out.rdk-staging") for p in range(2)
                 if kc.leader(t, p) == victim]
        kc.kill(victim)
        killed.append((f"transaction coordinator (also leader of {roles})", victim))
        return None

    for _ in range(plan.count("driver:")):
        run_query(kc, "eos-in", "eos-out", tmp_path, plan, kill_driver=True)
    # the control: Spark's JVM sink under a worker kill, in the same driver (if its jars are here)
    jvm = ["--control-jvm", "jvm-out"] if spark_kafka_jars() else []
    got = run_query(kc, "eos-in", "eos-out", tmp_path, plan, "--read", *jvm, kill_broker=kill_broker)
    print(f"killed: {killed}")
    assert len(killed) == plan.count("broker:") + plan.count("txn:")
    assert_each_row_once(got, tmp_path, plan)
    # the faults hit mid-write: the staging topic holds the failed attempts' rows too
    assert log_end(kc, "eos-out.rdk-staging") > ROWS
    import rdk

    with rdk.Admin(kc.bootstrap_servers) as admin:  # created with the output's replicas
        staging = {t.name: t for t in admin.list_topics()}["eos-out.rdk-staging"]
        assert {len(p.replicas) for p in staging.partitions} == {3}
    if jvm:  # the check above sees duplicates: the JVM sink writes the killed attempt's twice
        control = next(json.loads(line[4:]) for line in (tmp_path / "query.out").read_text()
                       .splitlines() if line.startswith("JVM "))
        counts = collections.Counter(control["values"])
        print(f"JVM sink: {len(control['values'])} rows, {len(counts)} distinct")
        assert control["fired"] == ["fired-worker-0-0"]
        assert set(counts) == {f"r-{i}" for i in range(ROWS)} and len(control["values"]) > ROWS


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
