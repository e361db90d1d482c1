"""The binding end to end on every broker kind: the C batch helpers both ways,
stats JSON on the event queue, error codes from a real broker."""

from __future__ import annotations

import itertools
import json
import threading

import pytest

from rdk import Admin, _binding
from rdk._binding import ffi, lib
from rdk._binding.fetch import Fetcher
from rdk.errors import KafkaError


def produce_raw(client, topic, partition, messages, send_id=7):
    """Enqueue (key, value, headers) triples with one rdk_produce_batch call."""
    keys = [m[0] for m in messages]
    values = [m[1] for m in messages]
    headers = [m[2] for m in messages]
    vbuf = ffi.from_buffer(b"".join(v or b"" for v in values))
    voff = ffi.new("int64_t[]", list(itertools.accumulate((len(v or b"") for v in values), initial=0)))
    vnull = ffi.new("unsigned char[]", [v is None for v in values])
    kbuf = ffi.from_buffer(b"".join(k or b"" for k in keys))
    koff = ffi.new("int64_t[]", list(itertools.accumulate((len(k or b"") for k in keys), initial=0)))
    knull = ffi.new("unsigned char[]", [k is None for k in keys])
    flat = [h for hs in headers for h in hs]
    hidx = ffi.new("int32_t[]", list(itertools.accumulate((len(hs) for hs in headers), initial=0)))
    hn = ffi.from_buffer(b"".join(n for n, _ in flat) + b"\0")
    hnoff = ffi.new("int64_t[]", list(itertools.accumulate((len(n) for n, _ in flat), initial=0)))
    hv = ffi.from_buffer(b"".join(v or b"" for _, v in flat) + b"\0")
    hvoff = ffi.new("int64_t[]", list(itertools.accumulate((len(v or b"") for _, v in flat), initial=0)))
    hvnull = ffi.new("unsigned char[]", [v is None for _, v in flat] or [0])
    errs = ffi.new("int32_t[]", len(messages))
    args = ffi.new("rdk_produce_args *", {
        "rk": client.rk, "rkt": client.topic(topic), "partition": partition, "n": len(messages),
        "values": vbuf, "value_offsets": voff, "value_null": vnull,
        "keys": kbuf, "key_offsets": koff, "key_null": knull,
        "header_index": hidx if flat else ffi.NULL, "header_names": hn, "header_name_offsets": hnoff,
        "header_values": hv, "header_value_offsets": hvoff, "header_value_null": hvnull,
        "opaque_base": send_id << 32, "errs": errs,
    })
    n = lib.rdk_produce_batch(args)
    return n, list(errs)


class Deliveries:
    """on_deliveries handler. It runs on the client's event thread, where an exception is
    only logged: a failed check is kept in ``errors`` and ends the wait, and ``wait()``
    re-raises it in the test thread."""

    def __init__(self):
        self.delivered = 0
        self.failed = []
        self.done = threading.Event()
        self.expected = 0
        self.errors: list[BaseException] = []

    def __call__(self, d):
        try:
            for i in range(d.n_runs):
                assert d.run_send[i] == 7, f"delivery report for send {d.run_send[i]}, not 7"
                self.delivered += d.run_count[i]
            for i in range(d.n_failed):
                self.failed.append((d.failed_index[i], d.failed_err[i]))
        except BaseException as e:
            self.errors.append(e)
            self.done.set()
            raise
        if self.delivered + len(self.failed) >= self.expected:
            self.done.set()

    def wait(self, timeout: float) -> None:
        assert self.done.wait(timeout), "delivery reports did not arrive"
        if self.errors:
            raise self.errors[0]


MESSAGES = [
    (None, b"plain", []),
    (b"k\x00ey", b"\x00\x01\x00binary\x00", []),
    (b"", b"", []),  # empty key and empty value
    (None, None, []),  # tombstone
    (b"h", b"with headers", [(b"trace", b"\x00id"), (b"empty", b""), (b"none", None)]),
]


def consume_all(client, topic, partition, count, timeout_s=20.0):
    fetcher = Fetcher(client, topic)
    fetcher.start(partition, lib.RD_KAFKA_OFFSET_BEGINNING)
    rows = []
    import time

    deadline = time.monotonic() + timeout_s
    try:
        while len(rows) < count and time.monotonic() < deadline:
            b = fetcher.fetch(200)
            for i in range(b.n):
                assert b.err[i] == 0, _binding.err_name(b.err[i])
                def cell(buf, offs, valid, j):
                    if not (valid[j >> 3] >> (j & 7)) & 1:
                        return None
                    return ffi.unpack(buf + offs[j], offs[j + 1] - offs[j])
                hs = []
                for h in range(b.header_index[i], b.header_index[i + 1]):
                    name = ffi.unpack(b.header_names + b.header_name_offsets[h],
                                      b.header_name_offsets[h + 1] - b.header_name_offsets[h])
                    hs.append((name, cell(b.header_values, b.header_value_offsets, b.header_value_valid, h)))
                rows.append((b.offset[i], cell(b.keys, b.key_offsets, b.key_valid, i),
                             cell(b.values, b.value_offsets, b.value_valid, i), hs, b.partition[i]))
    finally:
        fetcher.close()
    return rows


def test_batch_produce_and_batch_consume_round_trip_binary_data(broker, new_topic):
    topic = new_topic(broker, 2)
    got = Deliveries()
    got.expected = len(MESSAGES)
    producer = _binding.Client("producer", {"bootstrap.servers": broker.bootstrap_servers,
                                            "linger.ms": 5}, on_deliveries=got)
    try:
        n, errs = produce_raw(producer, topic, 1, MESSAGES)
        assert n == len(MESSAGES) and errs == [0] * len(MESSAGES)
        got.wait(30)
        assert got.delivered == len(MESSAGES) and got.failed == []
    finally:
        producer.close()
    consumer = _binding.Client("consumer", {"bootstrap.servers": broker.bootstrap_servers})
    try:
        rows = consume_all(consumer, topic, 1, len(MESSAGES))
    finally:
        consumer.close()
    assert [r[0] for r in rows] == list(range(len(MESSAGES)))
    assert all(r[4] == 1 for r in rows)
    for (key, value, headers), (_, k, v, hs, _) in zip(MESSAGES, rows, strict=True):
        assert (k, v) == (key, value)
        assert hs == headers


def test_stats_json_arrives_on_the_event_queue(broker):
    arrived = threading.Event()
    seen = {}

    def on_stats(stats):
        seen.update(stats)
        arrived.set()

    client = _binding.Client("producer", {"bootstrap.servers": broker.bootstrap_servers,
                                          "statistics.interval.ms": 100}, on_stats=on_stats)
    try:
        assert arrived.wait(10)
    finally:
        client.close()
    assert seen["type"] == "producer" and "brokers" in seen and "msg_cnt" in seen
    json.dumps(seen)


def test_unknown_topic_maps_to_librdkafka_error_name(broker):
    with Admin(broker.bootstrap_servers, {"allow.auto.create.topics": False}) as admin, \
            pytest.raises(KafkaError) as ei:
        admin.partition_count("no-such-topic-" + "x" * 8, timeout=10)
    assert ei.value.name == "UNKNOWN_TOPIC_OR_PART"


def test_callback_exception_is_logged_and_the_event_thread_lives_on(broker, caplog):
    calls = []

    def on_stats(stats):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("boom in user callback")

    two = threading.Event()
    client = _binding.Client("producer", {"bootstrap.servers": broker.bootstrap_servers,
                                          "statistics.interval.ms": 100},
                             on_stats=lambda s: (on_stats(s), len(calls) >= 2 and two.set()))
    try:
        assert two.wait(10)
    finally:
        client.close()
    assert any("boom in user callback" in r.getMessage() or (r.exc_info and "boom" in str(r.exc_info[1]))
               for r in caplog.records)
