"""The delivery thread of callback mode: batches to ``receive_callback``, then settled.

A batch settles when the callback returns, or, if it returned a
``concurrent.futures.Future`` or an awaitable, when that completes (an awaitable runs on
the :class:`LoopThread`). At most MAX_IN_FLIGHT batches are unsettled at a time.

What ends a batch's processing without a result (a ``BaseException`` such as SystemExit
from the callback, its Future or its awaitable; a cancelled Future; an awaitable that
cannot run because its loop is closed, not running or gone) makes the batch *abandoned*:
never recorded, nor anything after it in its partitions, and the consumer fails with a
KafkaError ``_FAIL`` saying what happened.
"""

from __future__ import annotations

import concurrent.futures
import queue
import threading
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from .._binding import ERROR_CODES
from .._loop_thread import LoopThread
from ..errors import KafkaError
from ._batch import Batch
from ._pipeline import FetchPipeline

if TYPE_CHECKING:
    from ._state import ConsumerState

__all__ = ["DeliveryThread"]

MAX_IN_FLIGHT = 16  # unsettled batches (Futures / awaitables) before delivery waits


class DeliveryThread:
    """Takes converted batches from the pipeline and hands them to ``callback``.

    A batch settles through the consumer's ``state.progress`` (which calls :meth:`release`)
    or is abandoned there unrecorded; what ends a batch's processing without a result
    fails the consumer (``state.fail``).
    """

    def __init__(self, pipeline: FetchPipeline, callback: Callable[[Batch], Any],
                 state: ConsumerState, loop: LoopThread) -> None:
        self.pipeline = pipeline
        self.callback = callback
        self.state = state
        self.settle = state.progress.settle
        self.loop = loop
        self.logger = state.logger
        self.topic = state.name
        self.thread: threading.Thread | None = None
        self._in_flight = threading.BoundedSemaphore(MAX_IN_FLIGHT)
        self._awaiting: dict[concurrent.futures.Future, Batch] = {}  # on the loop
        self._awaiting_lock = threading.Lock()

    def start(self, name: str) -> None:
        self.thread = threading.Thread(target=self._deliver_loop, name=name, daemon=True)
        self.thread.start()

    def release(self) -> None:
        """A delivered batch has settled: one more may be in flight."""
        self._in_flight.release()

    def _deliver_loop(self) -> None:
        pipeline, stopping, running = self.pipeline, self.state.stopping, self.state.running
        while True:
            try:
                filled = pipeline.wait_filled(0.1)
            except queue.Empty:
                if stopping.is_set() or self.watch_loop():
                    return
                continue
            while not running.is_set() and not stopping.is_set():
                running.wait(0.1)
            while not stopping.is_set() and not self._in_flight.acquire(timeout=0.1):
                if self.watch_loop():
                    return
            if stopping.is_set():
                return
            batch = pipeline.hand_out(filled)
            if batch is None:
                return
            if not batch.messages:  # all of it was of partitions revoked or sought meanwhile
                self._in_flight.release()
                continue
            self._dispatch(batch)

    def _dispatch(self, batch: Batch) -> None:
        try:
            result = self.callback(batch)
        except Exception:
            self.logger.exception("receive_callback raised on %r", batch)
            self.settle(batch, False)
            return
        except BaseException as e:  # noqa: BLE001 - SystemExit...: the consumer fails, said
            self.give_up(batch, f"receive_callback raised {type(e).__name__}", e)
            return
        if result is None:
            self.settle(batch, True)
        elif isinstance(result, concurrent.futures.Future):
            result.add_done_callback(partial(self._future_done, batch))
        elif hasattr(result, "__await__"):
            try:
                fut = self.loop.submit(result)
            except RuntimeError as e:  # the loop is closed
                close = getattr(result, "close", None)
                if callable(close):
                    close()  # a coroutine that never ran (no "never awaited" warning)
                self.give_up(batch, "the awaitable receive_callback returned cannot run on "
                             f"loop ({e})", e)
                return
            with self._awaiting_lock:
                self._awaiting[fut] = batch
            fut.add_done_callback(partial(self._future_done, batch))
        else:
            self.settle(batch, True)

    def _future_done(self, batch: Batch, fut: concurrent.futures.Future) -> None:
        with self._awaiting_lock:
            self._awaiting.pop(fut, None)
        if fut.cancelled():
            self.give_up(batch, "the Future receive_callback returned was cancelled (its work "
                         "may not have happened)", None)
            return
        exc = fut.exception()
        if exc is not None and not isinstance(exc, Exception):
            self.give_up(batch, f"the Future/awaitable receive_callback returned ended with "
                         f"{type(exc).__name__}", exc)
            return
        if exc is not None:
            self.logger.error("processing %r failed", batch, exc_info=exc)
        self.settle(batch, exc is None)

    def give_up(self, batch: Batch, what: str, exc: BaseException | None) -> None:
        """``batch``'s processing ended without a result: abandon it and fail the consumer."""
        self.state.progress.abandon(batch)
        text = (f"{what}{f': {exc!r}' if exc is not None else ''}; the consumer stopped and "
                f"{batch!r} is not recorded as processed")
        self.logger.error("consumer of %s: %s", self.topic, text,
                          exc_info=exc if exc is not None else None)
        err = KafkaError(ERROR_CODES["_FAIL"], text, context=f"consumer of {self.topic}")
        err.__cause__ = exc
        self.state.fail(err)

    def watch_loop(self) -> bool:
        """If awaitables wait on a loop that cannot run them (closed, not running for
        LOOP_STALL_SECONDS, or our loop's thread ended): abandon their batches and fail the
        consumer. Returns whether it did."""
        with self._awaiting_lock:
            if not self._awaiting:
                return False
        problem = self.loop.problem()
        if problem is None:
            return False
        with self._awaiting_lock:
            pending, self._awaiting = self._awaiting, {}
        for batch in pending.values():
            self.state.progress.abandon(batch)
        text = f"{problem}; {len(pending)} batch(es) abandoned, not recorded as processed"
        self.logger.error("consumer of %s: %s", self.topic, text)
        self.state.fail(KafkaError(ERROR_CODES["_FAIL"], text, context=f"consumer of {self.topic}"))
        return True
