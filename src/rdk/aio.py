"""asyncio fronts of rdk's Producer and Consumer.

``await producer.send(topic, partition, payloads)`` enqueues in one C call (as
``rdk.Producer.send``) and resolves once every message of the call is delivered or
failed, with the call's accounting: ``Delivery(delivered, failures)``. Futures are
resolved from the producer's event thread with ``loop.call_soon_threadsafe``.

``async for batch in consumer`` is ``rdk.Consumer.batches()`` with every wait moved off the
event loop (the loop's default executor): the same fetch pipeline, tracker and committer.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from . import consumer as _consumer
from . import producer as _producer
from .message import Message
from .producer import Delivery, FlushResult, SendResult

__all__ = ["Batch", "Consumer", "Delivery", "FlushResult", "Producer", "SendResult"]


def _settle(fut: asyncio.Future, delivered: int, failures: list) -> None:
    if not fut.done():  # the awaiting task may have been cancelled
        fut.set_result(Delivery(delivered, failures))


class Producer:
    """``rdk.aio.Producer(broker, **options)``: the options of ``rdk.Producer``.

    ``send`` never blocks the event loop: with ``on_queue_full="block"`` the wait for
    room runs in the loop's default executor. ``async with`` stops the producer.

    Args:
        broker: Comma-separated ``host:port`` list.
        **options: The keyword arguments of [rdk.Producer][].

    Raises:
        TypeError: As [rdk.Producer][] (an unknown option included).
        ValueError: As [rdk.Producer][].
        rdk.ConfigError: As [rdk.Producer][].
    """

    def __init__(self, broker: str, **options: Any) -> None:
        self._producer = _producer.Producer(broker, **options)

    @property
    def producer(self) -> _producer.Producer:
        """The underlying synchronous [rdk.Producer][]."""
        return self._producer

    async def send(
        self,
        topic: str,
        partition: int | None,
        payloads: Sequence[Any],
        *,
        timeout: float | None = None,
    ) -> Delivery:
        """Send ``payloads`` and wait until each is delivered or failed.

        Returns ``Delivery(delivered, failures)``; ``failures`` lists ``(rdk.Message,
        KafkaError)`` for every message not delivered, including any the queue refused
        (``on_queue_full="drop"``). ``on_queue_full="raise"`` raises QueueFullError here.

        Args:
            topic: The topic name.
            partition: The partition (>= 0), or None to let the balancer choose.
            payloads: A list of messages, as [rdk.Producer.send][] takes them.
            timeout: Seconds to wait for room or a partition count; None waits without limit.

        Returns:
            The call's [rdk.aio.Delivery][].

        Raises:
            rdk.QueueFullError: The queue is full under ``on_queue_full="raise"``.
            TypeError: As [rdk.Producer.send][].
            ValueError: As [rdk.Producer.send][].
            rdk.KafkaError: As [rdk.Producer.send][].
            rdk.ClosedError: After ``stop()``.
        """
        loop = asyncio.get_running_loop()
        fut: asyncio.Future = loop.create_future()

        def on_delivery(delivered: int, failures: list) -> None:  # on the event thread
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody is waiting any more
                loop.call_soon_threadsafe(_settle, fut, delivered, failures)

        send = functools.partial(self._producer.send, topic, partition, payloads,
                                 timeout=timeout, on_delivery=on_delivery)
        if self._producer.on_queue_full == "block":
            await loop.run_in_executor(None, send)
        else:
            send()
        return await fut

    async def flush(self, timeout: float = 15.0) -> FlushResult:
        """Wait up to ``timeout`` for every enqueued message to settle (``rdk.Producer.flush``):
        returns a ``FlushResult``, the messages not delivered (``.queued`` + ``.failed``).

        Args:
            timeout: Seconds to wait.

        Returns:
            An [rdk.FlushResult][] (0: every message was delivered).

        Raises:
            rdk.ClosedError: After ``stop()``.
            rdk.KafkaError: A current authentication failure.
            TypeError: ``timeout`` is not a number.
            ValueError: ``timeout`` is negative or nan.
        """
        return await asyncio.get_running_loop().run_in_executor(None, self._producer.flush, timeout)

    async def partition_count(self, topic: str, timeout: float = 10.0) -> int:
        """Number of partitions of ``topic`` (KafkaError UNKNOWN_TOPIC_OR_PART if missing).

        Args:
            topic: The topic to look up (on an executor thread, not the event loop).
            timeout: Seconds the metadata request may take.

        Returns:
            The partition count, once the executor's call returned.

        Raises:
            rdk.KafkaError: ``UNKNOWN_TOPIC_OR_PART``, or no metadata within ``timeout``.
            rdk.ClosedError: After ``stop()``.
            TypeError: ``topic`` is not a str, or ``timeout`` not a number.
            ValueError: An illegal topic name, a negative ``timeout``.
        """
        return await asyncio.get_running_loop().run_in_executor(
            None, self._producer.partition_count, topic, timeout)

    async def stop(self, timeout: float = 15.0) -> FlushResult:
        """Drain and close (``rdk.Producer.stop``); returns a ``FlushResult``, the messages not
        delivered (``.queued`` + ``.failed``; 0: all delivered).

        Args:
            timeout: Seconds to wait in all.

        Returns:
            An [rdk.FlushResult][]: the messages not delivered.

        Raises:
            TypeError: ``timeout`` is not a number.
            ValueError: ``timeout`` is negative or nan.
        """
        return await asyncio.get_running_loop().run_in_executor(None, self._producer.stop, timeout)

    async def __aenter__(self) -> Producer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def __repr__(self) -> str:
        return f"<rdk.aio.Producer {self._producer!r}>"


class Batch:
    """A batch from ``rdk.aio.Consumer``: ``rdk.Batch``'s ``messages``, ``topic``, ``offsets``,
    ``repeats`` and ``misses``, and ``await batch.commit()``.

    Args:
        batch: The [rdk.Batch][] it wraps (rdk.aio.Consumer makes them).
    """

    __slots__ = ("_batch",)

    def __init__(self, batch: _consumer.Batch) -> None:
        self._batch = batch

    @property
    def messages(self) -> list[Message]:
        """The batch's [rdk.Message][]s."""
        return self._batch.messages

    @property
    def topic(self) -> str:
        """The topic of the batch's messages."""
        return self._batch.topic

    @property
    def offsets(self) -> dict[int, tuple[int, int]]:
        """``{partition: (first offset, last offset)}`` of the messages in this batch."""
        return self._batch.offsets

    @property
    def repeats(self) -> int:
        """kafka-native's count, as [rdk.Batch][]'s ``repeats``."""
        return self._batch.repeats

    @property
    def misses(self) -> int:
        """kafka-native's count, as [rdk.Batch][]'s ``misses``."""
        return self._batch.misses

    async def commit(self) -> None:
        """Record this batch as processed (``rdk.Batch.commit``: never blocks; the offsets are
        written by the consumer's committer thread). ClosedError once the consumer stopped.

        Raises:
            rdk.ClosedError: The consumer is stopped (the batch is delivered again after a
                restart).
        """
        self._batch.commit()

    def __len__(self) -> int:
        return len(self._batch.messages)

    def __iter__(self) -> Iterator[Message]:
        return iter(self._batch.messages)

    def __repr__(self) -> str:
        return f"<rdk.aio.Batch {self.topic} {len(self)} messages {self.offsets}>"


class Consumer:
    """``rdk.aio.Consumer(broker, topic, offset_directory=None, **options)``: the keyword
    options of ``rdk.Consumer`` (``group_id``, ``num_workers``/``worker_slot``,
    ``stats_callback``, ``start_offset``...), consumed by iteration instead of a callback:

    ```python
    async with rdk.aio.Consumer(brokers, "events", "./offsets") as consumer:
        async for batch in consumer:
            await handle(batch.messages)
            await batch.commit()
    ```

    The consumer starts on the first iteration (the partition lookup runs in the executor).
    A batch's offsets are recorded on ``await batch.commit()`` or when the next batch is
    asked for; leaving ``async with`` (or ``await stop()``) records every committed batch's
    offsets and never an uncommitted one's. A task cancelled while it waits for a batch
    loses nothing: the batch it was waiting for is the next one returned.

    Args:
        broker: Comma-separated ``host:port`` list.
        topic: A topic name, a list of names, or a ``"^regex"`` (group mode).
        offset_directory: Directory of the offset files, as [rdk.Consumer][]'s.
        **options: The keyword arguments of [rdk.Consumer][] except ``receive_callback``.

    Raises:
        TypeError: ``receive_callback`` was given, or as [rdk.Consumer][].
        ValueError: As [rdk.Consumer][].
        rdk.ConfigError: As [rdk.Consumer][].
        rdk.OffsetFileError: As [rdk.Consumer][].
    """

    def __init__(self, broker: str, topic: str | list[str], offset_directory: Any = None,
                 **options: Any) -> None:
        if "receive_callback" in options:
            raise TypeError("rdk.aio.Consumer has no receive_callback: iterate it "
                            "(async for batch in consumer)")
        self._consumer = _consumer.Consumer(broker, topic, offset_directory, **options)
        self._batches: Iterator[_consumer.Batch] | None = None
        self._pending: asyncio.Future | None = None

    @property
    def consumer(self) -> _consumer.Consumer:
        """The underlying synchronous [rdk.Consumer][] (partitions, assignment, last_stats...)."""
        return self._consumer

    def batches(self, timeout: float | None = None) -> AsyncIterator[Batch]:
        """``async for batch in consumer.batches(timeout=5)``: ends when no batch arrives
        within ``timeout`` seconds (None: never), or after ``stop()``.

        Args:
            timeout: Seconds to wait for the next batch before the iteration ends; None waits
                until ``stop()``.

        Returns:
            An async iterator of [rdk.aio.Batch][]; it raises what [rdk.Consumer.batches][]
            raises.
        """
        return self._iterate(timeout)

    def __aiter__(self) -> AsyncIterator[Batch]:
        return self._iterate(None)

    async def _iterate(self, timeout: float | None) -> AsyncIterator[Batch]:
        loop = asyncio.get_running_loop()
        if self._batches is None:
            self._batches = await loop.run_in_executor(None, self._consumer.batches, timeout)
        while True:
            if self._pending is None:
                self._pending = loop.run_in_executor(None, next, self._batches, None)
            # shielded: a cancelled wait keeps the fetched batch for the next call
            batch = await asyncio.shield(self._pending)
            self._pending = None
            if batch is None:
                return
            yield Batch(batch)

    def pause(self) -> None:
        """[rdk.Consumer.pause][]: stop fetching and delivering (memory stays bounded).

        Raises:
            rdk.ClosedError: The consumer is stopped.
        """
        self._consumer.pause()

    def resume(self) -> None:
        """[rdk.Consumer.resume][]: fetch and deliver again after ``pause()``.

        Raises:
            rdk.ClosedError: The consumer is stopped.
        """
        self._consumer.resume()

    @property
    def paused(self) -> bool:
        """True between ``pause()`` and ``resume()``."""
        return self._consumer.paused

    def seek(self, topic_or_partition: int | tuple[str, int], offset: int | str) -> None:
        """[rdk.Consumer.seek][]: fetch a partition again from ``offset``.

        Args:
            topic_or_partition: A partition number (one-topic consumer) or a
                ``(topic, partition)`` pair.
            offset: An int >= 0, or ``"earliest"``/``"latest"``.

        Raises:
            ValueError: The partition is not assigned, or a bad ``offset``.
            TypeError: As [rdk.Consumer.seek][].
            RuntimeError: The consumer was not started.
            rdk.ClosedError: The consumer is stopped.
        """
        self._consumer.seek(topic_or_partition, offset)

    @property
    def error(self) -> Any:
        """The KafkaError that stopped the consumer, if any."""
        return self._consumer.error

    async def stop(self, timeout: float = 30.0) -> None:
        """Stop (``rdk.Consumer.stop``) without blocking the loop: committed batches' offsets
        are written, uncommitted ones are read again after a restart.

        Args:
            timeout: Seconds to wait in all.

        Raises:
            TypeError: ``timeout`` is not a number.
            ValueError: ``timeout`` is negative or nan.
        """
        await asyncio.get_running_loop().run_in_executor(None, self._consumer.stop, timeout)

    async def __aenter__(self) -> Consumer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def __repr__(self) -> str:
        return f"<rdk.aio.Consumer {self._consumer!r}>"
