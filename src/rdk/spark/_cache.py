"""Executor-side client cache: a Python worker keeps its librdkafka clients between tasks.

Spark reuses a Python worker process for task after task (``spark.python.worker.reuse``,
true by default), micro-batch after micro-batch. Building a librdkafka client (its threads,
the bootstrap connection, the first metadata request) costs tens of milliseconds per task;
the JVM connector pays it once per executor (its consumer pool and producer cache). So does
this cache:

- keyed by the client's whole configuration: only a task asking for exactly the same
  properties gets a cached client;
- a client is leased to one task at a time (``lease``); the task gives it back when it
  ends well, and it is closed instead when the task failed, so a failure never leaves a
  client in an unknown state for the next task;
- an idle client is closed after ``idle_timeout`` seconds (a daemon thread wakes for it;
  the JVM connector's defaults, 5 min for consumers and 10 min for producers);
- closed at interpreter exit (``atexit``), and forgotten without being touched in a process
  forked from this one (librdkafka handles do not survive ``fork()``).
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from typing import Any, Generic, TypeVar

__all__ = ["CONSUMERS", "PRODUCERS", "ClientCache"]

log = logging.getLogger("rdk.spark")

_C = TypeVar("_C")


class ClientCache(Generic[_C]):
    """Idle clients by configuration key, each leased to one task at a time.

    Args:
        name: What the cache holds, for log lines.
        idle_timeout: Seconds an unused client is kept before it is closed.
        close: Closes one client (called outside the cache's lock).
    """

    def __init__(self, name: str, idle_timeout: float, close: Callable[[_C], Any]) -> None:
        self.name = name
        self.idle_timeout = idle_timeout
        self._close = close
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._idle: dict[Hashable, list[tuple[_C, float]]] = {}
        self._pid = os.getpid()
        self._reaper: threading.Thread | None = None
        self.created = 0  #: clients made by this process's cache
        self.reused = 0  #: leases served by an idle client
        self.evicted = 0  #: idle clients closed for their idle time
        self.discarded = 0  #: clients closed because the task that held them failed
        _CACHES.add(self)

    def _forked(self) -> None:
        """In a child process: forget the parent's clients (under the lock)."""
        if self._pid != os.getpid():
            self._pid = os.getpid()
            self._idle = {}
            self._reaper = None  # threads do not survive fork
            self.created = self.reused = self.evicted = self.discarded = 0

    def idle(self, key: Hashable | None = None) -> int:
        """How many idle clients the cache holds (for ``key``, or in all)."""
        with self._lock:
            self._forked()
            if key is not None:
                return len(self._idle.get(key, ()))
            return sum(map(len, self._idle.values()))

    @contextmanager
    def lease(self, key: Hashable, make: Callable[[], _C]) -> Iterator[_C]:
        """A client for ``key`` (idle, or made by ``make()``) for the ``with`` block; given
        back at its end (or when a generator holding it is closed early), closed when the
        block raises."""
        client = self._take(key, make)
        try:
            yield client
        except GeneratorExit:  # a reading generator closed early (a limit): a clean stop
            self._give_back(key, client)
            raise
        except BaseException:
            with self._lock:
                self.discarded += 1
            self._close_quietly(client)
            raise
        self._give_back(key, client)

    def _take(self, key: Hashable, make: Callable[[], _C]) -> _C:
        stale = []
        with self._lock:
            self._forked()
            stale = self._expired(time.monotonic())
            entries = self._idle.get(key)
            client = entries.pop()[0] if entries else None
            if client is not None:
                self.reused += 1
        for c in stale:
            self._close_quietly(c)
        if client is None:
            client = make()
            with self._lock:
                self.created += 1
        return client

    def _give_back(self, key: Hashable, client: _C) -> None:
        if getattr(client, "closed", False):
            return
        with self._lock:
            self._forked()
            self._idle.setdefault(key, []).append((client, time.monotonic()))
            if self._reaper is None:
                self._reaper = threading.Thread(target=self._reap, name=f"rdk-{self.name}-cache",
                                                daemon=True)
                self._reaper.start()
            self._wake.notify()

    def _expired(self, now: float) -> list[_C]:
        """Take out the clients idle for longer than idle_timeout (under the lock)."""
        out = []
        for key in list(self._idle):
            keep = [(c, t) for c, t in self._idle[key] if now - t < self.idle_timeout]
            out += [c for c, t in self._idle[key] if now - t >= self.idle_timeout]
            if keep:
                self._idle[key] = keep
            else:
                del self._idle[key]
        self.evicted += len(out)
        return out

    def _reap(self) -> None:
        """The reaper thread: close idle clients as they expire; ends when none is left."""
        me = threading.current_thread()
        while True:
            with self._lock:
                if self._reaper is not me:
                    return
                stale = self._expired(time.monotonic())
                if not stale:
                    if not self._idle:
                        self._reaper = None
                        return
                    oldest = min(t for entries in self._idle.values() for _, t in entries)
                    self._wake.wait(max(0.0, oldest + self.idle_timeout - time.monotonic()))
                    continue
            for c in stale:
                self._close_quietly(c)

    def close_all(self) -> None:
        """Close every idle client (leased ones are closed by their task's end)."""
        with self._lock:
            self._forked()
            idle = [c for entries in self._idle.values() for c, _ in entries]
            self._idle = {}
            self._wake.notify()
        for c in idle:
            self._close_quietly(c)

    def _close_quietly(self, client: _C) -> None:
        try:
            self._close(client)
        except Exception:
            log.warning("rdk.spark: closing a cached %s client failed", self.name, exc_info=True)


_CACHES: weakref.WeakSet[ClientCache] = weakref.WeakSet()


def _before_fork() -> None:
    """Hold every cache's lock across fork(), so no child inherits one held by a thread
    that does not exist there (the reaper)."""
    for cache in list(_CACHES):
        cache._lock.acquire()


def _after_fork_in_parent() -> None:
    for cache in list(_CACHES):
        cache._lock.release()


def _after_fork_in_child() -> None:
    for cache in list(_CACHES):
        cache._lock = threading.Lock()
        cache._wake = threading.Condition(cache._lock)
        cache._forked()


os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent,
                    after_in_child=_after_fork_in_child)


def _close_consumer(client: Any) -> None:
    client.close()


def _close_producer(producer: Any) -> None:
    producer.stop(0)


CONSUMERS: ClientCache[Any] = ClientCache("consumer", 300.0, _close_consumer)
"""Reading clients of ``rdk.spark.reader`` (``_binding.Client``), 5 min idle as the JVM's
``spark.kafka.consumer.cache.timeout``."""

PRODUCERS: ClientCache[Any] = ClientCache("producer", 600.0, _close_producer)
"""Producers of ``rdk.spark.writer`` (``rdk.Producer``), 10 min idle as the JVM's
``spark.kafka.producer.cache.timeout``."""


@atexit.register
def _close_at_exit() -> None:
    for cache in (CONSUMERS, PRODUCERS):
        cache.close_all()
