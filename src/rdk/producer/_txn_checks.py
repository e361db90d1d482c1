"""The checks behind the transactional producer's calls: the offsets a transaction commits,
and the metadata check that refuses partitions the cluster does not have."""

from __future__ import annotations

import time
from collections.abc import Mapping, MutableMapping
from typing import Any

from .._binding import ERROR_CODES, Client
from ..errors import KafkaError, TransactionError
from ..validate import check_topic_name

_INT32_MAX = 0x7FFFFFFF
_INT64_MAX = 2**63 - 1
_UNKNOWN_TOPIC_OR_PART = ERROR_CODES["UNKNOWN_TOPIC_OR_PART"]
_METADATA_RECHECK = 0.5  # s: a partition missing from metadata is looked up once more


def check_offsets(offsets: Any, what: str = "offsets") -> dict[tuple[str, int], int]:
    """``{(topic, partition): next_offset}``, every key and value checked; a copy.

    ``next_offset`` is the offset of the next message to consume (last processed + 1),
    as Kafka commits it.
    """
    if not isinstance(offsets, Mapping):
        raise TypeError(f"{what} must be a dict {{(topic, partition): next_offset}}, "
                        f"got {type(offsets).__name__}")
    out: dict[tuple[str, int], int] = {}
    for key, offset in offsets.items():
        if not (isinstance(key, tuple) and len(key) == 2):
            raise TypeError(f"{what}: key {key!r} must be a (topic, partition) tuple")
        topic, partition = key
        check_topic_name(topic, f"{what}: topic of key {key!r}")
        if not isinstance(partition, int) or isinstance(partition, bool):
            raise TypeError(f"{what}: partition of key {key!r} must be int, "
                            f"got {type(partition).__name__}")
        if not 0 <= partition <= _INT32_MAX:
            raise ValueError(f"{what}: partition of key {key!r} must be in 0..{_INT32_MAX}")
        if not isinstance(offset, int) or isinstance(offset, bool):
            raise TypeError(f"{what}[{key!r}] must be an int offset, got {type(offset).__name__}")
        if not 0 <= offset <= _INT64_MAX:
            raise ValueError(f"{what}[{key!r}] must be an offset >= 0, got {offset}")
        out[(topic, partition)] = offset
    return out


def _missing(offsets: Mapping[tuple[str, int], int],
             known: MutableMapping[str, int]) -> list[tuple[str, int]]:
    return [(t, p) for t, p in offsets if p >= known.get(t, 0)]


def _learn(client: Client, known: MutableMapping[str, int], timeout: float) -> bool:
    """Record every topic's partition count from one all-topics metadata request (never a
    per-topic one: that would let a producer auto-create a mistyped topic); False if the
    request failed."""
    try:
        topics = client.metadata(None, timeout)
    except KafkaError:
        return False
    for t in topics:
        if t.error is None:
            known[t.name] = max(known.get(t.name, 0), len(t.partitions))
    return True


def check_partitions_exist(client: Client, offsets: Mapping[tuple[str, int], int],
                           known: MutableMapping[str, int], deadline: float,
                           context: str = "send_offsets_to_transaction") -> None:
    """TransactionError UNKNOWN_TOPIC_OR_PART naming every (topic, partition) of ``offsets``
    that the cluster's metadata does not have, before librdkafka is asked.

    librdkafka's ``rd_kafka_send_offsets_to_transaction`` takes the group coordinator's
    UNKNOWN_TOPIC_OR_PART for a transient state and retries every 500 ms until its timeout,
    then fails the transaction (abortable); a mistyped topic or partition therefore blocked
    for the whole timeout. ``known`` ({topic: partition count}, the caller's cache) skips the
    request for partitions already seen: partitions are never removed from a topic. A
    partition missing from the first answer is looked up once more (0.5 s later: a topic
    just created may not be in every broker's metadata yet). When metadata cannot be had
    before ``deadline`` (time.monotonic()), nothing is refused: librdkafka decides.
    """
    missing = _missing(offsets, known)
    for attempt in range(2):
        if not missing:
            return
        if attempt:
            time.sleep(min(_METADATA_RECHECK, max(0.0, deadline - time.monotonic())))
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not _learn(client, known, remaining):
            return
        missing = _missing(offsets, known)
    if missing:
        names = ", ".join(
            f"{t!r} partition {p} (the topic has {known[t]} partitions)" if t in known
            else f"{t!r} partition {p} (no such topic)" for t, p in sorted(missing))
        raise TransactionError(
            _UNKNOWN_TOPIC_OR_PART,
            f"offsets name partitions the cluster does not have: {names}; nothing was sent "
            "and the transaction is unchanged",
            retriable=False, context=context)
