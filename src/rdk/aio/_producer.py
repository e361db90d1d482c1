"""rdk.aio.Producer: ``await producer.send(...)`` settled by the producer's event thread."""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Sequence
from typing import Any

from .. import producer as _producer
from .._asyncio_bridge import in_thread, settle
from ..errors import KafkaError
from ..producer import Delivery, FlushResult

__all__ = ["Producer"]


class Producer:
    """``rdk.aio.Producer(broker, **options)``: the options of ``rdk.Producer``.

    Nothing waits on the loop's default executor: a send's future is settled from the
    producer's event thread (``call_soon_threadsafe``); a wait for room
    (``on_queue_full="block"``), a first partition-count lookup, ``flush``, ``stop`` and
    ``partition_count`` run on a thread of rdk's that ends with the call. An authentication
    failure librdkafka reports fails every pending send at once with that error.
    ``async with`` stops the producer.

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
        self._lock = threading.Lock()
        # every send not settled yet: future -> (its loop, the topic)
        self._pending: dict[asyncio.Future, tuple[asyncio.AbstractEventLoop, str]] = {}
        self._producer._s.on_auth_failure.append(self._fail_pending)

    @property
    def producer(self) -> _producer.Producer:
        """The underlying synchronous [rdk.Producer][]."""
        return self._producer

    def _fail_pending(self, error: KafkaError) -> None:
        """On the event thread: librdkafka reported an authentication failure."""
        with self._lock:
            pending, self._pending = self._pending, {}
        for fut, (loop, topic) in pending.items():
            settle(loop, fut, exc=KafkaError(
                error.code, f"{error.description}; the send's messages stay queued (librdkafka "
                "retries them until message.timeout.ms; stop() fails them at once)",
                context=f"send to {topic!r}"))

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
        Cancelling the await does not recall the messages (they are enqueued already).

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
            rdk.KafkaError: As [rdk.Producer.send][]; an authentication failure reported
                while the send was pending (``_AUTHENTICATION``, naming the topic).
            rdk.ClosedError: After ``stop()``.
        """
        loop = asyncio.get_running_loop()
        fut: asyncio.Future = loop.create_future()
        lock = self._lock

        def on_delivery(delivered: int, failures: list) -> None:  # on the event thread
            with lock:
                self._pending.pop(fut, None)
            settle(loop, fut, Delivery(delivered, failures))

        with lock:
            self._pending[fut] = (loop, topic)
        try:
            if self._waits(topic, partition):
                await in_thread(functools.partial(self._producer.send, topic, partition, payloads,
                                                  timeout=timeout, on_delivery=on_delivery),
                                name="rdk-aio-send")
            else:
                self._producer.send(topic, partition, payloads, timeout=timeout,
                                    on_delivery=on_delivery)
        except BaseException:
            with lock:
                self._pending.pop(fut, None)
            raise
        return await fut

    def _waits(self, topic: str, partition: int | None) -> bool:
        """Whether send() may block: waiting for room, a first partition-count lookup, or
        the check of an authentication failure (a short metadata request)."""
        p = self._producer
        return (p.on_queue_full == "block" or p._client.auth_failure is not None
                or (partition is None and p._balancers.may_look_up(topic)))

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
        return await in_thread(self._producer.flush, timeout, name="rdk-aio-flush")

    async def partition_count(self, topic: str, timeout: float = 10.0) -> int:
        """Number of partitions of ``topic`` (KafkaError UNKNOWN_TOPIC_OR_PART if missing).

        Args:
            topic: The topic to look up (on a thread of rdk's, not the event loop).
            timeout: Seconds the metadata request may take.

        Returns:
            The partition count.

        Raises:
            rdk.KafkaError: ``UNKNOWN_TOPIC_OR_PART``, or no metadata within ``timeout``.
            rdk.ClosedError: After ``stop()``.
            TypeError: ``topic`` is not a str, or ``timeout`` not a number.
            ValueError: An illegal topic name, a negative ``timeout``.
        """
        return await in_thread(self._producer.partition_count, topic, timeout,
                               name="rdk-aio-partition-count")

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
        return await in_thread(self._producer.stop, timeout, name="rdk-aio-stop")

    async def __aenter__(self) -> Producer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def __repr__(self) -> str:
        return f"<rdk.aio.Producer {self._producer!r}>"
