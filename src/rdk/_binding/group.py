"""librdkafka's consumer group API: the only caller of subscribe, (incremental) assign and
unassign, the rebalance events, pause/resume, seek, commit and the group close.

Partitions cross as ``(topic, partition)`` keys, or ``(topic, partition, offset)`` where an
offset goes with them; a group event is served as a :class:`GroupEvent` of Python values.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

from ..errors import KafkaError
from . import Client, check, check_error, ffi, lib
from .partitions import OFFSET_INVALID, partition_list, partition_list_offsets

__all__ = [
    "EVENT_REBALANCE",
    "GroupEvent",
    "assign",
    "assignment_lost",
    "close_queue",
    "closed",
    "commit",
    "committed",
    "is_cooperative",
    "pause",
    "resume",
    "seek",
    "serve_event",
    "subscribe",
    "unassign",
]

EVENT_REBALANCE = int(lib.RD_KAFKA_EVENT_REBALANCE)

Key = tuple[str, int]


class GroupEvent(NamedTuple):
    """A consumer-queue event: ``kind`` "assign" or "revoke" with its ``partitions``
    ((topic, partition, offset) each), or "error" with its ``error``."""

    kind: str
    partitions: list[tuple[str, int, int]]
    error: KafkaError | None = None

    @property
    def keys(self) -> list[Key]:
        return [(t, p) for t, p, _ in self.partitions]


def _entries(tpl: Any) -> list[tuple[str, int, int]]:
    return [(ffi.string(tpl.elems[i].topic).decode(), int(tpl.elems[i].partition),
             int(tpl.elems[i].offset)) for i in range(tpl.cnt)]


def _keys_list(keys: Iterable[Key]) -> Any:
    return partition_list((t, p, OFFSET_INVALID) for t, p in keys)


def subscribe(client: Client, topics: Iterable[str]) -> None:
    """Subscribe to ``topics`` (names, or ``^regex`` patterns)."""
    names = list(topics)
    tpl = partition_list((t, lib.RD_KAFKA_PARTITION_UA, OFFSET_INVALID) for t in names)
    check(lib.rd_kafka_subscribe(client.rk, tpl), f"subscribe to {names}")


def is_cooperative(client: Client) -> bool:
    """Whether the group's rebalance protocol is COOPERATIVE (incremental)."""
    proto = lib.rd_kafka_rebalance_protocol(client.rk)
    return proto != ffi.NULL and ffi.string(proto) == b"COOPERATIVE"


def serve_event(queue: Any, timeout_ms: int, handle: Callable[[GroupEvent], None]) -> bool:
    """Wait up to ``timeout_ms`` for one event of the consumer ``queue`` and call
    ``handle`` with it (a rebalance or an error; other events are skipped) while the event
    is still held; whether an event came."""
    ev = lib.rd_kafka_queue_poll(queue, timeout_ms)
    if ev == ffi.NULL:
        return False
    try:
        etype = lib.rd_kafka_event_type(ev)
        if etype == lib.RD_KAFKA_EVENT_REBALANCE:
            code = lib.rd_kafka_event_error(ev)
            entries = _entries(lib.rd_kafka_event_topic_partition_list(ev))
            kind = "assign" if code == lib.RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS else "revoke"
            handle(GroupEvent(kind, entries))
        elif etype == lib.RD_KAFKA_EVENT_ERROR:
            text = ffi.string(lib.rd_kafka_event_error_string(ev)).decode(errors="replace")
            handle(GroupEvent("error", [], KafkaError(
                lib.rd_kafka_event_error(ev), text,
                fatal=bool(lib.rd_kafka_event_error_is_fatal(ev)))))
    finally:
        lib.rd_kafka_event_destroy(ev)
    return True


def assign(client: Client, partitions: Iterable[tuple[str, int, int]], cooperative: bool) -> None:
    """Assign (topic, partition, start offset)s: incrementally, or the whole assignment."""
    tpl = partition_list(partitions)
    if cooperative:
        check_error(lib.rd_kafka_incremental_assign(client.rk, tpl), "incremental assign")
    else:
        check(lib.rd_kafka_assign(client.rk, tpl), "assign")


def unassign(client: Client, keys: Iterable[Key], cooperative: bool) -> None:
    """Give up ``keys`` incrementally, or (eager) the whole assignment."""
    if cooperative:
        check_error(lib.rd_kafka_incremental_unassign(client.rk, _keys_list(keys)),
                    "incremental unassign")
    else:
        check(lib.rd_kafka_assign(client.rk, ffi.NULL), "unassign")


def assignment_lost(client: Client) -> bool:
    """Whether the current assignment was lost (the member left the group's generation)."""
    return bool(lib.rd_kafka_assignment_lost(client.rk))


def pause(client: Client, keys: Iterable[Key], context: str = "pause") -> None:
    check(lib.rd_kafka_pause_partitions(client.rk, _keys_list(keys)), context)


def resume(client: Client, keys: Iterable[Key]) -> None:
    check(lib.rd_kafka_resume_partitions(client.rk, _keys_list(keys)), "resume")


def seek(client: Client, topic: str, partition: int, offset: int, timeout_ms: int) -> None:
    """Move ``topic``/``partition``'s fetch position to ``offset``; KafkaError naming it."""
    tpl = partition_list([(topic, partition, offset)])
    check_error(lib.rd_kafka_seek_partitions(client.rk, tpl, timeout_ms),
                f"seek {topic}[{partition}] to {offset}")
    partition_list_offsets(tpl, "seek")


def committed(client: Client, keys: Iterable[Key], timeout_ms: int,
              context: str) -> dict[Key, int]:
    """The group's committed (next) offsets of ``keys``, negative where there is none."""
    tpl = _keys_list(keys)
    check(lib.rd_kafka_committed(client.rk, tpl, timeout_ms), context)
    return partition_list_offsets(tpl, context)


def commit(client: Client, next_offsets: Mapping[Key, int], context: str) -> None:
    """Commit ``{(topic, partition): next offset}`` synchronously; a partition the broker
    refused raises KafkaError naming it."""
    tpl = partition_list((t, p, o) for (t, p), o in next_offsets.items())
    check(lib.rd_kafka_commit(client.rk, tpl, 0), context)
    partition_list_offsets(tpl, context)


def close_queue(client: Client, queue: Any) -> None:
    """Begin leaving the group; its last events arrive on ``queue``."""
    check_error(lib.rd_kafka_consumer_close_queue(client.rk, queue), "close the group consumer")


def closed(client: Client) -> bool:
    """Whether the group close begun by :func:`close_queue` has ended."""
    return bool(lib.rd_kafka_consumer_closed(client.rk))
