"""Progress: which offsets may be recorded, and recording them, built once per consumer.

:class:`Progress` joins the three parts every mode shares: the settlement trackers (one
:class:`SettlementTracker` per topic, :class:`TopicTrackers`), the one
``offsets.OffsetCommitter`` (writes start at most 10 times a second and take at most ~5 %
of a core, however many partitions) and the store it writes to. Keys are
``(topic, partition)`` throughout; a one-topic ``offset_store`` (``{partition: last}``) is
seen through :class:`TopicKeyedStore`, kafka-native's offset files of any number of
topics through :class:`TopicFileStores`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, cast

from .. import offsets
from ..errors import ClosedError
from ..offsets import FileOffsetStore
from ._batch import Batch
from ._tracker import SettlementTracker, is_pending

__all__ = ["Key", "Progress", "TopicFileStores", "TopicKeyedStore", "TopicTrackers"]

Key = tuple[str, int]  # (topic, partition)

OFFSET_WRITE_INTERVAL = 0.1   # offset writes start at most 10 times a second (they coalesce)
OFFSET_WRITE_CPU_SHARE = 0.05  # ...and take at most ~5 % of a core (thousands of partitions)
_INT64_MAX = 2**63 - 1


class Progress:
    """Trackers, committer and store of one consumer (see the module docstring).

    ``store`` may be set after construction (group mode's default store needs the client);
    :meth:`open` then builds the committer. ``release`` is called when a settlement frees an
    in-flight slot (the delivery thread's bound).
    """

    def __init__(self, topic: str, commit_on_error: bool,
                 logger: logging.Logger | logging.LoggerAdapter) -> None:
        self.topic = topic
        self.logger = logger
        self.tracker = TopicTrackers(commit_on_error, logger)
        self.store: Any = None
        self.committer: offsets.OffsetCommitter | None = None
        self.release: Callable[[], None] | None = None

    def open(self, store: Any) -> None:
        """Record to ``store`` (keys (topic, partition)) from now on."""
        self.store = store
        self.committer = offsets.OffsetCommitter(
            store, cast(logging.Logger, self.logger), name=f"rdk-offsets-{self.topic}",
            min_interval=OFFSET_WRITE_INTERVAL, max_cpu_share=OFFSET_WRITE_CPU_SHARE)

    def starts(self, keys: Sequence[Key]) -> tuple[dict[Key, int], dict[str, list[int]]]:
        """({key: next offset} from the stored progress, {topic: [partitions without any]})."""
        stored = self.store.read(keys) if keys else {}
        name = type(getattr(self.store, "store", self.store)).__name__
        starts: dict[Key, int] = {}
        fresh: dict[str, list[int]] = {}
        for topic, partition in keys:
            last = stored.get((topic, partition))
            if last is None:
                fresh.setdefault(topic, []).append(partition)
                continue
            if not isinstance(last, int) or isinstance(last, bool) or not -1 <= last < _INT64_MAX:
                raise ValueError(f"offset_store.read() of {name} gave {last!r} for {topic} "
                                 f"partition {partition}; expected the last processed offset, "
                                 f"an int in -1..{_INT64_MAX - 1}")
            starts[(topic, partition)] = last + 1
        return starts, fresh

    def settle(self, batch: Batch, ok: bool, part: dict[int, int] | None, by_user: bool) -> None:
        """A batch is done (``ok``: processed; ``part``: only up to these offsets, see
        SettlementTracker.settle): record what became recordable. ``by_user``: the user's
        ``batch.commit()``, which raises ClosedError once nothing can be recorded."""
        tracker = self.tracker
        if by_user and tracker.closed and is_pending(batch):
            raise ClosedError(
                f"batch.commit(): this Consumer of {self.topic!r} is stopped, so this batch's "
                f"offsets {batch.offsets} were not recorded; it is delivered again after a restart")
        committer = self.committer
        record_to: Callable[[dict[int, int]], None] | None = None
        if committer is not None:
            topic, record = batch.topic, cast(Callable[[dict[Key, int]], None], committer.record)

            def record_to(last: dict[int, int]) -> None:
                record({(topic, p): offset for p, offset in last.items()})
        # recorded inside the tracker's lock: a revoke (or stop) that waited for this batch
        # must find its offsets in the committer, else it flushes without them and a late
        # record is dropped as "no longer assigned" (the new owner reads them again)
        was_pending, _record = tracker.settle(batch, ok, part, record_to)
        if was_pending and self.release is not None:
            self.release()

    def abandon(self, batch: Batch) -> None:
        """A batch whose processing never ended: never recorded (see SettlementTracker)."""
        if self.tracker.abandon(batch) and self.release is not None:
            self.release()

    def wait_settled(self, until: float, keys: Iterable[Key] | None = None,
                     while_waiting: Callable[[], bool] | None = None) -> bool:
        """Wait (until monotonic ``until``) for the in-flight batches (of ``keys``, or all)
        to settle; ``while_waiting()`` runs between checks and returning True gives up."""
        keys = list(keys) if keys is not None else None
        tracker = self.tracker
        while True:
            step = max(0.0, min(0.1, until - time.monotonic()))
            done = (tracker.wait_settled(step) if keys is None
                    else tracker.wait_partitions_settled(keys, step))
            if done:
                return True
            if time.monotonic() >= until or (while_waiting is not None and while_waiting()):
                return False

    def flush(self, until: float) -> bool:
        """Store what was recorded, by monotonic ``until``; False (logged) if not."""
        committer = self.committer
        if committer is not None and not committer.flush(max(0.0, until - time.monotonic())):
            self.logger.warning("consumer of %s: offsets %s not committed in time",
                                self.topic, committer.pending)
            return False
        return True

    def close(self, until: float) -> str | None:
        """No more settlements; store what was recorded by ``until``. The failure, if any."""
        self.tracker.close()
        committer = self.committer
        if committer is not None and not committer.close(max(0.0, until - time.monotonic())):
            return f"offsets {committer.pending} were not stored: {committer.last_error}"
        return None

    def free(self, logger: logging.Logger | logging.LoggerAdapter, *stores: Any) -> None:
        """Stop the committer at once and close ``stores`` that have ``close()``."""
        if self.committer is not None:
            self.committer.close(0)
        for store in stores:
            close = getattr(store, "close", None)
            if callable(close):
                try:
                    close()
                except Exception:
                    logger.exception("offset_store.close() failed")


class TopicTrackers:
    """One :class:`SettlementTracker` per topic, behind the tracker's interface (a batch
    holds one topic's messages, so each batch goes to one of them)."""

    def __init__(self, commit_on_error: bool, logger: logging.Logger | logging.LoggerAdapter) -> None:
        self.commit_on_error = commit_on_error
        self.logger = logger
        self._by_topic: dict[str, SettlementTracker] = {}
        self._lock = threading.Lock()
        self.closed = False

    def of(self, topic: str) -> SettlementTracker:
        tracker = self._by_topic.get(topic)
        if tracker is None:
            with self._lock:
                tracker = self._by_topic.get(topic)
                if tracker is None:
                    tracker = SettlementTracker(self.commit_on_error, self.logger, topic)
                    if self.closed:
                        tracker.close()
                    self._by_topic = {**self._by_topic, topic: tracker}
        return tracker

    def add(self, batch: Batch) -> None:
        self.of(batch.topic).add(batch)

    def settle(self, batch: Batch, ok: bool, part: dict[int, int] | None = None,
               record_to: Callable[[dict[int, int]], None] | None = None,
               ) -> tuple[bool, dict[int, int]]:
        return self.of(batch.topic).settle(batch, ok, part, record_to)

    def abandon(self, batch: Batch) -> bool:
        return self.of(batch.topic).abandon(batch)

    @property
    def unsettled(self) -> int:
        return sum(t.unsettled for t in self._by_topic.values())

    def wait_settled(self, timeout: float) -> bool:
        until = time.monotonic() + timeout
        return all(t.wait_settled(until - time.monotonic()) for t in self._by_topic.values())

    def wait_partitions_settled(self, keys: Iterable[Key], timeout: float) -> bool:
        until = time.monotonic() + timeout
        by_topic: dict[str, list[int]] = {}
        for t, p in keys:
            by_topic.setdefault(t, []).append(p)
        return all(self.of(t).wait_partitions_settled(ps, until - time.monotonic())
                   for t, ps in by_topic.items())

    def close(self) -> None:
        with self._lock:
            self.closed = True
            trackers = list(self._by_topic.values())
        for t in trackers:
            t.close()


class TopicKeyedStore:
    """A one-topic OffsetStore (``{partition: last}``) seen with (topic, partition) keys."""

    def __init__(self, store: Any, topic: str) -> None:
        self.store, self.topic = store, topic

    def read(self, keys: Sequence[Key]) -> dict[Key, int]:
        got = self.store.read([p for _t, p in keys])
        if not isinstance(got, Mapping):
            raise TypeError(f"offset_store.read() of {type(self.store).__name__} must return a "
                            f"dict {{partition: last processed offset}}, got {type(got).__name__}")
        return {(self.topic, p): v for p, v in got.items()}

    def commit(self, offsets: Mapping[Key, int]) -> None:
        self.store.commit({p: v for (_t, p), v in offsets.items()})


class TopicFileStores:
    """kafka-native's offset files of several topics, with (topic, partition) keys."""

    def __init__(self, directory: Any, topics: Sequence[str]) -> None:
        self.stores = {t: FileOffsetStore(directory, t) for t in topics}

    def read(self, keys: Sequence[Key]) -> dict[Key, int]:
        out: dict[Key, int] = {}
        for t, store in self.stores.items():
            ps = [p for kt, p in keys if kt == t]
            if ps:
                out.update({(t, p): v for p, v in store.read(ps).items()})
        return out

    @property
    def flushes(self) -> int:
        """Offset-file writes (summed over the topics' FileOffsetStores, for benchmarks)."""
        return sum(s.flushes for s in self.stores.values())

    @property
    def files_written(self) -> int:
        """Offset files written (summed over topics)."""
        return sum(s.files_written for s in self.stores.values())

    @property
    def sync_calls(self) -> int:
        """fsync/syncfs calls (summed over topics)."""
        return sum(s.sync_calls for s in self.stores.values())

    def commit(self, offsets: Mapping[Key, int]) -> None:
        by_topic: dict[str, dict[int, int]] = {}
        for (t, p), v in offsets.items():
            by_topic.setdefault(t, {})[p] = v
        for t, values in by_topic.items():
            self.stores[t].commit(values)
