"""Which offsets may be recorded: per (topic, partition), the settled prefix of handed-out batches.

Batches settle in any order (callbacks return Futures and awaitables); an offset is
recordable once every earlier batch of its partition has settled. A failed batch, with
``commit_on_error=False``, stops recording for its partition for the rest of the run.
One tracker serves every topic of a consumer: keys are ``(topic, partition)``.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Iterable
from typing import cast

from ._batch import Batch

__all__ = ["Key", "SettlementTracker"]

Key = tuple[str, int]  # (topic, partition)

_PENDING, _OK, _FAILED, _CUT = 0, 1, 2, 3  # _CUT: processed up to its offset, no further
_ABANDONED = 4  # its processing never ended: not in flight, and its partition is blocked
_SETTLED = object()  # a Batch's bookkeeping once it has settled


def is_pending(batch: Batch) -> bool:
    """Whether ``batch`` was handed out and has not settled (or been abandoned) yet."""
    entries = batch._entries
    return entries is not None and entries is not _SETTLED


class SettlementTracker:
    """Per (topic, partition), the settled prefix of delivered batches; says what may be recorded."""

    def __init__(self, commit_on_error: bool, logger: logging.Logger | logging.LoggerAdapter) -> None:
        self.cond = threading.Condition(threading.Lock())
        self.commit_on_error = commit_on_error
        self.logger = logger
        self.unsettled = 0
        self.closed = False
        self._queues: dict[Key, deque[list[int]]] = {}
        self._blocked: set[Key] = set()

    def add(self, batch: Batch) -> None:
        """Track a batch that is being handed out (in delivery order)."""
        topic = batch.topic
        with self.cond:
            entries = []
            for p, _first, last, _count in batch._parts:
                e = [last, _PENDING]
                q = self._queues.get((topic, p))
                if q is None:
                    q = self._queues[(topic, p)] = deque()
                q.append(e)
                entries.append((p, e))
            batch._entries = entries
            self.unsettled += 1

    def settle(self, batch: Batch, ok: bool, part: dict[int, int] | None = None,
               record: Callable[[dict[Key, int]], None] | None = None,
               ) -> tuple[bool, dict[Key, int]]:
        """(was it pending, the ``{(topic, partition): last offset}`` it made recordable).

        ``part`` (``{partition: last processed offset}`` of the batch's topic): processed
        only up to those offsets, nothing of a partition left out, and nothing after them
        in this run. ``record`` (the committer's) gets a non-empty result inside the lock,
        so a revoke or a stop that waited for this batch finds its offsets handed over.
        """
        with self.cond:
            entries = self._take(batch)
            if entries is None or self.closed:
                return entries is not None, {}
            recordable: dict[Key, int] = {}
            for p, e in entries:
                if part is None:
                    e[1] = _OK if ok else _FAILED
                elif p in part and part[p] >= e[0]:
                    e[1] = _OK  # all of it processed
                else:
                    e[0], e[1] = part.get(p, -1), _CUT
                self._pop_settled((batch.topic, p), recordable)
            if recordable and record is not None:
                record(recordable)
            return True, recordable

    def abandon(self, batch: Batch) -> bool:
        """A batch whose processing never ended (or never ran): it stops being in flight, but
        nothing from it or after it in its partitions is ever recorded in this run.
        Returns whether it was pending."""
        with self.cond:
            entries = self._take(batch)
            for p, e in entries or ():  # blocked: nothing of it or behind it is recorded
                self._blocked.add((batch.topic, p))
                e[1] = _ABANDONED  # settled for anyone waiting (a revoke, a stop)
            return entries is not None

    def _take(self, batch: Batch) -> list[tuple[int, list[int]]] | None:
        """``batch``'s entries, no longer in flight from now on; None if it was not pending
        (never tracked, settled or abandoned already). The caller holds cond."""
        entries = batch._entries
        if entries is None or entries is _SETTLED:
            return None
        batch._entries = _SETTLED
        self.unsettled -= 1
        self.cond.notify_all()
        return cast(list[tuple[int, list[int]]], entries)

    def _pop_settled(self, key: Key, record: dict[Key, int]) -> None:
        """Move ``key``'s settled prefix into ``record`` (caller holds cond)."""
        q = self._queues[key]
        while q and q[0][1] != _PENDING:
            last, st = q.popleft()
            if key in self._blocked:
                continue
            if st == _CUT:
                self._blocked.add(key)
                if last < 0:
                    continue
            elif st == _FAILED and not self.commit_on_error:
                self._blocked.add(key)
                self.logger.warning(
                    "%s[%d]: a batch failed and commit_on_error=False, so no offset "
                    "after %s is recorded in this run; it is delivered again after a "
                    "restart", key[0], key[1], record.get(key, "the last recorded one"))
                continue  # (batches before it that were processed stay in ``record``)
            record[key] = last

    def wait_settled(self, timeout: float) -> bool:
        """Wait until no batch is unsettled; False if ``timeout`` seconds passed first."""
        with self.cond:
            return self.cond.wait_for(lambda: self.unsettled == 0, max(0.0, timeout))

    def wait_partitions_settled(self, keys: Iterable[Key], timeout: float) -> bool:
        """Wait until no batch holding any of ``keys`` is pending (a revoke); False if
        ``timeout`` seconds passed first. Looks at those partitions' queues only."""
        keys = list(keys)

        def settled() -> bool:
            queues = self._queues
            return not any(e[1] == _PENDING for k in keys for e in queues.get(k, ()))

        with self.cond:
            return self.cond.wait_for(settled, max(0.0, timeout))

    def close(self) -> None:
        """From now on settling records nothing (the consumer is stopping)."""
        with self.cond:
            self.closed = True
