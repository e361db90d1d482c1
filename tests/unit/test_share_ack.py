"""The share thread's acknowledgement logic without a broker: one batch through
``ShareThread._one_batch`` (delivery to ``receive_callback``, a Future or an awaitable, or
the iterator's hand-off; the final types; the counts; the log lines), ``serve_collected``
and ``ack_failed``.

The batch is the C struct's columns as cffi arrays (what ``rdk_share_fill`` leaves), and
the one C call that needs a live share handle, ``rdk_share_ack``, is replaced by a
recorder that refuses the rows a test names (as librdkafka does: ``ack_err`` per row,
the count returned). Everything else is rdk's own code: ShareBatch, share_messages, the
LoopThread that runs awaitables.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import queue
import threading
import types as pytypes

import pytest

from rdk import _binding
from rdk._binding import ffi
from rdk._loop_thread import LoopThread
from rdk.errors import KafkaError
from rdk.share import _thread
from rdk.share._messages import ACCEPT, REJECT, RELEASE, ShareBatch
from rdk.share._thread import ShareCounts, ShareThread

LOGGER = "rdk.test.share_ack"
CODE = _binding.ERROR_CODES


def _cbatch(values: list[bytes], delivery_counts: list[int], n_errors: int = 0,
            first_err: int = 0) -> pytypes.SimpleNamespace:
    """The columns of a filled rdk_share_batch of one topic "t", partition 4, offsets 10..."""
    n = len(values)
    offs = [0]
    for v in values:
        offs.append(offs[-1] + len(v))
    data = b"".join(values)
    keep = []  # the cffi arrays live as long as the namespace

    def arr(ctype: str, items: list) -> object:
        a = ffi.new(f"{ctype}[]", items or [0])
        keep.append(a)
        return a

    name = ffi.new("char[]", b"t")
    names = ffi.new("char *[]", [name])
    keep += [name, names]
    return pytypes.SimpleNamespace(
        n=n, n_errors=n_errors, first_err=first_err, n_headers=0, n_topics=1,
        values=arr("uint8_t", list(data)) if data else ffi.NULL,
        value_offsets=arr("int64_t", offs), value_null=arr("uint8_t", [0] * n),
        keys=ffi.NULL, key_offsets=arr("int64_t", [0] * (n + 1)),
        key_null=arr("uint8_t", [1] * n),
        timestamp=arr("int64_t", [1000 + i for i in range(n)]),
        topic_names=names, topic=arr("int32_t", [0] * n),
        partition=arr("int32_t", [4] * n), offset=arr("int64_t", [10 + i for i in range(n)]),
        delivery_count=arr("int16_t", delivery_counts), ack_err=arr("int32_t", [0] * n),
        _keep=keep)


class AckRecorder:
    """Stands in for ``_binding.share.acknowledge`` (C's ``rdk_share_ack``, which needs a
    live share handle):
    records the types, refuses the rows in ``refuse`` ({row: error code})."""

    def __init__(self, refuse: dict[int, int] | None = None) -> None:
        self.refuse = refuse or {}
        self.calls: list[tuple[object, bytes]] = []

    def rdk_share_ack(self, rkshare: object, b: pytypes.SimpleNamespace, types: bytes) -> int:
        self.calls.append((rkshare, bytes(types)))
        failed = 0
        for j in range(b.n):
            b.ack_err[j] = 0
            if types[j] and j in self.refuse:
                b.ack_err[j] = self.refuse[j]
                failed += 1
        return failed


@pytest.fixture
def ack(monkeypatch: pytest.MonkeyPatch) -> AckRecorder:
    rec = AckRecorder()
    monkeypatch.setattr(_thread._share, "acknowledge", rec.rdk_share_ack)
    return rec


@pytest.fixture
def loop_thread():
    lt = LoopThread(None, "rdk-test-share-ack-loop")
    yield lt
    lt.close()


def _thread_for(callback=None, *, mode: str = "callback", lock_seconds: float = 600.0,
                loop_thread: LoopThread | None = None, handoff: queue.Queue | None = None,
                stats_callback=None) -> tuple[ShareThread, list[KafkaError]]:
    failures: list[KafkaError] = []
    t = ShareThread(
        group_id="g1", mode=mode, receive_callback=callback, stats_callback=stats_callback,
        loop_thread=loop_thread or LoopThread(None, "unused"),
        handoff=handoff if handoff is not None else queue.Queue(maxsize=1),
        stop_event=threading.Event(), give_up=threading.Event(), fail=failures.append,
        logger=logging.getLogger(LOGGER), decode=None, lock_seconds=lock_seconds,
        counts=ShareCounts(), pid=0, deadline=0.0)
    return t, failures


def _counts(t: ShareThread) -> dict:
    c = t.counts.snapshot()
    return {k: getattr(c, k) for k in ("delivered", "accepted", "released", "rejected",
                                       "redelivered", "ack_errors", "lock_expired_batches",
                                       "in_flight_batches")}


def _messages(caplog: pytest.LogCaptureFixture) -> list[tuple[int, str]]:
    return [(r.levelno, r.getMessage()) for r in caplog.records if r.name == LOGGER]


def test_a_returning_callback_accepts_what_it_did_not_settle_and_the_counts_say_so(ack, caplog):
    seen: list = []

    def callback(batch: ShareBatch) -> None:
        seen.append((type(batch), [m.value for m in batch], [m.offset for m in batch],
                     [m.delivery_count for m in batch], [m.topic for m in batch],
                     [m.partition for m in batch], [m.key for m in batch],
                     [m.timestamp for m in batch], _counts(t)["in_flight_batches"],
                     _counts(t)["delivered"]))
        if len(batch) > 1:
            batch.release(batch.messages[1])
            batch.reject(batch.messages[2])

    t, failures = _thread_for(callback)
    b = _cbatch([b"a", b"bb", b"", b"d"], [1, 2, 3, 1])
    caplog.set_level(logging.DEBUG, LOGGER)
    t._one_batch("handle", b)
    assert seen == [(ShareBatch, [b"a", b"bb", b"", b"d"], [10, 11, 12, 13], [1, 2, 3, 1],
                     ["t"] * 4, [4] * 4, [None] * 4, [1000, 1001, 1002, 1003], 1, 4)]
    assert ack.calls == [("handle", bytes([ACCEPT, RELEASE, REJECT, ACCEPT]))]
    assert _counts(t) == {"delivered": 4, "accepted": 2, "released": 1, "rejected": 1,
                          "redelivered": 2, "ack_errors": 0, "lock_expired_batches": 0,
                          "in_flight_batches": 0}
    assert failures == [] and _messages(caplog) == []
    t._one_batch("handle", _cbatch([b"x"], [5]))  # counts add up over batches
    assert len(seen) == 2 and _counts(t) == {
        "delivered": 5, "accepted": 3, "released": 1, "rejected": 1, "redelivered": 3, "ack_errors": 0,
        "lock_expired_batches": 0, "in_flight_batches": 0}


def test_a_raising_callback_releases_its_batch_and_logs_the_count(ack, caplog):
    def callback(batch: ShareBatch) -> None:
        batch.accept(batch.messages[0])
        raise RuntimeError("boom")

    t, failures = _thread_for(callback)
    caplog.set_level(logging.DEBUG, LOGGER)
    t._one_batch("h", _cbatch([b"a", b"b", b"c"], [1, 1, 1]))
    assert ack.calls == [("h", bytes([ACCEPT, RELEASE, RELEASE]))]
    assert _counts(t)["accepted"] == 1 and _counts(t)["released"] == 2
    assert failures == []
    [rec] = [r for r in caplog.records if r.name == LOGGER]
    assert rec.levelno == logging.ERROR and rec.exc_info[0] is RuntimeError
    assert rec.getMessage() == ("share consumer of group g1: receive_callback raised; "
                                "releasing its 3 message(s) for redelivery")


def test_system_exit_in_the_callback_releases_the_batch_and_fails_the_consumer(ack, caplog):
    def callback(batch: ShareBatch) -> None:
        raise SystemExit(3)

    t, failures = _thread_for(callback)
    caplog.set_level(logging.DEBUG, LOGGER)
    t._one_batch("h", _cbatch([b"a", b"b"], [1, 1]))
    assert ack.calls == [("h", bytes([RELEASE, RELEASE]))]
    assert [(e.name, str(e)) for e in failures] == [
        ("_FAIL", "_FAIL: receive_callback raised SystemExit")]
    [rec] = [r for r in caplog.records if r.name == LOGGER]
    assert rec.levelno == logging.ERROR and rec.exc_info[0] is SystemExit
    assert rec.getMessage() == ("share consumer of group g1: receive_callback raised "
                                "SystemExit; releasing its batch and stopping")


@pytest.mark.parametrize("result", [0, "done", True])
def test_any_other_return_value_accepts(ack, result):
    t, _ = _thread_for(lambda batch: result)
    t._one_batch("h", _cbatch([b"a"], [1]))
    assert ack.calls == [("h", bytes([ACCEPT]))]


def test_an_awaitable_settles_the_batch_when_it_completes(ack, loop_thread, caplog):
    order: list[str] = []

    async def process(batch: ShareBatch) -> None:
        await asyncio.sleep(0)
        order.append("awaited")
        batch.reject(batch.messages[0])

    t, _ = _thread_for(lambda batch: process(batch), loop_thread=loop_thread)
    t._one_batch("h", _cbatch([b"a", b"b"], [1, 1]))
    assert order == ["awaited"]
    assert ack.calls == [("h", bytes([REJECT, ACCEPT]))]
    assert _counts(t)["rejected"] == 1 and _counts(t)["accepted"] == 1


def test_an_awaitable_that_raises_releases_the_batch_and_logs_it(ack, loop_thread, caplog):
    async def process(batch: ShareBatch) -> None:
        raise ValueError("bad record")

    t, failures = _thread_for(lambda batch: process(batch), loop_thread=loop_thread)
    caplog.set_level(logging.DEBUG, LOGGER)
    t._one_batch("h", _cbatch([b"a"], [1]))
    assert ack.calls == [("h", bytes([RELEASE]))] and failures == []
    [rec] = [r for r in caplog.records if r.name == LOGGER]
    assert rec.levelno == logging.ERROR and isinstance(rec.exc_info[1], ValueError)
    assert rec.getMessage() == ("share consumer of group g1: the Future/awaitable of a batch "
                                "raised; releasing its messages")


def test_an_awaitable_that_cannot_be_submitted_releases_the_batch(ack, caplog):
    class Closed(LoopThread):
        def submit(self, awaitable):
            awaitable.close()
            raise RuntimeError("loop is closed")

    async def process(batch: ShareBatch) -> None:  # never runs
        raise AssertionError

    t, _ = _thread_for(lambda batch: process(batch), loop_thread=Closed(None, "x"))
    caplog.set_level(logging.DEBUG, LOGGER)
    t._one_batch("h", _cbatch([b"a"], [1]))
    assert ack.calls == [("h", bytes([RELEASE]))]
    [rec] = [r for r in caplog.records if r.name == LOGGER]
    assert rec.levelno == logging.ERROR and rec.exc_info[0] is RuntimeError
    assert rec.getMessage() == ("share consumer of group g1: cannot run the awaitable "
                                "receive_callback returned")


def test_a_future_settles_the_batch_by_its_outcome(ack):
    done = concurrent.futures.Future()
    done.set_result(None)
    cancelled = concurrent.futures.Future()
    cancelled.cancel()
    failed = concurrent.futures.Future()
    failed.set_exception(KeyError("x"))
    for future, want in ((done, ACCEPT), (cancelled, RELEASE), (failed, RELEASE)):
        t, _ = _thread_for(lambda batch, f=future: f)
        t._one_batch("h", _cbatch([b"a"], [1]))
        assert ack.calls[-1] == ("h", bytes([want])), future


def test_a_future_completed_later_by_another_thread_is_waited_for(ack):
    future: concurrent.futures.Future = concurrent.futures.Future()
    got: list[ShareBatch] = []

    def callback(batch: ShareBatch) -> concurrent.futures.Future:
        got.append(batch)
        threading.Timer(0.3, lambda: future.set_result(None)).start()
        return future

    t, _ = _thread_for(callback)
    t._one_batch("h", _cbatch([b"a"], [1]))
    assert future.done() and ack.calls == [("h", bytes([ACCEPT]))]


def test_give_up_releases_a_batch_whose_future_is_pending(ack, caplog):
    future: concurrent.futures.Future = concurrent.futures.Future()
    t, _ = _thread_for(lambda batch: future)
    t.give_up.set()
    caplog.set_level(logging.DEBUG, LOGGER)
    t._one_batch("h", _cbatch([b"a", b"b"], [1, 1]))
    assert ack.calls == [("h", bytes([RELEASE, RELEASE]))] and not future.done()
    assert _messages(caplog) == [(logging.WARNING, (
        "share consumer of group g1: the Future/awaitable of a batch of 2 did not finish "
        "before stop(); released"))]


def test_a_loop_that_cannot_run_the_future_releases_the_batch(ack, caplog):
    class Stuck(LoopThread):
        def problem(self) -> str:
            return "loop is not running"

    future: concurrent.futures.Future = concurrent.futures.Future()
    t, _ = _thread_for(lambda batch: future, loop_thread=Stuck(None, "x"))
    caplog.set_level(logging.DEBUG, LOGGER)
    t._one_batch("h", _cbatch([b"a"], [1]))
    assert ack.calls == [("h", bytes([RELEASE]))]
    assert _messages(caplog) == [(logging.ERROR,
                                  "share consumer of group g1: loop is not running")]


def test_without_a_callback_the_batch_is_released(ack):
    t, _ = _thread_for(None)
    t._one_batch("h", _cbatch([b"a"], [1]))
    assert ack.calls == [("h", bytes([RELEASE]))]


def test_a_batch_past_the_acquisition_lock_counts_as_expired_not_settled(ack, caplog):
    t, _ = _thread_for(lambda batch: None, lock_seconds=0.0)
    caplog.set_level(logging.DEBUG, LOGGER)
    t._one_batch("h", _cbatch([b"a", b"b"], [1, 2]))
    assert _counts(t) == {"delivered": 2, "accepted": 0, "released": 0, "rejected": 0,
                          "redelivered": 1, "ack_errors": 0, "lock_expired_batches": 1,
                          "in_flight_batches": 0}
    [(level, text)] = _messages(caplog)
    assert level == logging.WARNING
    assert text.startswith("share consumer of group g1: a batch of 2 message(s) took ")
    assert text.endswith(" s in the callback, past the group's acquisition lock (0.0 s, "
                         "share.record.lock.duration.ms): the broker may have delivered its "
                         "records again, and its acknowledgements may not count")


def test_a_batch_just_within_the_lock_is_counted_as_settled(ack, monkeypatch):
    clock = [104.999, 100.0]  # (popped from the end: start, then end of the callback)
    monkeypatch.setattr(_thread, "time", pytypes.SimpleNamespace(monotonic=clock.pop))
    t, _ = _thread_for(lambda batch: None, lock_seconds=5.0)
    t._one_batch("h", _cbatch([b"a"], [1]))
    assert _counts(t)["accepted"] == 1 and _counts(t)["lock_expired_batches"] == 0
    clock += [105.0, 100.0]
    t._one_batch("h", _cbatch([b"a"], [1]))
    assert _counts(t)["accepted"] == 1 and _counts(t)["lock_expired_batches"] == 1


def test_refused_acknowledgements_are_counted_and_the_first_error_is_named(caplog, monkeypatch):
    refused = CODE["INVALID_RECORD_STATE"]
    rec = AckRecorder({1: refused, 2: CODE["_STATE"]})
    monkeypatch.setattr(_thread._share, "acknowledge", rec.rdk_share_ack)
    t, _ = _thread_for(lambda batch: None)
    caplog.set_level(logging.DEBUG, LOGGER)
    t._one_batch("h", _cbatch([b"a", b"b", b"c"], [1, 1, 1]))
    c = _counts(t)
    assert c["ack_errors"] == 2 and c["accepted"] == 3
    [(level, text)] = _messages(caplog)
    assert level == logging.WARNING
    assert text.startswith("share consumer of group g1: 2 of 3 acknowledgements refused by "
                           "librdkafka after ")
    assert text.endswith(" s in the callback: INVALID_RECORD_STATE: Broker: The record state "
                         "is invalid")
    # the same refusal again within the limiter's interval is held back, then counted
    t._one_batch("h", _cbatch([b"a", b"b", b"c"], [1, 1, 1]))
    assert len(_messages(caplog)) == 1 and _counts(t)["ack_errors"] == 4


def test_records_with_errors_are_logged_and_an_empty_batch_is_not_delivered(ack, caplog):
    calls: list = []
    t, _ = _thread_for(calls.append)
    caplog.set_level(logging.DEBUG, LOGGER)
    t._one_batch("h", _cbatch([], [], n_errors=2, first_err=CODE["_MSG_TIMED_OUT"]))
    assert calls == [] and ack.calls == [] and _counts(t)["delivered"] == 0
    assert _messages(caplog) == [(logging.WARNING, (
        "share consumer of group g1: 2 record(s) with errors, which librdkafka acknowledged "
        "itself (first: _MSG_TIMED_OUT: Local: Message timed out)"))]
    t._one_batch("h", _cbatch([b"a"], [1], n_errors=1, first_err=CODE["_MSG_TIMED_OUT"]))
    assert len(calls) == 1 and ack.calls == [("h", bytes([ACCEPT]))]
    assert len(_messages(caplog)) == 1  # the same key within the interval: held back


def test_repeated_lines_say_how_many_were_held_back(ack, caplog, monkeypatch):
    t, _ = _thread_for(lambda batch: None)
    caplog.set_level(logging.DEBUG, LOGGER)
    clock = [0.0]
    monkeypatch.setattr(_binding.time, "monotonic", lambda: clock[0])
    for _ in range(3):
        t.ack_failed("t", 1, 2, CODE["_STATE"])
    clock[0] = 11.0
    t.ack_failed("t", 1, 2, CODE["_STATE"])
    texts = [text for _, text in _messages(caplog)]
    assert len(texts) == 2 and texts[1].endswith(" (and 2 more like it)")
    assert not texts[0].endswith("more like it)")


def _run_beside(t: ShareThread, application) -> None:
    """One batch through ``t`` while ``application`` runs on a thread; a failure of the
    application stops the share thread (else it would wait for the batch for ever) and
    fails the test."""
    failed: list[BaseException] = []

    def run() -> None:
        try:
            application()
        except BaseException as e:
            failed.append(e)
            t.stop_event.set()

    app = threading.Thread(target=run)
    app.start()
    t._one_batch("h", _cbatch([b"a", b"b"], [1, 1]))
    app.join()
    assert failed == []


def test_iterator_mode_hands_the_batch_over_and_waits_until_it_is_settled(ack):
    handoff: queue.Queue = queue.Queue(maxsize=1)
    t, _ = _thread_for(mode="iterator", handoff=handoff)
    handoff.put("someone else's")  # full: the share thread waits for room

    def application() -> None:
        assert handoff.get(timeout=10) == "someone else's"
        batch = handoff.get(timeout=10)
        batch.reject(batch.messages[0])
        batch._settled.set()

    _run_beside(t, application)
    assert ack.calls == [("h", bytes([REJECT, ACCEPT]))]


def test_iterator_mode_stop_releases_a_batch_nobody_took(ack):
    handoff: queue.Queue = queue.Queue(maxsize=1)
    handoff.put("full")
    t, _ = _thread_for(mode="iterator", handoff=handoff)
    t.stop_event.set()
    t._one_batch("h", _cbatch([b"a"], [1]))
    assert ack.calls == [("h", bytes([RELEASE]))] and handoff.get_nowait() == "full"


def test_iterator_mode_stop_releases_a_batch_taken_but_not_finished(ack):
    handoff: queue.Queue = queue.Queue(maxsize=1)
    t, _ = _thread_for(mode="iterator", handoff=handoff)
    taken: list[ShareBatch] = []

    def application() -> None:
        batch = handoff.get(timeout=10)
        batch.accept(batch.messages[0])
        taken.append(batch)
        t.stop_event.set()  # stop() while the application holds the batch

    _run_beside(t, application)
    assert ack.calls == [("h", bytes([ACCEPT, RELEASE]))]
    with pytest.raises(ValueError, match="already acknowledged"):
        taken[0].accept(taken[0].messages[1])


def test_iterator_mode_a_batch_settled_as_stop_comes_is_accepted(ack):
    handoff: queue.Queue = queue.Queue(maxsize=1)
    t, _ = _thread_for(mode="iterator", handoff=handoff)

    class SettledOnStop(threading.Event):
        def is_set(self) -> bool:  # the stop arrives; by then the batch was settled
            batch = handoff.get_nowait()
            batch._settled.set()
            return True

    t.stop_event = SettledOnStop()
    t._one_batch("h", _cbatch([b"a"], [1]))
    assert ack.calls == [("h", bytes([ACCEPT]))]


def test_handoff_put_says_whether_the_batch_went_in():
    handoff: queue.Queue = queue.Queue(maxsize=1)
    t, _ = _thread_for(mode="iterator", handoff=handoff)
    assert t._handoff_put("a") is True
    assert t._handoff_put("b") is False
    assert handoff.get_nowait() == "a" and handoff.empty()


def test_serve_collected_fails_on_fatal_errors_and_logs_the_others(caplog):
    t, failures = _thread_for(None)
    fatal = KafkaError(CODE["_FATAL"], "fenced", fatal=True)
    other = KafkaError(CODE["_TRANSPORT"], "broker down")
    t.errors += [other, fatal]
    caplog.set_level(logging.DEBUG, LOGGER)
    t.serve_collected()
    assert failures == [fatal] and t.errors == []
    assert _messages(caplog) == [(logging.WARNING, "librdkafka error: _TRANSPORT: broker down")]


def test_serve_collected_hands_each_statistics_to_stats_callback(caplog):
    got: list = []
    t, _ = _thread_for(None, stats_callback=got.append)
    t.counts.counts.delivered = 7
    t.stats_json += ["not json", json.dumps({"n": 1}), json.dumps({"n": 2})]
    t.serve_collected()
    assert t.stats_json == []
    assert [(s.rdkafka, s.delivered) for s in got] == [({"n": 1}, 7), ({"n": 2}, 7)]
    assert t.counts.last is got[-1] and t.counts.counts.rdkafka == {"n": 2}
    got[-1].rdkafka["n"] = 99  # the application's copy, not the counts
    assert t.counts.counts.rdkafka == {"n": 2}


def test_serve_collected_keeps_the_last_stats_without_a_callback_and_logs_a_raising_one(caplog):
    t, _ = _thread_for(None)
    t.stats_json.append(json.dumps({"n": 3}))
    t.serve_collected()
    assert t.counts.last is not None and t.counts.last.rdkafka == {"n": 3}

    def bad(stats) -> None:
        raise RuntimeError("stats")

    t2, _ = _thread_for(None, stats_callback=bad)
    t2.stats_json += [json.dumps({"n": 1}), json.dumps({"n": 2})]
    caplog.set_level(logging.DEBUG, LOGGER)
    t2.serve_collected()
    recs = [r for r in caplog.records if r.name == LOGGER]
    assert [r.getMessage() for r in recs] == ["share consumer of group g1: stats_callback raised"] * 2
    assert all(r.levelno == logging.ERROR and r.exc_info[0] is RuntimeError for r in recs)
    assert t2.counts.last is not None and t2.counts.last.rdkafka == {"n": 2}


def test_ack_failed_counts_and_explains_an_expired_lock(caplog):
    t, _ = _thread_for(None)
    caplog.set_level(logging.DEBUG, LOGGER)
    t.ack_failed("orders", 2, 5, CODE["INVALID_RECORD_STATE"])
    t.ack_failed("orders", 3, 1, CODE["_STATE"])
    assert _counts(t)["ack_errors"] == 6
    assert _messages(caplog) == [
        (logging.WARNING, "share consumer of group g1: 5 acknowledgement(s) of orders[2] "
                          "failed: INVALID_RECORD_STATE: Broker: The record state is invalid "
                          "(the acquisition lock ran out before the callback finished: those "
                          "records go, or went, to another delivery)"),
        (logging.WARNING, "share consumer of group g1: 1 acknowledgement(s) of orders[3] "
                          f"failed: {KafkaError(CODE['_STATE'])}")]


def test_share_counts_snapshot_is_a_copy():
    counts = ShareCounts()
    assert counts.last is None
    counts.counts.accepted = 3
    counts.counts.rdkafka = {"a": 1}
    snap = counts.snapshot()
    assert snap == counts.counts and snap is not counts.counts
    snap.rdkafka["a"] = 2
    snap.accepted = 4
    assert counts.counts.rdkafka == {"a": 1} and counts.counts.accepted == 3
    assert counts.lock.acquire(blocking=False)
    counts.lock.release()


def test_decode_gives_str_values(ack):
    seen: list = []
    t, _ = _thread_for(lambda batch: seen.extend(m.value for m in batch))
    t.decode = "utf-8"
    t._one_batch("h", _cbatch([b"caf\xc3\xa9", b"\xff"], [1, 1]))
    assert seen == ["caf\u00e9", "\ufffd"]


def test_expired_batches_add_up(ack):
    t, _ = _thread_for(lambda batch: None, lock_seconds=0.0)
    for _ in range(3):
        t._one_batch("h", _cbatch([b"a"], [1]))
    assert _counts(t)["lock_expired_batches"] == 3 and _counts(t)["accepted"] == 0


def test_the_refusal_line_says_how_long_the_callback_took(monkeypatch, caplog):
    monkeypatch.setattr(_thread._share, "acknowledge", AckRecorder({0: CODE["_STATE"]}).rdk_share_ack)
    clock = [107.25, 100.5, 100.0]  # popped from the end: start, callback's end, the line
    monkeypatch.setattr(_thread, "time", pytypes.SimpleNamespace(monotonic=clock.pop))
    t, _ = _thread_for(lambda batch: None)
    caplog.set_level(logging.DEBUG, LOGGER)
    t._one_batch("h", _cbatch([b"a"], [1]))
    assert _messages(caplog) == [(logging.WARNING, (
        "share consumer of group g1: 1 of 1 acknowledgements refused by librdkafka after "
        f"7.2 s in the callback: {KafkaError(CODE['_STATE'])}"))]


def test_different_errors_are_each_logged_once_within_the_interval(monkeypatch, caplog):
    """The repeat limiter holds back a line like one shown, not lines of other errors."""
    rec = AckRecorder({0: CODE["_STATE"]})
    monkeypatch.setattr(_thread._share, "acknowledge", rec.rdk_share_ack)
    t, _ = _thread_for(lambda batch: None)
    caplog.set_level(logging.DEBUG, LOGGER)
    for first_err in ("_MSG_TIMED_OUT", "_BAD_MSG", "_MSG_TIMED_OUT"):
        t._one_batch("h", _cbatch([b"a"], [1], n_errors=1, first_err=CODE[first_err]))
    rec.refuse = {0: CODE["INVALID_RECORD_STATE"]}
    t._one_batch("h", _cbatch([b"a"], [1]))
    t.errors += [KafkaError(CODE["_TRANSPORT"], "broker 1 down"),
                 KafkaError(CODE["_TRANSPORT"], "broker 2 down"),
                 KafkaError(CODE["_RESOLVE"], "broker 1 down"),
                 KafkaError(CODE["_TRANSPORT"], "broker 1 down")]
    t.serve_collected()
    t.ack_failed("t", 0, 1, CODE["_STATE"])
    t.ack_failed("t", 1, 1, CODE["_STATE"])
    t.ack_failed("t", 0, 1, CODE["INVALID_RECORD_STATE"])
    t.ack_failed("t", 0, 1, CODE["_STATE"])
    texts = [text for _, text in _messages(caplog)]
    assert [text.split(": ", 1)[1][:40] for text in texts] == [
        "1 record(s) with errors, which librdkafk",
        "1 of 1 acknowledgements refused by librd",  # (_STATE, with the first batch)
        "1 record(s) with errors, which librdkafk",
        "1 of 1 acknowledgements refused by librd",  # INVALID_RECORD_STATE: a new error
        "_TRANSPORT: broker 1 down",
        "_TRANSPORT: broker 2 down",
        "_RESOLVE: broker 1 down",
        "1 acknowledgement(s) of t[0] failed: _ST",
        "1 acknowledgement(s) of t[1] failed: _ST",
        "1 acknowledgement(s) of t[0] failed: INV"]
    assert "(first: _BAD_MSG" in texts[2] and texts[3].endswith("INVALID_RECORD_STATE: Broker: "
                                                                "The record state is invalid")


def test_a_batch_released_by_stop_cannot_be_settled_any_more(ack, monkeypatch):
    """Once stop() released a batch the application holds, settling it raises, even before
    the share thread reads its final types."""
    handoff: queue.Queue = queue.Queue(maxsize=1)
    t, _ = _thread_for(mode="iterator", handoff=handoff)
    late: list = []

    class Watched(ShareBatch):
        def _finish(self, default: int) -> bytes:
            try:
                self.accept(self.messages[0])  # the application, too late
                late.append("accepted")
            except ValueError as e:
                late.append(str(e))
            return super()._finish(default)

    monkeypatch.setattr(_thread, "ShareBatch", Watched)

    def application() -> None:
        handoff.get(timeout=10)
        t.stop_event.set()

    _run_beside(t, application)
    assert ack.calls == [("h", bytes([RELEASE, RELEASE]))]
    assert len(late) == 1 and late[0].endswith(": this batch is already acknowledged")


def test_give_up_while_waiting_for_a_future_releases_the_batch(ack, caplog):
    future: concurrent.futures.Future = concurrent.futures.Future()
    t, _ = _thread_for(lambda batch: future)
    give_up = threading.Timer(0.2, t.give_up.set)
    give_up.start()
    safety = threading.Timer(30, future.cancel)  # only a broken wait would need it
    safety.start()
    caplog.set_level(logging.DEBUG, LOGGER)
    try:
        t._one_batch("h", _cbatch([b"a"], [1]))
    finally:
        safety.cancel()
        give_up.join()
    assert ack.calls == [("h", bytes([RELEASE]))] and not future.done()
    assert [text for _, text in _messages(caplog)] == [
        "share consumer of group g1: the Future/awaitable of a batch of 1 did not finish "
        "before stop(); released"]
