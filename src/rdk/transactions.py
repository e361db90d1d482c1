"""Transactions: the consumer group metadata a transaction commits offsets for, and the
checks and conversions the transactional producer calls share.

``GroupMetadata`` owns one ``rd_kafka_consumer_group_metadata_t`` taken from a group-mode
consumer (``Consumer.group_metadata()``); ``Producer.send_offsets_to_transaction(offsets,
group_metadata)`` hands it to the transaction coordinator so the consumed offsets commit
atomically with the produced messages (consume-transform-produce, exactly once).
``TransactionalOffsetStore`` is the offset store of such a consumer: it starts from the
group's committed offsets and leaves committing them to the transactions.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, MutableMapping
from typing import Any

from ._binding import ERROR_CODES, Client, ffi, lib
from .errors import ClosedError, KafkaError, TransactionError
from .offsets import BrokerOffsetStore
from .validate import check_topic_name

__all__ = ["GroupMetadata", "TransactionalOffsetStore", "check_offsets", "check_partitions_exist",
           "new_partition_list", "raise_for_error", "transaction_error"]

_INT32_MAX = 0x7FFFFFFF
_INT64_MAX = 2**63 - 1
_UNKNOWN_TOPIC_OR_PART = ERROR_CODES["UNKNOWN_TOPIC_OR_PART"]
_METADATA_RECHECK = 0.5  # s: a partition missing from metadata is looked up once more


class GroupMetadata:
    """A consumer's group metadata (group id, member id, generation) at the time it was taken.

    Get it from a group-mode consumer with ``Consumer.group_metadata()`` after the consumer
    has its assignment, and pass it to ``Producer.send_offsets_to_transaction()``. It owns
    its C object: ``close()`` frees it (idempotent; also a context manager, and freed when
    collected if never closed).

    Raises:
        TypeError: When constructed directly.
    """

    __slots__ = ("__weakref__", "_lock", "_ptr")
    _lock: threading.Lock
    _ptr: Any  # the owned rd_kafka_consumer_group_metadata_t *, None once closed

    def __init__(self) -> None:
        raise TypeError("GroupMetadata is not created directly: use Consumer.group_metadata()")

    @classmethod
    def for_group(cls, group_id: str) -> GroupMetadata:
        """The metadata of ``group_id`` as a producer that is no member of it commits with
        (no member id, generation -1): the group coordinator accepts such transactional
        commits while the group has no members. Used to keep a producer's own progress in a
        group (the Spark exactly-once sink does).

        Args:
            group_id: The consumer group.

        Raises:
            TypeError: ``group_id`` is not a str.
            ValueError: An empty ``group_id``, or one librdkafka would change (spaces at
                either end, a NUL).
        """
        if not isinstance(group_id, str):
            raise TypeError(f"group_id must be str, got {type(group_id).__name__}")
        if not group_id or group_id != group_id.strip() or "\0" in group_id:
            raise ValueError(f"group_id {group_id!r} must be non-empty, without spaces at "
                             "either end or NUL characters")
        return cls._adopt(lib.rd_kafka_consumer_group_metadata_new(group_id.encode()))

    @classmethod
    def _from_client(cls, client: Any) -> GroupMetadata:
        """The group metadata of ``client`` (an ``rdk._binding.Client`` of a consumer handle
        with ``group.id`` set); ValueError if the handle has no group."""
        client.ensure_open()
        ptr = lib.rd_kafka_consumer_group_metadata(client.rk)
        if ptr == ffi.NULL:
            raise ValueError("group metadata needs a consumer with a group id (group.id); "
                             "this client has none")
        return cls._adopt(ptr)

    @classmethod
    def _adopt(cls, ptr: Any) -> GroupMetadata:
        if ptr == ffi.NULL:
            raise MemoryError("librdkafka could not allocate the group metadata")
        self = cls.__new__(cls)
        self._lock = threading.Lock()
        self._ptr = ffi.gc(ptr, lib.rd_kafka_consumer_group_metadata_destroy)
        return self

    @property
    def closed(self) -> bool:
        """True after ``close()``."""
        return self._ptr is None

    def _pointer(self) -> Any:
        """The C pointer for a call that runs while the caller holds ``self._lock``."""
        if self._ptr is None:
            raise ClosedError("this GroupMetadata is closed")
        return self._ptr

    def close(self) -> None:
        """Free the C object now (idempotent)."""
        with self._lock:
            ptr, self._ptr = self._ptr, None
        if ptr is not None:
            ffi.release(ptr)  # runs the destructor given to ffi.gc, once

    def __enter__(self) -> GroupMetadata:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<rdk.GroupMetadata {'closed' if self._ptr is None else 'open'}>"


class TransactionalOffsetStore(BrokerOffsetStore):
    """The ``offset_store`` of a consume-transform-produce consumer: ``read()`` gives the
    group's committed offsets (what committed transactions wrote), ``commit()`` does nothing,
    since ``Producer.send_offsets_to_transaction()`` commits them with the transaction.

    ``rdk.Consumer(broker, topic, None, transform, group_id="g",
    offset_store=TransactionalOffsetStore("g"))``: the consumer then never commits offsets
    of messages whose outputs a failed transaction discarded.

    Args:
        group_id: The consumer group whose committed offsets hold the progress.
        broker: Comma-separated ``host:port`` list. None: given by the Consumer (``bind``).
        topic: The topic. None: given by the Consumer (``bind``); give both or neither.
        driver_options: librdkafka properties of the store's client.
        timeout: Seconds ``read()`` keeps asking a coordinator that is not ready yet.

    Raises:
        TypeError: ``group_id`` is not a str, only one of ``broker``/``topic``, or another
            argument of the wrong type.
        ValueError: An empty ``group_id`` or one librdkafka would rewrite (leading white
            space, a NUL), a negative ``timeout``, a malformed ``broker`` or topic name.
        rdk.ConfigError: A property librdkafka refuses.
    """

    def commit(self, offsets: Mapping[int, int]) -> None:
        """Nothing: the transaction commits the offsets (send_offsets_to_transaction).

        Args:
            offsets: Ignored.
        """


def check_offsets(offsets: Any, what: str = "offsets") -> dict[tuple[str, int], int]:
    """``{(topic, partition): next_offset}``, every key and value checked; a copy.

    ``next_offset`` is the offset of the next message to consume (last processed + 1),
    as Kafka commits it.
    """
    if not isinstance(offsets, Mapping):
        raise TypeError(f"{what} must be a dict {{(topic, partition): next_offset}}, "
                        f"got {type(offsets).__name__}")
    out: dict[tuple[str, int], int] = {}
    for key, offset in offsets.items():
        if not (isinstance(key, tuple) and len(key) == 2):
            raise TypeError(f"{what}: key {key!r} must be a (topic, partition) tuple")
        topic, partition = key
        check_topic_name(topic, f"{what}: topic of key {key!r}")
        if not isinstance(partition, int) or isinstance(partition, bool):
            raise TypeError(f"{what}: partition of key {key!r} must be int, "
                            f"got {type(partition).__name__}")
        if not 0 <= partition <= _INT32_MAX:
            raise ValueError(f"{what}: partition of key {key!r} must be in 0..{_INT32_MAX}")
        if not isinstance(offset, int) or isinstance(offset, bool):
            raise TypeError(f"{what}[{key!r}] must be an int offset, got {type(offset).__name__}")
        if not 0 <= offset <= _INT64_MAX:
            raise ValueError(f"{what}[{key!r}] must be an offset >= 0, got {offset}")
        out[(topic, partition)] = offset
    return out


def new_partition_list(offsets: Mapping[tuple[str, int], int]) -> Any:
    """A checked offsets dict as an ``rd_kafka_topic_partition_list_t`` (freed when collected)."""
    parts = ffi.gc(lib.rd_kafka_topic_partition_list_new(max(1, len(offsets))),
                   lib.rd_kafka_topic_partition_list_destroy)
    for (topic, partition), offset in offsets.items():
        lib.rd_kafka_topic_partition_list_add(parts, topic.encode(), partition).offset = offset
    return parts


def transaction_error(error: Any, context: str) -> TransactionError:
    """A TransactionError from an ``rd_kafka_error_t *`` (which this call destroys)."""
    try:
        return TransactionError(
            int(lib.rd_kafka_error_code(error)),
            ffi.string(lib.rd_kafka_error_string(error)).decode(errors="replace"),
            fatal=bool(lib.rd_kafka_error_is_fatal(error)),
            retriable=bool(lib.rd_kafka_error_is_retriable(error)),
            txn_requires_abort=bool(lib.rd_kafka_error_txn_requires_abort(error)),
            context=context,
        )
    finally:
        lib.rd_kafka_error_destroy(error)


def raise_for_error(error: Any, context: str) -> None:
    """Raise TransactionError for a non-NULL ``rd_kafka_error_t *`` (destroying it)."""
    if error != ffi.NULL:
        raise transaction_error(error, context)


def _missing(offsets: Mapping[tuple[str, int], int],
             known: MutableMapping[str, int]) -> list[tuple[str, int]]:
    return [(t, p) for t, p in offsets if p >= known.get(t, 0)]


def _learn(client: Client, known: MutableMapping[str, int], timeout: float) -> bool:
    """Record every topic's partition count from one all-topics metadata request (never a
    per-topic one: that would let a producer auto-create a mistyped topic); False if the
    request failed."""
    try:
        topics = client.metadata(None, timeout)
    except KafkaError:
        return False
    for t in topics:
        if t.error is None:
            known[t.name] = max(known.get(t.name, 0), len(t.partitions))
    return True


def check_partitions_exist(client: Client, offsets: Mapping[tuple[str, int], int],
                           known: MutableMapping[str, int], deadline: float,
                           context: str = "send_offsets_to_transaction") -> None:
    """TransactionError UNKNOWN_TOPIC_OR_PART naming every (topic, partition) of ``offsets``
    that the cluster's metadata does not have, before librdkafka is asked.

    librdkafka's ``rd_kafka_send_offsets_to_transaction`` takes the group coordinator's
    UNKNOWN_TOPIC_OR_PART for a transient state and retries every 500 ms until its timeout,
    then fails the transaction (abortable); a mistyped topic or partition therefore blocked
    for the whole timeout. ``known`` ({topic: partition count}, the caller's cache) skips the
    request for partitions already seen: partitions are never removed from a topic. A
    partition missing from the first answer is looked up once more (0.5 s later: a topic
    just created may not be in every broker's metadata yet). When metadata cannot be had
    before ``deadline`` (time.monotonic()), nothing is refused: librdkafka decides.
    """
    missing = _missing(offsets, known)
    for attempt in range(2):
        if not missing:
            return
        if attempt:
            time.sleep(min(_METADATA_RECHECK, max(0.0, deadline - time.monotonic())))
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not _learn(client, known, remaining):
            return
        missing = _missing(offsets, known)
    if missing:
        names = ", ".join(
            f"{t!r} partition {p} (the topic has {known[t]} partitions)" if t in known
            else f"{t!r} partition {p} (no such topic)" for t, p in sorted(missing))
        raise TransactionError(
            _UNKNOWN_TOPIC_OR_PART,
            f"offsets name partitions the cluster does not have: {names}; nothing was sent "
            "and the transaction is unchanged",
            retriable=False, context=context)
