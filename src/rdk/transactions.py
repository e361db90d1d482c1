"""Transactions: the consumer group metadata a transaction commits offsets for, and the
offset store of a consume-transform-produce consumer.

``GroupMetadata`` owns one ``rd_kafka_consumer_group_metadata_t`` taken from a group-mode
consumer (``Consumer.group_metadata()``); ``Producer.send_offsets_to_transaction(offsets,
group_metadata)`` hands it to the transaction coordinator so the consumed offsets commit
atomically with the produced messages (consume-transform-produce, exactly once).
``TransactionalOffsetStore`` is the offset store of such a consumer: it starts from the
group's committed offsets and leaves committing them to the transactions.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from ._binding import transactions as _txn
from .errors import ClosedError
from .offsets import BrokerOffsetStore

__all__ = ["GroupMetadata", "TransactionalOffsetStore"]


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
        return cls._adopt(_txn.group_metadata_new(group_id))

    @classmethod
    def _adopt(cls, ptr: Any) -> GroupMetadata:
        """Owner of ``ptr``, an owned (garbage-collected) group metadata pointer."""
        self = cls.__new__(cls)
        self._lock = threading.Lock()
        self._ptr = ptr
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
            _txn.release(ptr)  # its destructor runs once

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


def group_metadata_of(client: Any) -> GroupMetadata:
    """The group metadata of ``client`` (an ``rdk._binding.Client`` of a consumer handle with
    ``group.id`` set), for ``Consumer.group_metadata()``; ValueError if it has no group."""
    client.ensure_open()
    ptr = _txn.consumer_group_metadata(client.rk)
    if ptr is None:
        raise ValueError("group metadata needs a consumer with a group id (group.id); "
                         "this client has none")
    return GroupMetadata._adopt(ptr)


@contextmanager
def borrowed_pointer(group_metadata: GroupMetadata) -> Iterator[Any]:
    """The metadata's C pointer for a call that runs inside the ``with``: ``close()`` waits
    until the block ends; ClosedError if it is closed."""
    with group_metadata._lock:
        yield group_metadata._pointer()
