"""The delivery ledger (rdk.producer._accounting) driven directly, no broker: hand-made
``rdk_deliveries`` structs (``lib.rdk_deliveries_new``, what the event thread folds in C)
go to ``Ledger.on_deliveries``; the exact Delivery figures, failures, callback calls and
their order, error names and log lines are asserted."""

from __future__ import annotations

import functools
import logging
import threading

import pytest

from rdk._binding import ERROR_CODES, err_description, ffi, lib
from rdk.errors import KafkaError
from rdk.message import Message
from rdk.producer._accounting import ERR_QUEUE_FULL, Ledger, SendState, run_user
from rdk.producer._types import DeliveryReportInfo

TIMED_OUT = ERROR_CODES["_MSG_TIMED_OUT"]
TOO_LARGE = ERROR_CODES["MSG_SIZE_TOO_LARGE"]
UNKNOWN_TP = ERROR_CODES["UNKNOWN_TOPIC_OR_PART"]


class Cond(threading.Condition):
    """A condition that counts notify_all() calls and checks the lock is held then."""

    def __init__(self) -> None:
        super().__init__()
        self.notified = 0

    def notify_all(self) -> None:
        assert self._is_owned(), "notify_all without the lock"
        self.notified += 1
        super().notify_all()


def deliveries(runs=(), failed=()):
    """An ``rdk_deliveries *``: ``runs`` [(send id, count)] delivered, ``failed``
    [(send id, index, error code, partition)]."""
    cap = max(len(runs), len(failed), 1)
    d = ffi.gc(lib.rdk_deliveries_new(cap), lib.rdk_deliveries_free)
    d.n_runs = len(runs)
    for i, (sid, cnt) in enumerate(runs):
        d.run_send[i], d.run_count[i] = sid, cnt
    d.n_failed = len(failed)
    for i, (sid, idx, code, part) in enumerate(failed):
        d.failed_send[i], d.failed_index[i], d.failed_err[i], d.failed_partition[i] = sid, idx, code, part
    return d


class Recorder:
    """on_delivery / delivery_report_callback that records its calls (in one shared list)."""

    def __init__(self, calls: list, name: str, ledger_box: list | None = None) -> None:
        self.calls, self.name, self.box = calls, name, ledger_box
        self.__name__ = name

    def __call__(self, *args):
        seen = None
        if self.box:
            ledger = self.box[0]
            seen = (ledger.busy, ledger.settled())
        self.calls.append((self.name, args, seen))


def send(ledger: Ledger, payloads, on_delivery=None, topic="t", partition=None):
    state = ledger.new_send(payloads, topic, partition, on_delivery, ["buf"])
    with ledger.cond:
        sid = ledger.register(state)
    return sid, state


# -- SendState -------------------------------------------------------------------------
def test_send_state_starts_with_every_message_remaining():
    cb = print
    st = SendState((b"a",), "topic", 3, 5, cb, ["b"])
    assert (st.payloads, st.topic, st.partition, st.remaining, st.delivered, st.failures,
            st.on_delivery, st.buffers) == ((b"a",), "topic", 3, 5, 0, None, cb, ["b"])


def test_failed_message_rebuilt_with_topic_and_partition():
    payloads = (Message(b"v", b"k", [("h", b"1")], 7), (b"key", b"val"), b"raw", "text")
    st = SendState(payloads, "tp", 4, 4, None, [])
    m = st.message(0, 0)  # partition 0 is a partition, not "unknown"
    assert tuple(m) == (b"v", b"k", [("h", b"1")], 7, "tp", 0, None) and type(m) is Message
    assert tuple(st.message(1, 2)) == (b"val", b"key", None, None, "tp", 2, None)
    assert type(st.message(1, 2)) is Message
    assert tuple(st.message(2, -1)) == (b"raw", None, None, None, "tp", 4, None)
    assert type(st.message(2)) is Message
    assert tuple(st.message(3)) == ("text", None, None, None, "tp", 4, None)
    assert st.message(2, None).partition == 4


# -- Ledger basics ---------------------------------------------------------------------
def test_a_new_ledger_is_empty_and_settled():
    cond = Cond()
    ledger = Ledger(cond, None)
    assert ledger.cond is cond
    assert (ledger.outstanding, ledger.dr_gen, ledger.dropped, ledger.failed, ledger.busy) == (0, 0, 0, 0, 0)
    assert ledger.queue_length == 0 and ledger.settled() is True
    assert ledger.take_failed() == 0


def test_queue_length_is_never_negative():
    ledger = Ledger(Cond(), None)
    ledger.outstanding = -3
    assert ledger.queue_length == 0
    ledger.outstanding = 1
    assert ledger.queue_length == 1


def test_settled_needs_every_part_idle():
    ledger = Ledger(Cond(), None)
    ledger.outstanding = 1
    assert ledger.settled() is False
    ledger.outstanding = -1
    assert ledger.settled() is True
    ledger.busy = 1
    assert ledger.settled() is False
    ledger.busy = 0
    ledger._ready.append(object())
    assert ledger.settled() is False
    ledger._ready.clear()
    ledger._report_counts[1] = 1
    assert ledger.settled() is False


def test_take_failed_returns_then_resets():
    ledger = Ledger(Cond(), None)
    ledger.failed = 4
    assert ledger.take_failed() == 4
    assert ledger.failed == 0 and ledger.take_failed() == 0


def test_payloads_kept_only_for_a_callback_and_copied_from_a_list():
    items = [b"a", b"b"]
    no_cb = Ledger(Cond(), None)
    st = no_cb.new_send(items, "t", 2, None, ["x"])
    assert st.payloads is None and st.remaining == 2 and st.partition == 2 and st.buffers == ["x"]
    st = no_cb.new_send(items, "t", None, print, [])
    assert st.payloads == (b"a", b"b") and type(st.payloads) is tuple and st.on_delivery is print
    items.append(b"c")  # the caller reuses its list: the send keeps what it sent
    assert st.payloads == (b"a", b"b")
    with_dr = Ledger(Cond(), print)
    tup = (b"x",)
    st = with_dr.new_send(tup, "t", None, None, [])
    assert st.payloads is tup and st.topic == "t" and st.on_delivery is None


def test_register_counts_outstanding_and_numbers_sends_from_one():
    ledger = Ledger(Cond(), None)
    a, st_a = send(ledger, [b"1", b"2", b"3"])
    b, _ = send(ledger, [b"4"])
    assert (a, b) == (1, 2)
    assert ledger.outstanding == 4 and ledger.queue_length == 4 and not ledger.settled()
    assert ledger._sends[1] is st_a


def test_adjust_outstanding_takes_the_lock():
    ledger = Ledger(Cond(), None)
    ledger.adjust_outstanding(5)
    ledger.adjust_outstanding(-2)
    assert ledger.outstanding == 3
    # the lock was released: another thread can take it
    assert ledger.cond.acquire(blocking=False)
    ledger.cond.release()


# -- on_deliveries: successes ------------------------------------------------------------
def test_runs_settle_sends_and_call_on_delivery_in_run_order():
    calls: list = []
    box: list = []
    ledger = Ledger(Cond(), None)
    box.append(ledger)
    a, st_a = send(ledger, [b"1", b"2", b"3"], Recorder(calls, "a", box))
    b, st_b = send(ledger, [b"4", b"5"], Recorder(calls, "b", box))
    c, _ = send(ledger, [b"6"], Recorder(calls, "c", box))
    ledger.on_deliveries(deliveries([(c, 1), (a, 2), (b, 2)]))
    # c and b settled, in that order; a has one left; busy while the callbacks run
    assert calls == [("c", (1, []), (1, False)), ("b", (2, []), (1, False))]
    assert (st_a.delivered, st_a.remaining) == (2, 1)
    assert (st_b.delivered, st_b.remaining) == (2, 0)
    assert ledger.outstanding == 1 and ledger.busy == 0 and ledger.dr_gen == 1
    assert set(ledger._sends) == {a} and ledger.cond.notified == 2  # on_deliveries, _done_busy
    ledger.on_deliveries(deliveries([(a, 1)]))
    assert calls[-1] == ("a", (3, []), (1, False))
    assert ledger.outstanding == 0 and ledger.dr_gen == 2 and ledger.settled()
    assert ledger._sends == {} and ledger.failed == 0


def test_an_empty_batch_still_bumps_the_generation():
    ledger = Ledger(Cond(), None)
    send(ledger, [b"1"])
    ledger.on_deliveries(deliveries())
    assert ledger.dr_gen == 1 and ledger.outstanding == 1 and ledger.busy == 0
    assert ledger.cond.notified == 2


def test_a_report_for_an_unknown_send_is_logged_and_counted(caplog):
    calls: list = []
    ledger = Ledger(Cond(), None)
    a, _ = send(ledger, [b"1", b"2"], Recorder(calls, "a"))
    with caplog.at_level(logging.ERROR, logger="rdk"):
        ledger.on_deliveries(deliveries([(99, 3), (a, 2)]))
    assert [r.getMessage() for r in caplog.records] == [
        "delivery report for unknown send 99 (3 messages)"]
    assert calls == [("a", (2, []), None)]
    assert ledger.outstanding == -3 and ledger.queue_length == 0


def test_sends_without_callback_settle_silently():
    ledger = Ledger(Cond(), None)
    a, st = send(ledger, [b"1"])
    ledger.on_deliveries(deliveries([(a, 1)]))
    assert st.remaining == 0 and st.delivered == 1 and ledger._sends == {} and ledger._ready == []


# -- on_deliveries: failures -------------------------------------------------------------
def test_failures_reach_on_delivery_with_the_message_and_error():
    calls: list = []
    ledger = Ledger(Cond(), None)
    a, st = send(ledger, [b"v0", (b"k1", b"v1"), b"v2"], Recorder(calls, "a"), topic="top")
    ledger.on_deliveries(deliveries([(a, 1)], [(a, 1, TIMED_OUT, 5), (a, 2, TIMED_OUT, -1)]))
    assert len(calls) == 1
    name, (delivered, failures), _ = calls[0]
    assert (name, delivered) == ("a", 1)
    assert [tuple(m) for m, _ in failures] == [(b"v1", b"k1", None, None, "top", 5, None),
                                               (b"v2", None, None, None, "top", None, None)]
    e1, e2 = failures[0][1], failures[1][1]
    assert isinstance(e1, KafkaError) and e1.code == TIMED_OUT and e1.name == "_MSG_TIMED_OUT"
    assert e1 is e2  # one error object per code in a batch
    assert e1.context is None
    assert ledger.failed == 2 and ledger.outstanding == 0 and st.remaining == 0
    # on_delivery saw them: nothing left to report, no log line
    assert ledger._report == [] and ledger._report_counts == {} and ledger.settled()


def test_failures_without_any_callback_are_counted_for_one_warning(caplog):
    ledger = Ledger(Cond(), None)
    a, st = send(ledger, [b"1", b"2", b"3", b"4"])
    ledger.on_deliveries(deliveries([(a, 1)], [(a, 0, TIMED_OUT, 0), (a, 2, TOO_LARGE, 0),
                                                (a, 3, TIMED_OUT, 1)]))
    assert st.failures is None and ledger._report == []
    assert ledger._report_counts == {TIMED_OUT: 2, TOO_LARGE: 1}
    assert ledger.failed == 3 and ledger.outstanding == 0 and not ledger.settled()
    with caplog.at_level(logging.WARNING, logger="rdk"):
        ledger.serve_pending()
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [(
        "WARNING",
        "rdk.Producer: 3 message(s) not delivered: _MSG_TIMED_OUT x2, MSG_SIZE_TOO_LARGE x1")]
    assert ledger._report_counts == {} and ledger.settled() and ledger.busy == 0
    assert ledger.take_failed() == 3


def test_delivery_report_callback_gets_items_and_errinfo_before_on_delivery():
    calls: list = []
    box: list = []
    ledger = Ledger(Cond(), Recorder(calls, "dr", box))
    box.append(ledger)
    a, _ = send(ledger, [b"a0", b"a1"], Recorder(calls, "a", box), topic="ta")
    b, _ = send(ledger, [b"b0"], None, topic="tb", partition=3)
    ledger.on_deliveries(deliveries([(a, 1)], [(b, 0, TOO_LARGE, -1), (a, 1, TIMED_OUT, 2)]))
    assert [c[0] for c in calls] == ["dr", "a"]
    (info,), seen = calls[0][1], calls[0][2]
    assert seen == (1, False)
    assert isinstance(info, DeliveryReportInfo)
    assert [(tuple(m), e.code) for m, e in info.errors] == [
        ((b"b0", None, None, None, "tb", 3, None), TOO_LARGE),
        ((b"a1", None, None, None, "ta", 2, None), TIMED_OUT)]
    assert info.rdkafka_errinfo == [
        {"errcode": TOO_LARGE, "errname": "MSG_SIZE_TOO_LARGE", "errstr": err_description(TOO_LARGE),
         "count": 1},
        {"errcode": TIMED_OUT, "errname": "_MSG_TIMED_OUT", "errstr": err_description(TIMED_OUT),
         "count": 1}]
    delivered, failures = calls[1][1]
    assert delivered == 1 and [(m.value, e.code) for m, e in failures] == [(b"a1", TIMED_OUT)]
    assert failures[0] is info.errors[1]  # the same item
    assert ledger._report == [] and ledger._report_counts == {} and ledger.settled()
    assert ledger.failed == 2 and ledger.busy == 0


def test_with_an_on_delivery_only_the_sends_without_one_are_logged(caplog):
    calls: list = []
    ledger = Ledger(Cond(), None)
    a, _ = send(ledger, [b"a0", b"a1"], Recorder(calls, "a"))
    b, st_b = send(ledger, [b"b0", b"b1", b"b2"])
    ledger.on_deliveries(deliveries([], [(b, 0, UNKNOWN_TP, 0), (a, 0, TIMED_OUT, 0),
                                         (b, 2, UNKNOWN_TP, 1)]))
    assert calls == []  # a and b have one message left each
    assert (st_b.remaining, st_b.failures) == (1, None)
    assert ledger._report == [] and ledger._report_counts == {UNKNOWN_TP: 2}
    ledger.on_deliveries(deliveries([(a, 1), (b, 1)]))
    assert calls == [("a", (1, [calls[0][1][1][0]]), None)]
    assert calls[0][1][1][0][0].value == b"a0"
    with caplog.at_level(logging.WARNING, logger="rdk"):
        ledger.serve_pending()
    assert [r.getMessage() for r in caplog.records] == [
        "rdk.Producer: 2 message(s) not delivered: UNKNOWN_TOPIC_OR_PART x2"]
    assert ledger.settled() and ledger.outstanding == 0 and ledger.failed == 3


def test_a_send_with_an_on_delivery_and_no_report_callback_is_not_logged():
    calls: list = []
    ledger = Ledger(Cond(), None)
    a, st = send(ledger, [b"a0", b"a1"], Recorder(calls, "a"))
    ledger.on_deliveries(deliveries([], [(a, 0, TIMED_OUT, 0)]))
    assert ledger._report_counts == {} and st.remaining == 1
    assert [(m.value, e.code) for m, e in st.failures] == [(b"a0", TIMED_OUT)]
    assert calls == []


def test_failures_of_unknown_sends_are_logged(caplog):
    calls: list = []
    ledger = Ledger(Cond(), Recorder(calls, "dr"))
    a, _ = send(ledger, [b"a0"], None)
    with caplog.at_level(logging.ERROR, logger="rdk"):
        ledger.on_deliveries(deliveries([], [(77, 0, TIMED_OUT, 0), (77, 1, TIMED_OUT, 0),
                                             (a, 0, TIMED_OUT, 0)]))
    assert [r.getMessage() for r in caplog.records] == [
        "delivery report for unknown send 77 (2 failed messages)"]
    # only the known send's failure is reported
    ((info,),) = [c[1] for c in calls]
    assert [(m.value, e.code) for m, e in info.errors] == [(b"a0", TIMED_OUT)]
    assert info.rdkafka_errinfo[0]["count"] == 1 and len(info.rdkafka_errinfo) == 1
    assert ledger.failed == 3 and ledger.outstanding == -2


def test_unknown_send_failures_without_reporting_are_counted(caplog):
    calls: list = []
    ledger = Ledger(Cond(), None)
    a, _ = send(ledger, [b"a0", b"a1"], Recorder(calls, "a"))
    with caplog.at_level(logging.ERROR, logger="rdk"):
        ledger.on_deliveries(deliveries([], [(a, 0, TIMED_OUT, 0), (5, 0, TOO_LARGE, 0)]))
    assert ledger._report_counts == {TOO_LARGE: 1}


def test_failures_of_sends_without_payloads_are_only_counted_while_others_are_detailed():
    calls: list = []
    ledger = Ledger(Cond(), Recorder(calls, "dr"))
    # payloads are kept for every send with a report callback
    a, st = send(ledger, [b"a0"], None)
    st.payloads = None  # as if nobody were to see them
    b, _ = send(ledger, [b"b0"], None)
    ledger.on_deliveries(deliveries([], [(a, 0, TIMED_OUT, 0), (b, 0, TOO_LARGE, 0)]))
    ((info,),) = [c[1] for c in calls]
    assert [(m.value, e.code) for m, e in info.errors] == [(b"b0", TOO_LARGE)]
    assert [(e["errcode"], e["count"]) for e in info.rdkafka_errinfo] == [(TOO_LARGE, 1)]


# -- settle_unsent -----------------------------------------------------------------------
def test_unsent_messages_become_failures_full_queue_last():
    calls: list = []
    ledger = Ledger(Cond(), None)
    a, st = send(ledger, [b"m0", b"m1", b"m2", b"m3"], Recorder(calls, "a"), topic="tt", partition=1)
    notified = ledger.cond.notified
    ledger.settle_unsent(a, st, [3, 1], [(2, TOO_LARGE)])
    assert (ledger.dropped, ledger.failed, st.remaining) == (2, 1, 1)
    assert ledger.cond.notified == notified + 1
    assert [(m.value, m.partition, e.code) for m, e in st.failures] == [
        (b"m2", 1, TOO_LARGE), (b"m3", 1, ERR_QUEUE_FULL), (b"m1", 1, ERR_QUEUE_FULL)]
    e_full = st.failures[1][1]
    assert e_full is st.failures[2][1]
    assert e_full.context == "send to 'tt': not enqueued"
    assert str(e_full) == f"send to 'tt': not enqueued: _QUEUE_FULL: {err_description(ERR_QUEUE_FULL)}"
    assert st.failures[0][1].context == "send to 'tt': not enqueued"
    # with an on_delivery and no report callback: nothing to report
    assert ledger._report == [] and ledger._report_counts == {}
    assert a in ledger._sends and ledger._ready == [] and calls == []
    # the last message settles by report: on_delivery sees all four
    ledger.on_deliveries(deliveries([(a, 1)]))
    assert [(c[0], c[1][0], len(c[1][1])) for c in calls] == [("a", 1, 3)]


def test_unsent_messages_that_settle_the_send_go_to_ready():
    calls: list = []
    ledger = Ledger(Cond(), Recorder(calls, "dr"))
    a, st = send(ledger, [b"m0", b"m1"], Recorder(calls, "a"))
    ledger.settle_unsent(a, st, [0], [(1, UNKNOWN_TP)])
    assert st.remaining == 0 and a not in ledger._sends and ledger._ready == [st]
    assert [(m.value, e.code) for m, e in ledger._report] == [(b"m1", UNKNOWN_TP)]
    assert ledger._report_counts == {UNKNOWN_TP: 1}
    assert calls == [] and not ledger.settled()
    ledger.serve_pending()
    assert [c[0] for c in calls] == ["dr", "a"]
    (info,) = calls[0][1]
    assert info.rdkafka_errinfo == [{"errcode": UNKNOWN_TP, "errname": "UNKNOWN_TOPIC_OR_PART",
                                     "errstr": err_description(UNKNOWN_TP), "count": 1}]
    assert calls[1][1][0] == 0 and [(m.value, e.code) for m, e in calls[1][1][1]] == [
        (b"m1", UNKNOWN_TP), (b"m0", ERR_QUEUE_FULL)]
    # outstanding is the producer's to adjust (only what librdkafka took)
    assert ledger._ready == [] and ledger.outstanding == 2 and ledger.busy == 0
    ledger.adjust_outstanding(-2)
    assert ledger.settled()


def test_unsent_without_callbacks_only_counted(caplog):
    ledger = Ledger(Cond(), None)
    a, st = send(ledger, [b"m0", b"m1", b"m2"])
    ledger.settle_unsent(a, st, [0], [(1, UNKNOWN_TP), (2, UNKNOWN_TP)])
    assert st.failures is None and st.remaining == 0
    assert ledger._report == [] and ledger._report_counts == {UNKNOWN_TP: 2}
    assert (ledger.dropped, ledger.failed) == (1, 2)
    assert ledger._ready == [st]
    with caplog.at_level(logging.WARNING, logger="rdk"):
        ledger.serve_pending()
    assert [r.getMessage() for r in caplog.records] == [
        "rdk.Producer: 2 message(s) not delivered: UNKNOWN_TOPIC_OR_PART x2"]


def test_unsent_full_queue_only_is_not_reported():
    ledger = Ledger(Cond(), None)
    a, st = send(ledger, [b"m0", b"m1"])
    ledger.settle_unsent(a, st, [1], [])
    assert ledger._report_counts == {} and ledger.dropped == 1 and ledger.failed == 0
    assert st.remaining == 1 and a in ledger._sends and ledger._ready == []


def test_unsent_nothing_changes_nothing():
    calls: list = []
    ledger = Ledger(Cond(), None)
    a, st = send(ledger, [b"m0"], Recorder(calls, "a"))
    ledger.settle_unsent(a, st, [], [])
    assert st.failures is None and st.remaining == 1 and ledger._ready == []


def test_unsent_failures_add_to_earlier_ones():
    ledger = Ledger(Cond(), None)
    a, st = send(ledger, [b"m0", b"m1", b"m2"], print)
    st.failures = [("earlier", None)]
    ledger.settle_unsent(a, st, [2], [])
    assert [f[0] if f[0] == "earlier" else f[0].value for f in st.failures] == ["earlier", b"m2"]


# -- flush_report / serve_pending / run_user -----------------------------------------------
def test_flush_report_without_failures_calls_nothing(caplog):
    calls: list = []
    ledger = Ledger(Cond(), Recorder(calls, "dr"))
    with caplog.at_level(logging.DEBUG, logger="rdk"):
        ledger.flush_report()
        ledger.serve_pending()
    assert calls == [] and caplog.records == [] and ledger.busy == 0


def test_flush_report_accumulates_counts_per_code():
    calls: list = []
    ledger = Ledger(Cond(), Recorder(calls, "dr"))
    with ledger.cond:
        ledger._add_report(["x"], {TIMED_OUT: 2})
        ledger._add_report(["y"], {TIMED_OUT: 1, TOO_LARGE: 4})
    ledger.flush_report()
    ((info,),) = [c[1] for c in calls]
    assert info.errors == ["x", "y"]
    assert [(e["errcode"], e["errname"], e["count"]) for e in info.rdkafka_errinfo] == [
        (TIMED_OUT, "_MSG_TIMED_OUT", 3), (TOO_LARGE, "MSG_SIZE_TOO_LARGE", 4)]
    assert ledger._report == [] and ledger._report_counts == {}


def test_a_raising_callback_is_logged_and_the_ledger_still_settles(caplog):
    order: list = []

    def bad(delivered, failures):
        order.append("bad")
        raise ValueError("boom")

    def good(delivered, failures):
        order.append("good")

    ledger = Ledger(Cond(), None)
    a, _ = send(ledger, [b"1"], bad)
    b, _ = send(ledger, [b"2"], good)
    with caplog.at_level(logging.ERROR, logger="rdk"):
        ledger.on_deliveries(deliveries([(a, 1), (b, 1)]))
    assert order == ["bad", "good"] and ledger.busy == 0 and ledger.settled()
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("ERROR", "exception in on_delivery callback 'bad'")]
    assert caplog.records[0].exc_info[0] is ValueError


def test_a_raising_report_callback_does_not_skip_on_delivery(caplog):
    order: list = []

    def dr(info):
        order.append("dr")
        raise SystemExit(3)

    ledger = Ledger(Cond(), dr)
    a, _ = send(ledger, [b"1"], lambda n, f: order.append(("od", n, len(f))))
    with caplog.at_level(logging.ERROR, logger="rdk"):
        ledger.on_deliveries(deliveries([], [(a, 0, TIMED_OUT, 0)]))
    assert order == ["dr", ("od", 0, 1)] and ledger.busy == 0
    assert [r.getMessage() for r in caplog.records] == [
        "delivery_report_callback 'dr' raised SystemExit; a callback on rdk's event thread "
        "cannot exit the program, so it was logged and ignored"]
    assert caplog.records[0].exc_info[0] is SystemExit


def test_busy_is_given_back_when_taking_the_ready_sends_fails():
    ledger = Ledger(Cond(), None)
    ledger.busy = 1

    def take():
        raise RuntimeError("x")

    with pytest.raises(RuntimeError):
        ledger._run_callbacks(False, take)
    assert ledger.busy == 0


def test_run_user_passes_arguments_and_names_a_callable_without_name(caplog):
    got: list = []
    run_user(lambda *a: got.append(a), "cb", 1, [2])
    assert got == [(1, [2])]

    def f(x):
        raise KeyError(x)

    p = functools.partial(f, 1)
    with caplog.at_level(logging.ERROR, logger="rdk"):
        run_user(p, "on_delivery callback")
        run_user(functools.partial(lambda: (_ for _ in ()).throw(KeyboardInterrupt())), "thing")
    msgs = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert msgs[0] == ("ERROR", f"exception in on_delivery callback {p!r}")
    assert msgs[1][0] == "ERROR" and msgs[1][1].startswith("thing functools.partial(")
    assert msgs[1][1].endswith(" raised KeyboardInterrupt; a callback on rdk's event thread cannot "
                               "exit the program, so it was logged and ignored")


# -- counters add up across calls, passes overlap --------------------------------------------
def test_counters_add_to_what_was_there():
    ledger = Ledger(Cond(), None)
    ledger.dropped, ledger.failed = 10, 20
    a, st = send(ledger, [b"m0", b"m1", b"m2", b"m3"])
    ledger.settle_unsent(a, st, [0], [(1, UNKNOWN_TP)])
    assert (ledger.dropped, ledger.failed) == (11, 21)
    ledger.on_deliveries(deliveries([], [(a, 2, TIMED_OUT, 0), (a, 3, TIMED_OUT, 0)]))
    assert ledger.failed == 23 and ledger.dropped == 11


def test_a_pass_counts_itself_busy_on_top_of_another():
    calls: list = []
    box: list = []
    ledger = Ledger(Cond(), None)
    box.append(ledger)
    a, _ = send(ledger, [b"m0"], Recorder(calls, "a", box))
    b, st_b = send(ledger, [b"m1"], Recorder(calls, "b", box))
    ledger.busy = 1  # another pass running callbacks
    ledger.on_deliveries(deliveries([(a, 1)]))
    assert calls == [("a", (1, []), (2, False))] and ledger.busy == 1
    ledger.settle_unsent(b, st_b, [0], [])
    ledger.serve_pending()
    assert calls[-1] == ("b", (0, [calls[-1][1][1][0]]), (2, False)) and ledger.busy == 1


def test_reported_failures_are_counted_per_code():
    calls: list = []
    ledger = Ledger(Cond(), Recorder(calls, "dr"))
    a, _ = send(ledger, [b"m0", b"m1", b"m2"])
    ledger.on_deliveries(deliveries([], [(a, 0, TIMED_OUT, 0), (a, 1, TIMED_OUT, 0), (a, 2, TOO_LARGE, 0)]))
    ((info,),) = [c[1] for c in calls]
    assert [(e["errcode"], e["count"]) for e in info.rdkafka_errinfo] == [(TIMED_OUT, 2), (TOO_LARGE, 1)]


def test_kept_messages_of_a_send_nobody_watches_are_counted_for_the_log_line():
    # new_send keeps payloads only for a callback; a send with them and no callback at all is
    # still counted for the warning
    ledger = Ledger(Cond(), None)
    st = SendState((b"m0", b"m1", b"m2"), "t", None, 3, None, [])
    with ledger.cond:
        a = ledger.register(st)
    ledger.on_deliveries(deliveries([], [(a, 0, TIMED_OUT, 0), (a, 1, TIMED_OUT, 0)]))
    assert ledger._report == [] and ledger._report_counts == {TIMED_OUT: 2}
    assert [(m.value, e.code) for m, e in st.failures] == [(b"m0", TIMED_OUT), (b"m1", TIMED_OUT)]


def test_settling_unsent_messages_of_a_send_no_longer_registered():
    ledger = Ledger(Cond(), None)
    st = ledger.new_send([b"m0"], "t", None, None, [])
    ledger.settle_unsent(12, st, [0], [])  # never registered: nothing to remove, no KeyError
    assert ledger._ready == [st] and st.remaining == 0
