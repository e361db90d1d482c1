"""rdk.aio.Producer: ``await producer.send(...)`` settled by the producer's event thread."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
import time
from collections.abc import Sequence
from typing import Any

from .. import producer as _producer
from .._asyncio_bridge import in_thread, settle
from ..errors import KafkaError, QueueFullError
from ..producer import Delivery, FlushResult

__all__ = ["Producer"]


class Producer:
    """``rdk.aio.Producer(broker, **options)``: the options of ``rdk.Producer``.

    Nothing waits on the loop's default executor: a send's future is settled from the
    producer's event thread (``call_soon_threadsafe``); under ``on_queue_full="block"`` a
    send enqueues what fits and awaits the next delivery report (a future the event thread
    settles) for the rest, in call order; a first partition-count lookup, ``flush``,
    ``stop`` and ``partition_count`` run on a thread of rdk's that ends with the call. An authentication
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
        self._room: dict[asyncio.Future, asyncio.AbstractEventLoop] = {}  # sends waiting for room
        self._producer._s.on_auth_failure.append(self._fail_pending)
        self._producer._s.on_deliveries.append(self._on_deliveries)

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
        Cancelling the await does not recall the messages enqueued already; under
        ``on_queue_full="block"`` those still waiting for room are not sent.

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
        p = self._producer
        if p._client.auth_failure is not None or (
                partition is None and p._balancers.may_look_up(topic)):
            # a short metadata request (checking the failure) or a first partition count
            fut = self._pending_future(loop, topic)
            await self._in_thread_send(fut, functools.partial(
                p.send, topic, partition, payloads, timeout=timeout,
                on_delivery=self._settler(loop, fut)))
            return await fut
        if p.on_queue_full != "block":
            fut = self._pending_future(loop, topic)
            try:
                p.send(topic, partition, payloads, timeout=timeout, on_delivery=self._settler(loop, fut))
            except BaseException:
                self._forget(fut)
                raise
            return await fut
        return await self._send_in_steps(loop, topic, partition, payloads, timeout)

    async def _send_in_steps(self, loop: asyncio.AbstractEventLoop, topic: str,
                             partition: int | None, payloads: Sequence[Any],
                             timeout: float | None) -> Delivery:
        """``on_queue_full="block"`` without a thread: enqueue what fits, wait for a delivery
        report (a future the event thread settles) and enqueue the rest, in call order."""
        sender = self._producer._sender
        deadline = None if timeout is None else time.monotonic() + timeout
        attempts: list[asyncio.Future] = []
        todo = payloads
        while True:
            fut = self._pending_future(loop, topic)
            attempts.append(fut)
            room = self._room_future(loop)  # before the try: a report after it is not missed
            try:
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                part, left = sender.check(topic, partition, todo, left, None)
                sender.produce(topic, part, todo, left, self._settler(loop, fut),
                               wait_for_room=False)
                break
            except QueueFullError as e:
                todo = [todo[i] for i in e.failed_indices]
                if deadline is not None and time.monotonic() >= deadline:
                    break  # these stay failures (_QUEUE_FULL) of the last attempt
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(room, None if deadline is None
                                           else max(0.0, deadline - time.monotonic()))
            except BaseException:
                self._forget(fut)
                raise
            finally:
                self._forget_room(room)
        deliveries = [await f for f in attempts]
        failures = [f for d in deliveries[:-1] for f in d.failures if f[1].name != "_QUEUE_FULL"]
        return Delivery(sum(d.delivered for d in deliveries), failures + deliveries[-1].failures)

    def _pending_future(self, loop: asyncio.AbstractEventLoop, topic: str) -> asyncio.Future:
        fut: asyncio.Future = loop.create_future()
        with self._lock:
            self._pending[fut] = (loop, topic)
        return fut

    def _forget(self, fut: asyncio.Future) -> None:
        with self._lock:
            self._pending.pop(fut, None)

    def _settler(self, loop: asyncio.AbstractEventLoop, fut: asyncio.Future) -> Any:
        def on_delivery(delivered: int, failures: list) -> None:  # on the event thread
            self._forget(fut)
            settle(loop, fut, Delivery(delivered, failures))
        return on_delivery

    async def _in_thread_send(self, fut: asyncio.Future, send: Any) -> None:
        try:
            await in_thread(send, name="rdk-aio-send")
        except BaseException:
            self._forget(fut)
            raise

    def _room_future(self, loop: asyncio.AbstractEventLoop) -> asyncio.Future:
        fut: asyncio.Future = loop.create_future()
        with self._lock:
            self._room[fut] = loop
        return fut

    def _forget_room(self, fut: asyncio.Future) -> None:
        with self._lock:
            self._room.pop(fut, None)

    def _on_deliveries(self) -> None:
        """On the event thread: delivery reports freed room; wake the sends waiting for it."""
        if not self._room:
            return
        with self._lock:
            waiting, self._room = self._room, {}
        for fut, loop in waiting.items():
            settle(loop, fut)

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
        try:
            return await in_thread(self._producer.stop, timeout, name="rdk-aio-stop")
        finally:
            self._on_deliveries()  # a send waiting for room sees the stop (ClosedError)

    async def __aenter__(self) -> Producer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def __repr__(self) -> str:
        return f"<rdk.aio.Producer {self._producer!r}>"
