"""Partition choice for ``send(..., partition=None)`` and the partition counts it needs.

librdkafka's own partitioners (``consistent_random``, ``murmur2_random``, ``fnv1a``) are
set as the topic's ``partitioner``; ``round_robin`` and ``least_bytes`` are rdk's C
balancers, and keyless messages under a ``*_random`` partitioner use rdk's C sticky
balancer once the topic's partition count is known. Counts are looked up on the event
thread (the first ``round_robin``/``least_bytes`` send to a topic looks it up itself) and
trusted for ``_PARTITION_COUNT_TTL`` seconds.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from typing import Any

from .._binding import Client
from .._binding import produce as _produce

log = logging.getLogger("rdk")

BALANCERS = ("consistent_random", "murmur2_random", "fnv1a", "round_robin", "least_bytes")

# balancer -> librdkafka topic "partitioner", or rdk's C balancer kind
_PARTITIONERS = {
    "consistent_random": "consistent_random",
    "murmur2_random": "murmur2_random",
    "fnv1a": "fnv1a_random",
}
_C_BALANCERS = {
    "round_robin": _produce.BALANCE_ROUND_ROBIN,
    "least_bytes": _produce.BALANCE_LEAST_BYTES,
}
_PARTITION_COUNT_TTL = 60.0  # seconds a partition count is trusted by the C balancers
_LOOKUP_RETRY = 10.0  # seconds before a failed background partition-count lookup is retried
_LOOKUP_TIMEOUT = 1.0  # seconds a background lookup may hold the event thread


def topic_properties(balancer: str, topic_options: Mapping[str, Any]) -> dict[str, Any]:
    """``topic_options`` with the librdkafka partitioner of ``balancer`` (theirs win)."""
    if balancer in _PARTITIONERS:
        return {"partitioner": _PARTITIONERS[balancer], **topic_options}
    return dict(topic_options)


class Balancers:
    """One producer's C balancers, per topic, with the partition count each relies on."""

    def __init__(self, balancer: str, driver_options: Mapping[str, Any]) -> None:
        self._c_kind = _C_BALANCERS.get(balancer)  # None: librdkafka's partitioner (or sticky)
        self._sticky_ms = int(float(driver_options.get("sticky.partitioning.linger.ms", 10)))
        self._sticky_messages = int(driver_options.get("batch.num.messages", 10000))
        self._entries: dict[str, tuple[int, Any, float]] = {}  # topic -> (count, balancer, when)
        self._lookups: dict[str, float] = {}  # topic -> when to look its partition count up
        self._lock = threading.Lock()
        self._closed = False

    def __contains__(self, topic: str) -> bool:
        """Whether ``topic``'s partition count is known (its C balancer exists)."""
        return topic in self._entries

    def known_count(self, topic: str) -> int | None:
        """``topic``'s partition count if looked up within the TTL, else None (no lookup)."""
        entry = self._entries.get(topic)
        if entry is None or time.monotonic() - entry[2] > _PARTITION_COUNT_TTL:
            return None
        return entry[0]

    def may_look_up(self, topic: str) -> bool:
        """Whether choose() for ``topic`` may wait for a partition-count lookup."""
        return self._c_kind is not None and topic not in self._entries

    def choose(self, client: Client, topic: str, keyed: bool, timeout: float | None) -> tuple[int, Any]:
        """``(partition count, C balancer)`` for a send without a partition; ``(0, NULL)``
        leaves the choice to librdkafka's partitioner.

        ``timeout`` bounds the first partition-count lookup of ``round_robin``/``least_bytes``
        (None: 10 s); that lookup raises UNKNOWN_TOPIC_OR_PART for a missing topic.
        """
        if self._c_kind is not None:
            return self._c_balancer(client, topic, 10.0 if timeout is None else timeout)
        if not keyed and self._sticky_ms > 0:
            return self._sticky_balancer(client, topic)
        return 0, _produce.NO_BALANCER

    def _c_balancer(self, client: Client, topic: str, timeout: float) -> tuple[int, Any]:
        entry = self._entries.get(topic)
        if entry is None:
            entry = self._store(topic, client.partition_count(topic, timeout))
        elif time.monotonic() - entry[2] > _PARTITION_COUNT_TTL:
            self._want_lookup(client, topic)
        return entry[0], entry[1]

    def _sticky_balancer(self, client: Client, topic: str) -> tuple[int, Any]:
        """Keyless messages under librdkafka's *_random partitioners: the C sticky balancer
        once the partition count is known (until then librdkafka partitions, with the same
        sticky semantics)."""
        entry = self._entries.get(topic)
        if entry is None or time.monotonic() - entry[2] > _PARTITION_COUNT_TTL:
            self._want_lookup(client, topic)
            if entry is None:
                return 0, _produce.NO_BALANCER
        return entry[0], entry[1]

    def _store(self, topic: str, cnt: int) -> tuple[int, Any, float]:
        entry = self._entries.get(topic)
        if entry is not None:
            b = entry[1]
        else:
            b = _produce.new_balancer(self._c_kind, self._sticky_ms, self._sticky_messages)
        entry = self._entries[topic] = (cnt, b, time.monotonic())
        return entry

    def _want_lookup(self, client: Client, topic: str) -> None:
        if topic in self._lookups:
            return
        with self._lock:
            if topic in self._lookups:
                return
            self._lookups[topic] = 0.0  # due now
        client.wake()

    def run_lookups(self, client: Client) -> None:
        """On the event thread: the partition counts the balancers asked for."""
        if not self._lookups:
            return
        now = time.monotonic()
        due = [t for t, at in list(self._lookups.items()) if at <= now]
        for topic in due:
            if self._closed:
                return
            try:
                self._store(topic, client.partition_count(topic, _LOOKUP_TIMEOUT))
            except Exception as e:  # noqa: BLE001 - an optimisation only: retry later
                log.debug("rdk.Producer: partition count of %r: %s", topic, e)
                self._lookups[topic] = time.monotonic() + _LOOKUP_RETRY
                continue
            self._lookups.pop(topic, None)

    def close(self) -> None:
        """No more lookups (the producer is stopping)."""
        self._closed = True
