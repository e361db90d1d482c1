"""Arrow columns as one send()'s payloads: their buffers handed to rdk_produce_batch as they are.

``ArrowRows(value, key, headers)`` takes pyarrow arrays (``value``/``key`` binary or string,
either offset width; ``headers`` list<struct<key: string, value: binary>>) and lays them out
in an ``rdk_produce_args`` with no Python object per row: the data buffers are Arrow's own
(librdkafka points into them, no copy), offsets are widened to int64 and validity bitmaps
turned into byte flags by Arrow compute kernels, one call per column. ``Producer.send`` takes
it in place of a list; a failed message is rebuilt from its row only when it fails, and its
row number is recorded in ``failed_rows``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._binding import produce as _produce
from ..message import Message

_EMPTY = _produce.EMPTY  # a non-NULL pointer for an empty buffer


class ArrowRows:
    """Rows of Arrow columns as the payloads of one ``Producer.send`` call.

    Args:
        value: The values (binary, string, large_binary or large_string; nulls are tombstones).
        key: The keys (same types), or None.
        headers: list<struct<key: string, value: binary>> (nulls: no headers), or None.
    """

    def __init__(self, value: Any, key: Any = None, headers: Any = None) -> None:
        self.value = value
        self.key = key
        self.headers = headers
        self.failed_rows: list[int] = []  #: rows whose message failed, as they are reported

    def __len__(self) -> int:
        return len(self.value)

    def __getitem__(self, index: int) -> Message:
        hs = None
        if self.headers is not None:
            row = self.headers[index].as_py()
            hs = None if row is None else [(h["key"], h["value"]) for h in row]
        key = None if self.key is None else self.key[index].as_py()
        return Message(self.value[index].as_py(), key, hs)

    def message(self, index: int, topic: str, partition: int | None) -> Message:
        """Message ``index`` (its row) as a failure report shows it; records the row."""
        self.failed_rows.append(index)
        m = self[index]
        return tuple.__new__(Message, (m[0], m[1], m[2], None, topic, partition, None))

    def lay_out(self, args: Any) -> list:
        """Point ``args`` at the columns' buffers; returns what must outlive the send."""
        import pyarrow as pa
        import pyarrow.compute as pc

        keep: list = []
        n = len(self.value)
        args.n = n
        if not n:
            return keep
        args.values, args.value_offsets = _binary(self.value, keep, pa, pc)
        if self.value.null_count:
            args.value_null = _null_flags(self.value, keep, pa, pc)
        if self.key is not None and self.key.null_count < n:
            args.keys, args.key_offsets = _binary(self.key, keep, pa, pc)
            if self.key.null_count:
                args.key_null = _null_flags(self.key, keep, pa, pc)
        if self.headers is not None and self.headers.null_count < n:
            self._lay_out_headers(args, keep, pa, pc)
        return keep

    def _lay_out_headers(self, args: Any, keep: list, pa: Any, pc: Any) -> None:
        col = self.headers
        counts = pc.fill_null(pc.list_value_length(col), 0).cast(pa.int32())
        if not pc.sum(counts).as_py():
            return
        index = pa.concat_arrays([pa.array([0], pa.int32()), pc.cumulative_sum(counts)])
        args.header_index = _buffer_of(index, _produce.int32_view, keep, 4)
        flat = col.flatten()  # the non-null rows' entries, in order (slicing accounted for)
        names, values = flat.field("key"), flat.field("value")
        args.header_names, args.header_name_offsets = _binary(names, keep, pa, pc)
        args.header_values, args.header_value_offsets = _binary(values, keep, pa, pc)
        args.header_value_null = _null_flags(values, keep, pa, pc)


def _buffer_of(arr: Any, view_of: Callable[[Any], Any], keep: list, width: int) -> Any:
    """A C pointer to the (null-free, fixed-width) ``arr``'s values, with its slice offset."""
    buf = arr.buffers()[1]
    keep.append(buf)
    view = view_of(buf)
    keep.append(view)
    return view + arr.offset if arr.offset else view


def _binary(arr: Any, keep: list, pa: Any, pc: Any) -> tuple[Any, Any]:
    """(data pointer, int64 offsets pointer) of a binary or string array."""
    large = pa.types.is_large_binary(arr.type) or pa.types.is_large_string(arr.type)
    buffers = arr.buffers()
    offsets = pa.Array.from_buffers(pa.int64() if large else pa.int32(), len(arr) + 1,
                                    [None, buffers[1]], offset=arr.offset)
    if not large:
        offsets = pc.cast(offsets, pa.int64())
    data = buffers[2]
    keep.append(data)
    if data is None or not data.size:
        return _EMPTY, _buffer_of(offsets, _produce.int64_view, keep, 8)
    values = _produce.bytes_view(data)
    keep.append(values)
    return values, _buffer_of(offsets, _produce.int64_view, keep, 8)


def _null_flags(arr: Any, keep: list, pa: Any, pc: Any) -> Any:
    """One byte per row, 1 where ``arr`` is null."""
    return _buffer_of(pc.cast(pc.is_null(arr), pa.uint8()), _produce.flags_view, keep, 1)
