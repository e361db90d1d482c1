"""Progress: which offsets may be recorded, and recording them, built once per consumer.

:class:`Progress` joins the three parts every mode shares: the one
:class:`SettlementTracker`, the one ``offsets.OffsetCommitter`` (writes start at most 10
times a second and take at most ~5 % of a core, however many partitions) and the store it
writes to. Keys are ``(topic, partition)`` throughout; one-topic stores (an
``offset_store``'s ``{partition: last}``, kafka-native's offset files of each topic) are
seen through :class:`TopicStores`.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, cast

from .. import offsets
from .._lifecycle import check_process
from ..errors import ClosedError
from ..offsets import FileOffsetStore
from ._batch import Batch
from ._tracker import Key, SettlementTracker, is_pending

__all__ = ["Key", "Progress", "TopicStores"]

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
        self.pid = os.getpid()  # settling in a forked child raises ClosedError
        self.tracker = SettlementTracker(commit_on_error, logger)
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
        name = getattr(self.store, "name", type(self.store).__name__)
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

    def settle(self, batch: Batch, ok: bool, part: dict[int, int] | None = None,
               by_user: bool = False) -> None:
        """Every Batch settles here (``Batch.commit()``, the delivery thread); the tracker
        hands what became recordable straight to the committer. ``by_user``: the user's
        ``batch.commit()``, which raises ClosedError once nothing can be recorded."""
        check_process(self.pid, f"Consumer of {self.topic!r}", "Consumer")
        if by_user and self.tracker.closed and is_pending(batch):
            raise ClosedError(
                f"batch.commit(): this Consumer of {self.topic!r} is stopped, so this batch's "
                f"offsets {batch.offsets} were not recorded; it is delivered again after a restart")
        record = self.committer.record if self.committer is not None else None
        if self.tracker.settle(batch, ok, part, record)[0] and self.release is not None:
            self.release()  # one more batch may be in flight (the delivery thread's bound)

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
        if isinstance(self.store, TopicStores):
            self.store.close()
        for store in stores:
            close = getattr(store, "close", None)
            if callable(close):
                try:
                    close()
                except Exception:
                    logger.exception("offset_store.close() failed")


class TopicStores:
    """One-topic stores (``{partition: last}``: kafka-native's offset files, an application's
    ``offset_store``) seen as one store with ``(topic, partition)`` keys, the keys of the
    tracker and the committer. The public OffsetStore keeps its one-topic shape; this is
    the only place the keys change."""

    def __init__(self, stores: Mapping[str, Any], owned: bool = False) -> None:
        self.stores = dict(stores)
        self.owned = owned  # made by rdk (files()): close() closes them
        self.name = ", ".join(sorted({type(s).__name__ for s in self.stores.values()}))

    @classmethod
    def files(cls, directory: Any, topics: Sequence[str]) -> TopicStores:
        """kafka-native's offset files of ``topics`` in ``directory``."""
        return cls({t: FileOffsetStore(directory, t) for t in topics}, owned=True)

    def close(self) -> None:
        """Close the stores rdk made (their temp files go); an application's store is
        closed by its owner."""
        if self.owned:
            for store in self.stores.values():
                store.close()

    def read(self, keys: Sequence[Key]) -> dict[Key, int]:
        out: dict[Key, int] = {}
        for t, store in self.stores.items():
            ps = [p for kt, p in keys if kt == t]
            if not ps:
                continue
            got = store.read(ps)
            if not isinstance(got, Mapping):
                raise TypeError(f"offset_store.read() of {type(store).__name__} must return a "
                                f"dict {{partition: last processed offset}}, got {type(got).__name__}")
            out.update({(t, p): v for p, v in got.items()})
        return out

    def commit(self, offsets: Mapping[Key, int]) -> None:
        by_topic: dict[str, dict[int, int]] = {}
        for (t, p), v in offsets.items():
            by_topic.setdefault(t, {})[p] = v
        for t, values in by_topic.items():
            self.stores[t].commit(values)
