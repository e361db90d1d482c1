"""Derived consumer figures from librdkafka's statistics JSON."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from rdk.stats import consumer_stats, fetch_queue_count, send_queue_length, topics_stats


def rdkafka_stats(topic, parts, fetchq=0):
    """The shape librdkafka emits (only the fields rdk reads, plus noise). ``parts`` maps a
    partition to (next_offset, app_offset, lo_offset, hi_offset); the partitions share one
    fetch queue, so each reports its length ``fetchq``, as librdkafka does."""
    return json.loads(json.dumps({
        "name": "rdkafka#consumer-1", "type": "consumer", "msg_cnt": 0,
        "topics": {topic: {"topic": topic, "partitions": {
            str(p): {"partition": p, "fetch_state": "active", "fetchq_cnt": fetchq,
                     "next_offset": nxt, "app_offset": app, "lo_offset": lo, "hi_offset": hi,
                     "ls_offset": hi, "consumer_lag": -1}
            for p, (nxt, app, lo, hi) in parts.items()} | {"-1": {"partition": -1}}}}}))


def test_figures_per_partition_and_summed_over_owned_partitions_only():
    s = rdkafka_stats("t", {0: (100, 90, 0, 150), 1: (40, 40, 20, 40), 2: (0, 0, 0, 999)}, fetchq=10)
    info = consumer_stats(s, "t", [0, 1], buffered={0: 5, 1: 7})
    p0, p1 = info.partitions[0], info.partitions[1]
    assert (p0.waiting_kafka, p0.queued, p0.waiting_local, p0.kafka_log_size) == (50, 10, 15, 150)
    assert (p1.waiting_kafka, p1.queued, p1.waiting_local, p1.kafka_log_size) == (0, 10, 17, 20)
    assert (info.waiting_kafka, info.waiting_local, info.kafka_log_size) == (50, 32, 170)
    assert set(info.partitions) == {0, 1}  # partition 2 is another worker's
    assert info.rdkafka_stats["name"] == "rdkafka#consumer-1"


def test_a_shared_fetch_queue_is_counted_once_and_split_by_partition():
    # one queue of 30 messages, as rdk's consumer has: 10 of partition 0, 20 of partition 1
    s = rdkafka_stats("t", {0: (110, 100, 0, 110), 1: (520, 500, 0, 520)}, fetchq=30)
    info = consumer_stats(s, "t", [0, 1], shared_queue=True)
    assert [info.partitions[p].queued for p in (0, 1)] == [10, 20]
    assert info.waiting_local == 30
    assert fetch_queue_count(s, "t", [0, 1]) == 30
    # paused and drained: the queue is 0 for every partition and what was dropped from it
    # is waiting on the broker again, whatever librdkafka's next_offset still says
    s = rdkafka_stats("t", {0: (110, 100, 0, 110), 1: (520, 500, 0, 520)}, fetchq=0)
    info = consumer_stats(s, "t", [0, 1], shared_queue=True)
    assert (info.waiting_local, info.waiting_kafka) == (0, 30)
    # nothing handed out yet (no positions to split by): split evenly, summing exactly
    s = rdkafka_stats("t", {0: (-1001, -1001, 0, 9), 1: (-1001, -1001, 0, 9)}, fetchq=7)
    assert sorted(p.queued for p in consumer_stats(s, "t", [0, 1], shared_queue=True)
                  .partitions.values()) == [3, 4]


def test_several_topics_are_summed_and_their_shared_queue_counted_once():
    a = rdkafka_stats("a", {0: (110, 100, 0, 150), 1: (50, 50, 0, 50)}, fetchq=30)
    b = rdkafka_stats("b", {0: (220, 200, 10, 260)}, fetchq=30)
    doc = {**a, "topics": {**a["topics"], **b["topics"]}}
    info = topics_stats(doc, [("a", 0), ("a", 1), ("b", 0)], buffered={("b", 0): 4},
                        shared_queue=True, first_topic="a")
    assert set(info.topics) == {"a", "b"} and set(info.topics["a"]) == {0, 1}
    assert info.partitions is info.topics["a"]
    pa, pb = info.topics["a"][0], info.topics["b"][0]
    assert (pa.topic, pb.topic) == ("a", "b")
    assert (pa.queued, pb.queued) == (10, 20)  # one queue of 30, split by what each fetched
    assert (info.waiting_kafka, info.waiting_local, info.kafka_log_size) == (40 + 40, 34, 200 + 250)
    # the one-topic form is the same computation
    one = consumer_stats(a, "a", [0, 1], shared_queue=True)
    assert one.partitions == topics_stats(a, [("a", 0), ("a", 1)], shared_queue=True).partitions


def test_waiting_kafka_is_floored_at_zero():
    s = rdkafka_stats("t", {0: (500, 500, 0, 400)})  # next fetch beyond the high watermark
    assert consumer_stats(s, "t", [0]).waiting_kafka == 0


def test_unknown_offsets_before_the_first_fetch_use_rdk_s_own_position():
    s = rdkafka_stats("t", {0: (-1001, -1001, -1, 300), 1: (-1001, -1001, -1, -1)})
    info = consumer_stats(s, "t", [0, 1], next_offsets={0: 120, 1: -1})
    assert info.partitions[0].waiting_kafka == 180
    assert info.partitions[1].waiting_kafka == 0  # high watermark unknown: nothing claimed
    assert info.partitions[1].kafka_log_size == 0


def test_missing_topic_gives_zeros_not_an_error():
    info = consumer_stats({"topics": {}}, "t", [0, 3], buffered={3: 2})
    assert (info.waiting_kafka, info.waiting_local, info.kafka_log_size) == (0, 2, 0)


def test_producer_queue_length():
    assert send_queue_length({"msg_cnt": 17}) == 17
    assert send_queue_length({}) == 0


@settings(deadline=None)
@given(st.dictionaries(st.integers(0, 7), st.tuples(st.integers(-1001, 10**6), st.integers(-1001, 10**6),
                                                     st.integers(-1, 10**6), st.integers(-1, 10**6))),
       st.integers(-5, 10**6), st.booleans())
def test_figures_are_never_negative_and_a_shared_queue_adds_up(parts, fetchq, shared):
    info = consumer_stats(rdkafka_stats("t", parts, fetchq), "t", list(parts), shared_queue=shared)
    assert info.waiting_kafka >= 0 and info.waiting_local >= 0 and info.kafka_log_size >= 0
    if shared and parts:
        assert sum(p.queued for p in info.partitions.values()) == max(0, fetchq)
