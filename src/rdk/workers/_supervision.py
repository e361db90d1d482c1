"""rdk.workers, the parent's side: the supervision of a ``WorkerPool``'s processes, one
slot each, on a thread of the pool: spawn, relay what the workers report, restart the dead
after a backoff (or stop the pool when a slot is hopeless), stop gracefully, kill the stuck."""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import multiprocessing.connection as mpc
import os
import signal
import threading
import time
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ._child import worker_main

if TYPE_CHECKING:
    from ._stats import WorkerStats

__all__ = ["MAX_BACKOFF", "Slot", "Supervision", "describe_exit"]

log = logging.getLogger("rdk.workers")

MAX_BACKOFF = 60.0
_KILL_GRACE = 5.0  # seconds past stop_timeout before a worker that will not stop is killed


class Slot:
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


def describe_exit(code: int | None) -> str:
    if code is None:
        return "is still running"
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


def close_fds(*fds: int) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


class Supervision:
    """The supervising half of a ``WorkerPool`` (its base class): the workers' slots, the
    thread that runs them (``_supervise``) and the stop requests it answers. The pool sets
    the settings below and implements ``_on_stats`` and ``_fail``."""

    num_workers: int
    group_id: str | None
    consumer_factory: Callable[..., Any]
    stats_callback: Callable[..., None] | None
    max_restarts: int | None
    restart_backoff: float
    stop_timeout: float
    healthy_after: float

    def _init_supervision(self, num_workers: int) -> None:
        self._ctx = multiprocessing.get_context("spawn")
        self._slots = [Slot(i) for i in range(num_workers)]
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
        weakref.finalize(self, close_fds, self._wake_r, self._wake_w)

    def _on_stats(self, slot: Slot, payload: dict) -> None:
        """A worker reported its consumer's stats (``payload``)."""
        raise NotImplementedError

    def _fail(self, message: str, slot: int, exitcode: int | None, cause: str | None,
              permanent: bool = False) -> None:
        """A slot is hopeless: log ``message``, keep the error, stop the pool."""
        raise NotImplementedError

    def _request_stop(self, kill: bool = False) -> None:
        self._stop_requested = True
        if kill:
            self._kill_requested = True
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"x")

    # -- supervision -----------------------------------------------------------------------
    def _spawn(self, slot: Slot) -> None:
        reader, writer = self._ctx.Pipe(duplex=False)
        proc = self._ctx.Process(
            target=worker_main,
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

    def _drain(self, slot: Slot) -> None:
        conn = slot.conn
        try:
            while conn.poll():
                self._handle(slot, conn.recv())
        except (EOFError, OSError):
            conn.close()
            slot.conn = None

    def _handle(self, slot: Slot, msg: tuple) -> None:
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
            self._request_stop()
        elif kind == "failed":
            _, description, permanent, phase = msg
            slot.cause = (str(description), bool(permanent), str(phase))

    def _reap(self, slot: Slot, stopping: bool) -> None:
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
                    describe_exit(code), said)
            return
        slot.failures = 1 if uptime >= self.healthy_after else slot.failures + 1
        if cause is not None and cause[1] and cause[2] == "start":
            message = (f"worker slot {slot.index} (pid {proc.pid}) {describe_exit(code)}: its "
                       f"consumer failed to start with {cause[0]}; a restart would fail the same "
                       "way, so the pool stops")
            self._fail(message, slot.index, code, cause[0], permanent=True)
            return
        if self.max_restarts is not None and slot.failures > self.max_restarts:
            message = (f"worker slot {slot.index} (pid {proc.pid}) {describe_exit(code)}{said}; "
                       f"it died {slot.failures} times in a row and the restart limit "
                       f"(max_restarts={self.max_restarts}) is reached: stopping the pool")
            self._fail(message, slot.index, code, None if cause is None else cause[0])
            return
        delay = min(self.restart_backoff * 2 ** (slot.failures - 1), MAX_BACKOFF)
        slot.restarts += 1
        slot.next_start = time.monotonic() + delay
        limit = "unlimited" if self.max_restarts is None else f"{slot.failures}/{self.max_restarts}"
        log.warning("worker slot %d (pid %d) %s%s; restarting it in %.1f s (restart %s in a row)",
                    slot.index, proc.pid, describe_exit(code), said, delay, limit)

    def _begin_stop(self, live: list[Slot]) -> None:
        for s in self._slots:
            s.next_start = None
        for s in live:
            with contextlib.suppress(Exception):
                s.process.terminate()  # SIGTERM: the worker stops its consumer gracefully

    def _kill(self, live: list[Slot]) -> None:
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
