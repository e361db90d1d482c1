"""Payload layout: a send()'s list of payloads as the contiguous buffers one C call reads.

``layout(payloads, args)`` validates every item first (nothing is enqueued when one is
unsupported) and fills an ``rdk_produce_args``: values as one buffer plus int32 lengths
(the bytes fast path) or int64 offsets, and, on the general path, keys, null flags,
timestamps and headers likewise. ``restrict(args, ...)`` points the same layout at a
subset of its messages, for the retry after a full queue.
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Iterable, Mapping, Sequence
from itertools import accumulate
from typing import Any

from .._binding import produce as _produce
from ..message import Message
from ._arrow import ArrowRows

_EMPTY = _produce.EMPTY  # a non-NULL pointer for all-empty buffers
_INT64_MAX = (1 << 63) - 1  # timestamps are int64 ms
_MAX_BUFFER = 1 << 31  # int32 lengths: larger sends take int64 offsets


def layout(payloads: Sequence[Any], args: Any) -> list:
    """Validate every payload, then lay the list out in ``args`` (an ``rdk_produce_args``)
    for one rdk_produce_batch call. Returns the buffers ``args`` points into."""
    if isinstance(payloads, ArrowRows):  # Arrow columns: their buffers as they are
        return payloads.lay_out(args)
    args.n = len(payloads)
    keep: list = []
    if not payloads:
        return keep
    try:  # the hot path, no per-message Python code: join accepts only bytes-like items
        joined = b"".join(payloads)
    except TypeError:
        joined = None
    if joined is not None:
        # lengths, not offsets: small lengths are cached ints (no allocation), struct packs
        # them at C speed, and C sums them up
        lengths = tuple(map(len, payloads))
        # len() is the byte size for bytes, bytearray and byte-format memoryviews; any
        # other buffer (array, 2-D view) makes the total differ: lay it out item by item
        if sum(lengths) == len(joined) and len(joined) < _MAX_BUFFER:
            values = _produce.bytes_view(joined) if joined else _EMPTY
            value_lengths = _produce.int32_view(struct.pack(f"{len(lengths)}i", *lengths))
            args.values = values
            args.value_lengths = value_lengths
            return [values, value_lengths]
        return _layout_general(payloads, args, keep)
    if set(map(type, payloads)) == {str}:
        _layout_str(payloads, args, keep)
        return keep
    return _layout_general(payloads, args, keep)


def restrict(args: Any, indices: array, total: int, keep: list) -> None:
    """Make ``args`` enqueue only the messages at ``indices`` (positions in the laid-out
    list of ``total`` messages), in that order; new buffers are appended to ``keep``."""
    positions = _produce.int32_view(indices)
    keep.append(positions)
    args.indices = positions
    lengths = _produce.take_lengths(args, total)  # random access needs offsets
    if lengths is not None:
        args.value_offsets = _offsets(lengths, keep)
    args.n = len(indices)


# ---- buffers ------------------------------------------------------------------------


def _buffer(chunks: list, keep: list) -> Any:
    joined = b"".join(chunks)
    if not joined:
        return _EMPTY
    buf = _produce.bytes_view(joined)
    keep.append(buf)
    return buf


def _offsets(lengths: Iterable[int], keep: list) -> Any:
    buf = _produce.int64_view(array("q", list(accumulate(lengths, initial=0))))
    keep.append(buf)
    return buf


def _nulls(flags: list, keep: list) -> Any:
    buf = _produce.flags_view(bytes(flags))
    keep.append(buf)
    return buf


# ---- str payloads -------------------------------------------------------------------


def _layout_str(payloads: Sequence[str], args: Any, keep: list) -> None:
    if all(map(str.isascii, payloads)):
        args.values = _buffer(["".join(payloads).encode("ascii")], keep)
        args.value_offsets = _offsets(map(len, payloads), keep)
        return
    try:
        encoded = list(map(str.encode, payloads))
    except UnicodeEncodeError:
        encoded = [_utf8(v, i, "payload") for i, v in enumerate(payloads)]
    args.values = _buffer(encoded, keep)
    args.value_offsets = _offsets(map(len, encoded), keep)


def _utf8(text: str, index: int, what: str) -> bytes:
    try:
        return text.encode()
    except UnicodeEncodeError as e:
        raise ValueError(f"payloads[{index}]: {what} cannot be encoded as UTF-8: {e}") from None


# ---- the general path: keys, null values, headers, timestamps -----------------------


def _as_bytes(value: Any, index: int, what: str, allow_none: bool) -> bytes | bytearray | None:
    t = type(value)
    if t is bytes or t is bytearray:
        return value
    if t is str:
        return _utf8(value, index, what)
    if value is None and allow_none:
        return None
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        return _utf8(str(value), index, what)
    raise TypeError(
        f"payloads[{index}]: {what} of type {type(value).__name__} is not supported "
        "(bytes, bytearray, memoryview or str" + (", or None)" if allow_none else ")"))


def _layout_general(payloads: Sequence[Any], args: Any, keep: list) -> list:
    """Item by item (the loop stays inline: it runs once per message)."""
    n = len(payloads)
    values: list = [None] * n
    keys: list = [None] * n
    headers: list = [None] * n
    stamps: list = [0] * n
    any_key = any_headers = any_ts = False
    for i, p in enumerate(payloads):
        if isinstance(p, Message):
            values[i] = _as_bytes(p[0], i, "value", True)
            keys[i] = _as_bytes(p[1], i, "key", True)
            if p[2] is not None:
                headers[i] = _headers(p[2], i)
                any_headers = any_headers or bool(headers[i])
            if p[3] is not None:
                ts = p[3]
                if isinstance(ts, bool) or not isinstance(ts, int) or ts < 0:
                    raise TypeError(f"payloads[{i}]: timestamp must be an int of ms since the epoch "
                                    f"(>= 0) or None, got {ts!r}")
                if ts > _INT64_MAX:
                    raise ValueError(f"payloads[{i}]: timestamp {ts} is beyond int64 milliseconds "
                                     f"(at most {_INT64_MAX})")
                stamps[i] = ts
                any_ts = True
        elif isinstance(p, tuple):
            if len(p) != 2:
                raise TypeError(f"payloads[{i}]: a tuple payload must be (key, value), "
                                f"got a tuple of {len(p)} items")
            keys[i] = _as_bytes(p[0], i, "key", True)
            values[i] = _as_bytes(p[1], i, "value", True)
        else:
            values[i] = _as_bytes(p, i, "payload", False)
        if keys[i] is not None:
            any_key = True
    args.values = _buffer([v for v in values if v], keep)
    args.value_offsets = _offsets((len(v) if v is not None else 0 for v in values), keep)
    if None in values:
        args.value_null = _nulls([v is None for v in values], keep)
    if any_key:
        args.keys = _buffer([k for k in keys if k], keep)
        args.key_offsets = _offsets((len(k) if k is not None else 0 for k in keys), keep)
        args.key_null = _nulls([k is None for k in keys], keep)
    if any_ts:
        stamps_buf = _produce.int64_view(array("q", stamps))
        keep.append(stamps_buf)
        args.timestamps = stamps_buf
    if any_headers:
        _layout_headers(headers, args, keep)
    return keep


def _layout_headers(headers: list, args: Any, keep: list) -> None:
    flat = [h for hs in headers if hs for h in hs]
    index = _produce.int32_view(array(
        "i", list(accumulate((len(hs) if hs else 0 for hs in headers), initial=0))))
    keep.append(index)
    args.header_index = index
    args.header_names = _buffer([name for name, _ in flat], keep)
    args.header_name_offsets = _offsets((len(name) for name, _ in flat), keep)
    args.header_values = _buffer([v for _, v in flat if v], keep)
    args.header_value_offsets = _offsets((len(v) if v is not None else 0 for _, v in flat), keep)
    args.header_value_null = _nulls([v is None for _, v in flat], keep)


def _headers(hs: Any, index: int) -> list[tuple[bytes, bytes | bytearray | None]]:
    items = hs.items() if isinstance(hs, Mapping) else hs
    if not isinstance(items, (list, tuple)) and not isinstance(hs, Mapping):
        raise TypeError(f"payloads[{index}]: headers must be a list of (name, value) pairs or a "
                        f"dict, got {type(hs).__name__}")
    out = []
    for item in items:
        if not isinstance(item, tuple) or len(item) != 2:
            raise TypeError(f"payloads[{index}]: each header must be a (name, value) pair, got {item!r}")
        name, value = item
        if isinstance(name, str):
            name = _utf8(name, index, "header name")
        elif not isinstance(name, (bytes, bytearray)):
            raise TypeError(f"payloads[{index}]: header name must be str or bytes, "
                            f"got {type(name).__name__}")
        if b"\0" in name:  # librdkafka keeps header names as C strings: a NUL would cut it
            raise ValueError(f"payloads[{index}]: header name {bytes(name)!r} contains a NUL byte")
        out.append((bytes(name), _as_bytes(value, index, "header value", True)))
    return out
