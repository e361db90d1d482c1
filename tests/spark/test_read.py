"""Batch reads through format("rdkafka") on real brokers (mock cluster and Tansu)."""

from __future__ import annotations

import json
import time

import pytest

from rdk import Admin
from rdk.message import Message
from rdk.spark.options import parse_read_options
from rdk.spark.planner import Planner

pytestmark = pytest.mark.spark


def rows_of(df, *cols):
    return sorted(tuple(r[c] for c in cols) for r in df.collect())


def test_batch_read_returns_exactly_the_produced_rows(broker, new_topic, produce, kafka_reader):
    topic = new_topic(broker, 3)
    p0 = [Message(b"v\x00%d" % i, b"user-%d" % (i % 7), [("n", b"%d" % i), ("none", None)])
          for i in range(40)]
    p1 = [Message(None, b"tombstone"), Message(b"", b""), Message(b"\x00\xff binary", None)]
    # partition 2 in two sends (100 then 200): Tansu's ListOffsets(latest) answers 101, not 300
    p2a = [Message(b"a%d" % i) for i in range(100)]
    p2b = [Message(b"b%d" % i, None, [("h", b"")]) for i in range(200)]
    before = time.time()
    produce(broker, topic, 0, p0)
    produce(broker, topic, 1, p1)
    produce(broker, topic, 2, p2a)
    produce(broker, topic, 2, p2b)
    expected = []
    for part, msgs in ((0, p0), (1, p1), (2, p2a + p2b)):
        for off, m in enumerate(msgs):
            headers = [(k, v) for k, v in m.headers] if m.headers else None  # null, as built in
            expected.append((part, off, m.key, m.value, headers))

    df = kafka_reader(broker, subscribe=topic, includeHeaders="true").load()
    got = df.collect()
    assert sorted((r.partition, r.offset, r.key, r.value,
                   None if r.headers is None else [(h.key, h.value) for h in r.headers])
                  for r in got) == sorted(expected)
    assert {r.topic for r in got} == {topic}
    assert {r.timestampType for r in got} == {0}  # CreateTime, Kafka's code
    stamps = [r.timestamp.timestamp() for r in got]
    assert before - 5 < min(stamps) and max(stamps) < time.time() + 5
    assert "headers" not in kafka_reader(broker, subscribe=topic).load().columns


def test_latest_is_the_fetch_high_watermark_even_when_list_offsets_is_wrong(broker, new_topic,
                                                                            produce):
    topic = new_topic(broker, 1)
    produce(broker, topic, 0, [b"x"] * 100)
    produce(broker, topic, 0, [b"y"] * 200)
    opts = parse_read_options({"kafka.bootstrap.servers": broker.bootstrap_servers,
                               "subscribe": topic}, streaming=False)
    with Planner(opts) as planner:
        tps = planner.topic_partitions(missing_ok=False)
        assert planner.watermarks(tps) == {(topic, 0): (0, 300)}
    with Admin(broker.bootstrap_servers) as admin:
        assert admin.watermarks(topic, 0) == (0, 300)


def test_starting_and_ending_offsets_json_pick_the_range(mock_broker, new_topic, produce,
                                                         kafka_reader):
    topic = new_topic(mock_broker, 3)
    for p in range(3):
        produce(mock_broker, topic, p, [b"%d-%d" % (p, i) for i in range(20)])
    df = kafka_reader(
        mock_broker, assign=json.dumps({topic: [0, 1, 2]}),
        startingOffsets=json.dumps({topic: {"0": 5, "1": -2, "2": 19}}),
        endingOffsets=json.dumps({topic: {"0": 15, "1": -1, "2": 19}})).load()
    got = rows_of(df, "partition", "offset", "value")
    assert got == ([(0, o, b"0-%d" % o) for o in range(5, 15)]
                   + [(1, o, b"1-%d" % o) for o in range(20)])


def test_min_partitions_splits_cover_every_offset_exactly_once(mock_broker, new_topic, produce,
                                                               kafka_reader):
    topic = new_topic(mock_broker, 2)
    produce(mock_broker, topic, 0, [b"a"] * 97)
    produce(mock_broker, topic, 1, [b"b"] * 13)
    df = kafka_reader(mock_broker, subscribe=topic, minPartitions="9").load()
    assert df.rdd.getNumPartitions() >= 9
    got = rows_of(df, "partition", "offset")
    assert got == [(0, o) for o in range(97)] + [(1, o) for o in range(13)]


def test_worker_slots_read_only_their_partitions(mock_broker, new_topic, produce, kafka_reader):
    topic = new_topic(mock_broker, 4)
    for p in range(4):
        produce(mock_broker, topic, p, [b"%d" % p] * 3)
    df = kafka_reader(mock_broker, subscribePattern=topic.replace("-", "[-]"),
                      numWorkers="2", workerSlot="1").load()
    assert rows_of(df, "partition", "offset") == [(p, o) for p in (1, 3) for o in range(3)]


@pytest.fixture
def aged_out_topic(mock_cluster, produce):
    """A topic whose first offsets the mock cluster's retention (~5 MiB) deleted."""
    topic = "aged"
    mock_cluster.create_topic(topic, 1)
    for _ in range(8):  # 8 x 100 x 10 KiB
        produce(mock_cluster, topic, 0, [bytes(10240)] * 100)
    with Admin(mock_cluster.bootstrap_servers) as admin:
        low, high = admin.watermarks(topic, 0)
    assert 0 < low < high == 800
    return topic, low, high


def test_fail_on_data_loss_true_fails_the_query(mock_cluster, aged_out_topic, kafka_reader):
    topic, low, _ = aged_out_topic
    df = kafka_reader(mock_cluster, assign=json.dumps({topic: [0]}),
                      startingOffsets=json.dumps({topic: {"0": 0}})).load()
    with pytest.raises(Exception) as ei:
        df.select("offset").collect()
    text = str(ei.value)
    assert "DataLossError" in text and f"offsets [0, {low}) of {topic}-0 are gone" in text
    assert "failOnDataLoss" in text


def test_fail_on_data_loss_false_skips_what_is_gone(mock_cluster, aged_out_topic, kafka_reader):
    topic, low, high = aged_out_topic
    df = kafka_reader(mock_cluster, assign=json.dumps({topic: [0]}), failOnDataLoss="false",
                      startingOffsets=json.dumps({topic: {"0": 0}})).load()
    assert [r.offset for r in df.select("offset").orderBy("offset").collect()] == list(
        range(low, high))



def test_fail_on_data_loss_false_stream_reads_what_is_left_once(mock_cluster, aged_out_topic,
                                                               kafka_reader, tmp_path):
    """KafkaDontFailOnDataLossSuite "failOnDataLoss=false should not return duplicated
    records: microbatch v2" (the batch variant is the test above)."""
    topic, low, high = aged_out_topic
    seen: list[int] = []
    df = kafka_reader(mock_cluster, stream=True, subscribe=topic, failOnDataLoss="false",
                      startingOffsets=json.dumps({topic: {"0": 0}}),
                      **{"kafkaConsumer.pollTimeoutMs": "1000"}).load()
    query = (df.select("offset").writeStream.trigger(availableNow=True)
             .foreachBatch(lambda b, _id: seen.extend(r.offset for r in b.collect()))
             .option("checkpointLocation", str(tmp_path / "cp")).start())
    try:
        assert query.awaitTermination(120)
    finally:
        query.stop()
    assert query.exception() is None
    assert sorted(seen) == list(range(low, high))  # no duplicates, nothing below low
