"""How rdk.aio waits without borrowing a thread: file descriptors and thread-settled futures.

- :class:`Waker`: an eventfd (a pipe where there is none) that rdk's own threads write when
  something an awaiting task wants is ready (a filled batch, a stop, an error, a resume).
  A task awaits :meth:`Waker.wait`, which registers the fd with its running loop
  (``loop.add_reader``) only for the wait: any loop (asyncio's, uvloop), any thread.
- :func:`settle`: resolve an asyncio future from another thread (``call_soon_threadsafe``),
  harmless once the loop is closed or the future was cancelled.
- :func:`in_thread`: run one blocking call of rdk's (a stop, a flush, a partition lookup) on
  a thread of its own that ends with the call, never on the loop's default executor.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["Waker", "in_thread", "settle"]

T = TypeVar("T")


class Waker:
    """A wake-up file descriptor: ``wake()`` from any thread, ``await wait(timeout)`` in a loop.

    ``wake()`` writes only while a task is waiting (a busy consumer makes no system call per
    batch); a task checks its condition *after* :meth:`arm` and before awaiting, so a wake
    between the two is never missed.
    """

    def __init__(self) -> None:
        if hasattr(os, "eventfd"):
            self._rfd = self._wfd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        else:  # pragma: no cover - not Linux
            self._rfd, self._wfd = os.pipe()
            os.set_blocking(self._rfd, False)
            os.set_blocking(self._wfd, False)
        self._lock = threading.Lock()
        self._armed = False
        self._closed = False
        self._waiting = 0  # tasks inside wait(): close() leaves the fds to the last of them
        self._close_pending = False

    def arm(self) -> None:
        """A task is about to check its condition and then wait."""
        self._armed = True

    def wake(self) -> None:
        """Wake the waiting task, if any (any thread; after close() a no-op)."""
        if not self._armed:
            return
        with self._lock:
            if self._closed or not self._armed:
                return
            self._armed = False
            with contextlib.suppress(BlockingIOError):  # already readable: enough
                os.write(self._wfd, b"\x01\x00\x00\x00\x00\x00\x00\x00")

    def _drain(self) -> None:
        with contextlib.suppress(BlockingIOError, OSError):
            os.read(self._rfd, 64)

    async def wait(self, timeout: float | None = None) -> None:
        """Until ``wake()`` (after :meth:`arm`) or ``timeout`` seconds; cancellable."""
        if self._closed or self._close_pending:
            raise RuntimeError("this Waker is closed")
        loop = asyncio.get_running_loop()
        fut = loop.create_future()

        def readable() -> None:
            self._drain()
            if not fut.done():
                fut.set_result(None)

        with self._lock:
            self._waiting += 1
        loop.add_reader(self._rfd, readable)
        try:
            if timeout is None:
                await fut
            else:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(fut, timeout)
        finally:
            loop.remove_reader(self._rfd)
            self._armed = False
            with self._lock:
                self._waiting -= 1
                if self._close_pending and not self._waiting:
                    self._close_fds()

    def close(self) -> None:
        """Close the descriptors (idempotent); later wakes are no-ops."""
        with self._lock:
            if self._closed or self._close_pending:
                return
            if self._waiting:  # a task still has the fd registered with its loop
                self._close_pending = True
                return
            self._close_fds()

    def _close_fds(self) -> None:
        self._closed = True
        self._close_pending = False
        os.close(self._rfd)
        if self._wfd != self._rfd:
            os.close(self._wfd)


def _set(fut: asyncio.Future, result: Any, exc: BaseException | None) -> None:
    if fut.done():  # the awaiting task was cancelled
        return
    if exc is not None:
        fut.set_exception(exc)
    else:
        fut.set_result(result)


def settle(loop: asyncio.AbstractEventLoop, fut: asyncio.Future, result: Any = None,
           exc: BaseException | None = None) -> None:
    """Resolve ``fut`` (of ``loop``) from any thread; nothing once the loop is closed."""
    with contextlib.suppress(RuntimeError):  # a closed loop: nobody is waiting any more
        loop.call_soon_threadsafe(_set, fut, result, exc)


async def in_thread(fn: Callable[..., T], *args: Any, name: str = "rdk-aio-call") -> T:
    """``fn(*args)`` on a new daemon thread of its own; the awaiting task is woken through
    ``call_soon_threadsafe``. Cancelling the await does not stop the call (it finishes on its
    thread and its result is dropped)."""
    loop = asyncio.get_running_loop()
    fut: asyncio.Future = loop.create_future()

    def run() -> None:
        try:
            result = fn(*args)
        except BaseException as e:  # noqa: BLE001 - handed to the awaiting task
            settle(loop, fut, exc=e)
        else:
            settle(loop, fut, result)

    threading.Thread(target=run, name=name, daemon=True).start()
    return await fut
