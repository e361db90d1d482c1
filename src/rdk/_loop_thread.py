"""The asyncio loop that runs the awaitables ``receive_callback`` returns.

The user's ``loop=`` if given; otherwise a loop of our own, started on a daemon thread at
the first awaitable and stopped by :meth:`LoopThread.close`. (asyncio is imported only
then, so ``import rdk`` does not pay for it.)
"""

from __future__ import annotations

import concurrent.futures
import threading
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncio

__all__ = ["LOOP_STALL_SECONDS", "LoopThread", "is_event_loop"]

#: a user's ``loop=`` that is not running while awaitables wait on it fails the consumer
#: after this many seconds (a closed loop, or our loop's thread ended: at once)
LOOP_STALL_SECONDS = 5.0


def is_event_loop(loop: Any) -> bool:
    """Whether ``loop`` is an asyncio event loop."""
    import asyncio

    return isinstance(loop, asyncio.AbstractEventLoop)


async def _await(awaitable: Any) -> Any:
    return await awaitable


class LoopThread:
    """Runs awaitables on the user's loop, or on our own loop's thread (``thread``)."""

    def __init__(self, user_loop: asyncio.AbstractEventLoop | None, name: str) -> None:
        self.user_loop = user_loop
        self.name = name
        self.thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()
        self._closing = False
        self._ended: BaseException | None = None  # what ended our loop's thread, if it did
        self._idle_since: float | None = None  # when the user's loop was first seen not running

    def check_open(self) -> None:
        """Raise ValueError if the user's loop is closed (nothing could ever run on it)."""
        if self.user_loop is not None and self.user_loop.is_closed():
            raise ValueError("loop is closed: the awaitables receive_callback returns could "
                             "never run; give a loop that is (or will be) running")

    def problem(self) -> str | None:
        """Why awaitables waiting on the loop cannot complete, or None. A user's loop that
        is not running counts only after LOOP_STALL_SECONDS (it may be started late)."""
        if self.user_loop is None:
            thread = self.thread
            if thread is not None and not thread.is_alive() and not self._closing:
                return (f"rdk's asyncio loop thread ended ({self._ended!r} raised by an "
                        "awaitable receive_callback returned); pending awaitables cannot finish")
            return None
        if self.user_loop.is_closed():
            return "loop was closed while awaitables receive_callback returned were pending"
        if self.user_loop.is_running():
            self._idle_since = None
            return None
        now = time.monotonic()
        if self._idle_since is None:
            self._idle_since = now
        if now - self._idle_since >= LOOP_STALL_SECONDS:
            return (f"loop is not running: awaitables receive_callback returned have waited "
                    f"{LOOP_STALL_SECONDS:g} s on it without running")
        return None

    def submit(self, awaitable: Any) -> concurrent.futures.Future:
        """Run ``awaitable`` on the loop; its outcome arrives in the returned Future."""
        import asyncio

        loop = self._running_loop()
        if loop.is_closed():
            raise RuntimeError("loop is closed")
        return asyncio.run_coroutine_threadsafe(_await(awaitable), loop)

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        if self.user_loop is not None:
            return self.user_loop
        import asyncio

        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                self.thread = threading.Thread(target=self._run, args=(loop,), daemon=True,
                                               name=self.name)
                self._loop = loop
                self.thread.start()
            return self._loop

    def _run(self, loop: asyncio.AbstractEventLoop) -> None:
        """Our loop's thread; an exception that ends it (SystemExit from an awaitable)
        is kept for :meth:`problem` (threading would drop SystemExit silently)."""
        try:
            loop.run_forever()
        except BaseException as e:  # noqa: BLE001 - reported by problem(), the consumer fails
            self._ended = e

    def close(self) -> None:
        """Cancel our loop's tasks, stop it and (once its thread ended) close it; the user's
        loop is left alone. Waits up to 2 s for the thread unless called on it."""
        with self._lock:
            loop, self._loop = self._loop, None
            self._closing = True
        if loop is None:
            return
        import asyncio

        def shutdown() -> None:
            for task in asyncio.all_tasks(loop):
                task.cancel()
            loop.stop()

        loop.call_soon_threadsafe(shutdown)
        thread = self.thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(2.0)
            if not thread.is_alive():
                loop.close()
