"""Batch: one delivery of a consumer (its messages come from
:func:`rdk._binding.messages.build_messages`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from ..message import Message

__all__ = ["Batch", "Parts"]

#: (partition, first offset, last offset, message count) per partition of a batch
Parts = list[tuple[int, int, int, int]]


class Batch:
    """One delivery: what ``receive_callback(info)`` gets and ``batches()`` yields.

    ``messages`` (list of [rdk.Message][]), ``repeats`` and ``misses``
    (kafka-native's counts), ``topic``, ``offsets`` (``{partition: (first, last)}``).
    ``commit()`` records the batch's offsets now (the iterator interface; in a callback it
    settles the batch early); ``commit_through()`` records only a processed prefix.
    ``undecodable``: with a ``value_deserializer``/``key_deserializer``, the ``(raw
    rdk.Message, DeserializationError)`` of records that could not be decoded (they are not in
    ``messages``; the batch's offsets still cover them); otherwise empty.

    Args:
        messages: The batch's messages.
        repeats: kafka-native's count of repeated messages.
        misses: kafka-native's count of missed messages.
        topic: The topic of the messages.
        parts: ``(partition, first offset, last offset, count)`` per partition.
        settle: The consumer's settlement hook; None: ``commit()`` does nothing.

    rdk builds batches; applications receive them.
    """

    __slots__ = ("_entries", "_parts", "_settle", "messages", "misses", "repeats", "topic", "undecodable")

    def __init__(self, messages: list[Message], repeats: int, misses: int, topic: str,
                 parts: Parts, settle: Callable[..., None] | None = None) -> None:
        self.messages, self.topic = messages, topic
        """``messages``: the batch's [rdk.Message][]s; ``topic``: their topic."""
        self.repeats, self.misses = repeats, misses  # kafka-native's counts
        self._parts, self._settle = parts, settle
        self._entries: Any = None  # the settlement tracker's bookkeeping (None: not tracked yet)
        self.undecodable: Sequence[tuple[Message, Any]] = ()
        """``(raw rdk.Message, DeserializationError)`` of records a deserializer could not decode."""

    @property
    def offsets(self) -> dict[int, tuple[int, int]]:
        """``{partition: (first offset, last offset)}`` of the messages in this batch."""
        return {p: (first, last) for p, first, last, _ in self._parts}

    def commit(self) -> None:
        """Record this batch as processed (its offsets are stored once earlier ones are).

        Raises ClosedError once its consumer is stopped (nothing can be recorded then: the
        batch is delivered again after a restart). Committing a batch twice is harmless.

        Raises:
            rdk.ClosedError: The consumer is stopped, or in a forked child.
        """
        if self._settle is not None:
            self._settle(self, True, None, True)

    def commit_through(self, offsets: Mapping[int, int]) -> None:
        """Record this batch as processed only through ``{partition: last processed offset}``:
        for a consumer that stops partway through a batch (``rdk consume --count`` does).

        A partition left out of ``offsets`` records nothing of this batch, and nothing after
        the given offsets (in this batch or a later one) is recorded in this run: stop the
        consumer after it; the rest is delivered again after a restart.

        Args:
            offsets: ``{partition: last processed offset}`` for partitions of this batch.

        Raises:
            TypeError: ``offsets`` is not a mapping of int partitions to int offsets.
            ValueError: ``offsets`` names a partition this batch does not hold.
        """
        if not isinstance(offsets, Mapping):
            raise TypeError("offsets must be a mapping {partition: last processed offset}, "
                            f"got {type(offsets).__name__}")
        held = self.offsets
        for partition, offset in offsets.items():
            if partition not in held:
                raise ValueError(f"offsets: partition {partition!r} is not in this batch "
                                 f"(it holds {sorted(held)})")
            if not isinstance(offset, int) or isinstance(offset, bool):
                raise TypeError(f"offsets[{partition}] must be an int offset, "
                                f"got {type(offset).__name__}")
        if self._settle is not None:
            self._settle(self, True, dict(offsets))

    def __len__(self) -> int:
        return len(self.messages)

    def __iter__(self) -> Iterator[Message]:
        return iter(self.messages)

    def __repr__(self) -> str:
        return (f"<Batch {self.topic} {len(self.messages)} messages {self.offsets} "
                f"repeats={self.repeats} misses={self.misses}>")
