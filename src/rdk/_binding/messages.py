"""Filled C batches read as message tuples: the consumer's ``rdk_batch`` (src/rdk/_helpers.c)
as :class:`rdk.Message`, a share consumer's ``rdk_share_batch`` (src/rdk/_share.c) as the
share package's ShareMessage.

The consumer's fast path is one call into ``rdk._messages`` (C), which reads the
``rdk_batch`` struct itself; without that module, :func:`python_messages` builds the same
list with ``map``/``zip``, as :func:`share_messages` does. Each payload is copied once.
"""

from __future__ import annotations

from itertools import islice, repeat
from typing import Any

from ..message import Message
from . import ffi

try:  # the C fast path (setup.py builds it; optional); absolute: the rdk package is no import
    import rdk._messages as _messages  # of this module's (test_api_surface's cycle check)
except ImportError:  # pragma: no cover - exercised by the fallback test
    _messages = None

__all__ = ["build_messages", "python_messages", "share_messages"]


def build_messages(b: Any, topic: str, decode: bool) -> list[Message]:
    """The messages of filled ``rdk_batch`` ``b`` (rows carrying an error left out): one call
    into rdk._messages (C), given the struct's address, or the pure-Python equivalent."""
    headers = headers_of(b) if b.n_headers else None
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


def headers_of(b: Any) -> list[Any]:
    """Per message of an ``rdk_batch``, its list of (name, value) headers, or None."""
    n, nh = b.n, b.n_headers
    names = [s.decode("utf-8", "replace")
             for s in _slices(b.header_names, b.header_name_offsets, nh)]
    hvalues: list[Any] = _slices(b.header_values, b.header_value_offsets, nh)
    for i in _null_indices(b.header_value_valid, nh):
        hvalues[i] = None
    return _per_message(list(zip(names, hvalues, strict=True)), b.header_index, n)


def _per_message(pairs: list[Any], index_ptr: Any, n: int) -> list[Any]:
    """Each message's slice of ``pairs`` (None when empty), from an int32[n + 1] index."""
    index = ffi.unpack(index_ptr, n + 1)
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
    data = ffi.buffer(buf_ptr, offs[n])[:] if offs[n] else b""
    return [data[a:z] for a, z in zip(offs, islice(offs, 1, None), strict=False)]


# ---- a share consumer's rdk_share_batch --------------------------------------------------


def _nulls(flags_ptr: Any, n: int) -> list[int]:
    flags = ffi.buffer(flags_ptr, n)[:]
    return [i for i, f in enumerate(flags) if f] if b"\x01" in flags else []


def share_messages(b: Any, decode: str | None, row: type[tuple]) -> list[Any]:
    """The rows of a filled ``rdk_share_batch`` as ``row`` tuples (value, key, headers,
    timestamp, topic, partition, offset, delivery count): columns, then map/zip."""
    n = b.n
    values: list[Any] = _slices(b.values, b.value_offsets, n)
    if decode:
        values = list(map(str, values, repeat(decode), repeat("replace")))
    for i in _nulls(b.value_null, n):
        values[i] = None
    keys: list[Any] = _slices(b.keys, b.key_offsets, n)
    for i in _nulls(b.key_null, n):
        keys[i] = None
    headers: Any = repeat(None)
    if b.n_headers:
        nh = b.n_headers
        names = [s.decode("utf-8", "replace")
                 for s in _slices(b.header_names, b.header_name_offsets, nh)]
        hvalues: list[Any] = _slices(b.header_values, b.header_value_offsets, nh)
        for i in _nulls(b.header_value_null, nh):
            hvalues[i] = None
        headers = _per_message(list(zip(names, hvalues, strict=True)), b.header_index, n)
    timestamps = [None if t < 0 else t for t in ffi.unpack(b.timestamp, n)]
    names_by_index = [ffi.string(b.topic_names[t]).decode() for t in range(b.n_topics)]
    topics = [names_by_index[t] for t in ffi.unpack(b.topic, n)] if b.n_topics > 1 \
        else repeat(names_by_index[0])
    return list(map(tuple.__new__, repeat(row), zip(
        values, keys, headers, timestamps, topics, ffi.unpack(b.partition, n),
        ffi.unpack(b.offset, n), ffi.unpack(b.delivery_count, n), strict=False)))

