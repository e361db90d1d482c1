"""rdk.aio.Producer's flush, stop and metadata lookups, done by the producer's event thread.

The producer already owns one thread, its event thread (``rdk-events-*``): it polls
librdkafka's main queue, folds delivery reports and runs the callbacks. rdk.aio hands it
what used to need a thread of its own, and the awaiting task waits for a future the event
thread settles (``call_soon_threadsafe``):

- a **flush** is a future settled when the producer's accounting is settled (nothing
  outstanding, every callback returned), checked after every batch of delivery reports and
  every poll; its timeout is a ``loop.call_later`` on the awaiting loop. While a flush or a
  stop waits, each poll also calls ``rd_kafka_flush`` for a few milliseconds: librdkafka
  sends lingering messages at once only while a thread is inside that call.
- a **metadata lookup** (``partition_count``, a send's first partition count, the probe of
  an authentication failure) runs between two polls in steps of at most a second, as the
  producer's own background lookups do (librdkafka's metadata call blocks; its Admin
  DescribeTopics does not, but it waits for a controller, which the mock cluster never
  names).
- the **stop** is a small state machine stepped after every poll (wait for sends inside
  the C call, drain, purge, drain) whose last step frees the librdkafka handle on the event
  thread itself, which then ends. ``rd_kafka_destroy`` is the one call that may block (it
  joins librdkafka's own threads); it runs on that thread, never on the loop or a thread
  made for it. If a user callback holds the event thread past the stop's timeout, the loop
  purges and closes without it (the handle is freed when that callback returns).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import _exit
from .._asyncio_bridge import settle
from .._binding import ERROR_CODES
from .._binding import produce as _produce
from .._binding.produce import PURGE_ALL
from ..errors import ClosedError, KafkaError
from ..producer import FlushResult

if TYPE_CHECKING:
    from .. import producer as _producer

__all__ = ["EventWork"]

log = logging.getLogger("rdk")

_NUDGE_MS = 5  # ms inside rd_kafka_flush per poll while a flush waits: linger is lifted then
_STEP = 1.0  # seconds a metadata step may hold the event thread between two polls
_RETRY = (ERROR_CODES["_TIMED_OUT"], ERROR_CODES["_TRANSPORT"])


class _Call:
    """A metadata lookup the event thread runs in steps until ``deadline``."""

    __slots__ = ("deadline", "fn", "fut", "loop")

    def __init__(self, loop: asyncio.AbstractEventLoop, fut: asyncio.Future,
                 fn: Callable[[float], Any], deadline: float) -> None:
        self.loop, self.fut, self.fn, self.deadline = loop, fut, fn, deadline


class _Stop:
    """The stop's progress (stepped on the event thread; see rdk.Producer.stop)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, fut: asyncio.Future,
                 timeout: float) -> None:
        self.loop, self.fut, self.timeout = loop, fut, timeout
        start = time.monotonic()
        self.deadline = start + timeout
        self.purge_at = self.deadline - min(1.0, timeout * 0.25)  # time to report the purged
        self.close_at = self.deadline - min(0.1, timeout * 0.05)  # time to free the handle
        self.phase = "active"  # -> drain -> purged -> closing (owned by whoever closes)
        self.left = 0


class EventWork:
    """One aio producer's work for its event thread (see the module docstring)."""

    def __init__(self, producer: _producer.Producer) -> None:
        self._producer = producer
        self._s = producer._s
        self._lock = threading.Lock()
        self._flushes: dict[asyncio.Future, asyncio.AbstractEventLoop] = {}
        self._calls: list[_Call] = []
        self._stop: _Stop | None = None
        self._s.on_deliveries.append(self._check_flushes)
        self._s.on_poll.append(self._step)

    # ---- the loop's side ------------------------------------------------------------
    async def flush(self, timeout: float) -> FlushResult:
        """rdk.Producer.flush(timeout) (arguments checked) without a waiting thread."""
        s = self._s
        loop = asyncio.get_running_loop()
        with s.cond:
            if s.ledger.settled():
                return FlushResult(0, s.ledger.take_failed())
        fut: asyncio.Future = loop.create_future()
        with self._lock:
            self._flushes[fut] = loop
        timer = loop.call_later(timeout, self._flush_timed_out, fut)
        s.client.wake()  # its next poll looks at once (and lifts linger)
        try:
            return await fut
        finally:
            timer.cancel()
            with self._lock:
                self._flushes.pop(fut, None)

    def _flush_timed_out(self, fut: asyncio.Future) -> None:
        """On the loop, at the flush's timeout: what is still queued (as rdk.Producer.flush)."""
        with self._lock:
            if self._flushes.pop(fut, None) is None or fut.done():
                return
        s = self._s
        with s.cond:
            queued = s.ledger.queue_length
        failure = s.client.auth_failure if queued else None
        if failure is not None:
            fut.set_exception(_auth_flush_error(failure, queued, "flush()"))
            return
        self._flush_done(fut, queued)

    def _flush_done(self, fut: asyncio.Future, queued: int) -> None:
        """On the loop: the flush's result. A flush cancelled meanwhile takes nothing (the
        failures stay for the next flush)."""
        if fut.done():
            return
        with self._s.cond:
            fut.set_result(FlushResult(queued, self._s.ledger.take_failed()))

    async def call(self, fn: Callable[[float], Any], timeout: float, what: str) -> Any:
        """``fn(step)`` on the event thread, repeated while it raises ``_TIMED_OUT`` or
        ``_TRANSPORT`` with time left (``step``: the seconds this attempt may take)."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future = loop.create_future()
        job = _Call(loop, fut, fn, time.monotonic() + timeout)
        with self._lock:
            if self._stop is not None:
                raise ClosedError("Producer is stopped: it cannot be used after stop()")
            self._calls.append(job)
        self._s.client.wake()
        try:  # the bound matters only if the event thread is gone (a sync stop() elsewhere)
            return await asyncio.wait_for(fut, timeout + _STEP + 1.0)
        except TimeoutError:
            raise KafkaError(ERROR_CODES["_TIMED_OUT"], "the producer's event thread did not "
                             "answer (stopped, or held by a callback)", context=what) from None
        finally:
            with self._lock:
                if job in self._calls:
                    self._calls.remove(job)

    async def stop(self, timeout: float) -> FlushResult:
        """rdk.Producer.stop(timeout) (checked, not stopped yet) without a waiting thread."""
        s = self._s
        loop = asyncio.get_running_loop()
        fut: asyncio.Future = loop.create_future()
        with s.cond:
            if s.closing:
                return FlushResult()
            s.closing = True
            s.cond.notify_all()
        s.balancers.close()
        job = _Stop(loop, fut, timeout)
        with self._lock:
            self._stop = job
        s.client.wake()
        # a user callback holding the event thread past the deadline: close without it
        timer = loop.call_later(timeout + 0.5, self._stop_overdue, job)
        try:
            return await asyncio.shield(fut)  # a cancelled await does not cancel the stop
        finally:
            timer.cancel()

    def _stop_overdue(self, job: _Stop) -> None:
        """On the loop: the event thread did not finish the stop in time (a callback holds
        it). Purge and close here: the handle is freed once that callback returns."""
        with self._lock:
            if job.phase == "closing":
                return  # the event thread is closing (or closed) it
            job.phase = "closing"
        s = self._s
        if not s.client.closed:
            _produce.purge(s.rk, PURGE_ALL)
        with s.cond:
            job.left = s.ledger.queue_length
        log.warning("rdk.aio.Producer.stop(): the producer's event thread is still in a "
                    "callback at the %.1f s deadline; closing without it", job.timeout)
        self._close(job)

    # ---- the event thread's side ------------------------------------------------------
    def _check_flushes(self) -> None:
        """After delivery reports and polls: settle the flushes once nothing is outstanding."""
        if not self._flushes:
            return
        s = self._s
        with s.cond:
            if not s.ledger.settled():
                return
        with self._lock:
            flushes, self._flushes = self._flushes, {}
        for fut, loop in flushes.items():
            _call_soon(loop, self._flush_done, fut, 0)

    def _step(self) -> None:
        """After every poll: flushes, lookups, the stop; linger lifted while one waits."""
        self._check_flushes()
        if self._flushes:
            self._fail_flushes_on_auth()
        for job in list(self._calls):
            self._run(job)
        stop = self._stop
        if stop is not None and stop.phase != "closing":
            self._step_stop(stop)
        elif self._flushes:
            self._nudge()

    def _nudge(self) -> None:
        with self._s.cond:
            if self._s.ledger.settled():
                return
        _produce.flush(self._s.rk, _NUDGE_MS)

    def _fail_flushes_on_auth(self) -> None:
        """A reported authentication failure with no broker answering ends the flushes (a
        short metadata probe, as rdk.Producer.flush makes)."""
        s = self._s
        if s.client.auth_failure is None:
            return
        failure = self._producer._closer.auth_failed("flush()")
        if failure is None:
            return
        with self._lock:
            flushes, self._flushes = self._flushes, {}
        with s.cond:
            queued = s.ledger.queue_length
        for fut, loop in flushes.items():
            settle(loop, fut, exc=_auth_flush_error(failure, queued, "flush()"))

    def _run(self, job: _Call) -> None:
        if job.fut.done():  # cancelled
            return
        left = job.deadline - time.monotonic()
        try:
            result = job.fn(max(0.001, min(_STEP, left)))
        except KafkaError as e:
            if e.code in _RETRY and job.deadline - time.monotonic() > 0:
                return  # the next poll tries again
            self._end_call(job, exc=e)
        except Exception as e:  # noqa: BLE001 - handed to the awaiting task
            self._end_call(job, exc=e)
        else:
            self._end_call(job, result)

    def _end_call(self, job: _Call, result: Any = None, exc: BaseException | None = None) -> None:
        with self._lock:
            if job in self._calls:
                self._calls.remove(job)
        settle(job.loop, job.fut, result, exc)

    def _step_stop(self, job: _Stop) -> None:
        """One step of the stop (rdk.Producer.stop's order: sends inside the C call, drain
        until shortly before the deadline, purge, drain, close)."""
        s = self._s
        now = time.monotonic()
        with s.cond:
            active, settled, queued = s.active, s.ledger.settled(), s.ledger.queue_length
        if job.phase == "active":
            if active and now < job.purge_at:
                return  # blocked sync sends see the stop and return
            job.phase = "drain"
        if job.phase == "drain":
            if settled:
                job.left = 0
            elif now >= job.purge_at or (s.client.auth_failure is not None and self._producer.
                                         _closer.auth_failed("flush") is not None):
                failure = self._producer._closer.auth_failed("stop()")
                _produce.purge(s.rk, PURGE_ALL)  # purged messages are reported failed
                if failure is not None:
                    log.error("rdk.Producer.stop(): %d message(s) not delivered: %s", queued,
                              failure)
                job.phase = "purged"
                return
            else:
                self._nudge()
                return
        elif job.phase == "purged":
            if not settled and now < job.close_at:
                self._nudge()
                return
            job.left = 0 if settled else queued
        with self._lock:
            if job.phase == "closing":
                return  # the loop closed it (the deadline passed)
            job.phase = "closing"
        self._close(job)

    def _close(self, job: _Stop) -> None:
        """Free the handle (on the event thread: it ends after this poll) unless a
        transaction call is still inside librdkafka; settle the stop and what still waits."""
        s = self._s
        with s.cond:
            deferred = self._producer._txn.defer_close()
        if deferred:
            log.warning("rdk.Producer.stop(): a transaction call is still running; the "
                        "librdkafka handle is freed when it returns")
        else:
            s.client.close(max(0.0, job.deadline - time.monotonic()))
        _exit.unregister(self._producer, _exit.PRODUCERS)
        with s.cond:
            result = FlushResult(job.left, s.ledger.take_failed())
            queued = s.ledger.queue_length
        settle(job.loop, job.fut, result)
        with self._lock:
            flushes, self._flushes = self._flushes, {}
            calls, self._calls = self._calls, []
        for fut, loop in flushes.items():
            _call_soon(loop, self._flush_done, fut, queued)
        for call in calls:
            settle(call.loop, call.fut, exc=ClosedError(
                "Producer is stopped: it cannot be used after stop()"))


def _auth_flush_error(failure: KafkaError, queued: int, what: str) -> KafkaError:
    return KafkaError(failure.code, f"{failure.description}; {queued} message(s) still queued "
                      "(librdkafka retries them until message.timeout.ms; stop() fails them "
                      "at once)", context=failure.context or what)


def _call_soon(loop: asyncio.AbstractEventLoop, fn: Callable[..., Any], *args: Any) -> None:
    """``fn(*args)`` on ``loop`` from any thread; nothing once the loop is closed."""
    with contextlib.suppress(RuntimeError):  # a closed loop: nobody is waiting any more
        loop.call_soon_threadsafe(fn, *args)

