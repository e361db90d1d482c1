"""rdk.aio.Producer: every await is a future the producer's event thread settles.

``send`` enqueues on the loop (one C call) and awaits its delivery; ``flush``, ``stop``,
``partition_count`` and a send's first partition-count lookup are work the event thread
does between two polls (:mod:`rdk.aio._event_work`). No thread is made for a call, and none
of the loop's executor is used.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from .. import producer as _producer
from .._asyncio_bridge import settle
from .._binding.produce import timeout_seconds
from ..errors import ClosedError, KafkaError, QueueFullError
from ..producer import Delivery, FlushResult
from ..validate import check_topic_name
from ._event_work import EventWork

__all__ = ["Producer"]


class Producer:
    """``rdk.aio.Producer(broker, **options)``: the options of ``rdk.Producer``.

    Every await is a future the producer's own event thread settles
    (``call_soon_threadsafe``): no thread of the loop's default executor, and no thread
    made for the call, is held. A send's future settles once each message is delivered or
    failed; under ``on_queue_full="block"`` a send enqueues what fits and awaits the next
    delivery report for the rest, in call order. ``flush`` settles when nothing is
    outstanding (its timeout is a ``loop.call_later``); ``partition_count`` and a send's
    first partition-count lookup run on the event thread between two polls (a metadata
    request in steps of at most a second); ``stop`` is stepped there too, and its last step
    frees the librdkafka handle on that thread, which then ends. An authentication failure
    librdkafka reports fails every pending send at once with that error. ``async with``
    stops the producer.

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
        self._work = EventWork(self._producer)

    @property
    def producer(self) -> _producer.Producer:
        """The underlying synchronous [rdk.Producer][]."""
        return self._producer

    def _fail_pending(self, error: KafkaError) -> None:
        """On the event thread: librdkafka reported an authentication failure."""
        self._fail_every_pending(lambda topic: KafkaError(
            error.code, f"{error.description}; the send's messages stay queued (librdkafka "
            "retries them until message.timeout.ms; stop() fails them at once)",
            context=f"send to {topic!r}"))

    def _fail_every_pending(self, error_for: Callable[[str], BaseException]) -> None:
        """Raise ``error_for(topic)`` in every send still waiting (any thread)."""
        with self._lock:
            pending, self._pending = self._pending, {}
        for fut, (loop, topic) in pending.items():
            settle(loop, fut, exc=error_for(topic))

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
            rdk.ClosedError: After ``stop()``; or pending when ``stop()`` returned without
                its delivery reports (a callback held the event thread past the timeout).
        """
        loop = asyncio.get_running_loop()
        p = self._producer
        if p._client.auth_failure is not None or (
                partition is None and p._balancers.may_look_up(topic)):
            p._check_open()
            check_topic_name(topic)
            # the probe of the failure (a short metadata request) or a first partition
            # count: on the event thread, then the send goes on here without waiting
            await self._work.call(functools.partial(self._prepare, topic, partition),
                                  10.0 if timeout is None else timeout_seconds(timeout),
                                  f"send to {topic!r}")
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

    def _prepare(self, topic: str, partition: int | None, step: float) -> None:
        """On the event thread, before a send: a reported authentication failure checked
        (raised if no broker answers), the topic's partition count looked up if its
        balancer needs one (``step``: seconds this attempt may take)."""
        p = self._producer
        failure = p._closer.auth_failed(f"send to {topic!r}")
        if failure is not None:
            raise failure
        if partition is None and p._balancers.may_look_up(topic):
            p._balancers.choose(p._client, topic, True, step)

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

        A future the producer's event thread settles once nothing is outstanding; while it
        waits, librdkafka sends lingering messages at once (as ``rdk.Producer.flush``). A
        cancelled flush takes nothing: the failures it would have counted go to the next.
        An authentication failure ends it as ``rdk.Producer.flush`` does (at the timeout, one
        librdkafka reported is raised without a new probe).

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
        self._producer._check_open()
        return await self._work.flush(timeout_seconds(timeout))

    async def partition_count(self, topic: str, timeout: float = 10.0) -> int:
        """Number of partitions of ``topic`` (KafkaError UNKNOWN_TOPIC_OR_PART if missing).

        Args:
            topic: The topic to look up (by the producer's event thread).
            timeout: Seconds the metadata request may take.

        Returns:
            The partition count.

        Raises:
            rdk.KafkaError: ``UNKNOWN_TOPIC_OR_PART``, or no metadata within ``timeout``.
            rdk.ClosedError: After ``stop()``.
            TypeError: ``topic`` is not a str, or ``timeout`` not a number.
            ValueError: An illegal topic name, a negative ``timeout``.
        """
        p = self._producer
        p._check_open()
        check_topic_name(topic)
        client = p._client
        return int(await self._work.call(functools.partial(client.partition_count, topic),
                                         timeout_seconds(timeout), f"metadata for {topic!r}"))

    async def stop(self, timeout: float = 15.0) -> FlushResult:
        """Drain and close (``rdk.Producer.stop``); returns a ``FlushResult``, the messages not
        delivered (``.queued`` + ``.failed``; 0: all delivered).

        The stop runs on the producer's event thread, stepped after every poll in
        ``rdk.Producer.stop``'s order; its last step frees the librdkafka handle there
        (``rd_kafka_destroy``, the one call that may block, joins librdkafka's own threads)
        and the event thread ends. Cancelling the await does not cancel the stop.

        Args:
            timeout: Seconds to wait in all.

        Returns:
            An [rdk.FlushResult][]: the messages not delivered.

        Raises:
            TypeError: ``timeout`` is not a number.
            ValueError: ``timeout`` is negative or nan.
        """
        timeout = timeout_seconds(timeout)
        try:
            if self._producer._client.in_child:  # returns at once, touching nothing
                return self._producer.stop(timeout)
            return await self._work.stop(timeout)
        finally:
            self._on_deliveries()  # a send waiting for room sees the stop (ClosedError)
            self._fail_unreported()

    def _fail_unreported(self) -> None:
        """After the stop: a send still waiting has no delivery report coming (the handle is
        freed; a stop that closed without its event thread, held by a callback, never
        serves the purged messages' reports), so it raises rather than waiting forever."""
        self._fail_every_pending(lambda topic: ClosedError(
            f"send to {topic!r}: the producer stopped before its messages' delivery reports "
            "came (stop() reached its timeout while a callback held the event thread); they "
            "may or may not have been delivered"))

    async def __aenter__(self) -> Producer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def __repr__(self) -> str:
        return f"<rdk.aio.Producer {self._producer!r}>"
