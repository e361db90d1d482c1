"""The lifecycle both consumers share (``rdk.Consumer`` and ``rdk.ShareConsumer``).

States: new -> running -> stopping -> closed. A consumer belongs to the process that made
it (librdkafka handles do not survive ``fork()``): in another process every call raises
ClosedError and ``stop()`` returns at once. ``stop()`` is idempotent; called on one of the
consumer's own threads (from a callback) it only asks for the stop, and a helper thread
finishes it once that callback has returned. At interpreter exit ``rdk._exit`` stops what
is still running.

A subclass gives ``_describe`` (its name in log lines), ``_owner`` (what the fork error
names) and implements ``_on_own_thread()``, ``_finish(deadline, timeout)`` (the stop's
work, in order) and ``start()``; it may override ``_stop_requested()``.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
import time
import warnings
from collections.abc import Callable
from typing import TypeVar

from . import _exit
from .errors import ClosedError, KafkaError
from .validate import check_timeout, check_wait

__all__ = ["AfterLoop", "Lifecycle"]

_Self = TypeVar("_Self", bound="Lifecycle")


class AfterLoop:
    """What a consumer's own thread (fetch or share thread) runs once its loop has ended:
    rdk.aio's stop hands its work there instead of to a thread of its own."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._fn: Callable[[], None] | None = None
        self._ended = False

    def hand(self, fn: Callable[[], None]) -> bool:
        """Have the thread call ``fn()`` after its loop; False if the loop has ended."""
        with self._lock:
            if self._ended:
                return False
            self._fn = fn
            return True

    def loop_ended(self) -> None:
        """On the thread, after its loop: run what was handed, if anything."""
        with self._lock:
            self._ended = True
            fn, self._fn = self._fn, None
        if fn is not None:
            fn()


def check_process(pid: int, owner: str, kind: str) -> None:
    """ClosedError unless this is process ``pid``, where ``owner`` (a ``kind``) was created."""
    if os.getpid() != pid:
        raise ClosedError(
            f"this {owner} was created in process {pid} and this is process "
            f"{os.getpid()}: librdkafka handles do not survive fork(); create the "
            f"{kind} in the process that uses it")


class Lifecycle:
    """State machine, process ownership and the stop/close protocol of a consumer."""

    logger: logging.Logger | logging.LoggerAdapter
    """Where this consumer's messages are logged (``logger=``, else the ``rdk`` logger)."""
    _describe: str   # e.g. "consumer of orders"
    _owner: str      # e.g. "Consumer of 'orders'"

    def _init_lifecycle(self) -> None:
        self._pid = os.getpid()  # the process this consumer belongs to
        self._state = "new"
        self._mode: str | None = None  # "callback" (start/run) or "iterator" (batches)
        self._state_lock = threading.RLock()
        self._stop_event = threading.Event()
        self._closed_event = threading.Event()
        self._error: KafkaError | None = None
        self._wakers: list[Callable[[], None]] = []  # rdk.aio's: a stop, an error, a resume

    # ---- the subclass's part -------------------------------------------------------------
    def start(self) -> object:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def _on_own_thread(self) -> bool:  # pragma: no cover
        raise NotImplementedError

    def _finish(self, deadline: float, timeout: float) -> None:  # pragma: no cover
        raise NotImplementedError

    def _stop_requested(self) -> None:
        """Called under the state lock when a stop begins (e.g. to wake paused threads)."""

    # ---- checks ------------------------------------------------------------------------
    def _check_process(self) -> None:
        """ClosedError in a process forked after this consumer was created."""
        check_process(self._pid, self._owner, type(self).__name__)

    def _check_not_stopped(self, what: str) -> None:
        if self._state in ("stopping", "closed"):
            raise ClosedError(f"{what}: this {self._owner} is stopped; make a new one")

    def _check_openable(self) -> None:
        """Under the state lock: only a new consumer can be started."""
        self._check_process()
        if self._state != "new":
            if self._state == "running":
                raise RuntimeError(f"this {type(self).__name__} is already started")
            raise ClosedError(f"this {type(self).__name__} is stopped; make a new one")

    def _open(self, mode: str, here: bool = False) -> object:  # pragma: no cover
        raise NotImplementedError

    def _begin_iteration(self, timeout: float | None) -> float | None:
        """``batches()``'s checks; starts the consumer in iterator mode if it is new."""
        self._check_process()
        if timeout is not None:
            timeout = check_timeout(timeout)
        with self._state_lock:
            if self._state == "new":
                self._open("iterator")
            elif self._mode != "iterator":
                raise RuntimeError("batches() cannot be used after start(); receive_callback "
                                   "already receives the batches")
        return timeout

    def _mark_running(self, mode: str) -> None:
        self._mode = mode
        self._state = "running"
        _exit.register(self, _exit.CONSUMERS)

    # ---- running and stopping -------------------------------------------------------------
    def run(self) -> None:
        """``start()``, then block until ``stop()`` (from anywhere) or KeyboardInterrupt.

        Raises the KafkaError that stopped the consumer, if one did (e.g. ``_FAIL`` when
        ``receive_callback``, or the Future/awaitable it returned, ended with a
        BaseException such as SystemExit: that exception is the error's ``__cause__``).

        Raises:
            rdk.KafkaError: The error that stopped the consumer, and the errors of `start()`.
            rdk.ClosedError: The consumer is stopped already.
        """
        self._check_not_stopped("run()")
        self.start()
        try:
            while not self._closed_event.wait(0.25):
                pass
        except KeyboardInterrupt:
            self.stop()
        if self._error is not None:
            raise self._error

    def _stop(self, timeout: float,
              elsewhere: Callable[[Callable[[], None]], None] | None = None) -> None:
        """The stop protocol (see the module docstring); ``_finish`` does the work, on this
        thread or, given ``elsewhere``, wherever ``elsewhere(work)`` runs it (rdk.aio)."""
        timeout = check_wait(timeout, "timeout", threading.TIMEOUT_MAX)
        if os.getpid() != self._pid:
            return
        with self._state_lock:
            if self._state == "new":
                self._state = "closed"
                self._closed_event.set()
                return
            if self._state == "closed":
                return
            self._stop_event.set()
            self._stop_requested()
            self._wake()
            if self._on_own_thread():
                if self._state == "running":
                    threading.Thread(target=self._stop, args=(timeout,), daemon=True,
                                     name=f"rdk-stop-{self._describe}").start()
                return
            first = self._state == "running"
            self._state = "stopping"
        if not first:
            self._closed_event.wait(timeout)
            return
        work = functools.partial(self._finish_stop, time.monotonic() + timeout, timeout)
        if elsewhere is not None:
            elsewhere(work)
        else:
            work()

    def _finish_stop(self, deadline: float, timeout: float) -> None:
        try:
            self._finish(deadline, timeout)
        finally:
            with self._state_lock:
                self._state = "closed"
            self._closed_event.set()
            _exit.unregister(self, _exit.CONSUMERS)

    def _fail_once(self, err: KafkaError) -> bool:
        """Remember the error that stops the consumer; False if one was remembered already."""
        with self._state_lock:
            if self._error is not None:
                return False
            self._error = err
        self._wake()
        return True

    def _wake(self) -> None:
        """Tell rdk.aio's waiting tasks that something changed (any thread, never blocks)."""
        for wake in self._wakers:
            wake()

    def _stop_in_background(self) -> None:
        threading.Thread(target=self._stop, args=(30.0,), daemon=True,
                         name=f"rdk-stop-{self._describe}").start()

    def _close_at_exit(self, timeout: float) -> None:
        """The interpreter exits with this consumer running: ``stop(timeout)`` (rdk._exit)."""
        if self._state in ("running", "stopping"):
            self.logger.info("%s: stopping at interpreter exit (up to %.1f s)",
                             self._describe, timeout)
            self._stop(timeout)

    def _warn(self, text: str) -> None:
        self.logger.warning("%s: %s", self._describe, text)
        warnings.warn(text, RuntimeWarning, stacklevel=3)

    # ---- public, shared --------------------------------------------------------------------
    def stop(self, timeout: float = 30.0) -> None:  # pragma: no cover - subclasses document it
        self._stop(timeout)

    def close(self) -> None:
        """Same as ``stop()``."""
        self.stop()

    def __enter__(self: _Self) -> _Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def closed(self) -> bool:
        """True once the consumer is stopped and closed."""
        return self._state == "closed"

    @property
    def error(self) -> KafkaError | None:
        """The KafkaError that stopped the consumer, if any."""
        return self._error
