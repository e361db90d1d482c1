"""What a share group delivers: :class:`ShareMessage`, :class:`ShareBatch` (and its
acknowledgement types ACCEPT/RELEASE/REJECT) and :class:`ShareStats` (the rows of a C batch
become ShareMessages in :func:`rdk._binding.messages.share_messages`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

from .._fields import tuple_field
from ..message import Message

__all__ = ["ACCEPT", "REJECT", "RELEASE", "ShareBatch", "ShareMessage", "ShareStats"]

ACCEPT, RELEASE, REJECT = 1, 2, 3
ACK_NAMES = {ACCEPT: "accepted", RELEASE: "released", REJECT: "rejected"}


class ShareMessage(Message):
    """A [rdk.Message][] from a share group, with ``delivery_count`` (1 on the first
    delivery; the broker counts every acquisition, so a released or timed-out record comes
    back with one more). Still a tuple: built at C speed like every consumed Message."""

    __slots__ = ()
    delivery_count = tuple_field(7, "How many times the broker has delivered this record.")
    """How many times the broker has delivered this record (1 on the first delivery)."""

    def __reduce__(self):
        return (_rebuild_share, (tuple(self),))


def _rebuild_share(fields: tuple) -> ShareMessage:
    return tuple.__new__(ShareMessage, fields)


@dataclass
class ShareStats:
    """What ``stats_callback`` gets every ``statistics_interval_ms`` (also ``last_stats``).

    Counts since start: ``delivered`` messages handed to the application, of which
    ``accepted``, ``released`` (come back, delivery count + 1) and ``rejected`` (archived);
    ``redelivered`` (delivered with ``delivery_count > 1``); ``ack_errors`` (acknowledgements
    librdkafka or the broker refused, e.g. INVALID_RECORD_STATE for some acknowledgements
    sent after the lock ran out); ``lock_expired_batches`` (batches whose callback ran
    past the group's acquisition lock, ``share.record.lock.duration.ms``: their records may
    have gone to another delivery, so their acknowledgements are not counted as accepted,
    released or rejected; librdkafka 2.15 reports an error for such late acknowledgements only
    sometimes);
    ``in_flight_batches`` (0 or 1: explicit acknowledgement allows one); ``rdkafka``:
    librdkafka's statistics dict.
    """

    delivered: int = 0
    """Messages handed to the application since start."""
    accepted: int = 0
    """Messages acknowledged as processed."""
    released: int = 0
    """Messages given back (delivered again with ``delivery_count + 1``)."""
    rejected: int = 0
    """Messages refused for good (archived by the broker)."""
    redelivered: int = 0
    """Messages delivered with ``delivery_count > 1``."""
    ack_errors: int = 0
    """Acknowledgements librdkafka or the broker refused."""
    lock_expired_batches: int = 0
    """Batches whose callback ran past the group's acquisition lock."""
    in_flight_batches: int = 0
    """Batches being processed now: 0 or 1."""
    rdkafka: dict = field(default_factory=dict)
    """librdkafka's statistics dict, as of the last statistics interval."""


class ShareBatch:
    """One delivery of a share group: what ``receive_callback(info)`` gets.

    ``messages`` (list of [ShareMessage][rdk.ShareMessage], each with ``delivery_count``).
    ``accept(m)``, ``release(m)`` (deliver again, maybe to another member) and ``reject(m)``
    (never again) settle single messages before the batch ends; what is left is accepted
    when the callback returns (or its Future/awaitable completes) and released when it
    raises. Settling a message twice, or one of another batch: ValueError.

    Args:
        messages: The batch's messages (rdk builds batches; applications receive them).
    """

    __slots__ = ("_done", "_index", "_lock", "_settled", "_types", "messages")

    def __init__(self, messages: list[ShareMessage]) -> None:
        self.messages = messages
        """The batch's [rdk.ShareMessage][]s."""
        self._types = bytearray(len(messages))  # 0: not settled yet, else ACCEPT/RELEASE/REJECT
        self._index: dict[int, int] | None = None  # id(message) -> row (made on first use)
        self._lock = threading.Lock()
        self._done = False
        self._settled = threading.Event()  # batches(): the application moved on

    def accept(self, message: Message) -> None:
        """Acknowledge ``message`` as processed.

        Args:
            message: A message of this batch.

        Raises:
            ValueError: ``message`` is not of this batch, is settled already, or the batch is
                acknowledged already.
        """
        self._set(message, ACCEPT)

    def release(self, message: Message) -> None:
        """Give ``message`` back: the broker delivers it again (delivery count + 1).

        Args:
            message: A message of this batch, to be delivered again.

        Raises:
            ValueError: ``message`` is of another batch or settled already, or the whole
                batch is acknowledged already.
        """
        self._set(message, RELEASE)

    def reject(self, message: Message) -> None:
        """Refuse ``message`` for good: the broker archives it and never delivers it again.

        Args:
            message: The message of this batch to archive.

        Raises:
            ValueError: The batch is acknowledged already, or ``message`` is settled already
                or not a message of this batch.
        """
        self._set(message, REJECT)

    def _set(self, message: Message, kind: int) -> None:
        with self._lock:
            if self._index is None:
                self._index = {id(m): i for i, m in enumerate(self.messages)}
            row = self._index.get(id(message))
            if row is None or self.messages[row] is not message:
                raise ValueError(f"{message!r} is not a message of this batch")
            if self._done:
                raise ValueError(f"{message!r}: this batch is already acknowledged")
            if self._types[row]:
                raise ValueError(f"{message!r} is already {ACK_NAMES[self._types[row]]}")
            self._types[row] = kind

    def _finish(self, default: int) -> bytes:
        """The batch's final types (rows not settled get ``default``); no settling after."""
        with self._lock:
            self._done = True
            return bytes(t or default for t in self._types) if 0 in self._types else bytes(self._types)

    def __len__(self) -> int:
        return len(self.messages)

    def __iter__(self) -> Iterator[ShareMessage]:
        return iter(self.messages)

    def __repr__(self) -> str:
        return f"<ShareBatch {len(self.messages)} messages>"
