"""rdk.Admin.create_partitions: argument checks, the error of brokers that cannot add
partitions, and growing topics on Apache Kafka.

Which brokers add partitions: Apache Kafka does (the session's KafkaCluster, or the
RDK_BROKERS cluster; skipped with the reason where its jars are missing). Tansu answers every CreatePartitions
request with _UNSUPPORTED_FEATURE (it does not implement KIP-195). librdkafka's mock cluster
never answers it: the request waits for a controller until its timeout (_TIMED_OUT).
"""

from __future__ import annotations

import os
import time
import uuid

import pytest

from rdk import Admin, KafkaError
from rdk.mock import RunningCluster


def name(prefix="parts"):
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def kafka(_brokers):
    """Apache Kafka: the RDK_BROKERS cluster when set, else the session's 1-node KafkaCluster
    (tests/conftest.py; skipped with the reason when its jars or java are missing)."""
    if os.environ.get("RDK_BROKERS"):
        return RunningCluster(os.environ["RDK_BROKERS"])
    return _brokers.get("kafka")


# -- arguments: checked before any request -------------------------------------------------

@pytest.mark.parametrize(("totals", "error", "message"), [
    ([("t", 3)], TypeError, r"create_partitions: expected \{topic: new total partition count\}, "
                            r"got list"),
    ("t", TypeError, "create_partitions: expected .* got str"),
    ({3: 3}, TypeError, "topic must be str, got int"),
    ({"no spaces": 3}, ValueError, "'no spaces' is not a legal Kafka topic name"),
    ({"t": "3"}, TypeError, "topic 't': new total partition count must be int, got str"),
    ({"t": True}, TypeError, "topic 't': new total partition count must be int, got bool"),
    ({"t": 2.0}, TypeError, "topic 't': new total partition count must be int, got float"),
    ({"t": 0}, ValueError, "topic 't': new total partition count must be a positive int, got 0"),
    ({"t": -1}, ValueError, "topic 't': new total partition count must be a positive int, got -1"),
    ({"t": 2**31}, ValueError, "topic 't': new total partition count must be <= 2147483647"),
    # librdkafka's own bound (RD_KAFKA_MAX_PARTITIONS), raised from NewPartitions_new
    ({"t": 100_001}, ValueError, "topic 't': new_total_cnt out of expected range 1..100000"),
    # the bad entry is found whatever its place: the good one before it is never sent
    ({"good": 4, "bad": 0}, ValueError, "topic 'bad': new total partition count must be a positive"),
])
def test_bad_arguments_raise_naming_the_bad_thing_before_any_request(totals, error, message):
    # An address where nothing listens: a request sent would end in _TIMED_OUT, not this error.
    with Admin("127.0.0.1:9", {"log_level": 0}) as admin:
        started = time.monotonic()
        with pytest.raises(error, match=message):
            admin.create_partitions(totals, timeout=5)
        assert time.monotonic() - started < 4, "a request was sent before the check (it waits out timeout=5)"


@pytest.mark.parametrize(("timeout", "error", "message"), [
    (-1, ValueError, "timeout must be >= 0 seconds, got -1"),
    ("5", TypeError, "timeout must be a number of seconds, got str"),
    (float("nan"), ValueError, "timeout must be >= 0 seconds, got nan"),
])
def test_a_bad_timeout_is_refused(timeout, error, message):
    with Admin("127.0.0.1:9", {"log_level": 0}) as admin, pytest.raises(error, match=message):
        admin.create_partitions({"t": 3}, timeout=timeout)


def test_nothing_to_do_sends_nothing():
    with Admin("127.0.0.1:9", {"log_level": 0}) as admin:
        started = time.monotonic()
        admin.create_partitions({}, timeout=5)
        assert time.monotonic() - started < 4  # a request sent would wait out timeout=5


# -- brokers that cannot add partitions ----------------------------------------------------

def test_tansu_answers_unsupported_feature_and_the_topic_keeps_its_partitions(tansu, new_topic):
    topic = new_topic(tansu, 2)
    with Admin(tansu.bootstrap_servers) as admin:
        for totals in ({topic: 5}, {name("never"): 3}):  # an unknown topic: the same answer
            with pytest.raises(KafkaError) as ei:
                admin.create_partitions(totals, timeout=10)
            assert ei.value.name == "_UNSUPPORTED_FEATURE"
            assert "CreatePartitions" in str(ei.value) and "_UNSUPPORTED_FEATURE" in str(ei.value)
            assert f"create_partitions of {list(totals)!r}" in str(ei.value)  # names the request
        assert admin.partition_count(topic) == 2


def test_the_mock_cluster_never_answers(mock_cluster):
    mock_cluster.create_topic("grow", 2)
    with Admin(mock_cluster.bootstrap_servers) as admin:
        with pytest.raises(KafkaError) as ei:
            admin.create_partitions({"grow": 3}, timeout=1)
        assert ei.value.name == "_TIMED_OUT" and "controller" in str(ei.value)
        assert admin.partition_count("grow") == 2


# -- Apache Kafka ----------------------------------------------------------------------------

@pytest.mark.kafka
def test_kafka_grows_a_topic_from_2_to_5_partitions_and_writes_reach_the_new_ones(kafka):
    from rdk import Producer

    topic, other = name(), name()
    with Admin(kafka.bootstrap_servers) as admin:
        admin.create_topics({topic: 2, other: 1})
        admin.create_partitions({topic: 5, other: 2})
        assert admin.partition_count(topic) == 5 and admin.partition_count(other) == 2
        listed = {t.name: t for t in admin.list_topics()}[topic]
        assert [p.id for p in listed.partitions] == [0, 1, 2, 3, 4]
        with Producer(kafka.bootstrap_servers, queue_buffering_max_ms=5) as p:
            p.send(topic, 4, [b"x"] * 3)
            assert p.flush(30) == 0
        assert admin.watermarks(topic, 4) == (0, 3)


@pytest.mark.kafka
def test_kafka_refuses_to_shrink_or_keep_the_count(kafka):
    topic = name()
    with Admin(kafka.bootstrap_servers) as admin:
        admin.create_topics({topic: 3})
        for total in (2, 3):
            with pytest.raises(KafkaError) as ei:
                admin.create_partitions({topic: total})
            assert ei.value.name == "INVALID_PARTITIONS" and repr(topic) in str(ei.value)
        assert admin.partition_count(topic) == 3


@pytest.mark.kafka
def test_kafka_names_an_unknown_topic(kafka):
    missing = name("never")
    with Admin(kafka.bootstrap_servers) as admin:
        with pytest.raises(KafkaError) as ei:
            admin.create_partitions({missing: 3})
        assert ei.value.name == "UNKNOWN_TOPIC_OR_PART" and repr(missing) in str(ei.value)
        assert missing not in {t.name for t in admin.list_topics()}
