"""librdkafka's transaction API: the only caller of the ``rd_kafka_*_transaction(s)``
calls and of the consumer group metadata functions.

Each transaction call raises rdk.TransactionError (code, text, fatal, retriable,
txn_requires_abort) named after the call; a group metadata pointer is owned by the caller
(garbage-collected, or freed at once with ``release``).
"""

from __future__ import annotations

from typing import Any

from ..errors import TransactionError
from . import ffi, lib


def raise_for_error(error: Any, context: str) -> None:
    """Raise TransactionError for a non-NULL ``rd_kafka_error_t *`` (destroying it)."""
    if error == ffi.NULL:
        return
    try:
        failure = TransactionError(
            int(lib.rd_kafka_error_code(error)),
            ffi.string(lib.rd_kafka_error_string(error)).decode(errors="replace"),
            fatal=bool(lib.rd_kafka_error_is_fatal(error)),
            retriable=bool(lib.rd_kafka_error_is_retriable(error)),
            txn_requires_abort=bool(lib.rd_kafka_error_txn_requires_abort(error)),
            context=context,
        )
    finally:
        lib.rd_kafka_error_destroy(error)
    raise failure


def init_transactions(rk: Any, timeout_ms: int) -> None:
    raise_for_error(lib.rd_kafka_init_transactions(rk, timeout_ms), "init_transactions")


def begin_transaction(rk: Any) -> None:
    raise_for_error(lib.rd_kafka_begin_transaction(rk), "begin_transaction")


def send_offsets_to_transaction(rk: Any, partitions: Any, group_metadata: Any,
                                timeout_ms: int) -> None:
    """``partitions``: an ``rd_kafka_topic_partition_list_t`` of next offsets."""
    raise_for_error(lib.rd_kafka_send_offsets_to_transaction(rk, partitions, group_metadata,
                                                             timeout_ms),
                    "send_offsets_to_transaction")


def commit_transaction(rk: Any, timeout_ms: int) -> None:
    raise_for_error(lib.rd_kafka_commit_transaction(rk, timeout_ms), "commit_transaction")


def abort_transaction(rk: Any, timeout_ms: int) -> None:
    raise_for_error(lib.rd_kafka_abort_transaction(rk, timeout_ms), "abort_transaction")


def _owned(ptr: Any) -> Any:
    if ptr == ffi.NULL:
        raise MemoryError("librdkafka could not allocate the group metadata")
    return ffi.gc(ptr, lib.rd_kafka_consumer_group_metadata_destroy)


def group_metadata_new(group_id: str) -> Any:
    """An owned ``rd_kafka_consumer_group_metadata_t *`` of ``group_id`` (no member id,
    generation -1)."""
    return _owned(lib.rd_kafka_consumer_group_metadata_new(group_id.encode()))


def consumer_group_metadata(rk: Any) -> Any:
    """The owned group metadata of consumer handle ``rk``; None if it has no ``group.id``."""
    ptr = lib.rd_kafka_consumer_group_metadata(rk)
    return None if ptr == ffi.NULL else _owned(ptr)


def release(ptr: Any) -> None:
    """Free an owned pointer now (its destructor runs once)."""
    ffi.release(ptr)
