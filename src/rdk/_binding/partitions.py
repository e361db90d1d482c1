"""librdkafka operations on topic-partitions that several features share.

Watermarks (ListOffsets, the cached Fetch high watermark, and the "true" high watermark
confirmed by a short fetch), ``rd_kafka_topic_partition_list_t`` building and reading, and
the errors inside a fetched ``rdk_batch``. Admin, the Consumer, the offset stores and the
Spark planner and reader call these instead of writing the C calls again.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from ..errors import KafkaError
from . import ERROR_CODES, Client, check, ffi, lib
from .fetch import Fetcher

__all__ = [
    "OFFSET_BEGINNING",
    "OFFSET_END",
    "OFFSET_INVALID",
    "PARTITION_EOF",
    "batch_errors",
    "cached_high_watermark",
    "error_text",
    "fetched_high_watermarks",
    "listed_watermarks",
    "partition_list",
    "partition_list_offsets",
    "query_watermarks",
    "true_watermarks",
]

PARTITION_EOF = ERROR_CODES["_PARTITION_EOF"]
#: librdkafka's logical offsets: the first, the next to be written, "none"
OFFSET_BEGINNING = int(lib.RD_KAFKA_OFFSET_BEGINNING)
OFFSET_END = int(lib.RD_KAFKA_OFFSET_END)
OFFSET_INVALID = int(lib.RD_KAFKA_OFFSET_INVALID)
_TIMED_OUT = ERROR_CODES["_TIMED_OUT"]


def _ms(timeout: float) -> int:
    return max(0, int(timeout * 1000))


# ---- watermarks ----------------------------------------------------------------------


_RETRY_INTERVAL = 0.1  # seconds between asking again after a retriable answer
_EARLIEST, _LATEST = -2, -1  # ListOffsets' timestamps for the first and the next offset


def query_watermarks(client: Client, topic: str, partition: int, timeout: float) -> tuple[int, int]:
    """(low, high) of one partition from the broker's ListOffsets answers: see
    :func:`listed_watermarks`."""
    return listed_watermarks(client, topic, [partition], timeout)[partition]


def listed_watermarks(client: Client, topic: str, partitions: Iterable[int],
                      timeout: float) -> dict[int, tuple[int, int]]:
    """(low, high) per partition from the broker's ListOffsets answers (earliest, then
    latest; the smaller of the two is low): two lookups for all the partitions, one request
    per leader each. A retriable answer (NOT_LEADER_FOR_PARTITION for a moment after a topic
    is created or while its leader moves) is asked again until ``timeout`` has passed; then
    it raises.

    ``rd_kafka_offsets_for_times``, not ``rd_kafka_query_watermark_offsets``: after one of
    that call's two requests was answered with an error, its next call could report the
    high watermark as the low one, without an error (librdkafka 2.15.1; seen on the mock
    cluster with NOT_LEADER_FOR_PARTITION: (5, 5) where (0, 5) is right), and it takes one
    partition per call."""
    parts = list(dict.fromkeys(int(p) for p in partitions))
    if not parts:
        return {}
    deadline = time.monotonic() + timeout
    what = f"watermarks of {topic}"
    while True:
        try:
            earliest, latest = (
                offsets_for_times(client.rk, [(topic, p, spec) for p in parts],
                                  _ms(deadline - time.monotonic()), what, what)
                for spec in (_EARLIEST, _LATEST))
            out = {}
            for p in parts:
                a, b = earliest[(topic, p)], latest[(topic, p)]
                out[p] = (min(a, b), max(a, b))
            return out
        except KafkaError as e:
            if not e.retriable or e.code == _TIMED_OUT or \
                    deadline - time.monotonic() - _RETRY_INTERVAL <= 0:
                raise
        time.sleep(_RETRY_INTERVAL)


def cached_high_watermark(client: Client, topic: str, partition: int) -> int | None:
    """The high watermark of the last Fetch response for the partition (None if unknown)."""
    lo = ffi.new("int64_t *")
    hi = ffi.new("int64_t *")
    if lib.rd_kafka_get_watermark_offsets(client.rk, topic.encode(), int(partition), lo, hi):
        return None
    return int(hi[0]) if hi[0] >= 0 else None


def fetched_high_watermarks(
    client: Client, topic: str, marks: Mapping[int, tuple[int, int]], timeout: float
) -> dict[int, int]:
    """The Fetch response's high watermark of each partition, after a short fetch from just
    below its ListOffsets ``(low, high)`` in ``marks``.

    ``client`` must be a consumer handle with ``enable.partition.eof=true``.
    """
    fetcher = Fetcher(client, topic, max_messages=1000)
    pending = set(marks)
    try:
        for p, (lo, hi) in marks.items():
            fetcher.start(p, max(lo, hi - 1))
        deadline = time.monotonic() + timeout
        while pending:
            if time.monotonic() > deadline:
                raise KafkaError(_TIMED_OUT, context=(
                    f"fetch high watermarks of {topic} {sorted(pending)}"))
            b = fetcher.fetch(100)
            for i in range(b.n_parts):
                pending.discard(int(b.part_id[i]))
            for i, code in batch_errors(b):
                if code == PARTITION_EOF:
                    pending.discard(int(b.partition[i]))
                else:
                    raise KafkaError(code, error_text(b, i),
                                     context=f"fetch {topic}[{b.partition[i]}]")
    finally:
        fetcher.close()
    out = {}
    lo = ffi.new("int64_t *")
    hi = ffi.new("int64_t *")
    for p in marks:
        check(lib.rd_kafka_get_watermark_offsets(client.rk, topic.encode(), p, lo, hi),
              f"cached watermarks of {topic}[{p}]")
        out[p] = int(hi[0])
    return out


def true_watermarks(
    client: Client, topic: str, partitions: Iterable[int], timeout: float,
    fetch_client: Client | None = None,
) -> dict[int, tuple[int, int]]:
    """(low, high) per partition, right on every broker.

    ListOffsets(latest) is not trusted alone: Tansu answers the last record batch's base
    offset + 1. Where a partition holds data, a short fetch from just below that answer
    returns the Fetch response's high watermark, which is right everywhere.
    ``fetch_client`` (default ``client``) must be a consumer with enable.partition.eof=true.
    """
    out = listed_watermarks(client, topic, partitions, timeout)
    nonempty = {p: m for p, m in out.items() if m[1] > m[0]}
    if nonempty:
        fetched = fetched_high_watermarks(fetch_client or client, topic, nonempty, timeout)
        for p, hi in fetched.items():
            lo, listed = out[p]
            out[p] = (lo, max(listed, hi))
    return out


# ---- topic-partition lists ---------------------------------------------------------------


def partition_list(items: Iterable[tuple[str, int, int]]) -> Any:
    """A garbage-collected ``rd_kafka_topic_partition_list_t`` of (topic, partition, offset)."""
    entries = list(items)
    tpl = ffi.gc(lib.rd_kafka_topic_partition_list_new(max(1, len(entries))),
                 lib.rd_kafka_topic_partition_list_destroy)
    for topic, partition, offset in entries:
        lib.rd_kafka_topic_partition_list_add(tpl, topic.encode(), int(partition)).offset = offset
    return tpl


def partition_list_offsets(tpl: Any, context: str) -> dict[tuple[str, int], int]:
    """{(topic, partition): offset} of a list librdkafka filled in; the first element error
    raises KafkaError naming ``context`` and the topic-partition."""
    out = {}
    for i in range(tpl.cnt):
        el = tpl.elems[i]
        topic = ffi.string(el.topic).decode()
        if el.err:
            raise KafkaError(el.err, context=f"{context} {topic}[{el.partition}]")
        out[(topic, int(el.partition))] = int(el.offset)
    return out



def offsets_for_times(rk: Any, stamps: Iterable[tuple[str, int, int]], timeout_ms: int,
                      context: str, list_context: str) -> dict[tuple[str, int], int]:
    """``rd_kafka_offsets_for_times`` of (topic, partition, timestamp ms): {(topic, partition):
    the first offset at or after it, -1 where there is none}."""
    tpl = partition_list(stamps)
    check(lib.rd_kafka_offsets_for_times(rk, tpl, timeout_ms), context)
    return partition_list_offsets(tpl, list_context)


def committed(rk: Any, topic: str, partitions: Iterable[int], timeout_ms: int,
              context: str) -> dict[tuple[str, int], int]:
    """``rd_kafka_committed``: the group's committed (next) offsets of ``topic``'s
    ``partitions``, negative where there is none."""
    tpl = partition_list((topic, p, lib.RD_KAFKA_OFFSET_INVALID) for p in partitions)
    check(lib.rd_kafka_committed(rk, tpl, timeout_ms), context)
    return partition_list_offsets(tpl, context)


def commit(rk: Any, next_offsets: Iterable[tuple[str, int, int]], context: str) -> None:
    """``rd_kafka_commit`` (synchronous) of (topic, partition, next offset); a partition the
    broker refused raises KafkaError naming it."""
    tpl = partition_list(next_offsets)
    check(lib.rd_kafka_commit(rk, tpl, 0), context)
    partition_list_offsets(tpl, context)

# ---- errors in a fetched batch ----------------------------------------------------------


def batch_errors(b: Any) -> Iterator[tuple[int, int]]:
    """(index, error code) of every message of an ``rdk_batch`` that carries an error."""
    if not b.n_errors:
        return
    err = b.err
    for i in range(b.n):
        if err[i]:
            yield i, int(err[i])


def error_text(b: Any, i: int) -> str:
    """The error text librdkafka put in the payload of errored message ``i``."""
    start, end = b.value_offsets[i], b.value_offsets[i + 1]
    if end == start:
        return ""
    text = b.value_ptr[i] if b.keep else b.values + start
    return ffi.unpack(text, end - start).decode(errors="replace")
