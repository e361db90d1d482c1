"""asyncio front of rdk's Producer.

``await producer.send(topic, partition, payloads)`` enqueues in one C call (as
``rdk.Producer.send``) and resolves once every message of the call is delivered or
failed, with the call's accounting: ``Delivery(delivered, failures)``. Futures are
resolved from the producer's event thread with ``loop.call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Sequence
from typing import Any

from . import producer as _producer
from .producer import Delivery, FlushResult, SendResult

__all__ = ["Delivery", "FlushResult", "Producer", "SendResult"]


def _settle(fut: asyncio.Future, delivered: int, failures: list) -> None:
    if not fut.done():  # the awaiting task may have been cancelled
        fut.set_result(Delivery(delivered, failures))


class Producer:
    """``rdk.aio.Producer(broker, **options)``: the options of ``rdk.Producer``.

    ``send`` never blocks the event loop: with ``on_queue_full="block"`` the wait for
    room runs in the loop's default executor. ``async with`` stops the producer.
    """

    def __init__(self, broker: str, **options: Any) -> None:
        self._producer = _producer.Producer(broker, **options)

    @property
    def producer(self) -> _producer.Producer:
        """The underlying synchronous rdk.Producer."""
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
        returns a ``FlushResult``, the messages not delivered (``.queued`` + ``.failed``)."""
        return await asyncio.get_running_loop().run_in_executor(None, self._producer.flush, timeout)

    async def partition_count(self, topic: str, timeout: float = 10.0) -> int:
        """Number of partitions of ``topic`` (KafkaError UNKNOWN_TOPIC_OR_PART if missing)."""
        return await asyncio.get_running_loop().run_in_executor(
            None, self._producer.partition_count, topic, timeout)

    async def stop(self, timeout: float = 15.0) -> FlushResult:
        """Drain and close (``rdk.Producer.stop``); returns a ``FlushResult``, the messages not
        delivered (``.queued`` + ``.failed``; 0: all delivered)."""
        return await asyncio.get_running_loop().run_in_executor(None, self._producer.stop, timeout)

    async def __aenter__(self) -> Producer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def __repr__(self) -> str:
        return f"<rdk.aio.Producer {self._producer!r}>"
