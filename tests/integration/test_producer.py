"""rdk.Producer against real brokers (librdkafka's mock cluster and Tansu): what is sent
is what is stored, balancers route as their reference algorithms, delivery accounting
is exact under injected faults, queue-full policies, stats, flush and stop."""

from __future__ import annotations

import itertools
import logging
import threading
import time
import zlib

import pytest
from helpers import wait_until

from rdk import Admin, KafkaError, Message, Producer, QueueFullError, _binding
from rdk._binding import ffi, lib
from rdk._binding.fetch import Fetcher
from rdk.errors import ClosedError

# ---- helpers -----------------------------------------------------------------------------


def read_back(broker, topic, partitions, count, timeout=30.0):
    """Every message of ``topic`` (``count`` expected) as Message tuples, by partition then offset."""
    client = _binding.Client("consumer", {"bootstrap.servers": broker.bootstrap_servers})
    fetcher = Fetcher(client, topic)
    rows = []
    try:
        for p in range(partitions):
            fetcher.start(p, lib.RD_KAFKA_OFFSET_BEGINNING)
        deadline = time.monotonic() + timeout
        while len(rows) < count and time.monotonic() < deadline:
            b = fetcher.fetch(200)
            for i in range(b.n):
                assert b.err[i] == 0, _binding.err_name(b.err[i])
                headers = [(cell_text(b.header_names, b.header_name_offsets, h),
                            cell(b.header_values, b.header_value_offsets, b.header_value_valid, h))
                           for h in range(b.header_index[i], b.header_index[i + 1])]
                rows.append(Message(cell(b.values, b.value_offsets, b.value_valid, i),
                                    cell(b.keys, b.key_offsets, b.key_valid, i),
                                    headers or None, b.timestamp[i], topic=topic,
                                    partition=b.partition[i], offset=b.offset[i]))
    finally:
        fetcher.close()
        client.close()
    assert len(rows) == count, f"read {len(rows)} of {count} messages back"
    return sorted(rows, key=lambda m: (m.partition, m.offset))


def cell(buf, offsets, valid, j):
    if not (valid[j >> 3] >> (j & 7)) & 1:
        return None
    return ffi.unpack(buf + offsets[j], offsets[j + 1] - offsets[j])


def cell_text(buf, offsets, j):
    return ffi.unpack(buf + offsets[j], offsets[j + 1] - offsets[j]).decode()


class Settled:
    """on_delivery target: records (delivered, failures) per call and the calling thread."""

    def __init__(self, calls=1):
        self.calls = []
        self.threads = set()
        self.expected = calls
        self.done = threading.Event()

    def __call__(self, delivered, failures):
        self.calls.append((delivered, failures))
        self.threads.add(threading.current_thread().name)
        if len(self.calls) >= self.expected:
            self.done.set()

    def wait(self, timeout=30.0):
        assert self.done.wait(timeout), f"only {len(self.calls)} of {self.expected} sends settled"
        return self.calls


def fnv1a_sarama(key: bytes, partitions: int) -> int:
    """sarama's NewHashPartitioner (and kafka-go's Hash): int32(FNV-1a-32) mod n, made positive."""
    h = 0x811C9DC5
    for byte in key:
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    signed = h - (1 << 32) if h & 0x80000000 else h
    p = abs(signed) % partitions  # Go's % truncates toward zero; abs() first is the same
    return p


def murmur2_java(key: bytes) -> int:
    """Kafka's Utils.murmur2 (the Java client's default partitioner)."""
    m, mask = 0x5BD1E995, 0xFFFFFFFF
    h = (0x9747B28C ^ len(key)) & mask
    n4 = len(key) // 4
    for i in range(n4):
        k = int.from_bytes(key[4 * i:4 * i + 4], "little")
        k = (k * m) & mask
        k ^= k >> 24
        k = (k * m) & mask
        h = ((h * m) & mask) ^ k
    tail, rem = key[4 * n4:], len(key) % 4
    if rem == 3:
        h ^= tail[2] << 16
    if rem >= 2:
        h ^= tail[1] << 8
    if rem >= 1:
        h ^= tail[0]
        h = (h * m) & mask
    h ^= h >> 13
    h = (h * m) & mask
    h ^= h >> 15
    return h


KEYS = [b"", b"a", b"user-1", b"user-2", b"\x00\xff\x10", "ключ".encode(), b"order-12345",
        b"k" * 37] + [f"key-{i}".encode() for i in range(40)]


# ---- round trips -------------------------------------------------------------------------


def test_binary_payloads_keys_headers_and_timestamps_round_trip(broker, new_topic):
    topic = new_topic(broker, 1)
    ts = 1_700_000_000_123
    sent = [
        b"\x00\x01\x00binary\x00",
        b"",
        bytearray(b"from a bytearray\x00"),
        memoryview(b"from a memoryview"),
        "unicode ✓ text",
        (b"k\x00ey", b"value\x00with NUL"),
        (None, b"no key"),
        (b"", b""),
        (b"tombstone-key", None),
        Message(b"with headers", b"hk", [("trace", b"\x00id"), ("empty", b""), ("none", None)]),
        Message(b"with a timestamp", timestamp=ts),
        Message("str value", "str key", {"h": "v"}, ts + 1),
    ]
    settled = Settled()
    with Producer(broker.bootstrap_servers, queue_buffering_max_ms=5) as p:
        result = p.send(topic, 0, sent, on_delivery=settled)
        assert result.enqueued == len(sent) and isinstance(result.send_queue_length, int)
        assert settled.wait() == [(len(sent), [])]
    rows = read_back(broker, topic, 1, len(sent))
    assert [r.offset for r in rows] == list(range(len(sent)))
    assert [(r.value, r.key) for r in rows] == [
        (b"\x00\x01\x00binary\x00", None), (b"", None), (b"from a bytearray\x00", None),
        (b"from a memoryview", None), ("unicode ✓ text".encode(), None),
        (b"value\x00with NUL", b"k\x00ey"), (b"no key", None), (b"", b""),
        (None, b"tombstone-key"), (b"with headers", b"hk"), (b"with a timestamp", None),
        (b"str value", b"str key"),
    ]
    assert rows[9].headers == [("trace", b"\x00id"), ("empty", b""), ("none", None)]
    assert rows[11].headers == [("h", b"v")]
    assert [r.headers for r in rows[:9]] == [None] * 9
    assert rows[10].timestamp == ts and rows[11].timestamp == ts + 1


def test_many_sends_arrive_complete_and_in_order(broker, new_topic):
    topic = new_topic(broker, 1)
    batches = [[b"%d-%d" % (s, i) for i in range(1000)] for s in range(5)]
    settled = Settled(calls=len(batches))
    with Producer(broker.bootstrap_servers, queue_buffering_max_ms=5) as p:
        for batch in batches:
            assert p.send(topic, 0, batch, on_delivery=settled).enqueued == 1000
        assert p.flush(30) == 0
        assert sorted(d for d, _ in settled.wait()) == [1000] * 5
    rows = read_back(broker, topic, 1, 5000)
    assert [r.value for r in rows] == [v for batch in batches for v in batch]


def test_on_delivery_runs_once_per_call_on_the_producers_thread(broker, new_topic):
    topic = new_topic(broker, 2)
    settled = Settled(calls=2)
    with Producer(broker.bootstrap_servers, queue_buffering_max_ms=5) as p:
        p.send(topic, 0, [b"a"] * 10, on_delivery=settled)
        p.send(topic, 1, [b"b"] * 7, on_delivery=settled)
        assert sorted(settled.wait()) == [(7, []), (10, [])]
    assert len(settled.threads) == 1 and settled.threads.pop().startswith("rdk-events-")
    assert threading.current_thread().name not in settled.threads


def test_empty_send_settles_at_once(broker, new_topic):
    topic = new_topic(broker, 1)
    settled = Settled()
    with Producer(broker.bootstrap_servers) as p:
        assert p.send(topic, 0, [], on_delivery=settled) == (0, 0)
        assert settled.wait(10) == [(0, [])]


def test_concurrent_sends_from_threads_are_all_accounted(broker, new_topic):
    topic = new_topic(broker, 4)
    settled = Settled(calls=4 * 20)

    def worker(w):
        for s in range(20):
            p.send(topic, None, [b"w%d-s%d-%d" % (w, s, i) for i in range(50)], on_delivery=settled)

    with Producer(broker.bootstrap_servers, queue_buffering_max_ms=5) as p:
        threads = [threading.Thread(target=worker, args=(w,)) for w in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert p.flush(30) == 0
        calls = settled.wait()
    assert sum(d for d, _ in calls) == 4000 and all(f == [] for _, f in calls)
    rows = read_back(broker, topic, 4, 4000)
    assert len({r.value for r in rows}) == 4000


# ---- partition count and balancers -------------------------------------------------------


def test_partition_count_and_unknown_topics_are_not_auto_created(broker, new_topic):
    topic = new_topic(broker, 3)
    missing = f"missing-{time.monotonic_ns()}"
    with Producer(broker.bootstrap_servers) as p:
        assert p.partition_count(topic) == 3
        with pytest.raises(KafkaError) as ei:
            p.partition_count(missing, timeout=10)
        assert ei.value.name == "UNKNOWN_TOPIC_OR_PART" and missing in str(ei.value)
    with Admin(broker.bootstrap_servers) as admin:
        assert missing not in {t.name for t in admin.list_topics()}


def test_c_balancers_need_an_existing_topic(broker):
    with Producer(broker.bootstrap_servers, balancer="round_robin") as p:
        with pytest.raises(KafkaError) as ei:
            p.send(f"missing-{time.monotonic_ns()}", None, [b"x"], timeout=10)
        assert ei.value.name == "UNKNOWN_TOPIC_OR_PART"
        assert p.send_queue_length == 0


def keyed_partitions(broker, new_topic, balancer, partitions=5):
    topic = new_topic(broker, partitions)
    with Producer(broker.bootstrap_servers, balancer=balancer, queue_buffering_max_ms=5) as p:
        # the partition count must be known to librdkafka before keyed messages are partitioned
        p.partition_count(topic)
        p.send(topic, None, [(k, b"v") for k in KEYS])
        assert p.flush(30) == 0
    return {r.key: r.partition for r in read_back(broker, topic, partitions, len(KEYS))}


def test_fnv1a_routes_keys_exactly_as_fnv1a32_mod_partitions_like_sarama(broker, new_topic):
    got = keyed_partitions(broker, new_topic, "fnv1a")
    assert got == {k: fnv1a_sarama(k, 5) for k in KEYS}
    # rdk's own C hash is the same FNV-1a-32
    assert all(lib.rdk_fnv1a32(k, len(k)) == zlib_free_fnv(k) for k in KEYS)


def zlib_free_fnv(key: bytes) -> int:
    h = 0x811C9DC5
    for byte in key:
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h


def test_murmur2_random_routes_keys_like_the_java_client(broker, new_topic):
    got = keyed_partitions(broker, new_topic, "murmur2_random")
    assert got == {k: (murmur2_java(k) & 0x7FFFFFFF) % 5 for k in KEYS}


def test_consistent_random_routes_nonempty_keys_by_crc32(broker, new_topic):
    got = keyed_partitions(broker, new_topic, "consistent_random")
    assert {k: p for k, p in got.items() if k} == {k: zlib.crc32(k) % 5 for k in KEYS if k}


def test_round_robin_cycles_through_partitions_in_order(broker, new_topic):
    topic = new_topic(broker, 3)
    with Producer(broker.bootstrap_servers, balancer="round_robin", queue_buffering_max_ms=5) as p:
        p.send(topic, None, [b"%d" % i for i in range(30)])
        p.send(topic, 2, [b"fixed"])  # an explicit partition bypasses the balancer
        p.send(topic, None, [b"%d" % i for i in range(30, 33)])
        assert p.flush(30) == 0
    rows = read_back(broker, topic, 3, 34)
    placed = {r.value: r.partition for r in rows}
    assert placed.pop(b"fixed") == 2
    assert placed == {b"%d" % i: i % 3 for i in range(33)}


def test_least_bytes_sends_each_message_to_the_partition_with_fewest_bytes(broker, new_topic):
    topic = new_topic(broker, 3)
    sizes = [100, 10, 10, 10, 50, 5, 200, 1, 1]
    with Producer(broker.bootstrap_servers, balancer="least_bytes", queue_buffering_max_ms=5) as p:
        p.send(topic, None, [bytes([65 + i]) * n for i, n in enumerate(sizes)])
        assert p.flush(30) == 0
    expected, load = {}, [0, 0, 0]
    for i, n in enumerate(sizes):
        best = min(range(3), key=lambda q: (load[q], q))
        load[best] += n
        expected[bytes([65 + i]) * n] = best
    assert {r.value: r.partition for r in read_back(broker, topic, 3, len(sizes))} == expected


def test_keyless_messages_stay_on_one_partition_for_a_window_then_move_on(broker, new_topic):
    topic = new_topic(broker, 4)
    with Producer(broker.bootstrap_servers, queue_buffering_max_ms=5,
                  driver_options={"batch.num.messages": 10}) as p:
        p.send(topic, None, [b"first"] * 10)  # librdkafka partitions these; rdk looks the count up
        assert p.flush(30) == 0
        # once the partition count is known, rdk keeps a partition for at most
        # batch.num.messages keyless messages (librdkafka's sticky partitioning)
        wait_until(lambda: topic in p._balancers, what="the background partition-count lookup")
        p.send(topic, None, [b"%03d" % i for i in range(60)])
        assert p.flush(30) == 0
    rows = read_back(broker, topic, 4, 70)
    numbered = sorted((r for r in rows if r.value != b"first"), key=lambda r: r.value)
    runs = [[r.partition for r in numbered[i:i + 10]] for i in range(0, 60, 10)]
    assert all(len(set(run)) == 1 for run in runs)
    assert all(a[0] != b[0] for a, b in itertools.pairwise(runs))


# ---- callbacks -----------------------------------------------------------------------------


def test_stats_callback_gives_queue_length_and_librdkafka_stats(broker, new_topic):
    topic = new_topic(broker, 1)
    seen = []
    arrived = threading.Event()

    def on_stats(info):
        seen.append(info)
        arrived.set()

    with Producer(broker.bootstrap_servers, stats_callback=on_stats, statistics_interval_ms=100) as p:
        p.send(topic, 0, [b"x"] * 5)
        assert arrived.wait(10)
    info = seen[0]
    assert isinstance(info.send_queue_length, int) and info.send_queue_length >= 0
    assert info.rdkafka_stats["type"] == "producer" and "brokers" in info.rdkafka_stats
    assert info.dropped == 0


def test_delivery_report_callback_stays_quiet_when_everything_is_delivered(broker, new_topic):
    topic = new_topic(broker, 1)
    reports = []
    with Producer(broker.bootstrap_servers, delivery_report_callback=reports.append,
                  queue_buffering_max_ms=5) as p:
        p.send(topic, 0, [b"x"] * 100)
        assert p.flush(30) == 0
    assert reports == []


def test_callback_exception_is_logged_and_later_callbacks_still_run(broker, new_topic, caplog):
    topic = new_topic(broker, 1)
    settled = Settled()

    def boom(delivered, failures):
        raise RuntimeError("boom in on_delivery")

    with caplog.at_level(logging.ERROR, logger="rdk"), \
            Producer(broker.bootstrap_servers, queue_buffering_max_ms=5) as p:
        p.send(topic, 0, [b"x"], on_delivery=boom)
        assert p.flush(30) == 0
        p.send(topic, 0, [b"y"], on_delivery=settled)
        assert settled.wait() == [(1, [])]
    assert any("boom in on_delivery" in (r.exc_text or "") or
               (r.exc_info and "boom in on_delivery" in str(r.exc_info[1])) for r in caplog.records)


def test_stop_drains_everything_before_returning(broker, new_topic):
    topic = new_topic(broker, 2)
    settled = Settled()
    p = Producer(broker.bootstrap_servers, queue_buffering_max_ms=200)
    p.send(topic, None, [b"m%d" % i for i in range(3000)], on_delivery=settled)
    assert p.stop(30) == 0
    assert settled.done.is_set() and settled.calls == [(3000, [])]
    with pytest.raises(ClosedError):
        p.send(topic, 0, [b"late"])
    with Admin(broker.bootstrap_servers) as admin:
        assert sum(admin.watermarks(topic, q)[1] for q in range(2)) == 3000


# ---- faults injected in the mock cluster ---------------------------------------------------


def test_injected_produce_errors_fail_exactly_the_messages_of_that_request(mock_cluster):
    mock_cluster.create_topic("faults", 1)
    reports = []
    first, second = Settled(), Settled()
    with Producer(mock_cluster.bootstrap_servers, delivery_report_callback=reports.append,
                  queue_buffering_max_ms=50) as p:
        p.send("faults", 0, [b"warm-up"])
        assert p.flush(10) == 0
        mock_cluster.push_request_errors("Produce", ["INVALID_RECORD"])
        sent = [b"doomed-%d" % i for i in range(100)]
        p.send("faults", 0, sent, on_delivery=first)
        (delivered, failures), = first.wait()
        p.send("faults", 0, [b"fine"] * 50, on_delivery=second)
        assert second.wait() == [(50, [])]
    assert delivered == 0 and len(failures) == 100
    assert [m.value for m, _ in failures] == sent
    assert {(m.topic, m.partition) for m, _ in failures} == {("faults", 0)}
    assert {e.name for _, e in failures} == {"INVALID_RECORD"}
    assert sum(len(r.errors) for r in reports) == 100
    counts = {}
    for r in reports:
        for e in r.rdkafka_errinfo:
            counts[e["errname"]] = counts.get(e["errname"], 0) + e["count"]
            assert e["errcode"] == _binding.ERROR_CODES["INVALID_RECORD"] and e["errstr"]
    assert counts == {"INVALID_RECORD": 100}


def test_message_timeout_with_brokers_down_fails_every_message(mock_cluster):
    mock_cluster.create_topic("down", 2)
    settled = Settled()
    reports = []
    with Producer(mock_cluster.bootstrap_servers, delivery_report_callback=reports.append,
                  driver_options={"message.timeout.ms": 500, "log_level": 0}) as p:
        assert p.partition_count("down") == 2
        for b in (1, 2, 3):
            mock_cluster.broker_set_down(b)
        p.send("down", 1, [b"a", b"b", b"c"], on_delivery=settled)
        (delivered, failures), = settled.wait(20)
        flushed = p.flush(5)
        assert flushed == 3 and flushed.queued == 0 and flushed.failed == 3  # not delivered: said
    assert delivered == 0
    assert [(m.value, m.partition, e.name) for m, e in failures] == [
        (v, 1, "_MSG_TIMED_OUT") for v in (b"a", b"b", b"c")]
    assert sum(e["count"] for r in reports for e in r.rdkafka_errinfo) == 3


def test_enqueue_errors_are_reported_not_silently_dropped(mock_cluster):
    mock_cluster.create_topic("big", 1)
    settled = Settled()
    reports = []
    with Producer(mock_cluster.bootstrap_servers, delivery_report_callback=reports.append,
                  queue_buffering_max_ms=5, driver_options={"message.max.bytes": 1000}) as p:
        result = p.send("big", 0, [b"small", b"x" * 5000, b"small too"], on_delivery=settled)
        assert result.enqueued == 2
        (delivered, failures), = settled.wait()
    assert delivered == 2
    assert [(m.value[:1], e.name) for m, e in failures] == [(b"x", "MSG_SIZE_TOO_LARGE")]
    assert [e["errname"] for r in reports for e in r.rdkafka_errinfo] == ["MSG_SIZE_TOO_LARGE"]


def test_unknown_partition_fails_its_messages(mock_cluster):
    mock_cluster.create_topic("one", 1)
    settled = Settled()
    with Producer(mock_cluster.bootstrap_servers,
                  driver_options={"message.timeout.ms": 3000}) as p:
        assert p.partition_count("one") == 1
        p.send("one", 7, [b"nowhere"], on_delivery=settled)
        (delivered, failures), = settled.wait()
    assert delivered == 0 and [e.name for _, e in failures] == ["_UNKNOWN_PARTITION"]


def queue_of_ten(mock_cluster, **kw):
    """A producer whose queue holds 10 messages, with every broker down (nothing drains)."""
    mock_cluster.create_topic("full", 1)
    p = Producer(mock_cluster.bootstrap_servers, queue_buffering_max_messages=10,
                 driver_options={"log_level": 0}, **kw)
    assert p.partition_count("full") == 1
    for b in (1, 2, 3):
        mock_cluster.broker_set_down(b)
    return p


def brokers_up(mock_cluster):
    for b in (1, 2, 3):
        mock_cluster.broker_set_up(b)


def test_queue_full_drop_enqueues_what_fits_and_counts_the_rest(mock_cluster):
    stats = []
    p = queue_of_ten(mock_cluster, stats_callback=stats.append, statistics_interval_ms=100)
    settled = Settled()
    try:
        sent = [b"%02d" % i for i in range(25)]
        result = p.send("full", 0, sent, on_delivery=settled)
        assert result == (10, 10)
        wait_until(lambda: stats and stats[-1].dropped == 15, what="stats showing 15 dropped")
        assert stats[-1].send_queue_length == 10
        brokers_up(mock_cluster)
        (delivered, failures), = settled.wait()
        assert delivered == 10
        assert [(m.value, e.name) for m, e in failures] == [(v, "_QUEUE_FULL") for v in sent[10:]]
    finally:
        p.stop(10)
    assert [r.value for r in read_back(mock_cluster, "full", 1, 10)] == sent[:10]


def test_queue_full_raise_raises_with_the_enqueued_count(mock_cluster):
    p = queue_of_ten(mock_cluster, on_queue_full="raise")
    try:
        p.send("full", 0, [b"a"] * 4)
        with pytest.raises(QueueFullError) as ei:
            p.send("full", 0, [b"b"] * 9)
        assert ei.value.enqueued == 6 and ei.value.failed_indices == [6, 7, 8]
        assert "enqueued 6 of 9" in str(ei.value)
        assert p.send_queue_length == 10
    finally:
        p.stop(0)


def test_queue_full_block_gives_up_at_the_timeout(mock_cluster):
    p = queue_of_ten(mock_cluster, on_queue_full="block")
    try:
        start = time.monotonic()
        result = p.send("full", 0, [b"x"] * 25, timeout=0.5)
        elapsed = time.monotonic() - start
        assert result.enqueued == 10
        assert elapsed >= 0.5  # it waited for room until the timeout, then gave up
    finally:
        p.stop(0)


def test_queue_full_block_waits_for_room_and_keeps_order(mock_cluster):
    mock_cluster.create_topic("blocking", 1)
    sent = [b"%04d" % i for i in range(500)]
    settled = Settled()
    with Producer(mock_cluster.bootstrap_servers, queue_buffering_max_messages=10,
                  queue_buffering_max_ms=1, on_queue_full="block") as p:
        assert p.send("blocking", 0, sent, on_delivery=settled, timeout=60).enqueued == 500
        assert settled.wait() == [(500, [])]
    assert [r.value for r in read_back(mock_cluster, "blocking", 1, 500)] == sent


def test_stop_with_brokers_down_gives_up_and_reports_every_message(mock_cluster):
    mock_cluster.create_topic("stuck", 1)
    settled = Settled()
    p = Producer(mock_cluster.bootstrap_servers, driver_options={"log_level": 0})
    assert p.partition_count("stuck") == 1
    for b in (1, 2, 3):
        mock_cluster.broker_set_down(b)
    p.send("stuck", 0, [b"%d" % i for i in range(100)], on_delivery=settled)
    left = p.stop(timeout=2.0)  # how long it takes is bench/'s to measure, not a test's
    assert left == 100
    (delivered, failures), = settled.wait(1)
    assert delivered == 0 and len(failures) == 100
    assert {e.name for _, e in failures} <= {"_PURGE_QUEUE", "_PURGE_INFLIGHT"}


def test_flush_with_brokers_down_returns_the_undelivered_count(mock_cluster):
    p = queue_of_ten(mock_cluster)
    try:
        p.send("full", 0, [b"x"] * 7)
        assert p.flush(0.3) == 7
        brokers_up(mock_cluster)
        assert p.flush(20) == 0
    finally:
        assert p.stop(5) == 0
