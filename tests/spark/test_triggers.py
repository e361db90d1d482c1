"""minOffsetsPerTrigger, maxTriggerDelay, maxOffsetsPerTrigger together; the latest offset in
the query progress (reportLatestOffset) and the built-in connector's offsetsBehindLatest."""

from __future__ import annotations

import json
import threading
import time

import pytest
from helpers import wait_until

from rdk.spark.stream import offsets_behind_latest

pytestmark = pytest.mark.spark


def test_min_offsets_wait_for_enough_data_or_the_trigger_delay(
        mock_broker, new_topic, produce, kafka_reader, spark, tmp_path):
    """KafkaMicroBatchSourceSuite "minOffsetsPerTrigger" and "compositeReadLimit"."""
    topic = new_topic(mock_broker, 2)
    produce(mock_broker, topic, 0, [b"a"] * 20)
    produce(mock_broker, topic, 1, [b"b"] * 10)
    batches: list[tuple[float, list]] = []
    lock = threading.Lock()

    def collect(df, _id):
        rows = sorted(tuple(r) for r in df.collect())
        with lock:
            batches.append((time.monotonic(), rows))

    def sizes():
        with lock:
            return [len(rows) for _, rows in batches if rows]

    df = kafka_reader(mock_broker, stream=True, subscribe=topic, startingOffsets="earliest",
                      minOffsetsPerTrigger="8", maxOffsetsPerTrigger="20",
                      maxTriggerDelay="10s").load()
    spark.conf.set("spark.sql.streaming.noDataProgressEventInterval", "100ms")
    query = (df.select("partition", "offset").writeStream.foreachBatch(collect)
             .trigger(processingTime="100 milliseconds")
             .option("checkpointLocation", str(tmp_path / "cp")).start())
    try:
        # the first batch always runs, limited by maxOffsetsPerTrigger; the 10 left are >= 8
        wait_until(lambda: sizes() == [20, 10], 60, "the first two micro-batches")

        def progress_of(rows):  # "input row metrics": numInputRows is each batch's rows
            return lambda: any(p.numInputRows == rows for p in query.recentProgress)

        wait_until(progress_of(10), 30, "the progress of the second micro-batch")
        progress = next(p for p in query.recentProgress if p.numInputRows == 20)
        assert json.loads(progress.sources[0].latestOffset) == {topic: {"0": 20, "1": 10}}
        behind = offsets_behind_latest(progress.sources[0])
        assert behind is not None and behind["maxOffsetsBehindLatest"] > 0
        assert behind["avgOffsetsBehindLatest"] == (
            behind["minOffsetsBehindLatest"] + behind["maxOffsetsBehindLatest"]) / 2

        produce(mock_broker, topic, 0, [b"c"] * 3)  # fewer than minOffsetsPerTrigger

        def saw_them_and_waited():
            for p in query.recentProgress:
                latest = p.sources[0].latestOffset
                if latest and json.loads(latest) == {topic: {"0": 23, "1": 10}}:
                    return p.numInputRows == 0
            return False

        wait_until(saw_them_and_waited, 30, "a trigger that saw 3 new offsets and waited")
        assert sizes() == [20, 10]
        produce(mock_broker, topic, 1, [b"d"] * 6)  # 9 waiting now: enough
        wait_until(lambda: sizes() == [20, 10, 9], 30, "the micro-batch of 9")
        wait_until(progress_of(9), 30, "the progress of the micro-batch of 9")
        enough_at = batches[-1][0]
        produce(mock_broker, topic, 1, [b"e"] * 2)  # too few: maxTriggerDelay lets them go
        wait_until(lambda: sizes() == [20, 10, 9, 2], 60, "the micro-batch after the delay")
        assert batches[-1][0] - enough_at > 5  # held back by minOffsetsPerTrigger (10 s delay)
        assert batches[-1][1] == [(1, 16), (1, 17)]
        wait_until(progress_of(2), 30, "the progress of the micro-batch of 2")
    finally:
        query.stop()
        spark.conf.unset("spark.sql.streaming.noDataProgressEventInterval")
    assert query.exception() is None
    every = sorted(r for _, rows in batches for r in rows)
    assert every == [(0, o) for o in range(23)] + [(1, o) for o in range(18)]


def test_available_now_never_waits_for_min_offsets(mock_broker, new_topic, produce,
                                                   kafka_reader, tmp_path):
    topic = new_topic(mock_broker, 1)
    produce(mock_broker, topic, 0, [b"x"] * 7)
    seen: list = []
    df = kafka_reader(mock_broker, stream=True, subscribe=topic, startingOffsets="earliest",
                      minOffsetsPerTrigger="1000").load()
    query = (df.select("offset").writeStream.trigger(availableNow=True)
             .foreachBatch(lambda b, _id: seen.append(sorted(r.offset for r in b.collect())))
             .option("checkpointLocation", str(tmp_path / "cp")).start())
    try:
        assert query.awaitTermination(120), "AvailableNow waited for minOffsetsPerTrigger"
    finally:
        query.stop()
    assert [b for b in seen if b] == [list(range(7))]


def test_offsets_behind_latest_is_the_connector_metric():
    """KafkaMicroBatchSourceSuite "test custom metrics - corner cases"."""
    latest = json.dumps({"t1": {"0": 3}, "t2": {"0": 6}})
    assert offsets_behind_latest({"endOffset": json.dumps({"t1": {"0": 1}, "t2": {"0": 2}}),
                                  "latestOffset": latest}) == {
        "minOffsetsBehindLatest": 2.0, "maxOffsetsBehindLatest": 4.0,
        "avgOffsetsBehindLatest": 3.0}
    assert offsets_behind_latest({"endOffset": None, "latestOffset": None}) is None
    assert offsets_behind_latest({"endOffset": latest, "latestOffset": latest}) == {
        "minOffsetsBehindLatest": 0.0, "maxOffsetsBehindLatest": 0.0,
        "avgOffsetsBehindLatest": 0.0}
