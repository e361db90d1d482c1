"""Which partitions a Consumer reads: its worker slot's, or what its group assigns.

Two interchangeable strategies behind one small interface, chosen once when the Consumer
is made (aiokafka's group / no-group coordinators are the model):

- :class:`SlotAssignment`: every topic's partitions split by ``num_workers``/``worker_slot``
  (one topic is a list of one), locked in the offset directory, resumed from the stored
  progress and fetched from ``start()`` on;
- :class:`GroupAssignment`: Kafka's group coordinator assigns them; rebalances are served
  by a :class:`GroupMember` thread.

Both write what they decide into the consumer's :class:`ConsumerState` (the assignment,
partition counts, start positions), which every other part reads. ``open()`` makes the
librdkafka client and the :class:`FetchPipeline` and begins; ``keys()`` is the current
assignment as ``(topic, partition)``; ``seek(key, offset)`` moves a partition's fetch
position behind a fence; ``leave(deadline)`` and ``release()`` end it.
"""

from __future__ import annotations

import logging
import threading
import time
from functools import partial
from typing import Any, cast

from .. import _binding, offsets, slots
from .._binding import group as _group
from .._binding import partitions as _partitions
from .._binding.fetch import Fetcher, GroupFetcher
from ..errors import KafkaError
from ._beyond_end import BeyondEndRule
from ._config import ConsumerConfig
from ._group import GroupMember, GroupOffsetStore
from ._pipeline import FetchPipeline
from ._progress import Key
from ._state import ConsumerState
from ._stats_report import StatsReporter

__all__ = ["METADATA_TIMEOUT", "GroupAssignment", "SlotAssignment"]

METADATA_TIMEOUT = 10.0
"""Seconds ``start()`` waits for the topic's partitions from the broker."""
_WATERMARK_TIMEOUT = 10.0      # start_offset="latest": seconds to learn the high watermarks


class _Assignment:
    """What both strategies share: the client, metadata, "latest" offsets, the pipeline."""

    def __init__(self, config: ConsumerConfig, state: ConsumerState) -> None:
        self.config = config
        self.state = state
        self.progress = state.progress
        self.logger = config.logger
        self.topic = config.topic
        self.client: _binding.Client | None = None
        self.pipeline: FetchPipeline | None = None
        self.stats = StatsReporter(config.stats_callback, state, config.first_topic)

    def threads(self) -> list[threading.Thread]:
        """Threads of this strategy (a callback may run on them)."""
        return []

    def leave(self, deadline: float) -> bool:
        """Give the partitions up by monotonic ``deadline``; whether that went cleanly."""
        return True

    def release(self) -> None:
        """Free what the strategy holds beyond the client (locks)."""

    def keys(self) -> list[Key]:
        return self.state.assignment()

    def set_paused(self, pause: bool) -> None:
        """Pause (or resume) fetching of the assigned partitions in librdkafka."""
        client, pipeline, keys = self.client, self.pipeline, self.keys()
        if client is None or pipeline is None or not keys:
            return
        if pause:
            # between two fetch calls, never during one (see between_fetches)
            with pipeline.between_fetches():
                _group.pause(client, keys)
        else:
            _group.resume(client, keys)

    def seek(self, key: Key, offset: int) -> None:
        """Move ``key``'s fetch position to ``offset`` between two fetch calls, behind a
        fence that drops what was fetched of it before (batches handed out still settle)."""
        pipeline = cast(FetchPipeline, self.pipeline)

        def seek() -> None:
            self.restart(key, offset)
            self.state.positions.set(key, offset)

        pipeline.fence([key], keep_new=True, then=seek)

    def restart(self, key: Key, offset: int) -> None:  # pragma: no cover - each strategy's
        raise NotImplementedError

    def _new_client(self, props: dict[str, Any], extra_events: int = 0) -> _binding.Client:
        cfg = self.config
        self.client = _binding.Client(
            "consumer", props, cfg.topic_props, logger=cast(logging.Logger, self.logger),
            on_stats=self.stats.report if cfg.stats_callback else None,
            on_error=self.state.client_error, extra_events=extra_events, oauth_cb=cfg.oauth_cb)
        return self.client

    def _new_pipeline(self, fetcher: Any) -> FetchPipeline:
        cfg = self.config
        self.pipeline = FetchPipeline(fetcher, self.state, max_messages=cfg.max_messages_per_callback,
                                      decode=cfg.decode is not None)
        return self.pipeline

    def _partition_count(self, client: _binding.Client, topic: str) -> int:
        """The topic's partitions, within METADATA_TIMEOUT; an error naming what was waited for."""
        t0 = time.monotonic()
        try:
            return client.partition_count(topic, METADATA_TIMEOUT)
        except KafkaError as e:
            if _binding.is_auth_failure(e):  # names the broker and librdkafka's reason
                raise KafkaError(e.code, e.description, context="start()") from e
            if e.name == "UNKNOWN_TOPIC_OR_PART":
                raise
            raise KafkaError(
                e.code, f"no metadata for topic {topic!r} from broker {self.config.broker!r} "
                f"after waiting {time.monotonic() - t0:.1f} s (start() waits up to "
                f"{METADATA_TIMEOUT:g} s): {e.description}; is the broker reachable?",
                context="start()") from e

    def _starts(self, keys: list[Key]) -> dict[Key, int]:
        """Next offset of each key: stored progress + 1, else ``start_offset`` (a logical
        offset; "latest" read from the broker, Tansu-proof)."""
        starts, fresh = self.progress.starts(keys)
        for topic, parts in fresh.items():
            for p in parts:
                starts[(topic, p)] = _partitions.OFFSET_BEGINNING
            if self.config.start_offset == "latest":
                starts.update({(topic, p): hi for p, hi in self._latest(topic, parts).items()})
        return starts

    def _latest(self, topic: str, partitions: list[int]) -> dict[int, int]:
        """Explicit "latest" offsets, right on every broker: ListOffsets confirmed by a short
        fetch (Tansu's ListOffsets(latest) is wrong) on a client with partition EOF."""
        cfg = self.config
        fetch_client = _binding.Client(
            "consumer", {"fetch.wait.max.ms": 10, "bootstrap.servers": cfg.broker,
                         "allow.auto.create.topics": False, **cfg.driver_options,
                         "enable.partition.eof": True, "auto.offset.reset": "earliest"},
            oauth_cb=cfg.oauth_cb)
        try:
            marks = _partitions.true_watermarks(cast(_binding.Client, self.client), topic,
                                                partitions, _WATERMARK_TIMEOUT,
                                                fetch_client=fetch_client)
        finally:
            fetch_client.close()
        return {p: hi for p, (_lo, hi) in marks.items()}

    def _rule(self, topic: str, partitions: list[int], restart: Any) -> BeyondEndRule:
        cfg, state = self.config, self.state
        return BeyondEndRule(cast(_binding.Client, self.client), topic, partitions,
                             state.positions, cfg.on_offset_out_of_range, self.logger,
                             fail=state.fail, restart=restart)


class SlotAssignment(_Assignment):
    """Worker-slot mode: each topic's slot partitions, locked, resumed, fetched on one queue."""

    def __init__(self, config: ConsumerConfig, state: ConsumerState) -> None:
        super().__init__(config, state)
        self._locks: list[offsets.PartitionLock] = []

    def open(self) -> FetchPipeline:
        cfg, state = self.config, self.state
        client = self._new_client(cfg.props)
        counts = {t: self._partition_count(client, t) for t in cfg.topics}
        owned = {t: slots.owned_partitions(n, cfg.num_workers, cfg.worker_slot, t)
                 for t, n in counts.items()}
        if cfg.offset_directory is not None:
            for t, ps in owned.items():
                self._locks.append(offsets.lock_partitions(cfg.offset_directory, t, ps))
                offsets.remove_temp_files(cfg.offset_directory, t, ps)
        cfg.bind_user_store()
        self.progress.open(cfg.store)
        keys = [(t, p) for t, ps in owned.items() for p in ps]
        starts = self._starts(keys)
        pipeline = self._new_pipeline(Fetcher(client, None, cfg.max_messages_per_callback))
        state.partition_counts.update(counts)
        for t, n in counts.items():
            state.positions.array(t, n - 1)  # sized once: the C helper never grows it
        for key in keys:
            state.positions.set(key, starts[key])
            pipeline.start_partition(key, starts[key])
        state.assign(keys)
        rules = [self._rule(t, ps, pipeline.restart_partition) for t, ps in owned.items()]
        pipeline.on_idle = partial(_check_all, rules)
        self.logger.info("consumer of %s owns partitions %s (slot %d of %d), starting at %s",
                         self.topic, owned if cfg.multi_topic else [p for _t, p in keys],
                         cfg.worker_slot, cfg.num_workers,
                         _describe_starts(starts, cfg.start_offset))
        return pipeline

    def result(self) -> list[Any]:
        """start()'s return: the partitions, or (topic, partition)s with several topics."""
        keys = self.keys()
        return keys if self.config.multi_topic else [p for _t, p in keys]

    def restart(self, key: Key, offset: int) -> None:
        cast(FetchPipeline, self.pipeline).restart_partition(key, offset)

    def release(self) -> None:
        locks, self._locks = self._locks, []
        for lock in locks:
            lock.release()


class GroupAssignment(_Assignment):
    """Group mode: the coordinator assigns; the :class:`GroupMember` serves rebalances on its
    thread, changing the state's assignment and calling this object's ``GroupHost`` methods."""

    def __init__(self, config: ConsumerConfig, state: ConsumerState) -> None:
        super().__init__(config, state)
        self.on_assign, self.on_revoke = config.on_assign, config.on_revoke
        self.member: GroupMember | None = None
        self._rules: dict[str, BeyondEndRule] = {}

    def open(self) -> FetchPipeline:
        cfg, state = self.config, self.state
        props = cfg.group_props()
        client = self._new_client(props, extra_events=_group.EVENT_REBALANCE)
        # literal topics must exist: fail at once, as slot mode does
        state.partition_counts.update({t: self._partition_count(client, t) for t in cfg.topics})
        fetcher = GroupFetcher(client, cfg.max_messages_per_callback)
        pipeline = self._new_pipeline(fetcher)
        member = self.member = GroupMember(
            self, state, client, pipeline, fetcher, cfg.topics or [cast(str, cfg.pattern)],
            name=f"rdk-group-{self.topic}",
            rebalance_timeout=float(props.get("max.poll.interval.ms", 300_000)) / 1000)
        cfg.bind_user_store()
        self.progress.open(cfg.store if cfg.store is not None else GroupOffsetStore(
            client, cast(str, cfg.group_id), state.owned, self.logger))
        pipeline.on_idle = self._check_rules
        member.start()
        self.logger.info("consumer of %s joins group %r", self.topic, cfg.group_id)
        return pipeline

    def keys(self) -> list[Key]:
        return sorted(self.state.owned())

    def result(self) -> list[Any]:
        return []  # see on_assign

    def restart(self, key: Key, offset: int) -> None:
        topic, partition = key
        _group.seek(cast(_binding.Client, self.client), topic, partition, offset, 10_000)

    def threads(self) -> list[threading.Thread]:
        return [self.member.thread] if self.member is not None else []

    def leave(self, deadline: float) -> bool:
        member = self.member
        return member is None or not member.thread.is_alive() or member.close(deadline)

    def _check_rules(self) -> None:
        for rule in list(self._rules.values()):
            rule.check()

    # ---- the GroupHost protocol (called on the group thread) -----------------------------
    def starts_of(self, keys: list[Key]) -> dict[Key, int]:
        return self._starts(keys)

    def assignment_changed(self) -> None:
        """Point the beyond-end rules at the new assignment (one rule per topic)."""
        by_topic: dict[str, list[int]] = {}
        for t, p in self.keys():
            by_topic.setdefault(t, []).append(p)
        rules = {}
        for t, ps in by_topic.items():
            rule = self._rules.get(t) or self._rule(t, [], self.seek)  # a seek, fenced
            rule.partitions = ps
            rules[t] = rule
        self._rules = rules


def _check_all(rules: list[BeyondEndRule]) -> None:
    for rule in rules:
        rule.check()


def _describe_starts(starts: dict[Key, int], start_offset: str) -> dict[Key, Any]:
    """Where each partition starts, for the log: an offset, or ``start_offset``."""
    return {k: v if v >= 0 else start_offset for k, v in starts.items()}
