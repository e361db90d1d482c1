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
import multiprocessing
import multiprocessing.connection as mpc
import os
import pickle
import signal
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ParamSpec, TypeVar

from . import _exit
from .errors import RdkError
from .validate import check_callable, check_int, check_timeout

__all__ = [
    "DEFAULT_MAX_RESTARTS",
    "DEFAULT_RESTART_BACKOFF",
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
MAX_BACKOFF = 60.0
_KILL_GRACE = 5.0  # seconds past stop_timeout before a worker that will not stop is killed
FIGURES = ("waiting_kafka", "waiting_local", "kafka_log_size")
# rdk.ShareStats counters, forwarded when a worker's consumer reports them
SHARE_FIGURES = ("delivered", "accepted", "released", "rejected", "redelivered", "ack_errors",
                 "lock_expired_batches")


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


# KafkaError names that no restart can fix: the topic is not there.
_PERMANENT_KAFKA_ERRORS = frozenset({"UNKNOWN_TOPIC_OR_PART", "UNKNOWN_TOPIC", "TOPIC_EXCEPTION",
                                     "TOPIC_AUTHORIZATION_FAILED", "INVALID_TOPIC_EXCEPTION"})


def _is_permanent(error: BaseException) -> bool:
    """A start failure that a restart would only repeat: wrong input, refused configuration,
    an unusable offset directory, or a topic that does not exist."""
    from .errors import KafkaError, LockedError

    if isinstance(error, LockedError):
        return False  # the previous worker of the slot may still hold the lock
    if isinstance(error, (ValueError, TypeError)):  # ConfigError and OffsetFileError too
        return True
    name = getattr(error, "name", "") if isinstance(error, KafkaError) else ""
    return name.lstrip("_") in _PERMANENT_KAFKA_ERRORS


def _describe_error(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}".rstrip(": ")


@dataclass(frozen=True)
class WorkerStats:
    """The latest stats one worker slot reported."""

    slot: int
    """The worker slot."""
    pid: int
    """The worker process's pid."""
    waiting_kafka: int
    """The worker consumer's ``waiting_kafka`` (see [rdk.ConsumerStats][])."""
    waiting_local: int
    """The worker consumer's ``waiting_local``."""
    kafka_log_size: int
    """The worker consumer's ``kafka_log_size``."""
    partitions: dict[int, dict[str, int]] = field(default_factory=dict)
    """``{partition: {"waiting_kafka", "waiting_local", "kafka_log_size"}}``."""
    received: float = 0.0  # time.monotonic() in the parent when it arrived
    """``time.monotonic()`` in the parent when the report arrived."""
    share: dict[str, int] = field(default_factory=dict)  # a ShareConsumer's counts (SHARE_FIGURES)
    """A share consumer's counts (``delivered``, ``accepted``...); ``{}`` for other consumers."""


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


# ---------------------------------------------------------------------------------------
# worker side (runs in the spawned child)

_child: dict[str, Any] = {}  # conn, lock, slot, num_workers, stop: set in a worker process


def current_slot() -> tuple[int, int] | None:
    """``(worker_slot, num_workers)`` inside a worker process started by rdk.workers, else None.

    Returns:
        ``(worker_slot, num_workers)``, or None outside a worker process.
    """
    if "slot" not in _child:
        return None
    return _child["slot"], _child["num_workers"]


def request_stop() -> None:
    """Inside a worker: ask the parent to stop the whole pool gracefully (e.g. work is done).

    Raises:
        RuntimeError: Not inside a worker process started by rdk.workers.
    """
    if "conn" not in _child:
        raise RuntimeError("request_stop() works only inside a worker process started by rdk.workers")
    _send(("stop",))


def _send(msg: tuple) -> None:
    conn = _child.get("conn")
    if conn is None:
        return
    # OSError, ValueError: the parent is gone; the death signal will stop us
    with _child["lock"], contextlib.suppress(OSError, ValueError):
        conn.send(msg)


def _figure(obj: Any, name: str) -> int:
    value = obj.get(name, 0) if isinstance(obj, Mapping) else getattr(obj, name, 0)
    return int(value or 0)


def _stats_payload(info: Any) -> dict:
    """The parts of a consumer stats info worth shipping to the parent (no rdkafka_stats)."""
    parts = info.get("partitions") if isinstance(info, Mapping) else getattr(info, "partitions", None)
    per: dict[int, dict[str, int]] = {}
    items: Iterable[tuple[Any, Any]]
    if isinstance(parts, Mapping):
        items = parts.items()
    else:  # a list of per-partition objects carrying .partition
        items = ((_figure(p, "partition"), p) for p in (parts or ()))
    for p, figs in items:
        per[int(p)] = {name: _figure(figs, name) for name in FIGURES}
    payload: dict[str, Any] = {name: _figure(info, name) for name in FIGURES}
    payload["partitions"] = per
    from .share import ShareStats

    if isinstance(info, ShareStats):
        payload["share"] = {name: _figure(info, name) for name in SHARE_FIGURES}
    return payload


def _forward_stats(info: Any) -> None:
    """The stats_callback a worker's consumer gets: ship the figures to the parent."""
    _send(("stats", _stats_payload(info)))


def _set_parent_death_signal() -> None:
    """Linux: SIGTERM this worker if the parent dies without stopping it."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass


def _worker_main(slot: int, num_workers: int, factory: Callable, conn: Any,
                 forward_stats: bool, stop_timeout: float, parent_pid: int,
                 group_id: str | None = None) -> None:
    """Body of worker process ``slot``: build, start, wait for the stop signal, stop."""
    stop = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    _set_parent_death_signal()
    if os.getppid() != parent_pid:  # the parent died before we could ask to follow it
        raise SystemExit(1)
    _child.update(conn=conn, lock=threading.Lock(), slot=slot, num_workers=num_workers, stop=stop)
    kwargs: dict[str, Any] = ({"group_id": group_id} if group_id is not None
                              else {"worker_slot": slot, "num_workers": num_workers})
    if forward_stats:
        kwargs["stats_callback"] = _forward_stats
    try:
        consumer = factory(**kwargs)
        for method in ("start", "stop"):
            if not callable(getattr(consumer, method, None)):
                raise TypeError(f"consumer_factory returned {type(consumer).__name__}, which has "
                                f"no {method}() method; return an rdk.Consumer (or an object "
                                "with start() and stop(timeout))")
        partitions = consumer.start()
    except BaseException as e:
        log.exception("worker slot %d (pid %d): the consumer failed to start", slot, os.getpid())
        _send(("failed", _describe_error(e), _is_permanent(e), "start"))
        raise SystemExit(1) from None
    owned = [int(p) if isinstance(p, int) else (str(p[0]), int(p[1])) for p in (partitions or ())]
    _send(("started", os.getpid(), sorted(owned)))
    while not stop.wait(1.0):
        err = _consumer_failure(consumer)
        if err is not None:
            log.error("worker slot %d (pid %d): consumer failed: %s", slot, os.getpid(), err)
            _send(("failed", _describe_error(err), False, "run"))
            with contextlib.suppress(BaseException):
                consumer.stop(min(stop_timeout, 5.0))
            raise SystemExit(1)
    try:
        consumer.stop(stop_timeout)
    except BaseException as e:
        log.exception("worker slot %d (pid %d): stopping the consumer failed", slot, os.getpid())
        _send(("failed", _describe_error(e), False, "stop"))
        raise SystemExit(1) from None
    _send(("stopped",))
    raise SystemExit(0)


def _consumer_failure(consumer: Any) -> Any:
    """A fatal error the consumer reports about itself (``.error``/``.failed``), if any."""
    for name in ("fatal_error", "error"):
        err = getattr(consumer, name, None)
        if isinstance(err, BaseException):
            return err
    return None


# ---------------------------------------------------------------------------------------
# parent side


class _Slot:
    __slots__ = (
        "cause",
        "conn",
        "failures",
        "index",
        "next_start",
        "partitions",
        "pid",
        "process",
        "restarts",
        "started_at",
        "stats",
    )

    def __init__(self, index: int) -> None:
        self.index = index
        self.process: Any = None
        self.conn: Any = None
        self.pid: int | None = None
        self.started_at = 0.0
        self.failures = 0  # consecutive deaths
        self.restarts = 0  # total restarts
        self.next_start: float | None = None
        self.partitions: list[int] | None = None
        self.stats: WorkerStats | None = None
        self.cause: tuple[str, bool, str] | None = None  # the live worker's reported failure


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "is still running"
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


def _close_fds(*fds: int) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


def _accepts_keyword(fn: Callable, name: str) -> bool:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return True  # cannot tell; let the call decide
    return any(p.name == name or p.kind is p.VAR_KEYWORD for p in params)


class WorkerPool:
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
        ValueError: ``num_workers`` < 1, a negative number, an empty ``group_id``.
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
        check_int(num_workers, "num_workers", minimum=1)
        if group_id is not None:
            if not isinstance(group_id, str):
                raise TypeError(f"group_id must be str, got {type(group_id).__name__}")
            if not group_id:
                raise ValueError("group_id must not be empty")
        check_callable(consumer_factory, "consumer_factory", required=True)
        check_callable(stats_callback, "stats_callback")
        if max_restarts is not None:
            check_int(max_restarts, "max_restarts", minimum=0)
        check_timeout(restart_backoff, "restart_backoff")
        check_timeout(stop_timeout, "stop_timeout")
        check_timeout(healthy_after, "healthy_after")
        try:
            pickle.dumps(consumer_factory)
        except RuntimeError:
            pass  # holds multiprocessing objects, which pickle only while spawning: fine
        except (pickle.PicklingError, TypeError, AttributeError) as e:
            raise TypeError(
                "consumer_factory must be picklable to reach the worker processes (a module-level "
                f"function, a class or a functools.partial of one), got {consumer_factory!r}: {e}"
            ) from None
        if stats_callback is not None and not _accepts_keyword(consumer_factory, "stats_callback"):
            raise TypeError(
                "with stats_callback, consumer_factory must accept a stats_callback keyword "
                "(pass it on to rdk.Consumer)"
            )
        if group_id is not None and not _accepts_keyword(consumer_factory, "group_id"):
            raise TypeError("with group_id, consumer_factory must accept a group_id keyword "
                            "(pass it on to rdk.Consumer)")
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
        self._ctx = multiprocessing.get_context("spawn")
        self._slots = [_Slot(i) for i in range(num_workers)]
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._stop_requested = False
        self._kill_requested = False
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)
        os.set_blocking(self._wake_r, False)
        # Closed only when the pool is collected, so a late request_stop() never writes to
        # a file descriptor number that something else has reused.
        weakref.finalize(self, _close_fds, self._wake_r, self._wake_w)

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
        self._stop_requested = True
        if kill:
            self._kill_requested = True
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"x")

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

    # -- supervision -----------------------------------------------------------------------
    def _spawn(self, slot: _Slot) -> None:
        reader, writer = self._ctx.Pipe(duplex=False)
        proc = self._ctx.Process(
            target=_worker_main,
            name=f"rdk-worker-{slot.index}",
            args=(slot.index, self.num_workers, self.consumer_factory, writer,
                  self.stats_callback is not None, self.stop_timeout, os.getpid(), self.group_id),
        )
        proc.start()
        writer.close()
        with self._lock:
            slot.process, slot.conn, slot.pid = proc, reader, proc.pid
            slot.started_at = time.monotonic()
            slot.next_start = None
            slot.partitions = None
            slot.stats = None
            slot.cause = None
        log.info("worker slot %d started (pid %d)", slot.index, proc.pid)

    def _supervise(self) -> None:
        stopping_since: float | None = None
        try:
            for slot in self._slots:
                if self._stop_requested:
                    break
                self._spawn(slot)
            while True:
                now = time.monotonic()
                live = [s for s in self._slots if s.process is not None]
                if self._stop_requested and stopping_since is None:
                    stopping_since = now
                    self._begin_stop(live)
                if stopping_since is not None:
                    if not live:
                        break
                    if self._kill_requested or now - stopping_since > self.stop_timeout + _KILL_GRACE:
                        self._kill(live)
                        break
                else:
                    for s in self._slots:
                        if s.process is None and s.next_start is not None and s.next_start <= now:
                            self._spawn(s)
                self._wait_and_handle(now, stopping_since)
        except BaseException:
            log.exception("the worker supervisor failed; killing the workers")
            self._kill([s for s in self._slots if s.process is not None])
            raise
        finally:
            with self._changed:
                self._done.set()
                self._changed.notify_all()

    def _wait_and_handle(self, now: float, stopping_since: float | None) -> None:
        waits: list[float] = [1.0]
        if stopping_since is not None:
            waits.append(stopping_since + self.stop_timeout + _KILL_GRACE - now)
        waits += [s.next_start - now for s in self._slots if s.next_start is not None]
        objects: list[Any] = [self._wake_r]
        for s in self._slots:
            if s.process is not None:
                objects.append(s.process.sentinel)
            if s.conn is not None:
                objects.append(s.conn)
        ready = mpc.wait(objects, max(0.0, min(waits)))
        for s in self._slots:
            if s.conn is not None and s.conn in ready:
                self._drain(s)
        if self._wake_r in ready:
            with contextlib.suppress(OSError):
                os.read(self._wake_r, 4096)
        for s in self._slots:
            if s.process is not None and s.process.sentinel in ready:
                self._reap(s, stopping_since is not None or self._stop_requested)

    def _drain(self, slot: _Slot) -> None:
        conn = slot.conn
        try:
            while conn.poll():
                self._handle(slot, conn.recv())
        except (EOFError, OSError):
            conn.close()
            slot.conn = None

    def _handle(self, slot: _Slot, msg: tuple) -> None:
        kind = msg[0]
        if kind == "started":
            _, pid, partitions = msg
            with self._changed:
                slot.partitions = list(partitions)
                self._changed.notify_all()
            log.info("worker slot %d (pid %d) owns partitions %s", slot.index, pid, partitions)
        elif kind == "stats":
            self._on_stats(slot, msg[1])
        elif kind == "stop":
            log.info("worker slot %d asked to stop the pool", slot.index)
            self.request_stop()
        elif kind == "failed":
            _, description, permanent, phase = msg
            slot.cause = (str(description), bool(permanent), str(phase))

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

    def _reap(self, slot: _Slot, stopping: bool) -> None:
        proc = slot.process
        proc.join(1.0)
        if slot.conn is not None:
            self._drain(slot)
            if slot.conn is not None:
                slot.conn.close()
        code = proc.exitcode
        uptime = time.monotonic() - slot.started_at
        cause = slot.cause
        with self._changed:
            slot.process = slot.conn = slot.pid = None
            slot.partitions = None
            slot.stats = None
            slot.cause = None
            self._changed.notify_all()
        said = "" if cause is None else f" ({cause[0]})"
        if stopping:
            level = logging.INFO if code == 0 else logging.WARNING
            log.log(level, "worker slot %d (pid %d) %s while stopping%s", slot.index, proc.pid,
                    _describe_exit(code), said)
            return
        slot.failures = 1 if uptime >= self.healthy_after else slot.failures + 1
        if cause is not None and cause[1] and cause[2] == "start":
            message = (f"worker slot {slot.index} (pid {proc.pid}) {_describe_exit(code)}: its "
                       f"consumer failed to start with {cause[0]}; a restart would fail the same "
                       "way, so the pool stops")
            log.error(message)
            self.error = self.error or WorkerError(message, slot.index, code, cause[0], permanent=True)
            self.request_stop()
            return
        if self.max_restarts is not None and slot.failures > self.max_restarts:
            message = (f"worker slot {slot.index} (pid {proc.pid}) {_describe_exit(code)}{said}; "
                       f"it died {slot.failures} times in a row and the restart limit "
                       f"(max_restarts={self.max_restarts}) is reached: stopping the pool")
            log.error(message)
            self.error = self.error or WorkerError(message, slot.index, code,
                                                   None if cause is None else cause[0])
            self.request_stop()
            return
        delay = min(self.restart_backoff * 2 ** (slot.failures - 1), MAX_BACKOFF)
        slot.restarts += 1
        slot.next_start = time.monotonic() + delay
        limit = "unlimited" if self.max_restarts is None else f"{slot.failures}/{self.max_restarts}"
        log.warning("worker slot %d (pid %d) %s%s; restarting it in %.1f s (restart %s in a row)",
                    slot.index, proc.pid, _describe_exit(code), said, delay, limit)

    def _begin_stop(self, live: list[_Slot]) -> None:
        for s in self._slots:
            s.next_start = None
        for s in live:
            with contextlib.suppress(Exception):
                s.process.terminate()  # SIGTERM: the worker stops its consumer gracefully

    def _kill(self, live: list[_Slot]) -> None:
        for s in live:
            if s.process is not None and s.process.exitcode is None:
                log.warning("worker slot %d (pid %s) did not stop in time: killing it",
                            s.index, s.process.pid)
                with contextlib.suppress(Exception):
                    s.process.kill()
        for s in live:
            if s.process is not None:
                s.process.join(5.0)
                self._reap(s, stopping=True)


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
