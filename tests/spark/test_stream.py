"""Structured Streaming reads: checkpoints, Trigger.AvailableNow, maxOffsetsPerTrigger."""

from __future__ import annotations

import json

import pytest
from helpers import wait_until
from pyspark.sql.streaming.datasource import ReadAllAvailable

from rdk.spark.options import parse_read_options
from rdk.spark.stream import FIRST_START, KafkaStreamReader, offsets_from_json, rate_limit

pytestmark = pytest.mark.spark


def run_available_now(df, sink):
    """Run ``df`` to the end of what is in Kafka now; ``sink(writer)`` configures the sink."""
    query = sink(df.writeStream.trigger(availableNow=True)).start()
    try:
        assert query.awaitTermination(180), "the AvailableNow query did not finish"
    finally:
        query.stop()
    assert query.exception() is None, query.exception()
    return query


def test_available_now_twice_with_checkpoint_reads_every_message_once(
        mock_broker, new_topic, produce, kafka_reader, spark, tmp_path):
    topic = new_topic(mock_broker, 2)
    produce(mock_broker, topic, 0, [b"first-0-%d" % i for i in range(15)])
    produce(mock_broker, topic, 1, [b"first-1-%d" % i for i in range(12)])
    out, checkpoint = str(tmp_path / "out"), str(tmp_path / "checkpoint")

    def run():
        df = kafka_reader(mock_broker, stream=True, subscribe=topic,
                          startingOffsets="earliest").load()
        run_available_now(df.select("partition", "offset", "value"),
                          lambda w: w.format("parquet").option("path", out)
                          .option("checkpointLocation", checkpoint))
        return sorted(tuple(r) for r in spark.read.parquet(out).collect())

    first = run()
    assert first == sorted([(0, i, b"first-0-%d" % i) for i in range(15)]
                           + [(1, i, b"first-1-%d" % i) for i in range(12)])
    produce(mock_broker, topic, 0, [b"second-0-%d" % i for i in range(4)])
    produce(mock_broker, topic, 1, [b"second-1-%d" % i for i in range(9)])
    both = run()
    assert both == sorted(first + [(0, 15 + i, b"second-0-%d" % i) for i in range(4)]
                          + [(1, 12 + i, b"second-1-%d" % i) for i in range(9)])


def test_max_offsets_per_trigger_bounds_every_micro_batch(mock_broker, new_topic, produce,
                                                          kafka_reader, tmp_path):
    topic = new_topic(mock_broker, 2)
    produce(mock_broker, topic, 0, [b"a"] * 31)
    produce(mock_broker, topic, 1, [b"b"] * 19)
    batches: list[list[tuple[int, int]]] = []
    df = kafka_reader(mock_broker, stream=True, subscribe=topic, startingOffsets="earliest",
                      maxOffsetsPerTrigger="12").load()
    run_available_now(df.select("partition", "offset"), lambda w: w.foreachBatch(
        lambda b, _id: batches.append([tuple(r) for r in b.collect()]))
        .option("checkpointLocation", str(tmp_path / "checkpoint")))
    sizes = [len(b) for b in batches if b]
    assert sizes and max(sizes) <= 12 and len(sizes) >= 5, sizes
    assert sorted(r for b in batches for r in b) == (
        [(0, o) for o in range(31)] + [(1, o) for o in range(19)])


def test_new_topics_and_partitions_are_read_from_the_earliest(mock_broker, new_topic, produce,
                                                               kafka_reader, tmp_path):
    prefix = new_topic(mock_broker, 1, prefix="grow")
    produce(mock_broker, prefix, 0, [b"old"] * 3)
    seen: list[tuple[str, int, int]] = []

    def run():
        df = kafka_reader(mock_broker, stream=True, subscribePattern=prefix + ".*",
                          startingOffsets="earliest").load()
        run_available_now(df.select("topic", "partition", "offset"), lambda w: w.foreachBatch(
            lambda b, _id: seen.extend(tuple(r) for r in b.collect()))
            .option("checkpointLocation", str(tmp_path / "checkpoint")))

    run()
    assert sorted(seen) == [(prefix, 0, o) for o in range(3)]
    later = prefix + "-later"
    mock_broker.create_topic(later, 2)
    produce(mock_broker, later, 1, [b"new"] * 4)
    produce(mock_broker, prefix, 0, [b"more"] * 2)
    seen.clear()
    run()
    assert sorted(seen) == sorted([(prefix, 0, 3), (prefix, 0, 4)]
                                  + [(later, 1, o) for o in range(4)])


def test_initial_offset_latest_and_json_resolve_to_concrete_offsets(mock_broker, new_topic,
                                                                     produce):
    topic = new_topic(mock_broker, 2)
    produce(mock_broker, topic, 0, [b"x"] * 7)
    produce(mock_broker, topic, 1, [b"y"] * 5)

    def initial(**options):
        opts = parse_read_options({"kafka.bootstrap.servers": mock_broker.bootstrap_servers,
                                   "subscribe": topic, **options}, streaming=True)
        reader = KafkaStreamReader(opts)
        try:
            return reader.initialOffset()
        finally:
            reader.stop()

    assert initial() == {topic: {"0": 7, "1": 5}}  # latest is the default for streams
    assert initial(startingOffsets="earliest") == {topic: {"0": 0, "1": 0}}
    assert initial(startingOffsets=json.dumps({topic: {"0": 3, "1": -1}})) == {
        topic: {"0": 3, "1": 5}}


def test_a_first_micro_batch_rerun_after_a_crash_reads_the_same_range(mock_broker, new_topic,
                                                                       produce):
    """Spark asks initialOffset() again when it re-runs a first micro-batch left uncommitted
    by a crash; "latest" then resolves further on. The range must be the one planned first
    (it is recorded in the batch's end offset), not a data-loss error or missed rows."""
    topic = new_topic(mock_broker, 2)
    produce(mock_broker, topic, 0, [b"old"] * 4)
    opts = parse_read_options({"kafka.bootstrap.servers": mock_broker.bootstrap_servers,
                               "subscribe": topic}, streaming=True)  # latest: the default
    first, again = KafkaStreamReader(opts), KafkaStreamReader(opts)
    try:
        start = first.initialOffset()
        assert start == {topic: {"0": 4, "1": 0}}
        # Spark runs a first micro-batch at once, even with no data: its end records the start
        assert first.latestOffset(start, ReadAllAvailable()) == {**start, FIRST_START: start}
        produce(mock_broker, topic, 0, [b"new"] * 3)
        produce(mock_broker, topic, 1, [b"new"] * 2)
        end = first.latestOffset(start, ReadAllAvailable())
        assert offsets_from_json(end) == {(topic, 0): 7, (topic, 1): 2}
        assert end[FIRST_START] == start  # the start this batch was planned from
        planned = sorted((r.topic, r.partition, r.start, r.end) for r in first.partitions(start, end))
        assert planned == [(topic, 0, 4, 7), (topic, 1, 0, 2)]
        # the next micro-batch starts at that end and records nothing more
        produce(mock_broker, topic, 0, [b"later"] * 5)
        assert FIRST_START not in first.latestOffset(end, ReadAllAvailable())
        # restarted after a crash before batch 0's commit: latest is 12 and 2 now
        restart = again.initialOffset()
        assert restart == {topic: {"0": 12, "1": 2}}
        rerun = sorted((r.topic, r.partition, r.start, r.end) for r in again.partitions(restart, end))
        assert rerun == planned
    finally:
        first.stop()
        again.stop()


def test_latest_stream_restarted_before_its_first_commit_reads_from_its_first_start(
        mock_broker, new_topic, produce, kafka_reader, tmp_path):
    """End to end in Spark: a stream from "latest" runs its first micro-batch (Spark runs
    one at once, empty) and a second one with rows; then the commit log is emptied and only
    batch 0 kept in the offset log (a crash between Spark's offset log and its commit log of
    batch 0). The restarted query re-runs batch 0 from the start it had, not from the
    "latest" of now, so it fails with no data-loss error and delivers every row after that
    start."""
    topic = new_topic(mock_broker, 1)
    produce(mock_broker, topic, 0, [b"before"] * 3)
    checkpoint = tmp_path / "checkpoint"
    batches: list[tuple[int, list]] = []

    def keep(df, batch_id):
        batches.append((batch_id, sorted(tuple(r) for r in df.collect())))

    df = kafka_reader(mock_broker, stream=True, subscribe=topic).load()
    rows = df.selectExpr("offset", "CAST(value AS STRING)")
    query = (rows.writeStream.foreachBatch(keep).trigger(processingTime="200 milliseconds")
             .option("checkpointLocation", str(checkpoint)).start())
    try:  # the initial offsets are resolved once the first micro-batch has run
        wait_until(lambda: batches, 120, "the first micro-batch")
        produce(mock_broker, topic, 0, [b"first"] * 4)
        wait_until(lambda: any(b for _id, b in batches), 120, "a micro-batch with rows")
    finally:
        query.stop()
    assert batches[0] == (0, [])
    assert sorted(r for _id, b in batches for r in b) == [(o, "first") for o in range(3, 7)]
    for done in (checkpoint / "commits").iterdir():  # the crash: no batch was committed
        done.unlink()
    for later in (checkpoint / "offsets").iterdir():  # and no batch after 0 was planned
        if later.name not in ("0", ".0.crc"):
            later.unlink()
    produce(mock_broker, topic, 0, [b"later"] * 2)  # "latest" is 9 now
    batches.clear()
    run_available_now(rows, lambda w: w.foreachBatch(keep)
                      .option("checkpointLocation", str(checkpoint)))
    assert batches[0] == (0, [])  # batch 0 again, over the range it had: [3, 3)
    assert sorted(r for _id, b in batches[1:] for r in b) == (
        [(o, "first") for o in range(3, 7)] + [(7, "later"), (8, "later")])


def test_rate_limit_shares_rows_by_backlog_and_never_exceeds_the_limit():
    a, b, c = ("t", 0), ("t", 1), ("t", 2)
    begin = {a: 0, b: 10, c: 5}
    available = {a: 100, b: 20, c: 5}
    end = rate_limit(begin, available, 11)
    assert sum(end[tp] - begin[tp] for tp in end) == 11
    assert end[c] == 5 and end[a] - begin[a] == 10 and end[b] - begin[b] == 1
    assert rate_limit(begin, available, 1000) == available
    for limit in range(1, 40):
        end = rate_limit(begin, available, limit)
        assert sum(end[tp] - begin[tp] for tp in end) == limit
        assert all(begin[tp] <= end[tp] <= available[tp] for tp in end)
