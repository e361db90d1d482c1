"""The work behind rdk.Producer.send(): its arguments normalised and checked (``check``),
then the payloads laid out and enqueued in one C call (``produce``), retried under
``on_queue_full="block"``."""

from __future__ import annotations

import time
from array import array
from collections.abc import Callable, Sequence
from itertools import compress
from typing import TYPE_CHECKING, Any

from .._binding import produce as _produce
from ..errors import ClosedError, QueueFullError, TransactionError
from ..validate import check_callable, check_timeout, check_topic_name
from ._accounting import ERR_QUEUE_FULL, SendState
from ._arrow import ArrowRows
from ._config import ERR_STATE, INT32_MAX, MAX_TIMEOUT, UA
from ._layout import layout, restrict
from ._types import SendResult

if TYPE_CHECKING:
    from ._lifetime import Closer
    from ._state import ProducerState


class Sender:
    """One producer's send() work (the producer's condition guards what it shares)."""

    def __init__(self, state: ProducerState, closer: Closer) -> None:
        self._s = state
        self._closer = closer
        self.topics_ok: set[str] = set()  # topic names already checked and used

    def check(self, topic: Any, partition: Any, payloads: Any, timeout: Any,
              on_delivery: Any) -> tuple[int, float | None]:
        """send()'s arguments, all checked before anything is laid out (after the producer's
        state: stopped, forked, fatal error), a current authentication failure raised: the C
        partition and the timeout (at most MAX_TIMEOUT)."""
        p = self._s
        if p.closing:
            raise ClosedError("Producer is stopped: send() after stop() is not allowed")
        p.client.ensure_open()  # a forked child: before any lock or the parent's handle
        if p.fatal is not None:
            raise p.fatal
        part = self._check_arguments(topic, partition, payloads, timeout, on_delivery)
        failure = self._closer.auth_failed(f"send to {topic!r}")
        if failure is not None:
            raise failure
        if timeout is not None:
            timeout = min(timeout, MAX_TIMEOUT)
        if part != UA:
            self._check_partition(topic, part)
        return part, timeout

    def produce(self, topic: str, part: int, payloads: Sequence[Any], timeout: float | None,
                on_delivery: Callable[[int, list], Any] | None,
                wait_for_room: bool = True) -> SendResult:
        """Lay ``payloads`` out and enqueue them in one C call (see Producer.send).
        ``wait_for_room=False`` (rdk.aio): a full queue raises QueueFullError, as under
        ``on_queue_full="raise"``, and the caller waits for room itself."""
        p = self._s
        args = _produce.new_args()
        buffers = layout(payloads, args)  # validates every payload before anything is enqueued
        self.topics_ok.add(topic)
        n = len(payloads)
        deadline = None if timeout is None else time.monotonic() + timeout
        if part == UA:
            args.partition_cnt, args.balancer = p.balancers.choose(
                p.client, topic, _produce.has_keys(args), timeout)
        state = p.ledger.new_send(payloads, topic, None if part == UA else part, on_delivery, buffers)
        args.rk = p.rk
        args.partition = part
        args.no_copy = 1  # state.buffers outlives every message of the send
        with p.cond:
            if p.closing:
                raise ClosedError("Producer is stopped: send() after stop() is not allowed")
            args.rkt = p.client.topic(topic)
            send_id = p.ledger.register(state)
            p.active += 1
        args.opaque_base = send_id << 32
        try:
            enqueued = self._enqueue(send_id, state, args, deadline, wait_for_room) if n else 0
        finally:
            with p.cond:
                p.active -= 1
                if p.closing:
                    p.cond.notify_all()
        if n == 0:  # nothing to wait for: its on_delivery(0, []) is due now
            p.ledger.settle_unsent(send_id, state, [], [])
            p.client.wake()
        return SendResult(enqueued, p.ledger.outstanding)

    def _check_arguments(self, topic: Any, partition: Any, payloads: Any, timeout: Any,
                         on_delivery: Any) -> int:
        """send()'s arguments, all checked before anything is laid out; returns the C partition."""
        if topic not in self.topics_ok:
            check_topic_name(topic)
        if partition is None:
            part = UA
        elif isinstance(partition, int) and not isinstance(partition, bool):
            if partition < 0:
                raise ValueError(f"partition must be >= 0 or None, got {partition}")
            if partition > INT32_MAX:
                raise ValueError(f"partition must be <= 2147483647 (int32), got {partition}")
            part = partition
        else:
            raise TypeError(f"partition must be an int or None, got {type(partition).__name__}")
        if not isinstance(payloads, (list, tuple, ArrowRows)):
            raise TypeError(f"payloads must be a list, got {type(payloads).__name__}")
        if timeout is not None:
            check_timeout(timeout)
        if on_delivery is not None:
            check_callable(on_delivery, "on_delivery")
        return part

    def _check_partition(self, topic: str, part: int) -> None:
        """An explicit partition against the partition count the producer already knows."""
        count = self._s.balancers.known_count(topic)
        if count is not None and part >= count:
            raise ValueError(f"partition {part} of topic {topic!r} does not exist: the topic has "
                             f"{count} partition(s), 0..{count - 1}")

    def _enqueue(self, send_id: int, state: SendState, args: Any, deadline: float | None,
                 wait_for_room: bool = True) -> int:
        """The C call: enqueue what ``args`` lays out; returns how many librdkafka took.

        What it refuses becomes failures of the send. Under ``on_queue_full="block"`` the
        messages refused for lack of room are retried, in call order, once delivery reports
        free room (until ``deadline``); under ``"raise"`` they raise ``QueueFullError``, and so
        do they under ``"block"`` on the event thread, which is the thread that frees room.
        """
        p = self._s
        total = args.n
        block = p.on_queue_full == "block" and wait_for_room
        cannot_wait = block and p.client.on_event_thread()
        # call_index[p]: the position in the call of this attempt's p-th message
        call_index: Sequence[int] = range(total)
        enqueued = 0
        queue_full: list[int] = []  # call positions refused for lack of room, until taken
        refused: list[tuple[int, int]] = []  # (call position, error code) refused for another reason
        try:
            while True:
                gen = p.ledger.dr_gen
                got, codes = _produce.produce_refused(args)
                enqueued += got
                if got == args.n:
                    return enqueued
                p.ledger.adjust_outstanding(got - args.n)  # only what librdkafka took is outstanding
                failed = list(compress(range(args.n), codes))
                queue_full = [call_index[p] for p in failed if codes[p] == ERR_QUEUE_FULL]
                refused += [(call_index[p], codes[p]) for p in failed if codes[p] != ERR_QUEUE_FULL]
                if not (queue_full and block and not cannot_wait
                        and self._wait_for_room(gen, len(queue_full), deadline)):
                    break
                call_index = array("i", queue_full)  # the retry enqueues exactly these, in order
                queue_full = []
                restrict(args, call_index, total, state.buffers)
                p.ledger.adjust_outstanding(args.n)
        finally:  # also when the wait is interrupted: every message is accounted for
            if queue_full or refused:
                p.ledger.settle_unsent(send_id, state, queue_full, refused)
                p.client.wake()
        if p.transactional_id is not None and any(code == ERR_STATE for _, code in refused):
            raise TransactionError(
                ERR_STATE, "librdkafka refused the messages: no transaction is open (call "
                "begin_transaction() first; after a failed transaction, abort_transaction()); "
                f"enqueued {enqueued} of {total}, the others are reported as failed",
                context=f"send to {state.topic!r}")
        if queue_full and cannot_wait:
            raise QueueFullError(
                f"send to {state.topic!r} from a producer callback: the producer queue is full and "
                "on_queue_full='block' cannot wait here (this callback runs on the thread that "
                f"frees room); enqueued {enqueued} of {total}", enqueued, queue_full)
        if queue_full and (p.on_queue_full == "raise" or not wait_for_room):
            raise QueueFullError(
                f"send to {state.topic!r}: the producer queue is full (queue_buffering_max_messages); "
                f"enqueued {enqueued} of {total}", enqueued, queue_full)
        return enqueued

    def _wait_for_room(self, gen: int, want: int, deadline: float | None) -> bool:
        """Block until delivery reports free room for ``want`` messages (or some room)."""
        p = self._s
        limit = p.max_messages
        need = min(want, max(1, limit // 4)) if limit > 0 else 1
        ledger = p.ledger
        with p.cond:
            while not p.closing:
                if ledger.dr_gen != gen:
                    if limit <= 0 or limit - ledger.outstanding >= need:
                        return True
                    gen = ledger.dr_gen
                wait = 1.0
                if deadline is not None:
                    wait = min(wait, deadline - time.monotonic())
                    if wait <= 0:
                        return False
                p.cond.wait(wait)
        return False
