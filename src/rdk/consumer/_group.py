"""Group mode: partitions assigned by Kafka's group coordinator, progress committed to it.

librdkafka's rebalance events (RD_KAFKA_EVENT_REBALANCE) arrive on the consumer queue,
which a thread of ours (:class:`GroupMember`) serves; messages never go there, because
each assigned partition's queue is forwarded to the fetch pipeline's own queue first
(:class:`rdk._binding.fetch.GroupFetcher`). So librdkafka's threads never call Python, and the
rebalance is handled where rdk can wait:

- **assign**: read the stored progress of the new partitions, fence off anything fetched
  of them before, forward their queues, assign them at the stored position (else at
  ``start_offset``), pause them if the consumer is paused, then ``on_assign(partitions)``;
- **revoke**: stop handing out their batches at once (a fence drops what is fetched and
  not yet handed out), wait up to :data:`REVOKE_TIMEOUT` for their in-flight batches to
  settle, commit what settled, ``on_revoke(partitions)``, then give them up. Lost
  partitions (the member was expelled) are given up without waiting or committing: their
  new owner may already commit.

The protocol is librdkafka's: ``cooperative-sticky`` by default (incremental
assign/unassign; a rebalance moves only the partitions that change owner), an eager
assignor if configured (assign/unassign everything), or KIP-848's ``group.protocol=consumer``
(incremental too).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from .._binding import ERROR_CODES, Client
from .._binding import group as _group
from .._binding.group import GroupEvent
from ..errors import KafkaError
from ._progress import Key

if TYPE_CHECKING:
    from .._binding.fetch import GroupFetcher
    from ._pipeline import FetchPipeline
    from ._state import ConsumerState

__all__ = ["REVOKE_TIMEOUT", "GroupHost", "GroupMember", "GroupOffsetStore", "Key"]

#: seconds a revoke waits at most for the revoked partitions' in-flight batches to settle
#: (and less if ``max.poll.interval.ms``, the group's rebalance timeout, is under twice that)
REVOKE_TIMEOUT = 30.0
"""Seconds a revoke waits at most for the revoked partitions' in-flight batches to settle
(less when ``max.poll.interval.ms``, the group's rebalance timeout, is under twice that)."""
_COMMIT_TIMEOUT = 10.0
_POLL_MS = 100



class GroupOffsetStore:
    """Progress committed to the consumer's own group through its handle (the default in
    group mode): ``read([(topic, partition)])`` and ``commit({(topic, partition): last})``
    in kafka-native's last-processed terms (Kafka stores the next offset). Only partitions
    ``owned()`` are committed: a revoked partition's late settlements never overwrite its
    new owner's progress."""

    def __init__(self, client: Client, group_id: str, owned: Callable[[], set[Key]],
                 logger: logging.Logger | logging.LoggerAdapter) -> None:
        self.client = client
        self.group_id = group_id
        self.owned = owned
        self.logger = logger

    def read(self, keys: Sequence[Key]) -> dict[Key, int]:
        if not keys:
            return {}
        context = f"committed offsets of group {self.group_id!r}"
        stored = _group.committed(self.client, keys, int(_COMMIT_TIMEOUT * 1000), context)
        return {k: v - 1 for k, v in stored.items() if v >= 0}

    def commit(self, offsets: Mapping[Key, int]) -> None:
        owned = self.owned()
        mine = {k: v for k, v in offsets.items() if k in owned}
        if len(mine) < len(offsets):
            self.logger.debug("group %s: not committing %s (no longer assigned)", self.group_id,
                              sorted(set(offsets) - set(mine)))
        if not mine:
            return
        _group.commit(self.client, {k: last + 1 for k, last in mine.items()},
                      f"commit offsets for group {self.group_id!r}")

    def __repr__(self) -> str:
        return f"GroupOffsetStore({self.group_id!r})"


class GroupHost(Protocol):
    """What the :class:`GroupMember` asks of its group assignment (on the group thread);
    everything else it reads and changes in the consumer's :class:`ConsumerState`."""

    topic: str
    on_assign: Callable[[list[Key]], Any] | None
    on_revoke: Callable[[list[Key]], Any] | None

    def starts_of(self, keys: list[Key]) -> dict[Key, int]: ...  # next offsets of new ones
    def assignment_changed(self) -> None: ...


class GroupMember:
    """Subscribes and serves the group's events on thread ``rdk-group-<topic>``.

    ``host`` is the consumer's group assignment (see :class:`GroupHost`); ``state`` the
    consumer's state, whose assignment and positions an (un)assign changes.
    """

    def __init__(self, host: GroupHost, state: ConsumerState, client: Client,
                 pipeline: FetchPipeline, fetcher: GroupFetcher, subscription: Sequence[str],
                 name: str, rebalance_timeout: float) -> None:
        self.host = host
        self.state = state
        # the group waits this long for members to rejoin: the revoke must end well before
        self.revoke_timeout = min(REVOKE_TIMEOUT, rebalance_timeout / 2)
        self.client = client
        self.pipeline = pipeline
        self.fetcher = fetcher
        self.subscription = list(subscription)
        self.logger = state.logger
        self.closing = False
        self.queue = client.consumer_queue()
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, name=name, daemon=True)

    # ---- lifecycle ---------------------------------------------------------------------
    def start(self) -> None:
        """Subscribe and start serving rebalances."""
        _group.subscribe(self.client, self.subscription)
        self.thread.start()

    @property
    def cooperative(self) -> bool:
        return _group.is_cooperative(self.client)

    def close(self, until: float) -> bool:
        """Leave the group (revoking what is assigned, without waiting: the consumer has
        stopped and stored its offsets); serve events until closed or ``until`` (monotonic).
        Returns whether the group was left cleanly."""
        self.closing = True
        ok = False
        if self.thread.is_alive():
            try:
                _group.close_queue(self.client, self.queue)
                while time.monotonic() < until:
                    if _group.closed(self.client):
                        ok = True
                        break
                    time.sleep(0.02)  # the group thread serves the close's events meanwhile
            except KafkaError as e:
                self.logger.warning("consumer of %s: leaving the group: %s", self.host.topic, e)
        self._stop.set()
        if self.thread is not threading.current_thread():
            self.thread.join(max(0.0, until - time.monotonic()) + 0.5)
        return ok

    # ---- the group thread --------------------------------------------------------------
    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                _group.serve_event(self.queue, _POLL_MS, self._dispatch)
            except BaseException as e:  # a bug or a failed (un)assign: say so and stop
                self.logger.exception("consumer of %s: group thread failed", self.host.topic)
                self.state.fail(e if isinstance(e, KafkaError) else KafkaError(
                    ERROR_CODES["_FAIL"], f"group thread failed: {e!r}",
                    context=f"group of {self.host.topic}"))

    def _dispatch(self, event: GroupEvent) -> None:
        if event.kind == "assign":
            self._assign(event)
        elif event.kind == "revoke":
            self._revoke(event.keys)
        elif event.error is not None:
            self.state.client_error(event.error)

    def _assign(self, event: GroupEvent) -> None:
        keys = event.keys
        host, state, pipeline = self.host, self.state, self.pipeline
        if self.closing:  # leaving: take them as they are, they are revoked next
            _group.assign(self.client, event.partitions, self.cooperative)
            return
        starts = host.starts_of(keys)
        pipeline.fence(keys, keep_new=True)
        for key in keys:
            self.fetcher.add(*key)
            state.positions.set(key, starts[key])
        state.assign(keys)
        _group.assign(self.client, [(t, p, starts[(t, p)]) for t, p in keys], self.cooperative)
        if not state.running.is_set():  # pause() holds across rebalances
            _group.pause(self.client, keys, "pause newly assigned")
        host.assignment_changed()
        self.logger.info("consumer of %s: assigned %s, starting at %s", host.topic, keys,
                         {k: v for k, v in starts.items()})
        self._user("on_assign", keys)

    def _revoke(self, keys: list[Key]) -> None:
        host, state = self.host, self.state
        lost = _group.assignment_lost(self.client)
        self.pipeline.fence(keys, keep_new=False)  # nothing more of them is handed out
        if lost:
            self.logger.warning("consumer of %s: partitions %s were lost (this member left "
                                "the group's generation); not committing them", host.topic, keys)
        elif not self.closing and not state.stopping.is_set():
            # (once stopping, stop() waits for the batches and commits, bounded by its
            # timeout; blocking here would hold up the rebalance those commits need)
            until = time.monotonic() + self.revoke_timeout
            if not state.progress.wait_settled(until, keys, state.give_up_waiting):
                self.logger.warning("consumer of %s: batches of revoked partitions %s did not "
                                    "settle within %g s; giving them up without their offsets",
                                    host.topic, keys, self.revoke_timeout)
            state.progress.flush(until)
        self._user("on_revoke", keys)
        state.unassign(keys)
        host.assignment_changed()
        _group.unassign(self.client, keys, self.cooperative)
        self.logger.info("consumer of %s: revoked %s", host.topic, keys)

    def _user(self, name: str, keys: list[Key]) -> None:
        fn = getattr(self.host, name)
        if fn is None:
            return
        try:
            fn(sorted(keys))
        except Exception:
            self.logger.exception("consumer of %s: %s raised", self.host.topic, name)
        except BaseException as e:  # it runs on rdk's group thread
            self.logger.error("consumer of %s: %s raised %s; it runs on rdk's group thread, "
                              "so it cannot stop the program: logged", self.host.topic, name,
                              type(e).__name__, exc_info=True)
