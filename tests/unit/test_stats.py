"""Derived consumer figures from librdkafka's statistics JSON."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from rdk.stats import consumer_stats, fetch_queue_count, send_queue_length


def rdkafka_stats(topic, parts):
    """The shape librdkafka emits (only the fields rdk reads, plus noise)."""
    return json.loads(json.dumps({
        "name": "rdkafka#consumer-1", "type": "consumer", "msg_cnt": 0,
        "topics": {topic: {"topic": topic, "partitions": {
            str(p): {"partition": p, "fetch_state": "active", "fetchq_cnt": q,
                     "next_offset": nxt, "lo_offset": lo, "hi_offset": hi, "ls_offset": hi,
                     "consumer_lag": -1}
            for p, (q, nxt, lo, hi) in parts.items()} | {"-1": {"partition": -1}}}}}))


def test_figures_per_partition_and_summed_over_owned_partitions_only():
    s = rdkafka_stats("t", {0: (10, 100, 0, 150), 1: (0, 40, 20, 40), 2: (99, 0, 0, 999)})
    info = consumer_stats(s, "t", [0, 1], buffered={0: 5, 1: 7})
    assert info.partitions[0].waiting_kafka == 50
    assert info.partitions[0].waiting_local == 15
    assert info.partitions[0].kafka_log_size == 150
    assert info.partitions[1].waiting_kafka == 0
    assert info.partitions[1].waiting_local == 7
    assert info.partitions[1].kafka_log_size == 20
    assert (info.waiting_kafka, info.waiting_local, info.kafka_log_size) == (50, 22, 170)
    assert set(info.partitions) == {0, 1}  # partition 2 is another worker's
    assert info.rdkafka_stats["name"] == "rdkafka#consumer-1"


def test_waiting_kafka_is_floored_at_zero():
    s = rdkafka_stats("t", {0: (0, 500, 0, 400)})  # next fetch beyond the high watermark
    assert consumer_stats(s, "t", [0]).waiting_kafka == 0


def test_unknown_offsets_before_the_first_fetch_use_rdk_s_own_position():
    s = rdkafka_stats("t", {0: (0, -1001, -1, 300), 1: (0, -1001, -1, -1)})
    info = consumer_stats(s, "t", [0, 1], next_offsets={0: 120, 1: -1})
    assert info.partitions[0].waiting_kafka == 180
    assert info.partitions[1].waiting_kafka == 0  # high watermark unknown: nothing claimed
    assert info.partitions[1].kafka_log_size == 0


def test_missing_topic_gives_zeros_not_an_error():
    info = consumer_stats({"topics": {}}, "t", [0, 3], buffered={3: 2})
    assert (info.waiting_kafka, info.waiting_local, info.kafka_log_size) == (0, 2, 0)


def test_fetch_queue_count_and_producer_queue_length():
    s = rdkafka_stats("t", {0: (4, 0, 0, 0), 1: (6, 0, 0, 0)})
    assert fetch_queue_count(s, "t", [0, 1]) == 10
    assert fetch_queue_count(s, "t", [1]) == 6
    assert send_queue_length({"msg_cnt": 17}) == 17
    assert send_queue_length({}) == 0


@settings(deadline=None)
@given(st.dictionaries(st.integers(0, 7), st.tuples(st.integers(-5, 10**6), st.integers(-1001, 10**6),
                                                     st.integers(-1, 10**6), st.integers(-1, 10**6))))
def test_figures_are_never_negative(parts):
    info = consumer_stats(rdkafka_stats("t", parts), "t", list(parts))
    assert info.waiting_kafka >= 0 and info.waiting_local >= 0 and info.kafka_log_size >= 0
