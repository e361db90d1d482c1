"""The producer's C calls: rdk's batch produce (``rdk_produce_batch``, one call per
``send()``), its partition balancers (``rdk_balancer_*``), and the flush and purge of a
producer handle. The only callers of those functions; ``rdk.producer`` builds the
``rdk_produce_args`` struct they read.
"""

from __future__ import annotations

from typing import Any

from ..validate import check_timeout
from . import ffi, lib

PURGE_ALL = lib.RD_KAFKA_PURGE_F_QUEUE | lib.RD_KAFKA_PURGE_F_INFLIGHT | lib.RD_KAFKA_PURGE_F_NON_BLOCKING
"""rd_kafka_purge's flags for "everything, queued and in flight, without waiting"."""
# the longest wait librdkafka takes (int32 milliseconds, ~24.8 days): larger timeouts,
# inf included, wait this long, i.e. without a practical limit
MAX_TIMEOUT = 0x7FFFFFFF / 1000


def timeout_seconds(value: Any, name: str = "timeout") -> float:
    """A timeout in seconds (>= 0, not nan); beyond MAX_TIMEOUT (inf too) means MAX_TIMEOUT."""
    return min(check_timeout(value, name), MAX_TIMEOUT)

#: "no partition chosen yet": librdkafka's partitioner (or rdk's balancer) picks one
PARTITION_UA = int(lib.RD_KAFKA_PARTITION_UA)
BALANCE_ROUND_ROBIN = lib.RDK_BALANCE_ROUND_ROBIN
BALANCE_LEAST_BYTES = lib.RDK_BALANCE_LEAST_BYTES


def produce_batch(args: Any) -> int:
    """Enqueue the batch ``args`` (an ``rdk_produce_args *``) describes: how many went in
    (the first that did not has its error in ``args.errs``)."""
    return int(lib.rdk_produce_batch(args))


def flush(rk: Any, timeout_ms: int) -> None:
    """``rd_kafka_flush``: wait up to ``timeout_ms`` for the handle's reports."""
    lib.rd_kafka_flush(rk, timeout_ms)


def purge(rk: Any, flags: int) -> None:
    """``rd_kafka_purge``: drop queued (and in-flight) messages; they are reported failed."""
    lib.rd_kafka_purge(rk, flags)


def new_balancer(kind: int | None, sticky_ms: int, sticky_messages: int) -> Any:
    """An owned (garbage-collected) rdk balancer of ``kind`` (BALANCE_*), or with ``None``
    the sticky one with these settings."""
    balancer = ffi.gc(lib.rdk_balancer_new(lib.RDK_BALANCE_STICKY if kind is None else kind),
                      lib.rdk_balancer_free)
    if balancer == ffi.NULL:
        raise MemoryError("rdk_balancer_new")
    if kind is None:
        lib.rdk_balancer_set_sticky(balancer, sticky_ms, sticky_messages)
    return balancer


#: "no balancer": librdkafka's partitioner picks (``rdk_produce_args.balancer``)
NO_BALANCER = ffi.NULL


def new_args() -> Any:
    """A zeroed ``rdk_produce_args`` for one send (rdk.producer's layout fills it)."""
    return ffi.new("rdk_produce_args *")


def has_keys(args: Any) -> bool:
    """Whether the laid-out send carries keys."""
    return bool(args.keys != ffi.NULL)


def produce_refused(args: Any) -> tuple[int, list[int]]:
    """:func:`produce_batch` with a fresh error array: (how many went in, each message's
    error code, 0 where it went in; empty when all did)."""
    errs = ffi.new("int32_t[]", args.n)
    args.errs = errs
    got = produce_batch(args)
    return got, ([] if got == args.n else ffi.unpack(errs, args.n))


def failed_sends(d: Any, n_failed: int) -> tuple[list[int], list[int]]:
    """A delivery-report summary's failed messages: (send id, error code) columns."""
    return ffi.unpack(d.failed_send, n_failed), ffi.unpack(d.failed_err, n_failed)


def no_offset_topic(d: Any) -> str:
    """The topic of the first message of ``d`` delivered without an offset."""
    return ffi.string(d.no_offset_topic).decode("utf-8", "replace")


def failed_positions(d: Any, n_failed: int) -> tuple[list[int], list[int]]:
    """A delivery-report summary's failed messages: (index in its send, partition) columns."""
    return ffi.unpack(d.failed_index, n_failed), ffi.unpack(d.failed_partition, n_failed)


# ---- views of Python buffers for the rdk_produce_args fields (no copy) ---------------------

#: a non-NULL pointer for an all-empty buffer
EMPTY = ffi.new("char[1]")


def bytes_view(buf: Any) -> Any:
    """A ``char *`` into a bytes-like ``buf`` (kept alive by the caller)."""
    return ffi.from_buffer(buf)


def int32_view(buf: Any) -> Any:
    """An ``int32_t[]`` over ``buf``'s memory (native int32 values)."""
    return ffi.from_buffer("int32_t[]", buf)


def int64_view(buf: Any) -> Any:
    """An ``int64_t[]`` over ``buf``'s memory (native int64 values)."""
    return ffi.from_buffer("int64_t[]", buf)


def flags_view(buf: Any) -> Any:
    """An ``unsigned char[]`` over ``buf``'s memory (one byte flag each)."""
    return ffi.from_buffer("unsigned char[]", buf)


def take_lengths(args: Any, total: int) -> list[int] | None:
    """The int32 value lengths ``args`` carries (the bytes fast path), removed from it
    (random access needs offsets); None when it carries offsets already."""
    if args.value_lengths == ffi.NULL:
        return None
    lengths = ffi.unpack(args.value_lengths, total)
    args.value_lengths = ffi.NULL
    return lengths
