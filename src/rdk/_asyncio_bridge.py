"""How rdk.aio waits without borrowing a thread: file descriptors and thread-settled futures.

- :class:`Waker`: an eventfd (a pipe where there is none) that rdk's own threads write when
  something an awaiting task wants is ready (a filled batch, a stop, an error, a resume).
  A task awaits :meth:`Waker.wait`, which registers the fd with its running loop
  (``loop.add_reader``) only for the wait: any loop (asyncio's, uvloop), any thread.
- :func:`settle`: resolve an asyncio future from another thread (``call_soon_threadsafe``),
  harmless once the loop is closed or the future was cancelled.
- :func:`in_thread`: run one blocking call of rdk's on a thread of its own that ends with
  the call, never on the loop's default executor: only a consumer's stop whose own thread
  has already ended (or that waits for a sync ``stop()`` running elsewhere) still needs it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["Waker", "in_thread", "settle"]

T = TypeVar("T")


class Waker:
    """A wake-up file descriptor: ``wake()`` from any thread, ``await wait(timeout)`` in a loop.

    The protocol of a waiting task: :meth:`arm`, check its condition, then either
    :meth:`disarm` (it holds) or ``await wait()`` (each arm is ended by exactly one of the
    two). ``wake()`` writes only while some task is armed, so a busy consumer makes no system
    call per batch, and a wake between the check and the wait is never missed. Several tasks
    may wait at once (on one loop: the fd is registered once per loop).
    """

    def __init__(self) -> None:
        if hasattr(os, "eventfd"):
            self._rfd = self._wfd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        else:  # pragma: no cover - not Linux
            self._rfd, self._wfd = os.pipe()
            os.set_blocking(self._rfd, False)
            os.set_blocking(self._wfd, False)
        self._lock = threading.Lock()
        self._armed = 0  # tasks between arm() and the end of their check or wait
        self._closed = False
        self._close_pending = False
        self._futures: dict[asyncio.AbstractEventLoop, set[asyncio.Future]] = {}

    @property
    def _waiting(self) -> int:
        """Tasks inside wait() (their loops have the fd registered)."""
        return sum(len(f) for f in self._futures.values())

    def arm(self) -> None:
        """A task is about to check its condition and then wait (or disarm)."""
        with self._lock:
            self._armed += 1

    def disarm(self) -> None:
        """The task's condition held: it does not wait."""
        with self._lock:
            self._armed -= 1

    def wake(self) -> None:
        """Wake the waiting tasks, if any (any thread; after close() a no-op)."""
        if self._armed <= 0:
            return
        with self._lock:
            if self._closed or self._armed <= 0:
                return
            with contextlib.suppress(BlockingIOError):  # already readable: enough
                os.write(self._wfd, b"\x01\x00\x00\x00\x00\x00\x00\x00")

    def _readable(self, loop: asyncio.AbstractEventLoop) -> None:
        with contextlib.suppress(BlockingIOError, OSError):
            os.read(self._rfd, 8)
        for fut in self._futures.get(loop, ()):
            if not fut.done():
                fut.set_result(None)

    async def wait(self, timeout: float | None = None) -> None:
        """Until ``wake()`` or ``timeout`` seconds (after :meth:`arm`); cancellable."""
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        with self._lock:
            if self._closed or self._close_pending:
                self._armed -= 1
                raise RuntimeError("this Waker is closed")
            futures = self._futures.setdefault(loop, set())
            first = not futures
            futures.add(fut)
        if first:
            loop.add_reader(self._rfd, self._readable, loop)
        try:
            if timeout is None:
                await fut
            else:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(fut, timeout)
        finally:
            with self._lock:
                self._armed -= 1
                futures.discard(fut)
                last = not futures
                if last:
                    del self._futures[loop]
            if last:
                loop.remove_reader(self._rfd)
            with self._lock:
                if self._close_pending and not self._futures:
                    self._close_fds()

    async def until(self, take: Callable[[], T | None], done: Callable[[], bool],
                    timeout: float | None) -> T | None:
        """``take()`` until it gives something (woken by ``wake()`` in between); None once
        ``done()`` or after ``timeout`` seconds (None: no limit). A cancelled wait takes nothing."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if done():
                return None
            self.arm()  # before the look: something ready after it wakes the wait
            try:
                value = take()
            except BaseException:
                self.disarm()
                raise
            left = None if deadline is None else deadline - time.monotonic()
            if value is not None or done() or (left is not None and left <= 0):
                self.disarm()
                return value
            await self.wait(left)

    def close(self) -> None:
        """Close the descriptors (idempotent); later wakes are no-ops."""
        with self._lock:
            if self._closed or self._close_pending:
                return
            if self._futures:  # a task still has the fd registered with its loop
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
