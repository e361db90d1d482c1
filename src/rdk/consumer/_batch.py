"""Batch (one delivery), and a filled ``rdk_batch`` turned into :class:`rdk.Message` tuples.

The fast path is one call into ``rdk._messages`` (C), which reads the ``rdk_batch`` struct
itself; without that module, :func:`python_messages` builds the same list with ``map``/``zip``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from itertools import islice, repeat
from typing import Any

from .._binding import ffi
from ..message import Message

try:  # the C fast path (setup.py builds it; optional)
    from .. import _messages
except ImportError:  # pragma: no cover - exercised by the fallback test
    _messages = None

__all__ = ["Batch", "Parts", "build_messages", "python_messages"]

#: (partition, first offset, last offset, message count) per partition of a batch
Parts = list[tuple[int, int, int, int]]


class Batch:
    """One delivery: what ``receive_callback(info)`` gets and ``batches()`` yields.

    ``messages`` (list of [rdk.Message][]), ``repeats`` and ``misses``
    (kafka-native's counts), ``topic``, ``offsets`` (``{partition: (first, last)}``).
    ``commit()`` records the batch's offsets now (the iterator interface; in a callback it
    settles the batch early); ``commit_through()`` records only a processed prefix.
    ``undecodable``: with a ``value_deserializer``/``key_deserializer``, the ``(raw
    rdk.Message, DeserializationError)`` of records that could not be decoded (they are not in
    ``messages``; the batch's offsets still cover them); otherwise empty.

    Args:
        messages: The batch's messages.
        repeats: kafka-native's count of repeated messages.
        misses: kafka-native's count of missed messages.
        topic: The topic of the messages.
        parts: ``(partition, first offset, last offset, count)`` per partition.
        settle: The consumer's settlement hook; None: ``commit()`` does nothing.

    rdk builds batches; applications receive them.
    """

    __slots__ = ("_entries", "_parts", "_settle", "messages", "misses", "repeats", "topic", "undecodable")

    def __init__(self, messages: list[Message], repeats: int, misses: int, topic: str,
                 parts: Parts, settle: Callable[..., None] | None = None) -> None:
        self.messages, self.topic = messages, topic
        """``messages``: the batch's [rdk.Message][]s; ``topic``: their topic."""
        self.repeats, self.misses = repeats, misses  # kafka-native's counts
        self._parts, self._settle = parts, settle
        self._entries: Any = None  # the settlement tracker's bookkeeping (None: not tracked yet)
        self.undecodable: Sequence[tuple[Message, Any]] = ()
        """``(raw rdk.Message, DeserializationError)`` of records a deserializer could not decode."""

    @property
    def offsets(self) -> dict[int, tuple[int, int]]:
        """``{partition: (first offset, last offset)}`` of the messages in this batch."""
        return {p: (first, last) for p, first, last, _ in self._parts}

    def commit(self) -> None:
        """Record this batch as processed (its offsets are stored once earlier ones are).

        Raises ClosedError once its consumer is stopped (nothing can be recorded then: the
        batch is delivered again after a restart). Committing a batch twice is harmless.

        Raises:
            rdk.ClosedError: The consumer is stopped, or in a forked child.
        """
        if self._settle is not None:
            self._settle(self, True, None, True)

    def commit_through(self, offsets: Mapping[int, int]) -> None:
        """Record this batch as processed only through ``{partition: last processed offset}``:
        for a consumer that stops partway through a batch (``rdk consume --count`` does).

        A partition left out of ``offsets`` records nothing of this batch, and nothing after
        the given offsets (in this batch or a later one) is recorded in this run: stop the
        consumer after it; the rest is delivered again after a restart.

        Args:
            offsets: ``{partition: last processed offset}`` for partitions of this batch.

        Raises:
            TypeError: ``offsets`` is not a mapping of int partitions to int offsets.
            ValueError: ``offsets`` names a partition this batch does not hold.
        """
        if not isinstance(offsets, Mapping):
            raise TypeError("offsets must be a mapping {partition: last processed offset}, "
                            f"got {type(offsets).__name__}")
        held = self.offsets
        for partition, offset in offsets.items():
            if partition not in held:
                raise ValueError(f"offsets: partition {partition!r} is not in this batch "
                                 f"(it holds {sorted(held)})")
            if not isinstance(offset, int) or isinstance(offset, bool):
                raise TypeError(f"offsets[{partition}] must be an int offset, "
                                f"got {type(offset).__name__}")
        if self._settle is not None:
            self._settle(self, True, dict(offsets))

    def __len__(self) -> int:
        return len(self.messages)

    def __iter__(self) -> Iterator[Message]:
        return iter(self.messages)

    def __repr__(self) -> str:
        return (f"<Batch {self.topic} {len(self.messages)} messages {self.offsets} "
                f"repeats={self.repeats} misses={self.misses}>")


def build_messages(b: Any, topic: str, decode: bool) -> list[Message]:
    """The messages of filled ``rdk_batch`` ``b`` (rows carrying an error left out): one call
    into rdk._messages (C), given the struct's address, or the pure-Python equivalent."""
    headers = _headers(b) if b.n_headers else None
    if _messages is not None:
        return _messages.build(Message, topic, int(ffi.cast("uintptr_t", b)), decode, headers)
    return python_messages(b, topic, decode, headers)


def python_messages(b: Any, topic: str, decode: bool, headers: list[Any] | None) -> list[Message]:
    """Pure-Python rdk._messages.build: columns, then map/zip at C speed."""
    n = b.n
    values: list[Any] = _column(b, 0, n)
    if decode:
        values = list(map(str, values, repeat("utf-8"), repeat("replace")))
    if b.value_nulls:
        for i in _null_indices(b.value_valid, n):
            values[i] = None
    keys: Any = repeat(None)
    if b.key_nulls != n:
        keys = _column(b, 1, n)
        if b.key_nulls:
            for i in _null_indices(b.key_valid, n):
                keys[i] = None
    timestamps: list[Any] = ffi.unpack(b.timestamp, n)
    kinds = ffi.buffer(b.timestamp_type, n)[:]
    if b"\x00" in kinds:
        timestamps = [None if k == 0 else t for k, t in zip(kinds, timestamps, strict=True)]
    messages = list(map(tuple.__new__, repeat(Message), zip(
        values, keys, repeat(None) if headers is None else headers, timestamps,
        repeat(topic), ffi.unpack(b.partition, n), ffi.unpack(b.offset, n))))
    if b.n_errors:
        messages = [m for m, e in zip(messages, ffi.unpack(b.err, n), strict=False) if not e]
    return messages


def _headers(b: Any) -> list[Any]:
    """Per message, its list of (name, value) headers, or None when it has none."""
    n, nh = b.n, b.n_headers
    names = [s.decode("utf-8", "replace")
             for s in _slices(b.header_names, b.header_name_offsets, nh)]
    hvalues: list[Any] = _slices(b.header_values, b.header_value_offsets, nh)
    for i in _null_indices(b.header_value_valid, nh):
        hvalues[i] = None
    index = ffi.unpack(b.header_index, n + 1)
    pairs = list(zip(names, hvalues, strict=True))
    return [pairs[a:z] if z > a else None for a, z in zip(index, islice(index, 1, None), strict=False)]


def _null_indices(bitmap: Any, n: int) -> list[int]:
    bits = ffi.buffer(bitmap, (n + 7) // 8)[:]
    return [i for i in range(n) if not (bits[i >> 3] >> (i & 7)) & 1]


def _column(b: Any, which: int, n: int) -> list[Any]:
    """The values (``which`` 0) or keys (1) of ``b``'s n rows as bytes (b"" where null):
    cut from the contiguous buffer, or, when the batch keeps librdkafka's messages, one
    copy of each payload."""
    offsets_ptr = b.key_offsets if which else b.value_offsets
    if not b.keep:
        return _slices(b.keys if which else b.values, offsets_ptr, n)
    ptrs = b.key_ptr if which else b.value_ptr
    offs = ffi.unpack(offsets_ptr, n + 1)
    return [ffi.unpack(ptrs[i], offs[i + 1] - offs[i]) if offs[i + 1] > offs[i] else b""
            for i in range(n)]


def _slices(buf_ptr: Any, offsets_ptr: Any, n: int) -> list[bytes]:
    """n bytes objects cut from one Arrow-layout buffer: one copy of the area, then slices.

    (A comprehension over ``zip`` measured faster here than ``map(data.__getitem__,
    map(slice, ...))``: 0.17 vs 0.29 us per slice on CPython 3.11.)
    """
    offs = ffi.unpack(offsets_ptr, n + 1)
    data = ffi.buffer(buf_ptr, offs[n])[:]
    return [data[a:z] for a, z in zip(offs, islice(offs, 1, None), strict=False)]
