"""Reading partitions through the C batch helper.

``Fetcher`` starts partitions at explicit offsets on one queue (legacy consumer API);
``GroupFetcher`` reads the partitions a consumer group assigns. Both fill an ``rdk_batch``
in one C call per batch: contiguous, Arrow-layout buffers, or (``keep``) Arrow-layout offsets
and bitmaps with each row pointing into the librdkafka message the batch keeps alive, so
whatever reads it (rdk._messages, rdk.arrow) makes the one copy of each payload.
"""

from __future__ import annotations

from typing import Any, cast

from .. import _binding
from ..errors import KafkaError
from . import ERROR_CODES, ffi, lib


class Fetcher:
    """Fetch batches from partitions of a topic (or several: ``topic=`` of start/stop; with
    ``topic=None`` every start/stop names its topic) on a client's own queue. ``keep``: the
    batch keeps librdkafka's messages instead of copying their payloads (released by the
    next fetch or :meth:`close`)."""

    def __init__(self, client: _binding.Client, topic: str | None, max_messages: int = 10000,
                 keep: bool = False) -> None:
        self.client = client
        self.topic = topic
        self.rkt = client.topic(topic) if topic is not None else None
        self.queue = client.new_queue()
        self.batch = ffi.gc(lib.rdk_batch_new(max_messages), lib.rdk_batch_free)
        if self.batch == ffi.NULL:
            raise MemoryError("rdk_batch_new")
        self.batch.keep = int(keep)
        self.max_messages = max_messages
        self.started: set[tuple[str, int]] = set()

    def start(self, partition: int, offset: int, topic: str | None = None) -> None:
        topic = cast(str, self.topic if topic is None else topic)
        rkt = self.rkt if topic == self.topic else self.client.topic(topic)
        if lib.rd_kafka_consume_start_queue(rkt, partition, offset, self.queue) == -1:
            raise _binding.last_error(f"start fetching {topic}[{partition}] at {offset}")
        self.started.add((topic, partition))

    def stop(self, partition: int, topic: str | None = None) -> None:
        topic = cast(str, self.topic if topic is None else topic)
        if (topic, partition) in self.started:
            self.started.discard((topic, partition))
            rkt = self.rkt if topic == self.topic else self.client.topic(topic)
            lib.rd_kafka_consume_stop(rkt, partition)

    def stop_all(self) -> None:
        for t, p in list(self.started):
            self.stop(p, t)

    def fetch(self, timeout_ms: int, max_messages: int | None = None, batch: Any = None) -> Any:
        """One C call: up to max_messages into ``batch`` (default self.batch); returns it.

        A caller rotating its own batches (rdk_batch_new) must fetch into the same batch
        again while ``carry_end > carry_start``: those messages were taken from the queue
        but did not fit (the Arrow 2 GiB limit) and come first in that batch's next fetch.
        """
        b = self.batch if batch is None else batch
        n = lib.rdk_consume_batch(self.queue, timeout_ms, max_messages or self.max_messages, b)
        if n < 0:
            raise MemoryError("rdk_consume_batch: out of memory")
        return b

    def close(self) -> None:
        self.stop_all()
        if self.queue is not None:
            self.client.release_queue(self.queue)
            self.queue = None
        if self.batch is not None:
            ffi.release(self.batch)
            self.batch = None


class GroupFetcher:
    """Fetch batches of a group consumer's assigned partitions on a queue of our own.

    Each partition's queue is forwarded to that queue (:meth:`add`) before the partition
    is assigned, so messages never reach librdkafka's consumer queue, which then carries
    only the group's events (rebalances, errors) for the thread that serves them. The
    forwarding is the application's, so librdkafka keeps it across rebalances.
    """

    def __init__(self, client: _binding.Client, max_messages: int = 10000) -> None:
        self.client = client
        self.queue = client.new_queue()
        self.max_messages = max_messages
        self.batch = None

    def add(self, topic: str, partition: int) -> None:
        """Route ``topic``/``partition``'s messages to this fetcher's queue."""
        pq = lib.rd_kafka_queue_get_partition(self.client.rk, topic.encode(), int(partition))
        if pq == ffi.NULL:
            raise KafkaError(ERROR_CODES["_UNKNOWN_PARTITION"],
                             context=f"partition queue of {topic}[{partition}]")
        try:
            lib.rd_kafka_queue_forward(pq, self.queue)
        finally:
            lib.rd_kafka_queue_destroy(pq)

    def fetch(self, timeout_ms: int, max_messages: int | None = None, batch: Any = None) -> Any:
        """One C call: up to max_messages into ``batch`` (see :meth:`Fetcher.fetch`)."""
        n = lib.rdk_consume_batch(self.queue, timeout_ms, max_messages or self.max_messages, batch)
        if n < 0:
            raise MemoryError("rdk_consume_batch: out of memory")
        return batch

    def stop_all(self) -> None:
        """Nothing to stop: the group's unassign stops fetching."""

    def close(self) -> None:
        if self.queue is not None:
            self.client.release_queue(self.queue)
            self.queue = None


def gather(batch: Any, which: int, out: Any) -> None:
    """``rdk_batch_gather``: copy the kept messages' values (``which`` 0) or keys (1) of a
    filled ``rdk_batch`` into ``out`` (a writable buffer of their total size), in order."""
    lib.rdk_batch_gather(batch, which, ffi.from_buffer(out))


# ---- the consumer's rotating rdk_batch buffers (one C call each, per batch) ----------------


def new_batch(max_messages: int, keep: bool = True) -> Any:
    """A garbage-collected ``rdk_batch`` for up to ``max_messages``; ``keep``: its rows point
    into librdkafka's messages (released by :func:`release_batch`)."""
    b = lib.rdk_batch_new(max_messages)
    if b == ffi.NULL:
        raise MemoryError("rdk_batch_new")
    b.keep = int(keep)
    return ffi.gc(b, lib.rdk_batch_free)


def release_batch(b: Any) -> None:
    """Release the librdkafka messages a kept batch points into (now, not at its next fetch)."""
    lib.rdk_batch_release(b)


def free_batch(b: Any) -> None:
    """Free a batch of :func:`new_batch` now (its destructor runs once)."""
    ffi.release(b)


def batch_parts(b: Any) -> tuple[str, list[tuple[int, int, int, int]]]:
    """A filled batch's topic ("" if librdkafka named none) and per-partition summary:
    (partition, first offset, last offset, count) each."""
    np = b.n_parts
    return ffi.string(b.topic).decode(), list(zip(
        ffi.unpack(b.part_id, np), ffi.unpack(b.part_first, np), ffi.unpack(b.part_last, np),
        ffi.unpack(b.part_count, np), strict=True))


def batch_topic(b: Any) -> str:
    """The topic librdkafka named in a filled batch ("" if none)."""
    return ffi.string(b.topic).decode()


def new_positions(size: int, old: Any = None, n: int = 0) -> Any:
    """An ``int64_t[size]`` of next offsets, -1 each, the first ``n`` copied from ``old``."""
    new = ffi.new("int64_t[]", [-1] * size)
    if n:
        ffi.memmove(new, old, n * ffi.sizeof("int64_t"))
    return new


def track(b: Any, positions: Any, n: int) -> tuple[int, int]:
    """``rdk_batch_track``: move ``positions`` (``int64_t[n]``) past batch ``b``'s messages;
    the (messages seen again, messages skipped) it found."""
    reps = ffi.new("int64_t[2]")
    lib.rdk_batch_track(b, positions, n, reps, reps + 1)
    return int(reps[0]), int(reps[1])


def wake(queue: Any) -> None:
    """End a fetch call waiting on ``queue`` early (``rd_kafka_queue_yield``)."""
    lib.rd_kafka_queue_yield(queue)


def copy_into(out: Any, ptr: Any, nbytes: int) -> None:
    """One memcpy of ``nbytes`` of C memory at ``ptr`` into writable buffer ``out``."""
    ffi.memmove(ffi.from_buffer(out), ptr, nbytes)
