"""Figures derived from librdkafka's statistics JSON (the only module that reads its fields).

Consumer figures, as kafka-native's stats callback gave them, for this instance's
partitions only:

- ``waiting_kafka``: high watermark on the broker minus the next offset to fetch, floored
  at 0 (messages still on the broker). The high watermark in librdkafka's stats comes from
  Fetch responses, which is right on Tansu too.
- ``waiting_local``: messages fetched but not yet handed to ``receive_callback``:
  librdkafka's fetch queue (``fetchq_cnt``) plus what rdk itself buffers. rdk's partitions
  share one queue, whose length each partition reports: it is counted once and split by
  what each partition has fetched beyond what librdkafka handed out.
- ``kafka_log_size``: high minus low watermark (messages the broker keeps).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

K = TypeVar("K")

__all__ = ["ConsumerStats", "PartitionStats", "send_queue_length"]


@dataclass(frozen=True)
class PartitionStats:
    """One owned partition's figures (offsets are -1 when librdkafka does not know them yet)."""

    partition: int
    """The partition number."""
    waiting_kafka: int
    """Messages still on the broker: high watermark minus the next offset to fetch, >= 0."""
    waiting_local: int
    """Messages fetched but not handed to ``receive_callback`` yet: ``queued + buffered``."""
    kafka_log_size: int
    """Messages the broker keeps: high minus low watermark."""
    hi_offset: int = -1
    """The high watermark (librdkafka's, from Fetch responses)."""
    lo_offset: int = -1
    """The low watermark."""
    next_offset: int = -1
    """The next offset to fetch."""
    app_offset: int = -1
    """The offset after the last message librdkafka handed to rdk."""
    queued: int = 0
    """This partition's share of librdkafka's fetch queue."""
    buffered: int = 0
    """Messages rdk itself holds that were not handed to the callback yet."""
    fetchq_cnt: int = 0
    """librdkafka's ``fetchq_cnt`` as reported (a shared queue's whole length)."""
    fetch_state: str = ""
    """librdkafka's ``fetch_state`` (e.g. ``"active"``); empty when unknown."""
    topic: str = ""
    """The topic."""


@dataclass(frozen=True)
class ConsumerStats:
    """What a Consumer's ``stats_callback(info)`` receives: sums over every partition this
    instance owns (or was assigned), of every topic; ``partitions`` is the first (or only)
    topic's, ``topics`` maps each topic to its partitions'."""

    waiting_kafka: int
    """Sum of the partitions' ``waiting_kafka``: messages still on the broker."""
    waiting_local: int
    """Sum of the partitions' ``waiting_local``: fetched, not yet handed to the callback."""
    kafka_log_size: int
    """Sum of the partitions' ``kafka_log_size``: messages the broker keeps."""
    partitions: dict[int, PartitionStats] = field(default_factory=dict)
    """``{partition: PartitionStats}`` of the first (or only) topic."""
    rdkafka_stats: dict = field(default_factory=dict, repr=False)
    """librdkafka's statistics JSON, parsed into a dict."""
    topics: dict[str, dict[int, PartitionStats]] = field(default_factory=dict)
    """``{topic: {partition: PartitionStats}}`` of every topic."""


def _int(d: Mapping[str, Any], key: str, default: int) -> int:
    v = d.get(key, default)
    try:
        return int(v)
    except (TypeError, ValueError, OverflowError):  # e.g. Infinity from json.loads
        return default


def partition_entry(stats: Mapping[str, Any], topic: str, partition: int) -> Mapping[str, Any]:
    """librdkafka's stats object for one topic-partition ({} when absent)."""
    topics = stats.get("topics") or {}
    t = topics.get(topic) or {}
    return (t.get("partitions") or {}).get(str(partition)) or {}


def consumer_stats(
    stats: Mapping[str, Any],
    topic: str,
    partitions: Iterable[int],
    *,
    buffered: Mapping[int, int] | None = None,
    next_offsets: Mapping[int, int] | None = None,
    shared_queue: bool = False,
) -> ConsumerStats:
    """Derive kafka-native's consumer figures for ``partitions`` of ``topic``.

    ``buffered``: messages rdk holds per partition that were not handed to the callback yet.
    ``next_offsets``: rdk's own next offset per partition, used when librdkafka's
    ``next_offset`` is not known yet (before the first fetch).
    ``shared_queue``: the partitions are forwarded to one queue (rdk's consumer), so each
    reports that queue's length as its ``fetchq_cnt``; the length is then counted once and
    split between the partitions by what each has fetched beyond what it handed out
    (``next_offset - app_offset``).

    Args:
        stats: librdkafka's statistics JSON, parsed.
        topic: The topic.
        partitions: The partitions to report.
        buffered: ``{partition: messages rdk holds}``. None: none.
        next_offsets: ``{partition: rdk's next offset}``. None: none known.
        shared_queue: Whether the partitions share one fetch queue.

    Returns:
        The [rdk.ConsumerStats][] of those partitions.
    """
    buffered = buffered or {}
    next_offsets = next_offsets or {}
    return topics_stats(
        stats, [(topic, p) for p in partitions],
        buffered={(topic, p): n for p, n in buffered.items()},
        next_offsets={(topic, p): n for p, n in next_offsets.items()},
        shared_queue=shared_queue, first_topic=topic)


def topics_stats(
    stats: Mapping[str, Any],
    keys: Iterable[tuple[str, int]],
    *,
    buffered: Mapping[tuple[str, int], int] | None = None,
    next_offsets: Mapping[tuple[str, int], int] | None = None,
    shared_queue: bool = False,
    first_topic: str | None = None,
) -> ConsumerStats:
    """`consumer_stats` over (topic, partition) ``keys`` of any
    number of topics: the sums cover them all, ``partitions`` holds ``first_topic``'s and
    ``topics`` every topic's (a shared queue is counted once across all of them).

    Args:
        stats: librdkafka's statistics JSON, parsed.
        keys: The ``(topic, partition)`` pairs to report.
        buffered: ``{(topic, partition): messages rdk holds}``. None: none.
        next_offsets: ``{(topic, partition): rdk's next offset}``. None: none known.
        shared_queue: Whether the partitions share one fetch queue.
        first_topic: The topic whose partitions go in ``partitions``. None: the first key's.

    Returns:
        The [rdk.ConsumerStats][] of those partitions.
    """
    buffered = buffered or {}
    next_offsets = next_offsets or {}
    rows = [_offsets_row(stats, t, p, next_offsets) for t, p in keys]
    queued = {r.key: r.fetchq for r in rows}
    if shared_queue and rows:
        queued = _split(max(r.fetchq for r in rows), {r.key: r.ahead for r in rows})
    by_topic: dict[str, dict[int, PartitionStats]] = {}
    for row in rows:
        t, p = row.key
        by_topic.setdefault(t, {})[p] = _partition_stats(row, queued[row.key], buffered, shared_queue)
    every = [s for per in by_topic.values() for s in per.values()]
    if first_topic is None:
        first_topic = rows[0].key[0] if rows else ""
    return ConsumerStats(
        waiting_kafka=sum(s.waiting_kafka for s in every),
        waiting_local=sum(s.waiting_local for s in every),
        kafka_log_size=sum(s.kafka_log_size for s in every),
        partitions=by_topic.get(first_topic, {}),
        rdkafka_stats=dict(stats),
        topics=by_topic,
    )


@dataclass(frozen=True)
class _OffsetsRow:
    """One partition's offsets as librdkafka's stats give them (-1: unknown)."""

    key: tuple[str, int]
    entry: Mapping[str, Any]
    hi: int
    lo: int
    nxt: int
    app: int
    fetchq: int
    ahead: int  # fetched beyond what librdkafka handed out


def _offsets_row(stats: Mapping[str, Any], t: str, p: int,
                 next_offsets: Mapping[tuple[str, int], int]) -> _OffsetsRow:
    e = partition_entry(stats, t, p)
    hi = _int(e, "hi_offset", -1)
    lo = _int(e, "lo_offset", -1)
    nxt = _int(e, "next_offset", -1)
    if nxt < 0:
        nxt = next_offsets.get((t, p), -1)
    if nxt < 0 and lo >= 0:
        nxt = lo
    app = _int(e, "app_offset", -1)
    fetchq = max(0, _int(e, "fetchq_cnt", 0))
    ahead = max(0, nxt - app) if nxt >= 0 and app >= 0 else 0
    return _OffsetsRow((t, p), e, hi, lo, nxt, app, fetchq, ahead)


def _partition_stats(row: _OffsetsRow, q: int, buffered: Mapping[tuple[str, int], int],
                     shared_queue: bool) -> PartitionStats:
    """The figures of ``row``'s partition, ``q`` of the fetch queue counted as its own."""
    (t, p), e, hi, lo, nxt, app = row.key, row.entry, row.hi, row.lo, row.nxt, row.app
    mine = max(0, int(buffered.get((t, p), 0)))
    if shared_queue and app >= 0:
        # librdkafka's next_offset of a paused partition can stay where fetching was,
        # though pause() dropped what was queued: count from what it handed out
        nxt = app + q
    return PartitionStats(
        partition=p,
        waiting_kafka=max(0, hi - nxt) if hi >= 0 and nxt >= 0 else 0,
        waiting_local=q + mine,
        kafka_log_size=max(0, hi - max(lo, 0)) if hi >= 0 else 0,
        hi_offset=hi,
        lo_offset=lo,
        next_offset=nxt,
        app_offset=app,
        queued=q,
        buffered=mine,
        fetchq_cnt=row.fetchq,
        fetch_state=str(e.get("fetch_state", "")),
        topic=t,
    )


def _split(total: int, weights: Mapping[K, int]) -> dict[K, int]:
    """``total`` split in proportion to ``weights`` (evenly if they are all 0), summing exactly."""
    keys = list(weights)
    w = sum(weights.values())
    shares = ({k: total // len(keys) for k in keys} if w == 0
              else {k: total * weights[k] // w for k in keys})
    rest = total - sum(shares.values())
    for k in sorted(keys, key=lambda k: -weights[k])[:rest]:
        shares[k] += 1
    return shares


def fetch_queue_count(stats: Mapping[str, Any], topic: str, partitions: Iterable[int]) -> int:
    """Messages in librdkafka's fetch queues of these partitions, each queue counted once
    (partitions forwarded to one shared queue all report its length)."""
    return max((max(0, _int(partition_entry(stats, topic, p), "fetchq_cnt", 0))
                for p in partitions), default=0)


def send_queue_length(stats: Mapping[str, Any]) -> int:
    """A producer's messages awaiting transmission or acknowledgement (``msg_cnt``).

    Args:
        stats: A producer's librdkafka statistics JSON, parsed.

    Returns:
        ``msg_cnt``, at least 0 (0 when absent).
    """
    return max(0, _int(stats, "msg_cnt", 0))
