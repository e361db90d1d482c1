"""The delivery thread of callback mode: batches to ``receive_callback``, then settled.

A batch settles when the callback returns, or, if it returned a
``concurrent.futures.Future`` or an awaitable, when that completes (an awaitable runs on
the :class:`LoopThread`). At most MAX_IN_FLIGHT batches are unsettled at a time.
"""

from __future__ import annotations

import concurrent.futures
import logging
import queue
import threading
from collections.abc import Callable
from functools import partial
from typing import Any

from ._batch import Batch
from ._loop_thread import LoopThread
from ._pipeline import FetchPipeline
from ._tracker import SettlementTracker

__all__ = ["DeliveryThread"]

MAX_IN_FLIGHT = 16  # unsettled batches (Futures / awaitables) before delivery waits


class DeliveryThread:
    """Takes converted batches from the pipeline and hands them to ``callback``.

    ``settle(batch, ok)`` is the consumer's settlement (which calls :meth:`release`).
    """

    def __init__(self, pipeline: FetchPipeline, callback: Callable[[Batch], Any], *,
                 tracker: SettlementTracker, settle: Callable[[Batch, bool], None],
                 loop: LoopThread, stopping: threading.Event, running: threading.Event,
                 logger: logging.Logger | logging.LoggerAdapter) -> None:
        self.pipeline = pipeline
        self.callback = callback
        self.tracker = tracker
        self.settle = settle
        self.loop = loop
        self.logger = logger
        self.thread: threading.Thread | None = None
        self._stopping = stopping
        self._running = running
        self._in_flight = threading.BoundedSemaphore(MAX_IN_FLIGHT)

    def start(self, name: str) -> None:
        self.thread = threading.Thread(target=self._deliver_loop, name=name, daemon=True)
        self.thread.start()

    def release(self) -> None:
        """A delivered batch has settled: one more may be in flight."""
        self._in_flight.release()

    def _deliver_loop(self) -> None:
        pipeline, stopping, running = self.pipeline, self._stopping, self._running
        while True:
            try:
                filled = pipeline.wait_filled(0.1)
            except queue.Empty:
                if stopping.is_set():
                    return
                continue
            while not running.is_set() and not stopping.is_set():
                running.wait(0.1)
            while not stopping.is_set() and not self._in_flight.acquire(timeout=0.1):
                pass
            if stopping.is_set():
                return
            batch = pipeline.convert(filled)
            if batch is None:
                return
            self.tracker.add(batch)
            self._dispatch(batch)

    def _dispatch(self, batch: Batch) -> None:
        try:
            result = self.callback(batch)
        except Exception:
            self.logger.exception("receive_callback raised on %r", batch)
            self.settle(batch, False)
            return
        if result is None:
            self.settle(batch, True)
        elif isinstance(result, concurrent.futures.Future):
            result.add_done_callback(partial(self._future_done, batch))
        elif hasattr(result, "__await__"):
            try:
                fut = self.loop.submit(result)
            except Exception:
                self.logger.exception("cannot run the awaitable receive_callback returned")
                self.settle(batch, False)
                return
            fut.add_done_callback(partial(self._future_done, batch))
        else:
            self.settle(batch, True)

    def _future_done(self, batch: Batch, fut: concurrent.futures.Future) -> None:
        if fut.cancelled():
            self.logger.error("the future for %r was cancelled", batch)
            self.settle(batch, False)
            return
        exc = fut.exception()
        if exc is not None:
            self.logger.error("processing %r failed", batch, exc_info=exc)
        self.settle(batch, exc is None)
