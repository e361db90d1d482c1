"""Arrow views of a fetched batch: Spark's Kafka schema, built with no per-row Python work.

``record_batch(b, topic)`` turns an ``rdk_batch`` (filled by one ``rdk_consume_batch``
call) into a ``pyarrow.RecordBatch`` whose columns are made with
``pa.Array.from_buffers`` from the batch's contiguous buffers: value/key offsets and
validity bitmaps, partition, offset and timestamp arrays, flattened headers. Each buffer
is copied once (a memcpy into Arrow's memory pool), because the C batch is refilled
by the next fetch; a batch that keeps librdkafka's messages (``keep``) has its values and
keys gathered from them into Arrow's buffer: one copy of each payload in all.

The schema is exactly that of Spark's built-in Kafka source::

    key binary, value binary, topic string, partition int, offset long,
    timestamp timestamp, timestampType int[, headers array<struct<key:string,value:binary>>]
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ._binding.fetch import copy_into, gather

# the Arrow layout behind the Spark source (kafka_schema is public as rdk.spark.kafka_schema)
__all__: list[str] = []

HEADER_FIELDS = [pa.field("key", pa.string()), pa.field("value", pa.binary())]
HEADERS_TYPE = pa.list_(pa.field("element", pa.struct(HEADER_FIELDS)))
TIMESTAMP_TYPE = pa.timestamp("us", tz="UTC")

_BASE_FIELDS = [
    pa.field("key", pa.binary()),
    pa.field("value", pa.binary()),
    pa.field("topic", pa.string()),
    pa.field("partition", pa.int32()),
    pa.field("offset", pa.int64()),
    pa.field("timestamp", TIMESTAMP_TYPE),
    pa.field("timestampType", pa.int32()),
]
_SCHEMA = pa.schema(_BASE_FIELDS)
_SCHEMA_HEADERS = pa.schema([*_BASE_FIELDS, pa.field("headers", HEADERS_TYPE)])


def kafka_schema(include_headers: bool = False) -> pa.Schema:
    """The Arrow schema Spark expects for the Kafka source (``headers`` when asked)."""
    return _SCHEMA_HEADERS if include_headers else _SCHEMA


def empty_batch(include_headers: bool = False) -> pa.RecordBatch:
    """A RecordBatch of no rows with the Kafka schema."""
    return pa.RecordBatch.from_pylist([], schema=kafka_schema(include_headers))


def _copy(ptr: Any, nbytes: int) -> pa.Buffer:
    """One memcpy of C memory into a buffer from Arrow's memory pool (aligned, reused)."""
    if nbytes <= 0:
        return pa.py_buffer(b"")
    buf = pa.allocate_buffer(nbytes)
    copy_into(buf, ptr, nbytes)
    return buf


def _bitmap(ptr: Any, nulls: int, n: int) -> pa.Buffer | None:
    return _copy(ptr, (n + 7) // 8) if nulls else None


def _binary_column(b: Any, which: int, n: int) -> pa.Array:
    """The values (``which`` 0) or keys (1) of ``b``: each payload copied once into Arrow's
    memory, from the contiguous buffer or straight from librdkafka's messages (keep mode)."""
    offsets, valid, nulls = ((b.key_offsets, b.key_valid, int(b.key_nulls)) if which else
                             (b.value_offsets, b.value_valid, int(b.value_nulls)))
    size = int(offsets[n])
    if b.keep:
        data = pa.allocate_buffer(size) if size > 0 else pa.py_buffer(b"")
        if size > 0:
            gather(b, which, data)
    else:
        data = _copy(b.keys if which else b.values, size)
    return pa.Array.from_buffers(
        pa.binary(), n, [_bitmap(valid, nulls, n), _copy(offsets, 4 * (n + 1)), data],
        null_count=nulls)


def _headers_column(b: Any, n: int) -> pa.Array:
    nh = int(b.n_headers)
    names = pa.Array.from_buffers(
        pa.string(), nh, [None, _copy(b.header_name_offsets, 4 * (nh + 1)),
                          _copy(b.header_names, int(b.header_name_offsets[nh]) if nh else 0)],
        null_count=0)
    values = pa.Array.from_buffers(
        pa.binary(), nh, [_copy(b.header_value_valid, (nh + 7) // 8),
                          _copy(b.header_value_offsets, 4 * (nh + 1)),
                          _copy(b.header_values, int(b.header_value_offsets[nh]) if nh else 0)])
    entries = pa.StructArray.from_arrays([names, values], fields=HEADER_FIELDS)
    return pa.Array.from_buffers(HEADERS_TYPE, n, [None, _copy(b.header_index, 4 * (n + 1))],
                                 null_count=0, children=[entries])


def record_batch(b: Any, topic: str, include_headers: bool = False) -> pa.RecordBatch:
    """All ``b.n`` rows of an ``rdk_batch`` as a RecordBatch (error rows included).

    When ``b.n_errors`` is non-zero, callers drop the error rows with ``error_mask(b)``.
    """
    n = int(b.n)
    ts_ms = pa.Array.from_buffers(pa.int64(), n, [None, _copy(b.timestamp, 8 * n)], null_count=0)
    ts_type = pa.Array.from_buffers(pa.int8(), n, [None, _copy(b.timestamp_type, n)], null_count=0)
    columns = [
        _binary_column(b, 1, n),
        _binary_column(b, 0, n),
        pa.repeat(pa.scalar(topic, pa.string()), n),
        pa.Array.from_buffers(pa.int32(), n, [None, _copy(b.partition, 4 * n)], null_count=0),
        pa.Array.from_buffers(pa.int64(), n, [None, _copy(b.offset, 8 * n)], null_count=0),
        _micros(ts_ms, topic).view(TIMESTAMP_TYPE),
        # librdkafka: 0 none, 1 create time, 2 log-append time; Spark/Kafka: -1, 0, 1
        pc.subtract(ts_type.cast(pa.int32()), 1),
    ]
    if include_headers:
        columns.append(_headers_column(b, n))
    return pa.RecordBatch.from_arrays(columns, schema=kafka_schema(include_headers))


def _micros(ts_ms: pa.Array, topic: str) -> pa.Array:
    """Milliseconds to the microseconds of the timestamp column; a record timestamp too big
    for them (e.g. one written in nanoseconds) raises ValueError naming it and the topic."""
    try:
        return pc.multiply_checked(ts_ms, 1000)
    except pa.ArrowInvalid:
        worst = max(pc.min(ts_ms).as_py(), pc.max(ts_ms).as_py(), key=abs)
        raise ValueError(f"a record of topic {topic!r} has the timestamp {worst} (ms since the "
                         "epoch), too large for a timestamp column (microseconds); was it "
                         "written in nanoseconds?") from None


def error_mask(b: Any) -> pa.Array:
    """Boolean array: True for the rows of ``b`` that are real messages (err == 0)."""
    n = int(b.n)
    err = pa.Array.from_buffers(pa.int32(), n, [None, _copy(b.err, 4 * n)], null_count=0)
    return pc.equal(err, 0)
