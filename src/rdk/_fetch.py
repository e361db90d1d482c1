"""Reading explicit partitions through the C batch helper (legacy consumer API).

``Fetcher`` starts partitions at explicit offsets on one queue and fills an
``rdk_batch`` (contiguous, Arrow-layout buffers) in one C call per batch.
"""

from __future__ import annotations

from typing import Any

from . import _binding
from ._binding import ffi, lib


class Fetcher:
    """Fetch batches from partitions of one topic on a client's own queue."""

    def __init__(self, client: _binding.Client, topic: str, max_messages: int = 10000) -> None:
        self.client = client
        self.topic = topic
        self.rkt = client.topic(topic)
        self.queue = client.new_queue()
        self.batch = ffi.gc(lib.rdk_batch_new(max_messages), lib.rdk_batch_free)
        if self.batch == ffi.NULL:
            raise MemoryError("rdk_batch_new")
        self.max_messages = max_messages
        self.started: set[int] = set()

    def start(self, partition: int, offset: int) -> None:
        if lib.rd_kafka_consume_start_queue(self.rkt, partition, offset, self.queue) == -1:
            raise _binding.last_error(f"start fetching {self.topic}[{partition}] at {offset}")
        self.started.add(partition)

    def stop(self, partition: int) -> None:
        if partition in self.started:
            self.started.discard(partition)
            lib.rd_kafka_consume_stop(self.rkt, partition)

    def stop_all(self) -> None:
        for p in list(self.started):
            self.stop(p)

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
