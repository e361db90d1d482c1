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
