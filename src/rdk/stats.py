"""Figures derived from librdkafka's statistics JSON (the only module that reads its fields).

Consumer figures, as kafka-native's stats callback gave them, for this instance's
partitions only:

- ``waiting_kafka``: high watermark on the broker minus the next offset to fetch, floored
  at 0 (messages still on the broker). The high watermark in librdkafka's stats comes from
  Fetch responses, which is right on Tansu too.
- ``waiting_local``: messages fetched but not yet handed to ``receive_callback``:
  librdkafka's fetch queue (``fetchq_cnt``) plus what rdk itself buffers.
- ``kafka_log_size``: high minus low watermark (messages the broker keeps).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ConsumerStats", "PartitionStats", "consumer_stats", "send_queue_length"]


@dataclass(frozen=True)
class PartitionStats:
    """One owned partition's figures (offsets are -1 when librdkafka does not know them yet)."""

    partition: int
    waiting_kafka: int
    waiting_local: int
    kafka_log_size: int
    hi_offset: int = -1
    lo_offset: int = -1
    next_offset: int = -1
    fetchq_cnt: int = 0
    buffered: int = 0
    fetch_state: str = ""


@dataclass(frozen=True)
class ConsumerStats:
    """What a Consumer's ``stats_callback(info)`` receives; sums over this instance's partitions."""

    waiting_kafka: int
    waiting_local: int
    kafka_log_size: int
    partitions: dict[int, PartitionStats] = field(default_factory=dict)
    rdkafka_stats: dict = field(default_factory=dict, repr=False)


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
) -> ConsumerStats:
    """Derive kafka-native's consumer figures for ``partitions`` of ``topic``.

    ``buffered``: messages rdk holds per partition that were not handed to the callback yet.
    ``next_offsets``: rdk's own next offset per partition, used when librdkafka's
    ``next_offset`` is not known yet (before the first fetch).
    """
    buffered = buffered or {}
    next_offsets = next_offsets or {}
    per: dict[int, PartitionStats] = {}
    for p in partitions:
        e = partition_entry(stats, topic, p)
        hi = _int(e, "hi_offset", -1)
        lo = _int(e, "lo_offset", -1)
        nxt = _int(e, "next_offset", -1)
        if nxt < 0:
            nxt = next_offsets.get(p, -1)
        if nxt < 0 and lo >= 0:
            nxt = lo
        fetchq = max(0, _int(e, "fetchq_cnt", 0))
        mine = max(0, int(buffered.get(p, 0)))
        per[p] = PartitionStats(
            partition=p,
            waiting_kafka=max(0, hi - nxt) if hi >= 0 and nxt >= 0 else 0,
            waiting_local=fetchq + mine,
            kafka_log_size=max(0, hi - max(lo, 0)) if hi >= 0 else 0,
            hi_offset=hi,
            lo_offset=lo,
            next_offset=nxt,
            fetchq_cnt=fetchq,
            buffered=mine,
            fetch_state=str(e.get("fetch_state", "")),
        )
    return ConsumerStats(
        waiting_kafka=sum(s.waiting_kafka for s in per.values()),
        waiting_local=sum(s.waiting_local for s in per.values()),
        kafka_log_size=sum(s.kafka_log_size for s in per.values()),
        partitions=per,
        rdkafka_stats=dict(stats),
    )


def fetch_queue_count(stats: Mapping[str, Any], topic: str, partitions: Iterable[int]) -> int:
    """Messages in librdkafka's fetch queues of these partitions."""
    return sum(max(0, _int(partition_entry(stats, topic, p), "fetchq_cnt", 0)) for p in partitions)


def send_queue_length(stats: Mapping[str, Any]) -> int:
    """A producer's messages awaiting transmission or acknowledgement (``msg_cnt``)."""
    return max(0, _int(stats, "msg_cnt", 0))
