"""The asyncio loop that runs the awaitables ``receive_callback`` returns.

The user's ``loop=`` if given; otherwise a loop of our own, started on a daemon thread at
the first awaitable and stopped by :meth:`LoopThread.close`. (asyncio is imported only
then, so ``import rdk`` does not pay for it.)
"""

from __future__ import annotations

import concurrent.futures
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncio

__all__ = ["LoopThread", "is_event_loop"]


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

    def submit(self, awaitable: Any) -> concurrent.futures.Future:
        """Run ``awaitable`` on the loop; its outcome arrives in the returned Future."""
        import asyncio

        return asyncio.run_coroutine_threadsafe(_await(awaitable), self._running_loop())

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        if self.user_loop is not None:
            return self.user_loop
        import asyncio

        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                self.thread = threading.Thread(target=loop.run_forever, daemon=True, name=self.name)
                self._loop = loop
                self.thread.start()
            return self._loop

    def close(self) -> None:
        """Cancel our loop's tasks, stop it and (once its thread ended) close it; the user's
        loop is left alone. Waits up to 2 s for the thread unless called on it."""
        with self._lock:
            loop, self._loop = self._loop, None
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
