"""The Consumer's threads and C objects: started in order, stopped and freed in reverse.

Start: the fetch thread, then (callback mode) the delivery thread. Stop: the fetch thread
ends within one fetch call, the delivery thread once its callback returned (bounded by
``stop()``'s timeout), the in-flight batches settle, the committer stores what settled,
the group is left, and only then are the pipeline's buffers, the store, the client, the
loop and the offset-file locks freed. A C object a thread may still be inside (a callback
that never returned) is never freed under it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from .._loop_thread import LoopThread
from ._delivery import DeliveryThread
from ._pipeline import FetchPipeline
from ._state import ConsumerState

__all__ = ["ThreadSet"]


class ThreadSet:
    """Owns the start/stop order of one consumer's threads (see the module docstring)."""

    def __init__(self, assignment: Any, state: ConsumerState, loop_thread: LoopThread,
                 warn: Callable[[str], None]) -> None:
        self.assignment = assignment
        self.state = state
        self.progress = state.progress
        self.loop_thread = loop_thread
        self.logger = state.logger
        self.topic = state.name
        self.warn = warn
        self.pipeline: FetchPipeline | None = None
        self.delivery: DeliveryThread | None = None

    def start(self, pipeline: FetchPipeline, delivery: DeliveryThread | None,
              here: bool = False) -> None:
        """``here``: the calling thread is the fetch thread (see FetchPipeline.start_thread)."""
        self.pipeline, self.delivery = pipeline, delivery
        pipeline.start_thread(self.fetch_thread_name, here)
        if delivery is not None:
            self.state.watch_loop = delivery.watch_loop
            self.progress.release = delivery.release
            delivery.start(f"rdk-deliver-{self.topic}")

    @property
    def fetch_thread_name(self) -> str:
        return f"rdk-fetch-{self.topic}"

    def fetch_and_delivery(self) -> list[threading.Thread]:
        """The fetch and delivery threads, in the order they stop."""
        threads = [self.pipeline.fetch_thread if self.pipeline is not None else None,
                   self.delivery.thread if self.delivery is not None else None]
        return [t for t in threads if t is not None]

    def is_own(self, thread: threading.Thread) -> bool:
        """Whether ``thread`` is one of this consumer's (a callback may run there)."""
        client = self.assignment.client
        return (thread in self.fetch_and_delivery() or thread is self.loop_thread.thread
                or (client is not None and client.on_event_thread())
                or thread in self.assignment.threads())

    def finish(self, deadline: float, timeout: float, wait_in_flight: bool) -> None:
        """Stop everything by monotonic ``deadline`` (``timeout``: stop()'s, for messages)."""
        reserve = min(2.0, timeout * 0.2)  # keep time to store offsets of settled batches
        current = threading.current_thread()
        fetch_thread = self.pipeline.fetch_thread if self.pipeline is not None else None
        try:
            threads = [t for t in self.fetch_and_delivery() if t is not current]
            for t in threads:
                # the fetch thread never blocks long (one fetch call, a queue put)
                least = 1.0 if t is fetch_thread else 0.0
                t.join(max(least, deadline - reserve - time.monotonic()))
            if any(t.is_alive() for t in threads):
                self.warn(f"receive_callback has not returned within stop(timeout={timeout}); "
                          "stopping without it (its batch's offsets are not recorded)")
            # (batches() settles only on commit() or the next request: nothing to wait for)
            if wait_in_flight and not self._wait_settled(deadline - reserve):
                self.warn(f"{self.progress.tracker.unsettled} batch(es) still in flight at "
                          f"stop(timeout={timeout}); their offsets are not recorded")
            # in group mode keep time to leave the group (else rd_kafka_destroy does, unbounded)
            leave = min(5.0, timeout * 0.25) if self.assignment.threads() else 0.0
            problem = self.progress.close(deadline - leave)
            if problem is not None:
                self.warn(f"{problem} (within stop(timeout={timeout}))")
            if not self.assignment.leave(deadline):
                self.logger.warning("consumer of %s: did not leave group %r cleanly within "
                                    "stop(timeout=%s)", self.topic,
                                    self.assignment.config.group_id, timeout)
        finally:
            self.teardown(deadline)

    def _wait_settled(self, until: float) -> bool:
        """Wait for in-flight batches; awaitables on a loop that cannot run them are given
        up at once (see DeliveryThread.watch_loop)."""
        delivery = self.delivery

        def watch() -> bool:
            if delivery is not None:
                delivery.watch_loop()
            return False
        return self.progress.wait_settled(until, while_waiting=watch)

    def teardown(self, deadline: float | None = None) -> None:
        """Free C objects, locks and the loop (after the threads that use them ended).

        By ``deadline`` (monotonic) if given: a stats_callback that never returns holds the
        client's event thread, whose handle is then freed once that callback returns. While
        the fetch thread still runs (inside a C call), its buffers and the client stay."""
        assignment = self.assignment
        self.loop_thread.close()
        if any(t.is_alive() for t in assignment.threads()):
            assignment.leave(time.monotonic() + 1.0 if deadline is None else deadline)
        pipeline = self.pipeline if self.pipeline is not None else assignment.pipeline
        fetch_ended = pipeline is None or pipeline.close()
        self.progress.free(self.logger, assignment.config.user_store)
        client = assignment.client
        if client is not None and fetch_ended:
            client.close(5.0 if deadline is None else max(0.0, deadline - time.monotonic()))
            assignment.client = None
        elif client is not None:
            # the fetch thread is inside a C call on this handle: it is freed when the
            # thread ends and lets go of it, never at interpreter exit under the thread
            client.keep_at_exit()
        assignment.release()
