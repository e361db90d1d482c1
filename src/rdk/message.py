"""rdk.Message: one Kafka message, produced or consumed.

A tuple subclass, so a consumer can build thousands of them at C speed
(``map(tuple.__new__, repeat(Message), zip(...))``) with no Python ``__init__`` per row.
"""

from __future__ import annotations

from typing import Any

from ._fields import tuple_field

__all__ = ["Message"]

Headers = list[tuple[str, "bytes | None"]]


class Message(tuple):
    """``Message(value, key=None, headers=None, timestamp=None)``.

    Fields: ``value`` (alias ``payload``: bytes, str after ``decode="utf-8"``, or None for a
    tombstone), ``key``, ``headers`` (list of ``(name, value)``; None when absent),
    ``timestamp`` (ms since the epoch), and, on consumed messages, ``topic``,
    ``partition`` and ``offset`` (None on messages built for sending).

    Args:
        value: The value: bytes, bytearray, memoryview, str (sent as UTF-8), or None (a
            tombstone).
        key: The key, or None.
        headers: ``[(name, value)]`` headers, or None.
        timestamp: Milliseconds since the epoch. None: the producer's time of sending.
        topic: Set by rdk on consumed messages.
        partition: Set by rdk on consumed messages.
        offset: Set by rdk on consumed messages.
    """

    __slots__ = ()

    def __new__(
        cls,
        value: Any,
        key: Any = None,
        headers: Any = None,
        timestamp: int | None = None,
        *,
        topic: str | None = None,
        partition: int | None = None,
        offset: int | None = None,
    ) -> Message:
        return tuple.__new__(cls, (value, key, headers, timestamp, topic, partition, offset))

    value = tuple_field(0, "The message value (kafka-native: payload).")
    """The message value (kafka-native: payload)."""
    payload = tuple_field(0, "Same as value (kafka-native's name).")
    """Same as value (kafka-native's name)."""
    key = tuple_field(1, "The message key (bytes), or None.")
    """The message key (bytes), or None."""
    headers = tuple_field(2, "List of (name, value) headers, or None.")
    """List of (name, value) headers, or None."""
    timestamp = tuple_field(3, "Milliseconds since the epoch, or None.")
    """Milliseconds since the epoch, or None."""
    topic = tuple_field(4, "Topic of a consumed message (None on messages built for sending).")
    """Topic of a consumed message (None on messages built for sending)."""
    partition = tuple_field(5, "Partition of a consumed message.")
    """Partition of a consumed message."""
    offset = tuple_field(6, "Offset of a consumed message.")
    """Offset of a consumed message."""

    def __repr__(self) -> str:
        v = self[0]
        shown = v if v is None or len(v) <= 40 else v[:40] + (b"..." if isinstance(v, bytes) else "...")
        where = f" {self[4]}[{self[5]}]@{self[6]}" if self[4] is not None else ""
        return f"Message({shown!r}, key={self[1]!r}{where})"

    def __getnewargs__(self):
        return tuple(self[:4])

    def __reduce__(self):
        return (_rebuild, (tuple(self),))


def _rebuild(fields: tuple) -> Message:
    return tuple.__new__(Message, fields)
