"""Delivery accounting: every send() in flight until each of its messages is settled.

A ``SendState`` per call counts what is left; the ``Ledger`` holds them by send id and
folds what the event thread receives (runs of ``(send id, count)`` delivered and a list
of failures, already folded in C) into them. A call whose last message settles gets its
``on_delivery(delivered_count, failures)``; failures also go to
``delivery_report_callback`` (or one warning line on the ``rdk`` logger without one).
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from itertools import count
from typing import Any

from .. import _binding
from .._binding import ERROR_CODES
from .._binding import produce as _produce
from ..errors import KafkaError
from ..message import Message
from ._arrow import ArrowRows
from ._types import DeliveryReportInfo

log = logging.getLogger("rdk")

ERR_QUEUE_FULL = ERROR_CODES["_QUEUE_FULL"]


class SendState:
    """One send() call until each of its messages is delivered or failed."""

    __slots__ = ("buffers", "delivered", "failures", "on_delivery", "partition", "payloads",
                 "remaining", "topic")

    def __init__(self, payloads: Sequence[Any] | None, topic: str, partition: int | None,
                 n: int, on_delivery: Callable[[int, list], Any] | None, buffers: list) -> None:
        self.payloads = payloads  # the caller's items, kept only when a callback sees failures
        self.topic = topic
        self.partition = partition  # None: the balancer chose per message
        self.remaining = n  # messages neither delivered nor failed yet
        self.delivered = 0
        self.failures: list | None = None  # [(rdk.Message, KafkaError)]
        self.on_delivery = on_delivery
        # the laid-out buffers: librdkafka points into them (no copy) until the last report
        self.buffers = buffers

    def message(self, index: int, partition: int | None = None) -> Message:
        """Message ``index`` of the call as an rdk.Message with its topic and partition."""
        topic = self.topic
        if partition is None or partition < 0:
            partition = self.partition
        if isinstance(self.payloads, ArrowRows):  # rebuilt from its row, which is recorded
            return self.payloads.message(index, topic, partition)
        item = self.payloads[index]  # type: ignore[index]  # only called when payloads are kept
        if isinstance(item, Message):
            return tuple.__new__(Message, (item[0], item[1], item[2], item[3], topic, partition, None))
        if isinstance(item, tuple):
            return tuple.__new__(Message, (item[1], item[0], None, None, topic, partition, None))
        return tuple.__new__(Message, (item, None, None, None, topic, partition, None))


class Ledger:
    """Every send() in flight, and the failures not yet reported.

    Its fields are guarded by ``cond`` (the producer's condition, which also guards the
    producer's lifecycle flags); methods that take it say so.
    """

    def __init__(self, cond: threading.Condition,
                 delivery_report_callback: Callable[[DeliveryReportInfo], Any] | None) -> None:
        self.cond = cond
        self._dr_cb = delivery_report_callback
        self._sends: dict[int, SendState] = {}
        self._send_ids = count(1)
        self.outstanding = 0  # enqueued messages whose delivery report has not been served
        self.dr_gen = 0  # bumped each time delivery reports free room in the queue
        self.dropped = 0  # messages refused by a full queue since the producer started
        self.failed = 0  # messages failed (not for a full queue) since take_failed()
        self.busy = 0  # event-thread passes running user callbacks: flush() waits for them
        self._ready: list[SendState] = []  # settled sends whose on_delivery is still due
        # failures not yet reported: (message, error) items for delivery_report_callback and
        # counts per error code (for its rdkafka_errinfo, or one log line without it)
        self._report: list = []
        self._report_counts: dict[int, int] = {}

    @property
    def queue_length(self) -> int:
        """Messages enqueued and not yet delivered nor failed."""
        return max(self.outstanding, 0)

    def settled(self) -> bool:
        """Nothing outstanding and every callback served and returned (caller holds the lock)."""
        return (self.outstanding <= 0 and not self._ready and not self._report_counts
                and self.busy == 0)

    def take_failed(self) -> int:
        """Messages failed since the previous call (caller holds the lock)."""
        n, self.failed = self.failed, 0
        return n

    # -- the sending thread ----------------------------------------------------
    def new_send(self, payloads: Sequence[Any], topic: str, partition: int | None,
                 on_delivery: Callable[[int, list], Any] | None, buffers: list) -> SendState:
        """The state of a call; its payloads are kept only if a callback will see failures."""
        keep = payloads if (on_delivery is not None or self._dr_cb is not None) else None
        if isinstance(keep, list):
            keep = tuple(keep)  # the caller may reuse its list; failures must name the right message
        return SendState(keep, topic, partition, len(payloads), on_delivery, buffers)

    def register(self, state: SendState) -> int:
        """Count the call's messages as outstanding; returns its send id (caller holds the lock).

        Done before the C call: reports may come back before it returns.
        """
        send_id = next(self._send_ids)
        self._sends[send_id] = state
        self.outstanding += state.remaining
        return send_id

    def adjust_outstanding(self, delta: int) -> None:
        """Only what librdkafka took is outstanding (takes the lock)."""
        with self.cond:
            self.outstanding += delta

    def settle_unsent(self, send_id: int, state: SendState, queue_full: list[int],
                      refused: list[tuple[int, int]]) -> None:
        """Account for messages librdkafka never took (takes the lock); the event thread
        reports them. ``queue_full``: positions in the call refused for lack of room;
        ``refused``: ``(position, error code)`` refused for another reason.

        All of them become failures of the send (on_delivery); those refused for a reason
        other than a full queue are delivery failures too (delivery_report_callback).
        """
        context = f"send to {state.topic!r}: not enqueued"
        errors: dict[int, KafkaError] = {}
        for code in {ERR_QUEUE_FULL} | {code for _, code in refused}:
            errors[code] = KafkaError(code, context=context)
        kept = state.payloads is not None
        dropped = [(state.message(i) if kept else None, errors[ERR_QUEUE_FULL]) for i in queue_full]
        failed = [(state.message(i) if kept else None, errors[code]) for i, code in refused]
        with self.cond:
            k = len(dropped) + len(failed)
            self.dropped += len(dropped)
            self.failed += len(failed)
            state.remaining -= k
            if k and kept:
                state.failures = (state.failures or []) + failed + dropped
            if failed and (self._dr_cb is not None or state.on_delivery is None):
                self._add_report(failed if self._dr_cb is not None else [],
                                 Counter(code for _, code in refused))
            if state.remaining == 0:
                self._sends.pop(send_id, None)
                self._ready.append(state)
            self.cond.notify_all()

    # -- the event thread ------------------------------------------------------
    def on_deliveries(self, d: Any) -> None:
        """Fold one ``rdk_deliveries`` batch into the sends, then run due callbacks.

        ``busy`` covers the callbacks: flush() returns only once they returned."""
        done: list[SendState] = []
        if d.n_no_offset:
            _warn_no_offset(d)
        with self.cond:
            self.busy += 1
            sends = self._sends
            n_runs = d.n_runs
            if n_runs:
                run_send, run_count = d.run_send, d.run_count
                settled = 0
                for i in range(n_runs):
                    c = run_count[i]
                    settled += c
                    sid = run_send[i]
                    st = sends.get(sid)
                    if st is None:
                        log.error("delivery report for unknown send %d (%d messages)", sid, c)
                        continue
                    st.delivered += c
                    st.remaining -= c
                    if st.remaining == 0:
                        done.append(sends.pop(sid))
                self.outstanding -= settled
            if d.n_failed:
                self._fold_failures(d, d.n_failed, done)
            self.dr_gen += 1
            self.cond.notify_all()
        # failures promptly to delivery_report_callback; without one the log line waits for
        # serve_pending
        self._run_callbacks(self._dr_cb is not None and bool(self._report_counts), lambda: done)

    def _run_callbacks(self, report: bool, take: Callable[[], list[SendState]]) -> None:
        """With ``busy`` already counted and outside the lock: pending failure reports first
        (if ``report``), then the on_delivery calls of the sends ``take()`` gives; then the
        busy count is given back."""
        try:
            if report:
                self.flush_report()
            for st in take():
                self._complete(st)
        finally:
            self._done_busy()

    def _done_busy(self) -> None:
        with self.cond:
            self.busy -= 1
            self.cond.notify_all()

    def _fold_failures(self, d: Any, n_failed: int, done: list[SendState]) -> None:
        """Record failures on their sends (caller holds the lock).

        Counting is done at C speed; messages are rebuilt only for sends whose caller
        will see them (on_delivery or delivery_report_callback).
        """
        sends = self._sends
        sids, codes = _produce.failed_sends(d, n_failed)
        detailed: dict[int, SendState] = {}
        for sid, cnt in Counter(sids).items():
            st = sends.get(sid)
            if st is None:
                log.error("delivery report for unknown send %d (%d failed messages)", sid, cnt)
                continue
            if st.payloads is not None:
                detailed[sid] = st
            st.remaining -= cnt
            if st.remaining == 0:
                done.append(sends.pop(sid))
        self.outstanding -= n_failed
        self.failed += n_failed
        if not detailed:  # nobody sees these messages one by one: count them for the log line
            self._add_report([], Counter(codes))
            return
        reporting = self._dr_cb is not None
        errors: dict[int, KafkaError] = {}
        items, counts = [], Counter[int]()
        indices, partitions = _produce.failed_positions(d, n_failed)
        for sid, idx, code, part in zip(sids, indices, codes, partitions, strict=True):
            st = detailed.get(sid)
            if st is None:  # a send without callbacks (only when reporting is off), or unknown
                if not reporting:
                    counts[code] += 1
                continue
            err = errors.get(code)
            if err is None:
                err = errors[code] = KafkaError(code)
            item = (st.message(idx, part), err)
            if st.failures is None:
                st.failures = []
            st.failures.append(item)
            if reporting:
                items.append(item)
                counts[code] += 1
            elif st.on_delivery is None:
                counts[code] += 1
        self._add_report(items, counts)

    def serve_pending(self) -> None:
        """After each poll: report pending failures, run on_delivery of settled sends."""
        if not (self._report_counts or self._ready):
            return
        with self.cond:
            self.busy += 1
        self._run_callbacks(bool(self._report_counts), self._take_ready)

    def _take_ready(self) -> list[SendState]:
        with self.cond:
            ready, self._ready = self._ready, []
        return ready

    def flush_report(self) -> None:
        """Pending failures -> delivery_report_callback (or one warning when there is none)."""
        with self.cond:
            items, self._report = self._report, []
            counts, self._report_counts = self._report_counts, {}
        if not counts:
            return
        errinfo = [
            {"errcode": code, "errname": _binding.err_name(code),
             "errstr": _binding.err_description(code), "count": cnt}
            for code, cnt in counts.items()
        ]
        if self._dr_cb is None:
            log.warning("rdk.Producer: %d message(s) not delivered: %s", sum(counts.values()),
                        ", ".join(f"{e['errname']} x{e['count']}" for e in errinfo))
            return
        run_user(self._dr_cb, "delivery_report_callback", DeliveryReportInfo(items, errinfo))

    def _add_report(self, items: list, counts: Mapping[int, int]) -> None:
        """Queue failures for the next report (caller holds the lock)."""
        self._report += items
        for code, cnt in counts.items():
            self._report_counts[code] = self._report_counts.get(code, 0) + cnt

    @staticmethod
    def _complete(st: SendState) -> None:
        if st.on_delivery is not None:
            run_user(st.on_delivery, "on_delivery callback", st.delivered, st.failures or [])


def run_user(cb: Callable, what: str, *args: Any) -> None:
    """Run a user callback on the event thread: whatever it raises (``SystemExit`` too) is
    logged and never skips the accounting or the callbacks that follow."""
    try:
        cb(*args)
    except Exception:
        log.exception("exception in %s %r", what, getattr(cb, "__name__", cb))
    except BaseException as e:  # a background thread cannot exit the program
        log.error("%s %r raised %s; a callback on rdk's event thread cannot exit the "
                  "program, so it was logged and ignored", what, getattr(cb, "__name__", cb),
                  type(e).__name__, exc_info=True)



def _warn_no_offset(d: Any) -> None:
    """Say that librdkafka counted messages as delivered on a DUPLICATE_SEQUENCE_NUMBER answer."""
    log.warning(
        "%d message(s) in %d batch(es) (the first to %s [%d]) were reported delivered on a "
        "DUPLICATE_SEQUENCE_NUMBER answer, without an offset: librdkafka takes that answer to "
        "an idempotent produce as 'an earlier attempt of this batch was stored'; a broker that "
        "did not store it has lost them", d.n_no_offset, d.n_no_offset_batches,
        _produce.no_offset_topic(d), d.no_offset_partition)
