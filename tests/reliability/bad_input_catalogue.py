"""The bad-input catalogue: every public constructor, method and CLI command fed wrong
input, each case with the exception type rdk documents and a pattern the message must
match (naming the culprit).

Each case belongs to a class (``catalogue_core.KINDS``). This module holds the first
cases and imports every ``catalogue_cases_*.py`` beside it (one per area).
Run as a script (``python -X faulthandler bad_input_catalogue.py RESULTS.json``) it starts
a mock cluster, runs every case and writes one result per case; test_bad_input_catalogue.py
does that in a subprocess, so a crash of the interpreter fails the run instead of the
test session.
"""

from __future__ import annotations

import importlib
import logging
import pathlib
import sys
import threading
import time
import warnings
from collections.abc import Callable
from typing import Any

from catalogue_core import CASES, CliExit, Env, case, cli, main, noop, table

from rdk import (
    Admin,
    ClosedError,
    Consumer,
    KafkaError,
    LockedError,
    Message,
    OffsetFileError,
    Producer,
)
from rdk.offsets import read_offset_file, write_offset_file
from rdk.workers import WorkerPool


def callback_case(name: str, exc: type[BaseException] | None, pattern: str = "",
                  known_bug: str = "") -> Callable:
    return case(name, exc, pattern, known_bug, kind="callback misbehaves")


# ---- Producer: constructor -------------------------------------------------------------
table(ValueError, [
    ("Producer: empty broker", lambda e: Producer(""), r"broker"),
    ("Producer: broker without port", lambda e: Producer("localhost"), r"'localhost'"),
    ("Producer: broker port out of range", lambda e: Producer("h:99999"), r"h:99999"),
    ("Producer: broker list with an empty entry", lambda e: Producer("h:1,,h:2"), r"broker"),
    ("Producer: broker with a path", lambda e: Producer("h:1/x"), r"h:1/x"),
    ("Producer: negative statistics_interval_ms",
     lambda e: Producer(e.b, statistics_interval_ms=-1), r"statistics"),
    ("Producer: negative queue_buffering_max_messages",
     lambda e: Producer(e.b, queue_buffering_max_messages=-1), r"queue\.buffering\.max\.messages"),
    ("Producer: negative queue_buffering_max_ms",
     lambda e: Producer(e.b, queue_buffering_max_ms=-5), r"queue\.buffering\.max\.ms"),
    ("Producer: unknown librdkafka property",
     lambda e: Producer(e.b, driver_options={"no.such.property": 1}), r"no\.such\.property"),
    ("Producer: invalid librdkafka value",
     lambda e: Producer(e.b, driver_options={"acks": "maybe"}), r"acks"),
    ("Producer: invalid compression codec",
     lambda e: Producer(e.b, driver_options={"compression.codec": "rar"}), r"compression\.codec"),
    ("Producer: property name not a str",
     lambda e: Producer(e.b, driver_options={1: 2}), r"property names|1"),
    ("Producer: property value of type list",
     lambda e: Producer(e.b, driver_options={"acks": [1]}), r"acks"),
    ("Producer: unknown topic property",
     lambda e: Producer(e.b, topic_options={"nope.nope": 1}), r"nope\.nope"),
    ("Producer: unknown balancer", lambda e: Producer(e.b, balancer="random"), r"balancer"),
    ("Producer: unknown on_queue_full", lambda e: Producer(e.b, on_queue_full="wait"),
     r"on_queue_full"),
])
table(TypeError, [
    ("Producer: unknown keyword", lambda e: Producer(e.b, bogus=1), r"bogus"),
    ("Producer: broker of type int", lambda e: Producer(123), r"broker"),
    ("Producer: statistics_interval_ms as str",
     lambda e: Producer(e.b, statistics_interval_ms="5"), r"statistics_interval_ms"),
    ("Producer: driver_options not a dict",
     lambda e: Producer(e.b, driver_options="acks=all"), r"driver_options"),
    ("Producer: stats_callback not callable", lambda e: Producer(e.b, stats_callback=5),
     r"stats_callback"),
    ("Producer: delivery_report_callback not callable",
     lambda e: Producer(e.b, delivery_report_callback="x"), r"delivery_report_callback"),
    ("Producer: options given positionally", lambda e: Producer(e.b, None), r"positional"),
])


# ---- Producer: send and friends -------------------------------------------------------
def _send(payloads: Any, topic: str = "cat", partition: Any = 0, **kw: Any) -> Callable:
    return lambda e: e.producer.send(topic, partition, payloads, **kw)


table(TypeError, [
    ("send: topic of type int", lambda e: e.producer.send(123, 0, [b"x"]), r"topic"),
    ("send: partition of type str", _send([b"x"], partition="0"), r"partition"),
    ("send: partition of type bool", _send([b"x"], partition=True), r"partition"),
    ("send: payloads as bytes, not a list", _send(b"xx"), r"payloads must be a list"),
    ("send: payloads as a dict", _send({1: 2}), r"payloads must be a list"),
    ("send: payload of type int", _send([1]), r"payloads\[0\]"),
    ("send: payload None", _send([b"a", None]), r"payloads\[1\]"),
    ("send: payload of type float among good ones", _send([b"a", b"b", 3.5]), r"payloads\[2\]"),
    ("send: key of type int", _send([(5, b"v")]), r"payloads\[0\]: key"),
    ("send: one-element tuple", _send([(b"k",)]), r"payloads\[0\]"),
    ("send: headers not a list", _send([Message(b"v", headers="h")]), r"payloads\[0\]: headers"),
    ("send: header not a pair", _send([Message(b"v", headers=[("n",)])]), r"payloads\[0\]"),
    ("send: header value of type int", _send([Message(b"v", headers=[("n", 5)])]),
     r"payloads\[0\]: header value"),
    ("send: timestamp as str", _send([Message(b"v", timestamp="now")]), r"payloads\[0\]: timestamp"),
    ("send: negative timestamp", _send([Message(b"v", timestamp=-5)]), r"payloads\[0\]: timestamp"),
    ("send: on_delivery not callable", _send([b"x"], on_delivery=5), r"on_delivery"),
    ("send: timeout as str", _send([b"x"], timeout="1"), r"timeout"),
    ("flush: timeout as str", lambda e: e.producer.flush("1"), r"timeout"),
])
table(ValueError, [
    ("send: topic with a slash", _send([b"x"], topic="a/b"), r"'a/b'"),
    ("send: topic escaping upwards", _send([b"x"], topic="../etc"), r"'\.\./etc'"),
    ("send: topic '..'", _send([b"x"], topic=".."), r"'\.\.'"),
    ("send: topic with a space", _send([b"x"], topic="a b"), r"'a b'"),
    ("send: empty topic", _send([b"x"], topic=""), r"topic ''"),
    ("send: topic of 250 characters", _send([b"x"], topic="t" * 250), r"topic 'ttt"),
    ("send: negative partition", _send([b"x"], partition=-1), r"partition"),
    ("send: partition beyond int32", _send([b"x"], partition=2**40), r"partition"),
    ("send: negative timeout", _send([b"x"], timeout=-1), r"timeout"),
    ("send: unencodable str payload", _send(["ok", "\ud800"]), r"payloads\[1\]"),
    ("send: header name with a NUL byte", _send([Message(b"v", headers=[("a\x00b", b"x")])]),
     r"payloads\[0\]: header name"),
    ("flush: negative timeout", lambda e: e.producer.flush(-1), r"timeout"),
    ("partition_count: illegal topic", lambda e: e.producer.partition_count("bad topic"), r"'bad topic'"),
])


@case("send: a bad payload enqueues nothing (all or nothing)", TypeError, r"payloads\[3\]")
def _(e: Env) -> None:
    before = e.producer.send_queue_length
    try:
        e.producer.send("cat", 0, [b"a", b"b", b"c", object(), b"d"])
    finally:
        assert e.producer.send_queue_length == before, "part of the list was enqueued"


@case("partition_count: unknown topic", KafkaError, r"UNKNOWN_TOPIC_OR_PART")
def _(e: Env) -> None:
    e.producer.partition_count("no-such-topic", timeout=5)


@case("send after stop", ClosedError, r"stop")
def _(e: Env) -> None:
    p = Producer(e.b)
    p.stop(5)
    p.send("cat", 0, [b"x"])


@case("stop: timeout as str", TypeError, r"timeout")
def _(e: Env) -> None:
    p = Producer(e.b)
    try:
        p.stop("1")
    finally:
        p.stop(1)


# ---- Consumer: constructor ---------------------------------------------------------------
table(TypeError, [
    ("Consumer: topic of type int", lambda e: e.consumer(topic=123), r"topic"),
    ("Consumer: broker of type list", lambda e: Consumer(["h:1"], "cat", e.dir(), noop), r"broker"),
    ("Consumer: receive_callback not callable", lambda e: e.consumer(receive_callback="x"),
     r"receive_callback"),
    ("Consumer: stats_callback not callable", lambda e: e.consumer(stats_callback=1),
     r"stats_callback"),
    ("Consumer: no offset_directory", lambda e: Consumer(e.b, "cat", None, noop),
     r"offset_directory"),
    ("Consumer: offset_directory of type int", lambda e: e.consumer(offset_directory=123),
     r"offset_directory"),
    ("Consumer: max_messages_per_callback as str",
     lambda e: e.consumer(max_messages_per_callback="10"), r"max_messages_per_callback"),
    ("Consumer: worker_slot as float", lambda e: e.consumer(worker_slot=0.0), r"worker_slot"),
    ("Consumer: commit_on_error as str", lambda e: e.consumer(commit_on_error="yes"),
     r"commit_on_error"),
    ("Consumer: logger as str", lambda e: e.consumer(logger="rdk"), r"logger"),
    ("Admin: logger as str", lambda e: Admin(e.b, logger="rdk"), r"logger must be a logging.Logger"),
    ("Consumer: loop that is not a loop", lambda e: e.consumer(loop="x"), r"loop"),
    ("Consumer: offset_store without read/commit", lambda e: e.consumer(offset_store=object()),
     r"offset_store"),
    ("Consumer: unknown keyword", lambda e: e.consumer(bogus=1), r"bogus"),
    ("Consumer: driver_options not a dict", lambda e: e.consumer(driver_options=[("a", 1)]),
     r"driver_options"),
])
table(ValueError, [
    ("Consumer: malformed broker", lambda e: Consumer("nohost", "cat", e.dir(), noop), r"nohost"),
    ("Consumer: broker with a bad port", lambda e: Consumer("h:0", "cat", e.dir(), noop), r"h:0"),
    ("Consumer: topic with a slash", lambda e: e.consumer(topic="a/b"), r"'a/b'"),
    ("Consumer: topic with a backslash", lambda e: e.consumer(topic="a\\b"), r"a\\\\b"),
    ("Consumer: topic with a NUL byte", lambda e: e.consumer(topic="a\x00b"), r"a\\x00b"),
    ("Consumer: empty offset_directory", lambda e: e.consumer(offset_directory=""),
     r"offset_directory"),
    ("Consumer: zero max_messages_per_callback", lambda e: e.consumer(max_messages_per_callback=0),
     r"max_messages_per_callback"),
    ("Consumer: negative statistics_interval_ms", lambda e: e.consumer(statistics_interval_ms=-1),
     r"statistics_interval_ms"),
    ("Consumer: zero queued_max_messages_kbytes",
     lambda e: e.consumer(queued_max_messages_kbytes=0), r"queued_max_messages_kbytes"),
    ("Consumer: zero num_workers", lambda e: e.consumer(num_workers=0), r"num_workers"),
    ("Consumer: worker_slot == num_workers", lambda e: e.consumer(num_workers=2, worker_slot=2),
     r"worker_slot"),
    ("Consumer: negative worker_slot", lambda e: e.consumer(worker_slot=-1), r"worker_slot"),
    ("Consumer: unknown start_offset", lambda e: e.consumer(start_offset="beginning"),
     r"start_offset"),
    ("Consumer: unknown on_offset_out_of_range",
     lambda e: e.consumer(on_offset_out_of_range="skip"), r"on_offset_out_of_range"),
    ("Consumer: unknown decode", lambda e: e.consumer(decode="latin-1"), r"decode"),
    ("Consumer: unknown librdkafka property",
     lambda e: e.consumer(driver_options={"fetch.wait.maximum": 1}), r"fetch\.wait\.maximum"),
    ("Consumer: invalid librdkafka value",
     lambda e: e.consumer(driver_options={"fetch.wait.max.ms": "soon"}), r"fetch\.wait\.max\.ms"),
    ("Consumer: auto.offset.reset in topic_options",
     lambda e: e.consumer(topic_options={"auto.offset.reset": "earliest"}),
     r"on_offset_out_of_range"),
])
table(OffsetFileError, [
    ("Consumer: offset_directory under a regular file",
     lambda e: e.consumer(offset_directory=str(e.file / "offsets")), r"a-regular-file"),
    ("Consumer: offset_directory in /proc", lambda e: e.consumer(offset_directory="/proc/rdk-offsets"),
     r"/proc/rdk-offsets"),
])


@case("Consumer: topic escaping offset_directory is refused, nothing written outside", ValueError,
      r"'\.\./escaped'")
def _(e: Env) -> None:
    d = pathlib.Path(e.dir())
    before = sorted(p.name for p in d.parent.iterdir())
    try:
        e.consumer(topic="../escaped", offset_directory=str(d))
    finally:
        assert sorted(p.name for p in d.parent.iterdir()) == before


# ---- Consumer: start / stop / pause with bad state ---------------------------------------
def _offset_file_case(content: bytes) -> Callable:
    def run(e: Env) -> None:
        d = e.dir()
        pathlib.Path(d, "cat-1.offset").write_bytes(content)
        c = e.consumer(offset_directory=d)
        try:
            c.start()
        finally:
            c.stop(5)
    return run


table(OffsetFileError, [
    ("start: empty offset file", _offset_file_case(b""), r"cat-1\.offset.*empty"),
    ("start: offset file of whitespace", _offset_file_case(b" \n"), r"cat-1\.offset.*empty"),
    ("start: corrupt offset file", _offset_file_case(b"abc\n"), r"cat-1\.offset.*corrupt"),
    ("start: offset file below -1", _offset_file_case(b"-5\n"), r"cat-1\.offset.*corrupt"),
    ("start: binary offset file", _offset_file_case(b"\x00\xff\x10"), r"cat-1\.offset.*corrupt"),
    ("start: two numbers in an offset file", _offset_file_case(b"12\n13\n"), r"cat-1\.offset"),
    ("start: offset file with a float", _offset_file_case(b"12.5\n"), r"cat-1\.offset"),
])


@case("start: unknown topic", KafkaError, r"UNKNOWN_TOPIC_OR_PART")
def _(e: Env) -> None:
    c = e.consumer(topic="no-such-topic-here")
    try:
        c.start()
    finally:
        c.stop(5)


@case("start: fewer partitions than workers", ValueError, r"1 partition.*num_workers=2")
def _(e: Env) -> None:
    c = e.consumer(topic="solo", num_workers=2, worker_slot=1)
    try:
        c.start()
    finally:
        c.stop(5)


@case("start: a second consumer on the same partitions", LockedError, r"cat")
def _(e: Env) -> None:
    d = e.dir()
    first = e.consumer(offset_directory=d)
    second = e.consumer(offset_directory=d)
    first.start()
    try:
        second.start()
    finally:
        second.stop(5)
        first.stop(5)


@case("start: twice", RuntimeError, r"already started")
def _(e: Env) -> None:
    c = e.consumer()
    c.start()
    try:
        c.start()
    finally:
        c.stop(5)


@case("start: without receive_callback", TypeError, r"receive_callback")
def _(e: Env) -> None:
    Consumer(e.b, "cat", e.dir()).start()


@case("pause after stop", ClosedError, r"stopped")
def _(e: Env) -> None:
    c = e.consumer()
    c.start()
    c.stop(5)
    c.pause()


@case("start after stop", ClosedError, r"stopped")
def _(e: Env) -> None:
    c = e.consumer()
    c.stop(5)
    c.start()


@case("Consumer.stop: negative timeout", ValueError, r"timeout")
def _(e: Env) -> None:
    c = e.consumer()
    try:
        c.stop(-1)
    finally:
        c.stop(1)


# ---- callbacks that raise or never return -------------------------------------------------
def _fill(e: Env, topic: str, n: int = 20) -> None:
    e.producer.send(topic, 0, [b"m%d" % i for i in range(n)])
    assert e.producer.flush(10) == 0


def _fresh_topic(e: Env, partitions: int = 1) -> str:
    e._n += 1
    name = f"cb-{e._n}"
    e.mc.create_topic(name, partitions)
    return name


class _Logged(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.text: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.text.append(record.getMessage() + (repr(record.exc_info[1]) if record.exc_info else ""))

    def __enter__(self) -> _Logged:
        logger = logging.getLogger("rdk")
        self.level = logger.level
        logger.setLevel(logging.DEBUG)
        logger.addHandler(self)
        return self

    def __exit__(self, *exc: object) -> None:
        logger = logging.getLogger("rdk")
        logger.removeHandler(self)
        logger.setLevel(self.level)

    def wait_for(self, text: str, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while not any(text in t for t in self.text):
            assert time.monotonic() < deadline, f"never logged {text!r}: {self.text[-5:]}"
            time.sleep(0.01)


@callback_case("receive_callback raises: logged, offsets still recorded, consumer goes on", None)
def _(e: Env) -> None:
    topic = _fresh_topic(e)
    _fill(e, topic)
    calls = []

    def boom(batch) -> None:
        calls.append(len(batch))
        raise RuntimeError("boom in receive_callback")

    d = e.dir()
    with _Logged() as logged:
        c = e.consumer(topic=topic, offset_directory=d, receive_callback=boom,
                       max_messages_per_callback=5)
        c.start()
        try:
            deadline = time.monotonic() + 10
            while sum(calls) < 20:
                assert time.monotonic() < deadline, calls
                time.sleep(0.01)
        finally:
            c.stop(5)
        logged.wait_for("boom in receive_callback")
    assert read_offset_file(pathlib.Path(d, f"{topic}-0.offset")) == 19  # commit_on_error=True


class _Stuck:
    """A callback that blocks until released; ``entered`` is set once it is called."""

    def __init__(self) -> None:
        self.entered, self.release = threading.Event(), threading.Event()

    def __call__(self, *args: Any) -> None:
        self.entered.set()
        self.release.wait()

    def stop_on_time(self, client: Any, timeout: float = 1.0) -> list[str]:
        """Stop ``client`` while the callback is stuck; assert it returned on time."""
        assert self.entered.wait(10), "the callback was never called"
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            t0 = time.monotonic()
            client.stop(timeout)
            took = time.monotonic() - t0
        self.release.set()
        # the callback stays stuck until release: a stop() that waited for it would never return
        assert took < timeout + 5, f"stop({timeout}) took {took:.2f} s"
        return [str(w.message) for w in caught]


@callback_case("receive_callback never returns: stop(timeout=1) returns on time with a warning", None)
def _(e: Env) -> None:
    topic = _fresh_topic(e)
    _fill(e, topic)
    stuck = _Stuck()
    c = e.consumer(topic=topic, receive_callback=stuck)
    c.start()
    said = stuck.stop_on_time(c)
    assert any("receive_callback" in w for w in said), said


@callback_case("Consumer stats_callback never returns: stop(timeout=1) returns on time", None)
def _(e: Env) -> None:
    stuck = _Stuck()
    c = e.consumer(stats_callback=stuck, statistics_interval_ms=50)
    c.start()
    stuck.stop_on_time(c)


@callback_case("Producer stats_callback never returns: stop(timeout=1) returns on time", None)
def _(e: Env) -> None:
    stuck = _Stuck()
    stuck.stop_on_time(Producer(e.b, stats_callback=stuck, statistics_interval_ms=50))


@callback_case("on_delivery never returns: stop(timeout=1) returns on time", None)
def _(e: Env) -> None:
    stuck = _Stuck()
    p = Producer(e.b)
    p.send("cat", 0, [b"x"], on_delivery=stuck)
    stuck.stop_on_time(p)


@callback_case("on_delivery and delivery_report_callback raise: logged, the producer goes on", None)
def _(e: Env) -> None:
    def boom_report(info) -> None:
        raise RuntimeError("boom in delivery_report_callback")

    def boom_delivery(n: int, failures: list) -> None:
        raise RuntimeError("boom in on_delivery")

    with _Logged() as logged:
        p = Producer(e.b, delivery_report_callback=boom_report,
                     driver_options={"message.max.bytes": 2000})
        p.send("cat", 0, [b"x" * 5000], on_delivery=boom_delivery)  # refused: a failure to report
        p.send("cat", 0, [b"ok"], on_delivery=boom_delivery)
        assert p.flush(10) == 1  # the refused message is not delivered: flush() says so
        logged.wait_for("boom in delivery_report_callback")
        logged.wait_for("boom in on_delivery")
        assert p.send("cat", 0, [b"after"]).enqueued == 1
        assert p.stop(10) == 0


@callback_case("stats_callback raises: logged, stats keep coming", None)
def _(e: Env) -> None:
    calls = []

    def boom(info) -> None:
        calls.append(info)
        raise RuntimeError("boom in stats_callback")

    with _Logged() as logged:
        p = Producer(e.b, stats_callback=boom, statistics_interval_ms=50)
        deadline = time.monotonic() + 10
        while len(calls) < 3:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        p.stop(5)
        logged.wait_for("boom in stats_callback")


# ---- Admin --------------------------------------------------------------------------------
table(TypeError, [
    ("Admin: broker of type int", lambda e: Admin(123), r"broker"),
    ("Admin: create_topics spec of 5 fields",
     lambda e: Admin(e.b).create_topics([("t", 1, 1, {}, "x")]), r"create_topics"),
    ("Admin: offsets_for_times with a str partition",
     lambda e: Admin(e.b).offsets_for_times("cat", {"0": 5}), r"partition"),
    ("Admin: watermarks with a str partition", lambda e: Admin(e.b).watermarks("cat", "0"),
     r"partition"),
    ("Admin: query_watermarks with a float partition",
     lambda e: Admin(e.b).query_watermarks("cat", 1.0), r"partition"),
    ("Admin: list_topics timeout as str", lambda e: Admin(e.b).list_topics(timeout="1"), r"timeout"),
])
table(ValueError, [
    ("Admin: malformed broker", lambda e: Admin("nohost"), r"nohost"),
    ("Admin: unknown librdkafka property", lambda e: Admin(e.b, {"no.such": 1}), r"no\.such"),
    ("Admin: create_topics with an illegal name", lambda e: Admin(e.b).create_topics({"bad topic": 1}),
     r"'bad topic'"),
    ("Admin: create_topics with zero partitions", lambda e: Admin(e.b).create_topics({"t0": 0}),
     r"partitions"),
    ("Admin: delete_topics escaping name", lambda e: Admin(e.b).delete_topics(["../x"]), r"'\.\./x'"),
    ("Admin: list_topics negative timeout", lambda e: Admin(e.b).list_topics(timeout=-1), r"timeout"),
    ("Admin: query_watermarks of an illegal topic",
     lambda e: Admin(e.b).query_watermarks("bad topic", 0), r"'bad topic'"),
    ("Admin: query_watermarks beyond int32", lambda e: Admin(e.b).query_watermarks("cat", 2**31),
     r"partition"),
])


@case("Admin: watermarks of a partition that does not exist", KafkaError, r"UNKNOWN_PARTITION")
def _(e: Env) -> None:
    with Admin(e.b) as a:
        a.watermarks("cat", 99)


# ---- offsets module -------------------------------------------------------------------------
table(ValueError, [
    ("write_offset_file: topic escaping the directory",
     lambda e: write_offset_file(e.dir(), "../x", 0, 5), r"'\.\./x'"),
    ("write_offset_file: negative partition", lambda e: write_offset_file(e.dir(), "t", -1, 5),
     r"partition"),
    ("write_offset_file: offset below -1", lambda e: write_offset_file(e.dir(), "t", 0, -2),
     r"offset"),
])


@case("write_offset_file: directory under a regular file", OffsetFileError, r"a-regular-file")
def _(e: Env) -> None:
    write_offset_file(e.file / "sub", "t", 0, 5)


@case("read_offset_file: corrupt file named in the error", OffsetFileError, r"t-0\.offset")
def _(e: Env) -> None:
    path = pathlib.Path(e.dir(), "t-0.offset")
    path.write_bytes(b"12abc\n")
    read_offset_file(path)


# ---- workers --------------------------------------------------------------------------------
table(ValueError, [
    ("WorkerPool: zero workers", lambda e: WorkerPool(0, Producer), r"num_workers"),
    ("WorkerPool: negative max_restarts", lambda e: WorkerPool(2, Producer, max_restarts=-1),
     r"max_restarts"),
    ("WorkerPool: negative restart_backoff", lambda e: WorkerPool(2, Producer, restart_backoff=-1),
     r"restart_backoff"),
])
table(TypeError, [
    ("WorkerPool: factory not callable", lambda e: WorkerPool(2, "x"), r"consumer_factory"),
    ("WorkerPool: factory not picklable", lambda e: WorkerPool(2, lambda **kw: None),
     r"consumer_factory must be picklable"),
    ("WorkerPool: num_workers as str", lambda e: WorkerPool("2", Producer), r"num_workers"),
])


table(CliExit, [
    ("rdk: unknown command", cli("bogus"), r"^exit 2 \(1 line\(s\)\): .*'bogus'"),
    ("rdk produce: no broker", cli("produce", "-t", "cat"), r"^exit 2 \(1 line\(s\)\): .*-b/--brokers"),
    ("rdk produce: malformed broker", cli("produce", "-b", "nohost", "-t", "cat"),
     r"^exit 2 \(1 line\(s\)\): .*'nohost'"),
    ("rdk produce: illegal topic", cli("produce", "-b", "{b}", "-t", "a/b"),
     r"^exit 2 \(1 line\(s\)\): .*'a/b'"),
    ("rdk produce: negative partition", cli("produce", "-b", "{b}", "-t", "cat", "-p", "-1"),
     r"^exit 2 \(1 line\(s\)\): .*partition|-p"),
    ("rdk produce: unknown balancer", cli("produce", "-b", "{b}", "-t", "cat", "--balancer", "nope"),
     r"^exit 2 \(1 line\(s\)\): .*balancer"),
    ("rdk produce: input file missing", cli("produce", "-b", "{b}", "-t", "cat", "/no/such/file"),
     r"^exit [12] \(1 line\(s\)\): .*/no/such/file"),
    ("rdk consume: no offset dir", cli("consume", "-b", "{b}", "-t", "cat"),
     r"^exit 2 \(1 line\(s\)\): .*--offset-dir"),
    ("rdk consume: slot out of range",
     cli("consume", "-b", "{b}", "-t", "cat", "--offset-dir", "{dir}", "--slot", "3", "--of", "2"),
     r"^exit 2 \(1 line\(s\)\): .*--slot"),
    ("rdk consume: unknown format",
     cli("consume", "-b", "{b}", "-t", "cat", "--offset-dir", "{dir}", "--format", "xml"),
     r"^exit 2 \(1 line\(s\)\): .*--format"),
    ("rdk consume: negative count",
     cli("consume", "-b", "{b}", "-t", "cat", "--offset-dir", "{dir}", "--count", "-5"),
     r"^exit 2 \(1 line\(s\)\): .*--count"),
    ("rdk consume: unknown --from",
     cli("consume", "-b", "{b}", "-t", "cat", "--offset-dir", "{dir}", "--from", "middle"),
     r"^exit 2 \(1 line\(s\)\): .*--from"),
    ("rdk consume: topic escaping the offset dir",
     cli("consume", "-b", "{b}", "-t", "../x", "--offset-dir", "{dir}"),
     r"^exit 2 \(1 line\(s\)\): .*'\.\./x'"),
    ("rdk consume: offset dir under a regular file",
     cli("consume", "-b", "{b}", "-t", "cat", "--offset-dir", "{file}/sub", "--count", "1"),
     r"^exit [12] \(1 line\(s\)\): .*a-regular-file"),
    ("rdk offsets show: missing directory", cli("offsets", "show", "/no/such/dir"),
     r"^exit [12] \(1 line\(s\)\): .*/no/such/dir"),
    ("rdk offsets set: --to not a number",
     cli("offsets", "set", "{dir}", "-t", "cat", "--to", "soon"), r"^exit 2 \(1 line\(s\)\): .*--to"),
    ("rdk offsets set: illegal topic", cli("offsets", "set", "{dir}", "-t", "a/b", "--to", "5"),
     r"^exit 2 \(1 line\(s\)\): .*'a/b'"),
    ("rdk stats: port 0", cli("stats", "-b", "x:0", "-t", "cat"), r"^exit 2 \(1 line\(s\)\): .*'x:0'"),
    ("rdk mock: zero brokers", cli("mock", "--brokers", "0"), r"^exit 2 \(1 line\(s\)\): .*--brokers"),
])


def _load_area_cases() -> None:
    """Import every catalogue_cases_*.py beside this file (each registers its cases)."""
    here = pathlib.Path(__file__).resolve().parent
    for path in sorted(here.glob("catalogue_cases_*.py")):
        importlib.import_module(path.stem)


_load_area_cases()
__all__ = ["CASES", "main"]

if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
