"""One consumer's state: built once by the Consumer, handed to every part that reads or changes it.

aiokafka's ``SubscriptionState`` is the model (made once, handed to the fetcher and the
coordinator); here the parts are the fetch pipeline, the delivery thread, the assignment
strategy with its group member, the stats reporter and the thread set. They share this
object instead of calling back into the Consumer. Keys are ``(topic, partition)`` from the
fetcher down to the offset files:

- ``stopping`` / ``running`` (clear while paused): the events every thread waits on;
- ``assignment``: the (topic, partition)s read now (the worker slot's, or the group's,
  changed by the group member on its thread) and ``partition_counts`` per topic;
- ``positions``: the next offset of each (topic, partition), advanced in C as batches are
  converted, set by an assignment or a seek, read by the beyond-end rule and the stats;
  ``fetched``/``handed``: messages per (topic, partition) fetched and handed out;
- ``progress``: the one settlement tracker, committer and store; ``progress.settle`` is
  what every Batch settles through (see docs/design.md, "A message's path");
- ``fail(err)``: the error sink (the one hook back to the owner, whose lifecycle stops);
  ``client_error(err)`` sorts librdkafka's error events into logged or failing.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from .._binding import fetch as _fetch
from ..errors import KafkaError
from ._config import stops_consumer
from ._progress import Key, Progress

if TYPE_CHECKING:
    from ._config import ConsumerConfig

__all__ = ["ConsumerState", "Positions"]


class Positions:
    """The next offset of each (topic, partition), -1 where unknown: one ``int64_t[]`` per
    topic, which the C batch helper advances past each converted batch. An array grows by
    replacement, so a reader sees the old array or the new one, whole."""

    def __init__(self) -> None:
        self._arrays: dict[str, tuple[Any, int]] = {}

    def array(self, topic: str, partition: int = 0) -> tuple[Any, int]:
        """``topic``'s (int64_t[] of next offsets, its length), grown to hold ``partition``."""
        arr, n = self._arrays.get(topic, (None, 0))
        if partition < n:
            return arr, n
        size = max(partition + 1, 2 * n)
        grown = _fetch.new_positions(size, arr, n)
        self._arrays[topic] = (grown, size)  # one assignment: readers see old or new whole
        return grown, size

    def set(self, key: Key, offset: int) -> None:
        """Set ``key``'s next offset (a negative, logical offset: unknown, -1)."""
        arr, _ = self.array(*key)
        arr[key[1]] = offset if offset >= 0 else -1

    def get(self, keys: Iterable[Key]) -> dict[Key, int]:
        """The next offset of each key (-1: unknown), read without growing anything."""
        out = {}
        arrays = self._arrays
        for t, p in keys:
            arr, n = arrays.get(t, (None, 0))
            out[(t, p)] = int(arr[p]) if p < n else -1
        return out


class ConsumerState:
    """What one consumer's parts share (see the module docstring). Owned by the Consumer."""

    def __init__(self, config: ConsumerConfig, stopping: threading.Event,
                 fail: Callable[[KafkaError], None]) -> None:
        self.name = config.topic  # the topic(s) or pattern: for logs and thread names
        self.logger: logging.Logger | logging.LoggerAdapter = config.logger
        self.stopping = stopping
        self.running = threading.Event()
        self.running.set()
        self.progress = Progress(config.topic, config.commit_on_error, config.logger)
        self.positions = Positions()
        self.fetched: dict[Key, int] = {}   # by the fetch thread
        self.handed: dict[Key, int] = {}    # by the consuming thread
        self.partition_counts: dict[str, int] = {}
        # callback mode, once started: DeliveryThread.watch_loop (gives up awaitables whose
        # loop cannot run them)
        self.watch_loop: Callable[[], Any] | None = None
        self._assigned: dict[Key, None] = {}  # (ordered: a slot's keys in the topics' order)
        self._lock = threading.Lock()
        self._fail = fail
        self._pattern = config.pattern is not None

    # ---- the assignment ----------------------------------------------------------------
    def assignment(self) -> list[Key]:
        """The (topic, partition)s read now, in the order they were assigned."""
        with self._lock:
            return list(self._assigned)

    def owned(self) -> set[Key]:
        """The (topic, partition)s read now (a copy)."""
        with self._lock:
            return set(self._assigned)

    def assign(self, keys: Iterable[Key]) -> None:
        with self._lock:
            self._assigned.update(dict.fromkeys(keys))

    def unassign(self, keys: Iterable[Key]) -> None:
        with self._lock:
            for key in keys:
                self._assigned.pop(key, None)

    def buffered(self, keys: Iterable[Key]) -> dict[Key, int]:
        """Per (topic, partition), messages fetched but not yet handed out."""
        fetched, handed = self.fetched, self.handed
        return {k: fetched.get(k, 0) - handed.get(k, 0) for k in keys}

    # ---- errors and waits --------------------------------------------------------------
    def fail(self, err: KafkaError) -> None:
        """An error that stops the consumer (fetching, the group, a callback's end)."""
        self._fail(err)

    def client_error(self, err: KafkaError) -> None:
        """librdkafka's error event: logged, or (fatal, refused) the consumer fails."""
        if stops_consumer(err, self.logger, self.name, pattern=self._pattern):
            self.fail(err)

    def give_up_waiting(self) -> bool:
        """Between a revoke's waits for in-flight batches: True once stopping; otherwise
        awaitables on a loop that cannot run them are given up (DeliveryThread.watch_loop)."""
        if self.stopping.is_set():
            return True
        if self.watch_loop is not None:
            self.watch_loop()
        return False
