"""Bounded ports of Spark's Kafka source stress suites, and SPARK-53560 (see SPARK_SUITE.md).

KafkaSourceStressSuite and KafkaSourceStressForDontFailOnDataLossSuite run random topic churn
against a running query for 50 actions or 20 s. Here each stress test runs a seeded random
sequence of STEPS actions, each kind at least once (a failure replays: the seed is in the
assertion message), against one ``subscribePattern`` query with a 100 ms processing-time
trigger and a checkpoint, and after every step waits, bounded in tries and time, until the
query has read up to the end of every partition (``processAllAvailable``, then the query's
end offsets compared with the broker's), then checks its output.

What each broker allows decides the actions: librdkafka's mock cluster has neither
CreateTopics/DeleteTopics (its topics come from MockCluster.create_topic) nor
CreatePartitions; Tansu deletes and re-creates topics but answers CreatePartitions with
_UNSUPPORTED_FEATURE; Apache Kafka (the session's KafkaCluster, a default broker kind) does all.
An action a broker cannot do is left out of its sequence, never faked.
"""

from __future__ import annotations

import json
import os
import random
import time
import uuid
from collections import Counter

import pytest

from rdk import Admin, KafkaError
from rdk.spark.stream import offsets_from_json

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]

STEPS = 10  # random actions per stress test (Spark's: 50 actions, or 20 s of churn)
CATCH_UP_TRIES = 8  # processAllAvailable calls per step before the test gives up...
CATCH_UP_SECONDS = 60.0  # ...or this long, whichever comes first

NO_PARTITIONS = {
    "mock": "librdkafka's mock cluster never answers CreatePartitions (it waits for a "
            "controller until the request times out)",
    "tansu": "Tansu answers CreatePartitions with _UNSUPPORTED_FEATURE (no KIP-195)",
}
NO_DELETE = {
    "mock": "librdkafka's mock cluster implements neither CreateTopics nor DeleteTopics",
}


def adds_partitions(broker) -> bool:
    """Whether ``broker`` grows topics (an RDK_BROKERS cluster is asked once)."""
    if broker.kind in NO_PARTITIONS:
        return False
    if broker.kind != "external":
        return True
    if not hasattr(broker, "_adds_partitions"):
        probe = f"probe-{uuid.uuid4().hex[:10]}"
        broker.create_topic(probe, 1)
        with Admin(broker.bootstrap_servers) as admin:
            try:
                admin.create_partitions({probe: 2}, timeout=10)
                broker._adds_partitions = True
            except KafkaError:
                broker._adds_partitions = False
            admin.delete_topics([probe])
    return broker._adds_partitions


def send(broker, topic, payloads, partition=None):
    from conftest import send_all  # tests/spark/conftest.py

    if payloads:
        send_all(broker.bootstrap_servers, topic, partition, payloads)


class Stream:
    """One streaming query over a topic pattern, restartable from its checkpoint.

    Its sink keeps each micro-batch's rows by batch id: a batch Spark runs again after a
    restart replaces its first run, as Spark's exactly-once sinks do (and must hold the
    same rows). ``rows()`` is everything the query delivered.
    """

    def __init__(self, broker, kafka_reader, pattern, checkpoint, **options):
        self.broker, self.pattern, self.checkpoint = broker, pattern, checkpoint
        self.df = (kafka_reader(broker, stream=True, subscribePattern=pattern,
                                startingOffsets="earliest",
                                **{"fetchOffset.numRetries": "10",
                                   "fetchOffset.retryIntervalMs": "100"}, **options)
                   .load().selectExpr("topic", "partition", "offset", "CAST(value AS STRING) v"))
        self.batches: dict[int, list[tuple]] = {}
        self.replayed: list[str] = []
        self.query = None
        self._ends: dict[tuple[str, int], int] = {}

    def _keep(self, batch, batch_id):
        rows = sorted(tuple(r) for r in batch.collect())
        if batch_id in self.batches and self.batches[batch_id] != rows:
            self.replayed.append(f"batch {batch_id} ran again with other rows: "
                                 f"{self.batches[batch_id]} then {rows}")
        self.batches[batch_id] = rows

    def start(self):
        self.query = (self.df.writeStream.foreachBatch(self._keep)
                      .trigger(processingTime="100 milliseconds")
                      .option("checkpointLocation", self.checkpoint).start())

    def stop(self):
        if self.query is not None:
            self.query.stop()
            self.failed()
            self.query = None

    @property
    def running(self):
        return self.query is not None

    def failed(self):
        """Fail the test with the query's own error, if it has one."""
        error = self.query.exception()
        assert error is None, f"the query failed: {error}"

    def rows(self):
        return [r for rows in self.batches.values() for r in rows]

    def ends(self) -> dict[tuple[str, int], int]:
        """The end offsets of the last micro-batch (of an earlier run of the query when
        this one has run none yet: it starts where that one ended)."""
        progress = self.query.lastProgress
        if progress and progress["sources"]:
            end = progress["sources"][0]["endOffset"]
            self._ends = offsets_from_json(json.loads(end) if isinstance(end, str) else end)
        return self._ends

    def catch_up(self, topics, why):
        """Return once the query has read to the end of every partition of ``topics``;
        ``processAllAvailable`` alone can return on a trigger that began before the last
        records were sent, so the end offsets are compared with the broker's."""
        deadline = time.monotonic() + CATCH_UP_SECONDS
        with Admin(self.broker.bootstrap_servers) as admin:
            want = {(t, p): admin.watermarks(t, p)[1] for t in topics
                    for p in range(admin.partition_count(t))}
        behind: dict = {}
        for _ in range(CATCH_UP_TRIES):
            self.query.processAllAvailable()
            self.failed()
            assert self.query.isActive
            ends = self.ends()
            behind = {tp: (ends.get(tp), hi) for tp, hi in want.items() if ends.get(tp) != hi}
            if not behind or time.monotonic() > deadline:
                break
        assert not behind, f"{why}: the query is behind (offset, end): {behind}"


def actions(rng, every, steps=STEPS, before=()):
    """``steps`` actions: each of ``every`` once (so every seed covers them all), the rest
    drawn at random from ``every``, in a random order where each pair (a, b) of ``before``
    has its first a before its first b."""
    chosen = list(every) + [rng.choice(every) for _ in range(steps - len(every))]
    rng.shuffle(chosen)
    for a, b in before:
        i, j = chosen.index(a), chosen.index(b)
        if j < i:
            chosen[i], chosen[j] = chosen[j], chosen[i]
    return chosen


@pytest.mark.parametrize("seed", [53, 1017])
def test_stress_with_multiple_topics_and_partitions(broker, kafka_reader, tmp_path, seed):
    """KafkaSourceStressSuite "stress test with multiple topics and partitions", bounded.

    Each step is one of: add 0-9 records to a random topic; add a topic (1-5 partitions)
    the pattern matches, then records; delete a topic the query has read to the end (never
    the first; not on the mock cluster), then records; add 1-3 partitions to a topic (Apache
    Kafka only: Tansu and the mock cluster cannot), then records; stop the query, add
    records, start it again from the checkpoint. After every step the query's output is
    exactly every record sent, each once. Differences: startingOffsets is earliest (Spark's
    starts at latest and skips the first records), and failOnDataLoss stays false as in
    Spark's (a deleted topic's offsets would count as lost otherwise).
    """
    seed = int(os.environ.get("RDK_TEST_SEED", seed))  # a failure's seed replays it
    rng = random.Random(seed)
    kinds = ["data", "topic", "restart"]
    if broker.kind not in NO_DELETE:
        kinds.append("delete")
    if adds_partitions(broker):
        kinds.append("partitions")
    prefix = f"stress{uuid.uuid4().hex[:8]}"
    count = [0]

    def new_topic():
        name = f"{prefix}-{len(topics) + len(deleted)}"
        broker.create_topic(name, rng.randint(1, 5))
        topics.append(name)
        return name

    def add_data():
        n = rng.randrange(10)
        payloads = [f"{count[0] + i}".encode() for i in range(n)]
        count[0] += n
        send(broker, rng.choice(topics), payloads)

    topics: list[str] = []
    deleted: list[str] = []
    for _ in range(3):
        send(broker, new_topic(), [b"%d" % i for i in range(count[0], count[0] + 5)])
        count[0] += 5
    stream = Stream(broker, kafka_reader, f"{prefix}-.*", str(tmp_path / "cp"),
                    failOnDataLoss="false")
    stream.start()
    done = []
    try:
        for step, kind in enumerate(actions(rng, kinds)):
            if kind == "delete" and len(topics) == 1:
                kind = "data"  # the first topic stays, as in Spark's
            done.append(kind)
            why = f"seed {seed}, step {step} ({' '.join(done)})"
            if kind == "topic":
                new_topic()
            elif kind == "delete":
                stream.catch_up(topics, why)  # everything read: deleting it loses nothing
                gone = topics.pop(rng.randrange(1, len(topics)))
                with Admin(broker.bootstrap_servers) as admin:
                    admin.delete_topics([gone])
                deleted.append(gone)
            elif kind == "partitions":
                grown = rng.choice(topics)
                with Admin(broker.bootstrap_servers) as admin:
                    total = admin.partition_count(grown) + rng.randint(1, 3)
                    admin.create_partitions({grown: total})
            elif kind == "restart":
                stream.stop()
                add_data()
                stream.start()
            add_data()
            stream.catch_up(topics, why)
            values = Counter(int(r[3]) for r in stream.rows())
            assert not stream.replayed, f"{why}: {stream.replayed}"
            twice = sorted(v for v, n in values.items() if n > 1)
            assert not twice, f"{why}: read more than once: {twice}"
            assert sorted(values) == list(range(count[0])), (
                f"{why}: missing {sorted(set(range(count[0])) - set(values))}, "
                f"unexpected {sorted(set(values) - set(range(count[0])))}")
    finally:
        stream.stop()


class Incarnation:
    """One life of a topic between its creation and its deletion."""

    def __init__(self, name: str, fresh: bool) -> None:
        self.name = name
        # A name the query never saw is read from the earliest offset. A re-created one is
        # not: its offsets restart at 0 while the query keeps the old ones, so what it gets
        # before the query next catches up may be skipped (as by Spark's own connector).
        self.caught_up = fresh
        self.deleted = False
        self.sent: list[tuple[int, bool]] = []  # (value, must be read)


@pytest.mark.parametrize("seed", [7, 2024])
def test_stress_for_fail_on_data_loss_false(broker, kafka_reader, tmp_path, seed):
    """KafkaSourceStressForDontFailOnDataLossSuite "stress test for failOnDataLoss=false",
    bounded: topics (1 partition) are created, deleted and re-created while the query runs,
    and 0-9 records are added to every live topic. Spark's checks no crash; here after
    every step also: no record is read twice, nothing is read that was not sent, and every
    record is read unless its topic was deleted before the query read it, or it went to a
    re-created topic before the query had caught up with the new life of the topic (Kafka
    offsets cannot tell the lives apart: the built-in connector skips those too). Not on
    the mock cluster: it cannot delete topics. (Spark's also ages records out with a tiny
    retention; Tansu keeps everything, so loss comes from deletion only.)"""
    if broker.kind in NO_DELETE:
        pytest.skip(NO_DELETE[broker.kind])
    seed = int(os.environ.get("RDK_TEST_SEED", seed))  # a failure's seed replays it
    rng = random.Random(seed)
    prefix = f"lossy{uuid.uuid4().hex[:8]}"
    live: dict[str, Incarnation] = {}
    dead: list[str] = []
    lives: list[Incarnation] = []
    count = [0]

    def create(name: str, fresh: bool) -> None:
        broker.create_topic(name, 1)
        live[name] = Incarnation(name, fresh)
        lives.append(live[name])

    create(f"{prefix}-0", True)
    stream = Stream(broker, kafka_reader, f"{prefix}-.*", str(tmp_path / "cp"),
                    failOnDataLoss="false", **{"kafkaConsumer.pollTimeoutMs": "1000"})
    stream.start()
    done = []
    try:
        for step, churn in enumerate(actions(rng, ["create", "delete", "recreate", "none"],
                                                 before=[("delete", "recreate")])):
            for life in live.values():  # records to every live topic, then churn at once
                payloads = []
                for _ in range(rng.randrange(10)):
                    life.sent.append((count[0], life.caught_up))
                    payloads.append(b"%d" % count[0])
                    count[0] += 1
                send(broker, life.name, payloads)
            if (churn == "delete" and not live) or (churn == "recreate" and not dead):
                churn = "none"
            done.append(churn)
            if churn == "create":
                create(f"{prefix}-{len(live) + len(dead)}", True)
            elif churn == "delete":
                gone = rng.choice(sorted(live))
                with Admin(broker.bootstrap_servers) as admin:
                    admin.delete_topics([gone])
                live.pop(gone).deleted = True
                dead.append(gone)
            elif churn == "recreate":
                create(dead.pop(rng.randrange(len(dead))), False)
            why = f"seed {seed}, step {step} ({' '.join(done)})"
            stream.catch_up(sorted(live), why)
            for life in live.values():
                life.caught_up = True
            values = Counter(int(r[3]) for r in stream.rows())
            assert not stream.replayed, f"{why}: {stream.replayed}"
            twice = sorted(v for v, n in values.items() if n > 1)
            assert not twice, f"{why}: read more than once: {twice}"
            assert set(values) <= set(range(count[0])), f"{why}: read what was never sent"
            missed = sorted(v for life in lives if not life.deleted
                            for v, must in life.sent if must and v not in values)
            assert not missed, f"{why}: not read: {missed}"
    finally:
        stream.stop()


# -- SPARK-53560 -------------------------------------------------------------------------------

class FailOn7:
    """A foreachBatch sink whose batches fail while they hold the record "7" (the batch is
    then not committed), until ``heal``; it keeps the rows of the batches that succeed."""

    def __init__(self) -> None:
        self.healed = False
        self.rows: list[tuple] = []

    def __call__(self, batch, batch_id):
        rows = [tuple(r) for r in batch.collect()]
        if not self.healed and any(r[2] == "7" for r in rows):
            raise RuntimeError("error for 7")
        self.rows.extend(rows)


@pytest.mark.parametrize("growth", ["partitions", "topic"])
def test_a_failed_available_now_batch_is_retried_after_partitions_appear(
        broker, kafka_reader, tmp_path, growth):
    """KafkaMicroBatchSourceSuite "SPARK-53560: no crash looping during uncommitted batch
    retry in AvailableNow trigger": a Trigger.AvailableNow batch fails before its commit;
    the topic gets a partition; the restarted query must retry that batch (and fail on it
    again with the same error, not on its plan) instead of refusing the new partitions.
    Then, the sink healed, it reads everything once. ``growth="partitions"`` adds a
    partition (Apache Kafka only: Tansu and the mock cluster cannot); ``"topic"`` makes the
    same shape on every broker with a second topic the pattern matches."""
    if growth == "partitions" and not adds_partitions(broker):
        pytest.skip(NO_PARTITIONS.get(broker.kind, "the broker cannot add partitions"))
    prefix = f"retry{uuid.uuid4().hex[:8]}"
    topic = f"{prefix}-a"
    broker.create_topic(topic, 1)
    send(broker, topic, [b"%d" % i for i in range(1, 8)], partition=0)
    pattern = topic if growth == "partitions" else f"{prefix}-.*"
    df = (kafka_reader(broker, stream=True, subscribePattern=pattern,
                       startingOffsets="earliest").load()
          .selectExpr("topic", "partition", "CAST(value AS STRING) v"))
    sink = FailOn7()

    def run():
        query = (df.writeStream.foreachBatch(sink).trigger(availableNow=True)
                 .option("checkpointLocation", str(tmp_path / "cp")).start())
        try:
            assert query.awaitTermination(120) is not False, "the query did not finish"
        except Exception as e:  # returned for the test to judge
            return e
        finally:
            query.stop()
        return query.exception()

    error = run()
    assert error is not None and "error for 7" in str(error)
    if growth == "partitions":
        with Admin(broker.bootstrap_servers) as admin:
            admin.create_partitions({topic: 2})
        grown = (topic, 1)
    else:
        grown = (f"{prefix}-b", 0)
        broker.create_topic(grown[0], 1)
    send(broker, grown[0], [b"8"], partition=grown[1])
    error = run()  # the same batch again: it fails where it failed, past its planning
    assert error is not None and "error for 7" in str(error), error
    sink.healed = True
    assert run() is None
    assert sorted(sink.rows) == sorted([(topic, 0, str(i)) for i in range(1, 8)]
                                       + [(*grown, "8")])
