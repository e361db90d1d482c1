"""The committer thread: hands recorded offsets to a store, one commit in flight at a time."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from typing import Any

Key = tuple[str, int]  # (topic, partition): what a consumer's store is keyed by

#: a group's commit refused while it rebalances: expected, retried (logged at INFO)
REBALANCE_ERRORS = frozenset({"REBALANCE_IN_PROGRESS", "ILLEGAL_GENERATION"})


class OffsetCommitter:
    """A thread that hands recorded offsets to a store: one commit in flight, newer values coalesce.

    ``record({(topic, partition): offset})`` never blocks on I/O. Commits start at most every
    ``min_interval`` seconds (values recorded meanwhile coalesce into the next one). With
    ``max_cpu_share``, a commit that cost ``c`` seconds of this thread's CPU is followed by
    a pause of up to ``c / max_cpu_share`` (at most ``MAX_INTERVAL``), so writing thousands
    of offset files per commit costs a bounded share of a core; ``flush()`` and ``close()``
    commit at once. A failing commit is logged and retried (the
    values stay pending, newer ones replace them) until ``close()``.

    Args:
        store: Where commits go: an object with ``commit({(topic, partition): last})``
            (a consumer's stores seen with (topic, partition) keys).
        logger: Where failed commits are logged.
        name: The committer thread's name.
        min_interval: Least seconds between the starts of two commits.
        max_cpu_share: Largest share of a core the commits may take (e.g. 0.05). None: no bound.
    """

    RETRY_SECONDS = 0.5
    """Seconds before a failed commit is tried again."""
    MAX_INTERVAL = 10.0  # the CPU share bound never spaces commits further apart than this
    """The CPU share bound never spaces commits further apart than this many seconds."""

    def __init__(self, store: Any, logger: logging.Logger | logging.LoggerAdapter, name: str = "rdk-offsets",
                 min_interval: float = 0.0, max_cpu_share: float | None = None) -> None:
        self.store = store
        self.logger = logger
        self.min_interval = float(min_interval)
        self.max_cpu_share = max_cpu_share
        self._gap = self.min_interval  # the pause owed after the last commit
        self.committed: dict[Key, int] = {}
        """The offsets the store has taken, per (topic, partition)."""
        self.last_error: BaseException | None = None
        """The exception of the last failed commit; None once a commit succeeds."""
        self._pending: dict[Key, int] = {}
        self._writing = False
        self._closing = False
        self._give_up = False
        self._urgent = 0
        self._last_start = float("-inf")
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def record(self, offsets: Mapping[Key, int]) -> None:
        """Queue offsets for the next commit; never blocks on I/O. Ignored once closed.

        Args:
            offsets: ``{(topic, partition): last processed offset}``; newer values replace
                pending ones.
        """
        if not offsets:
            return
        with self._cond:
            if self._closing and not self._thread.is_alive():
                return
            self._pending.update(offsets)
            self._cond.notify_all()

    @property
    def pending(self) -> dict[Key, int]:
        """The recorded offsets not yet committed."""
        with self._cond:
            return dict(self._pending)

    def _run(self) -> None:
        cond = self._cond
        while True:
            with cond:
                while not self._pending and not self._closing:
                    cond.wait()
                if not self._pending:
                    return
                while not self._closing and not self._urgent:  # at most one per gap
                    delay = self._last_start + self._gap - time.monotonic()
                    if delay <= 0:
                        break
                    cond.wait(delay)
                batch, self._pending = self._pending, {}
                self._writing = True
                self._last_start = time.monotonic()
            ok = False
            cpu = time.thread_time()
            try:
                self.store.commit(batch)
                ok = True
            except Exception as e:  # noqa: BLE001 - keep the values and retry; never lose the thread
                self.last_error = e
                if getattr(e, "name", None) in REBALANCE_ERRORS:  # a group commit mid-rebalance
                    self.logger.info("offsets %s not committed during a rebalance: %s (will "
                                     "retry)", batch, e)
                else:
                    self.logger.error("could not store offsets %s: %s (will retry)", batch, e)
            self._gap = self._next_gap(time.thread_time() - cpu)
            with cond:
                self._writing = False
                if ok:
                    self.committed.update(batch)
                    self.last_error = None
                else:
                    for p, v in batch.items():
                        self._pending.setdefault(p, v)
                cond.notify_all()
                if not ok:
                    cond.wait(self.RETRY_SECONDS)
                    if self._closing and self._give_up:
                        return

    def _next_gap(self, cpu_seconds: float) -> float:
        if not self.max_cpu_share:
            return self.min_interval
        return max(self.min_interval, min(self.MAX_INTERVAL, cpu_seconds / self.max_cpu_share))

    def flush(self, timeout: float | None = None) -> bool:
        """Commit what is recorded now and wait for it; False if ``timeout`` passed first.

        Args:
            timeout: Seconds to wait; None waits until done.

        Returns:
            True when nothing is pending any more.
        """
        with self._cond:
            self._urgent += 1
            self._cond.notify_all()
            try:
                return self._cond.wait_for(lambda: not self._pending and not self._writing, timeout)
            finally:
                self._urgent -= 1

    def close(self, timeout: float | None = None) -> bool:
        """Commit what is pending (up to ``timeout``), then end the thread. True if all was stored.

        Args:
            timeout: Seconds to wait for the pending commits; None waits until they are done.

        Returns:
            True when every recorded offset was stored.
        """
        self._wake(closing=True)
        done = self.flush(timeout)
        self._wake(give_up=True)  # a thread still retrying a failed commit stops
        self._thread.join(0 if not done else timeout)
        return done

    def _wake(self, *, closing: bool = False, give_up: bool = False) -> None:
        """Set the given shutdown flags and wake the thread (and every waiter)."""
        with self._cond:
            self._closing = self._closing or closing
            self._give_up = self._give_up or give_up
            self._cond.notify_all()
