"""rdk.workers: one consumer per OS process, one worker slot each.

kafka-native's node-cluster pattern, with supervision: ``run(N, consumer_factory)`` starts N
processes (multiprocessing's ``spawn`` method); process ``i`` calls
``consumer_factory(worker_slot=i, num_workers=N)`` and starts what it returns (an
``rdk.Consumer``, or any object with ``start()`` and ``stop(timeout)``).

- A worker that dies (exception, SIGKILL, OOM) is restarted in the same slot after a backoff
  (``restart_backoff * 2**(k-1)`` seconds for its k-th consecutive death, at most 60 s). A slot
  that dies more than ``max_restarts`` times in a row stops the pool and ``run()`` raises
  [WorkerError][rdk.workers.WorkerError]. A worker that stayed up for ``healthy_after`` seconds resets its
  slot's count. Every restart and the limit are logged on the ``rdk.workers`` logger.
  The worker's exception reaches the parent (``WorkerError.cause``); a start failure no
  restart can fix (ValueError, TypeError, an unknown topic) stops the pool at once.
- SIGTERM or SIGINT to the parent (or ``WorkerPool.stop()``) stops every worker gracefully:
  each one's consumer finishes its in-flight batch and writes its offsets
  (``Consumer.stop()``); ``run()`` then returns normally, so the parent exits 0.
- With ``group_id``, the N processes form one Kafka consumer group instead: process ``i``
  calls ``consumer_factory(group_id=group_id)`` (no worker slot), the group coordinator
  spreads the partitions over the live members and moves a dead member's partitions to the
  others until its restart rejoins (see rdk.Consumer's group mode). A factory of
  ``rdk.ShareConsumer`` makes them one *share group* the same way: N may exceed the
  partitions, and a dead member's unacknowledged records go to the others once their
  acquisition locks run out.
- With ``stats_callback``, each worker's consumer gets a ``stats_callback`` that forwards
  its figures to the parent, where ``stats_callback(PoolStats)`` receives the per-slot
  figures and their sums (``waiting_kafka``, ``waiting_local``, ``kafka_log_size``).

The factory runs in the child process, so it must be picklable: a module-level function,
a class, or a ``functools.partial`` of one (e.g. ``partial(rdk.Consumer, broker=...,
topic=..., offset_directory=..., receive_callback=handle)``). As always with ``spawn``, the
script that starts the pool must guard its entry point with ``if __name__ == "__main__":``.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

from .. import _exit
from ..errors import RdkError
from ._child import FIGURES, current_slot, request_stop
from ._child import SHARE_FIGURES as SHARE_FIGURES
from ._config import check_pool_arguments as _check_pool_arguments
from ._stats import WorkerStats as WorkerStats
from ._supervision import MAX_BACKOFF as MAX_BACKOFF
from ._supervision import Slot as _Slot
from ._supervision import Supervision as _Supervision

__all__ = [
    "PoolStats",
    "WorkerError",
    "WorkerPool",
    "WorkerStats",
    "current_slot",
    "request_stop",
    "run",
]

log = logging.getLogger("rdk.workers")

DEFAULT_MAX_RESTARTS = 5
"""A slot may die this many times in a row before the pool stops (``max_restarts``)."""
DEFAULT_RESTART_BACKOFF = 1.0
"""Seconds before a slot's first restart; doubled for each further death in a row."""


class WorkerError(RdkError):
    """A worker slot died more often in a row than ``max_restarts`` allows, or its consumer
    failed to start with an error no restart can fix.

    ``cause`` is the worker's own exception as ``"TypeName: message"`` (None when the worker
    died without saying, e.g. killed by a signal); ``permanent`` is True when the pool stopped
    without restarting because the error was not transient.

    Args:
        message: The error message.
        slot: The worker slot that died.
        exitcode: The worker process's exit code (negative: killed by that signal), or None.
        cause: The worker's exception as ``"TypeName: message"``, or None.
        permanent: Whether the pool stopped without restarting.
    """

    def __init__(self, message: str, slot: int, exitcode: int | None, cause: str | None = None,
                 permanent: bool = False) -> None:
        super().__init__(message)
        self.slot = slot
        """The worker slot that died."""
        self.exitcode = exitcode
        """The worker process's exit code (negative: killed by that signal), or None."""
        self.cause = cause
        """The worker's exception as ``"TypeName: message"``, or None."""
        self.permanent = permanent
        """True when the pool stopped without restarting (the error was not transient)."""


@dataclass(frozen=True)
class PoolStats:
    """What the parent's ``stats_callback`` receives: per-slot figures and their sums.

    ``slots`` holds the latest report of every live slot that has reported; ``slot`` is the
    slot whose report triggered this call. The sums cover ``slots``.
    """

    slot: int
    """The slot whose report triggered this call."""
    slots: dict[int, WorkerStats]
    """``{slot: WorkerStats}``: the latest report of every live slot that has reported."""
    waiting_kafka: int
    """Sum of the slots' ``waiting_kafka``."""
    waiting_local: int
    """Sum of the slots' ``waiting_local``."""
    kafka_log_size: int
    """Sum of the slots' ``kafka_log_size``."""

    @property
    def share(self) -> dict[str, int]:
        """Share consumers: every slot's counts (``delivered``, ``accepted``, ``released``,
        ``rejected``, ``redelivered``, ``ack_errors``, ``lock_expired_batches``) summed;
        ``{}`` for other consumers. Counts restart with a restarted worker."""
        total: dict[str, int] = {}
        for s in self.slots.values():
            for name, value in s.share.items():
                total[name] = total.get(name, 0) + value
        return total

    @property
    def partitions(self) -> dict[int, dict[str, int]]:
        """Per-partition figures of every slot, merged (slots own disjoint partitions)."""
        merged: dict[int, dict[str, int]] = {}
        for s in self.slots.values():
            merged.update(s.partitions)
        return dict(sorted(merged.items()))


class WorkerPool(_Supervision):
    """N worker processes, one consumer each, supervised by a thread in this process.

    ``start()`` launches the workers and returns at once; ``stop(timeout)`` stops them
    gracefully; ``run()`` does both around SIGTERM/SIGINT. Attributes for observers:
    ``pids`` (slot -> pid of the live worker), ``restarts`` (slot -> total restarts),
    ``partitions`` (slot -> partitions the live worker reported owning; ``[]`` in group
    mode, where the coordinator assigns them later), ``error``. ``group_id``: the workers
    join that consumer group (``consumer_factory(group_id=...)``) instead of taking slots;
    with a factory of ``rdk.ShareConsumer``, that share group (any number of workers).

    Args:
        num_workers: Number of worker processes (slots), >= 1.
        consumer_factory: Picklable callable run in each worker:
            ``consumer_factory(worker_slot=i, num_workers=N)``, or
            ``consumer_factory(group_id=group_id)`` with ``group_id``, plus
            ``stats_callback=`` with ``stats_callback``; it returns an object with ``start()``
            and ``stop(timeout)``, e.g. an [rdk.Consumer][].
        stats_callback: Called in this process with a [rdk.workers.PoolStats][] whenever a
            worker reports stats, on the pool's supervising thread. None: no stats.
        max_restarts: Deaths in a row a slot may have before the pool stops and ``run()``
            raises [rdk.workers.WorkerError][]. None: restart without limit.
        restart_backoff: Seconds before a slot's first restart, doubled for each further
            death in a row (at most 60 s).
        stop_timeout: Seconds each worker gets to stop its consumer; a worker still running
            5 s after that is killed.
        healthy_after: Seconds a worker must stay up to reset its slot's count of deaths.
        group_id: The workers join this consumer (or share) group instead of taking worker
            slots. None: worker slots.

    Raises:
        TypeError: An argument of the wrong type, a ``consumer_factory`` that cannot be
            pickled, or one that does not accept the ``stats_callback``/``group_id`` keyword
            it would need.
        ValueError: ``num_workers`` < 1, a negative number, an empty ``group_id`` or one
            librdkafka would rewrite (leading white space, a NUL).
    """

    def __init__(
        self,
        num_workers: int,
        consumer_factory: Callable[..., Any],
        *,
        stats_callback: Callable[[PoolStats], None] | None = None,
        max_restarts: int | None = DEFAULT_MAX_RESTARTS,
        restart_backoff: float = DEFAULT_RESTART_BACKOFF,
        stop_timeout: float = 30.0,
        healthy_after: float = 60.0,
        group_id: str | None = None,
    ) -> None:
        _check_pool_arguments(num_workers, consumer_factory, stats_callback=stats_callback,
                              max_restarts=max_restarts, restart_backoff=restart_backoff,
                              stop_timeout=stop_timeout, healthy_after=healthy_after, group_id=group_id)
        self.num_workers = num_workers
        self.group_id = group_id
        self.consumer_factory = consumer_factory
        self.stats_callback = stats_callback
        self.max_restarts = max_restarts
        self.restart_backoff = float(restart_backoff)
        self.stop_timeout = float(stop_timeout)
        self.healthy_after = float(healthy_after)
        self.error: WorkerError | None = None
        """The [rdk.workers.WorkerError][] that stopped the pool, if any."""
        self._init_supervision(num_workers)

    # -- public --------------------------------------------------------------------------
    @property
    def pids(self) -> dict[int, int]:
        """``{slot: pid}`` of the live workers."""
        with self._lock:
            return {s.index: s.pid for s in self._slots if s.pid is not None}

    @property
    def restarts(self) -> dict[int, int]:
        """``{slot: total restarts}``."""
        with self._lock:
            return {s.index: s.restarts for s in self._slots}

    @property
    def partitions(self) -> dict[int, list[int]]:
        """``{slot: partitions}`` the live workers reported owning (``[]`` in group mode)."""
        with self._lock:
            return {s.index: list(s.partitions) for s in self._slots if s.partitions is not None}

    @property
    def running(self) -> bool:
        """True from ``start()`` until the pool has ended."""
        return self._thread is not None and not self._done.is_set()

    def start(self) -> WorkerPool:
        """Launch every worker and the supervising thread; returns at once.

        Returns:
            The pool itself.

        Raises:
            RuntimeError: The pool was started already.
        """
        if self._thread is not None:
            raise RuntimeError("this WorkerPool was already started")
        self._pid = os.getpid()
        self._thread = threading.Thread(target=self._supervise, name="rdk-workers", daemon=True)
        self._thread.start()
        _exit.register(self, _exit.POOLS)
        return self

    def _close_at_exit(self, timeout: float) -> None:
        """The interpreter exits with this pool running: a graceful stop of every worker
        (each stops its consumer), waiting up to ``timeout`` (see rdk._exit)."""
        if not self._done.is_set():
            log.info("rdk.WorkerPool: stopping the workers at interpreter exit")
            self.stop(timeout)

    def request_stop(self, *, kill: bool = False) -> None:
        """Ask for a graceful stop (``kill=True``: SIGKILL the workers now). Never blocks.

        Args:
            kill: SIGKILL the workers instead of stopping them gracefully.
        """
        self._request_stop(kill)

    def stop(self, timeout: float | None = None) -> None:
        """Stop every worker gracefully and wait (at most ``timeout`` s) for the pool to end.

        From the pool's own thread (e.g. inside ``stats_callback``) it only asks for the stop.

        Args:
            timeout: Seconds to wait; None waits until the pool has ended.
        """
        self.request_stop()
        if threading.current_thread() is not self._thread:
            self.wait(timeout)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the pool has ended; True if it has.

        Args:
            timeout: Seconds to wait; None waits without limit.

        Returns:
            True when the pool has ended (or was never started).
        """
        if self._thread is None:
            return True
        return self._done.wait(timeout)

    def wait_started(self, timeout: float | None = None) -> bool:
        """Wait until every slot has a live worker that reported its partitions.

        Args:
            timeout: Seconds to wait; None waits without limit.

        Returns:
            True once every slot reported; False after ``timeout`` or once the pool ended.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._changed:
            while not all(s.partitions is not None for s in self._slots):
                if self._done.is_set():
                    return False
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._changed.wait(remaining)
        return True

    @contextlib.contextmanager
    def stop_on_signals(self) -> Iterator[None]:
        """While inside: SIGTERM/SIGINT ask for a graceful stop; a second one kills the workers.

        Installs the handlers only on the main thread (elsewhere it does nothing).
        """
        installed: dict[signal.Signals, Any] = {}
        if threading.current_thread() is threading.main_thread():
            def on_signal(signum: int, frame: Any) -> None:
                if self._stop_requested:
                    log.warning("second %s: killing the workers", signal.Signals(signum).name)
                    self.request_stop(kill=True)
                else:
                    log.info("%s: stopping the workers gracefully", signal.Signals(signum).name)
                    self.request_stop()

            for sig in (signal.SIGTERM, signal.SIGINT):
                installed[sig] = signal.signal(sig, on_signal)
        try:
            yield
        finally:
            for sig, previous in installed.items():
                signal.signal(sig, previous)

    def run(self) -> None:
        """Start, stop gracefully on SIGTERM/SIGINT (a second signal kills), wait.

        Returns normally after a graceful stop; raises [WorkerError][rdk.workers.WorkerError] if a slot
        exhausted its restarts. Signal handlers are installed only on the main thread.

        Raises:
            rdk.workers.WorkerError: A slot exhausted its restarts, or a worker's consumer
                failed to start with an error no restart can fix.
            RuntimeError: The pool was started already.
        """
        with self.stop_on_signals():
            self.start()
            while not self._done.wait(1.0):
                pass
        if self.error is not None:
            raise self.error

    def __enter__(self) -> WorkerPool:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- what the supervision reports ---------------------------------------------------
    def _on_stats(self, slot: _Slot, payload: dict) -> None:
        stats = WorkerStats(slot=slot.index, pid=slot.pid or 0,
                            waiting_kafka=payload["waiting_kafka"],
                            waiting_local=payload["waiting_local"],
                            kafka_log_size=payload["kafka_log_size"],
                            partitions=payload["partitions"], received=time.monotonic(),
                            share=payload.get("share", {}))
        with self._lock:
            slot.stats = stats
            slots = {s.index: s.stats for s in self._slots if s.stats is not None}
        if self.stats_callback is None:
            return
        info = PoolStats(slot=slot.index, slots=slots,
                         **{name: sum(getattr(s, name) for s in slots.values()) for name in FIGURES})
        try:
            self.stats_callback(info)
        except Exception:
            log.exception("exception in the pool's stats_callback")
        except BaseException as e:  # SystemExit/KeyboardInterrupt must not end the supervisor
            log.error("the pool's stats_callback raised %s; it runs on the pool's supervising "
                      "thread, so it was logged and the pool goes on", type(e).__name__,
                      exc_info=True)

    def _fail(self, message: str, slot: int, exitcode: int | None, cause: str | None,
              permanent: bool = False) -> None:
        log.error(message)
        self.error = self.error or WorkerError(message, slot, exitcode, cause, permanent=permanent)
        self.request_stop()


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _takes_arguments_of(cls: Callable[_P, Any]) -> Callable[[Callable[..., _R]], Callable[_P, _R]]:
    """Declare that the decorated function takes exactly ``cls``'s arguments (for type
    checkers and ``help()``), so that list is written once."""
    def declare(fn: Callable[..., _R]) -> Callable[_P, _R]:
        own = inspect.signature(fn).return_annotation
        fn.__signature__ = inspect.signature(cls).replace(return_annotation=own)  # type: ignore[attr-defined]
        return fn
    return declare


@_takes_arguments_of(WorkerPool)
def run(*args: Any, **kwargs: Any) -> None:
    """Run a [WorkerPool][rdk.workers.WorkerPool] until SIGTERM/SIGINT; it takes WorkerPool's arguments
    (``num_workers, consumer_factory, *, stats_callback, max_restarts, restart_backoff,
    stop_timeout, healthy_after, group_id``). See the module docstring.

    Process ``i`` builds its consumer with ``consumer_factory(worker_slot=i,
    num_workers=num_workers)``, or ``consumer_factory(group_id=group_id)`` with ``group_id``
    (plus ``stats_callback=`` when ``stats_callback`` is given).
    Returns after a graceful stop; raises [WorkerError][rdk.workers.WorkerError] when a slot exhausts
    ``max_restarts``.

    Args:
        *args: [WorkerPool][rdk.workers.WorkerPool]'s positional arguments.
        **kwargs: [WorkerPool][rdk.workers.WorkerPool]'s keyword arguments.

    Raises:
        rdk.workers.WorkerError: A slot exhausted its restarts, or a worker's consumer failed
            to start with an error no restart can fix.
        TypeError: As [WorkerPool][rdk.workers.WorkerPool].
        ValueError: As [WorkerPool][rdk.workers.WorkerPool].
    """
    WorkerPool(*args, **kwargs).run()
