"""rdk.Admin on real brokers: topic create/delete/list, watermarks (right on Tansu too),
offsets_for_times, errors that name the topic."""

from __future__ import annotations

import time
import uuid

import pytest
from helpers import wait_until

from rdk import Admin, KafkaError, Producer
from rdk.errors import ClosedError

NO_ADMIN_ON_MOCK = ("librdkafka's mock cluster implements neither CreateTopics nor DeleteTopics "
                    "(its controller never answers); topics there come from MockCluster.create_topic")


def name(prefix="adm"):
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def admin(broker):
    with Admin(broker.bootstrap_servers) as a:
        yield a


def needs_create_topics(broker):
    if broker.kind == "mock":
        pytest.skip(NO_ADMIN_ON_MOCK)


def topics_by_name(admin):
    return {t.name: t for t in admin.list_topics()}


def listed_once(admin, condition, what):
    """The listing once ``condition(listing)`` holds. Apache Kafka answers CreateTopics /
    DeleteTopics when its controller has committed the change; the broker answering
    Metadata applies it a moment later (KRaft metadata propagation), so the listing is
    waited for there. Tansu and the mock cluster list the change at once."""
    def ready():
        listed = topics_by_name(admin)
        return listed if condition(listed) else None

    return wait_until(ready, 30, what)


def test_create_topics_from_a_dict_and_from_tuples(broker, admin):
    needs_create_topics(broker)
    a, b, c, d = name(), name(), name(), name()
    admin.create_topics({a: 3, b: 1})
    admin.create_topics([(c, 2, 1, {"retention.ms": 3_600_000}), (d, 1)])
    listed = listed_once(admin, lambda topics: {a, b, c, d} <= set(topics), "the four topics listed")
    assert {t: len(listed[t].partitions) for t in (a, b, c, d)} == {a: 3, b: 1, c: 2, d: 1}


def test_create_topics_is_idempotent_only_when_asked_and_errors_name_the_topic(broker, admin):
    needs_create_topics(broker)
    t = name()
    admin.create_topics({t: 2})
    admin.create_topics({t: 2}, exist_ok=True)
    with pytest.raises(KafkaError) as ei:
        admin.create_topics({t: 2})
    assert ei.value.name == "TOPIC_ALREADY_EXISTS" and repr(t) in str(ei.value)


def test_delete_topics_removes_them_and_unknown_names_are_named_in_the_error(broker, admin):
    needs_create_topics(broker)
    keep, gone = name(), name()
    admin.create_topics({keep: 1, gone: 1})
    admin.delete_topics([gone])
    listed = listed_once(admin, lambda topics: gone not in topics, "the deleted topic unlisted")
    assert keep in listed and gone not in listed
    missing = name("never")
    with pytest.raises(KafkaError) as ei:
        admin.delete_topics([missing])
    assert ei.value.name == "UNKNOWN_TOPIC_OR_PART" and repr(missing) in str(ei.value)


def test_list_topics_gives_partitions_with_leader_replicas_and_isr(broker, admin, new_topic):
    topic = new_topic(broker, 3)
    listed = topics_by_name(admin)[topic]
    assert [p.id for p in listed.partitions] == [0, 1, 2]
    for p in listed.partitions:
        assert p.error is None
        assert p.leader >= 0 and p.leader in p.replicas
        assert p.replicas and set(p.isrs) <= set(p.replicas)


def test_watermarks_are_exact_after_100_then_200_messages(broker, admin, new_topic):
    topic = new_topic(broker, 2)
    with Producer(broker.bootstrap_servers, queue_buffering_max_ms=5) as p:
        p.send(topic, 0, [b"a%d" % i for i in range(100)])
        assert p.flush(30) == 0
        assert admin.watermarks(topic, 0) == (0, 100)
        p.send(topic, 0, [b"b%d" % i for i in range(100)])
        assert p.flush(30) == 0
        assert admin.watermarks(topic, 0) == (0, 200)
    assert admin.watermarks(topic, 1) == (0, 0)


def test_topic_watermarks_gives_every_partition_in_one_lookup(broker, admin, new_topic):
    topic = new_topic(broker, 3)
    with Producer(broker.bootstrap_servers, queue_buffering_max_ms=5) as p:
        p.send(topic, 0, [b"a%d" % i for i in range(100)])
        p.send(topic, 2, [b"c%d" % i for i in range(7)])
        assert p.flush(30) == 0
    assert admin.topic_watermarks(topic) == {0: (0, 100), 1: (0, 0), 2: (0, 7)}
    marks = admin.topic_watermarks(topic, [2, 0, 2])
    assert list(marks.items()) == [(2, (0, 7)), (0, (0, 100))]  # the order asked, once each
    assert admin.topic_watermarks(topic, []) == {}
    assert marks[0] == admin.watermarks(topic, 0)
    with pytest.raises(KafkaError) as unknown:
        admin.topic_watermarks(name("missing"))
    assert unknown.value.name == "UNKNOWN_TOPIC_OR_PART"
    with pytest.raises(ValueError, match="partition"):
        admin.topic_watermarks(topic, [0, -1])
    with pytest.raises(TypeError, match="partitions"):
        admin.topic_watermarks(topic, "01")


def test_partition_count_never_creates_the_topic(broker, admin, new_topic):
    assert admin.partition_count(new_topic(broker, 4)) == 4
    missing = name("missing")
    with pytest.raises(KafkaError) as ei:
        admin.partition_count(missing)
    assert ei.value.name == "UNKNOWN_TOPIC_OR_PART" and repr(missing) in str(ei.value)
    assert missing not in topics_by_name(admin)


def now_ms() -> int:
    return int(time.time() * 1000)


def next_millisecond() -> int:
    """A millisecond that has not begun yet; returns once it has (so later appends carry it or later)."""
    mark = now_ms() + 1
    while now_ms() < mark:
        time.sleep(0.001)
    return mark


def test_offsets_for_times_finds_the_first_offset_at_or_after_each_time(broker, admin, new_topic):
    if broker.kind == "mock":
        pytest.skip("librdkafka's mock cluster answers every timestamp lookup with -1 "
                    "(it keeps no time index)")
    topic = new_topic(broker, 2)
    # Timestamps taken from the clock, not set on the messages: Tansu matches lookups
    # against the time it appended a batch, Kafka against the message's CreateTime.
    before = next_millisecond()
    with Producer(broker.bootstrap_servers, queue_buffering_max_ms=5) as p:
        p.send(topic, 0, [b"early"] * 100)
        p.send(topic, 1, [b"one"] * 3)
        assert p.flush(30) == 0
        between = next_millisecond()
        p.send(topic, 0, [b"late"] * 100)
        assert p.flush(30) == 0
    assert admin.offsets_for_times(topic, {0: before, 1: before}) == {0: 0, 1: 0}
    assert admin.offsets_for_times(topic, {0: between}) == {0: 100}


def test_admin_checks_its_arguments_before_asking_the_broker():
    with Admin("127.0.0.1:9", {"log_level": 0}) as a:
        with pytest.raises(ValueError, match="topic 't': partitions must be a positive int, got 0"):
            a.create_topics({"t": 0})
        with pytest.raises(TypeError, match="expected \\(name, partitions, replication, config\\)"):
            a.create_topics(["just-a-name"])
        with pytest.raises(ValueError, match="not a legal Kafka topic name"):
            a.delete_topics(["no spaces"])
        with pytest.raises(TypeError, match="partition and timestamp must be int"):
            a.offsets_for_times("t", {"0": 5}, timeout=1)
        with pytest.raises(TypeError, match="timestamps must be a dict"):
            a.offsets_for_times("t", [(0, 5)], timeout=1)
        with pytest.raises(TypeError, match="topic 't': partitions must be int, got str"):
            a.create_topics({"t": "3"})
        with pytest.raises(TypeError, match="topic 't': config"):
            a.create_topics([("t", 1, 1, "cleanup.policy=compact")])
    with pytest.raises(TypeError, match="broker"):
        Admin(5)
    with pytest.raises(TypeError, match="driver_options"):
        Admin("127.0.0.1:9", ["log_level", 0])
    with pytest.raises(ClosedError):
        a.list_topics()


def test_watermarks_ask_again_after_a_retriable_answer(mock_cluster):
    """NOT_LEADER_FOR_PARTITION (Apache Kafka answers it for a moment after creating a topic
    of 1 024 partitions) is asked again within the timeout; an answer that cannot change
    raises at once. The low watermark stays right after a retried answer (rdk asks with
    offsets_for_times: librdkafka's query_watermark_offsets reported the high as the low)."""
    topic = name()
    mock_cluster.create_topic(topic, 1)
    with Producer(mock_cluster.bootstrap_servers, queue_buffering_max_ms=5) as p:
        p.send(topic, 0, [b"m%d" % i for i in range(5)])
        assert p.flush(30) == 0
    with Admin(mock_cluster.bootstrap_servers) as admin:
        for _ in range(3):  # librdkafka's query_watermark_offsets answered (5, 5) here, mostly
            mock_cluster.push_request_errors("ListOffsets", ["NOT_LEADER_FOR_PARTITION"] * 3)
            assert admin.watermarks(topic, 0, timeout=20) == (0, 5)
            assert admin.query_watermarks(topic, 0, timeout=20) == (0, 5)
        mock_cluster.push_request_errors("ListOffsets", ["TOPIC_AUTHORIZATION_FAILED"])
        with pytest.raises(KafkaError, match="TOPIC_AUTHORIZATION_FAILED") as raised:
            admin.watermarks(topic, 0, timeout=20)
        assert not raised.value.retriable
