"""rdk.aio.Consumer: ``async for batch in consumer``, waiting on a file descriptor.

The consumer's fetch thread (rdk's) fills batches as ``rdk.Consumer.batches()`` does; when
one is queued, or the consumer stops, fails or resumes, the consumer's wake-up fd
(:class:`rdk._asyncio_bridge.Waker`) becomes readable and the loop wakes the waiting task.
Taking a ready batch is one non-blocking call on the loop; nothing waits in an executor.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import logging
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, Generic, TypeVar

from .. import consumer as _consumer
from .._asyncio_bridge import Waker, in_thread, settle
from .._lifecycle import AfterLoop
from ..message import Message

__all__ = ["Batch", "Consumer"]

log = logging.getLogger("rdk")

B = TypeVar("B")
_CALLBACK_TIMEOUT = 60.0  # a coroutine rebalance callback on a loop that does not run it


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


class Batches(Generic[B]):
    """The async iterator ``batches()`` and ``async for`` return (of rdk.aio's consumers): a
    cancelled ``__anext__`` leaves it usable (the next call goes on), and loses no batch.

    Args:
        next_batch: ``await next_batch(timeout)``: the next batch, or None at the end.
        timeout: Seconds without a batch after which the iteration ends; None: never.
    """

    __slots__ = ("_next", "_timeout")

    def __init__(self, next_batch: Callable[[float | None], Awaitable[B | None]],
                 timeout: float | None) -> None:
        self._next = next_batch
        self._timeout = timeout

    def __aiter__(self) -> Batches[B]:
        return self

    async def __anext__(self) -> B:
        batch = await self._next(self._timeout)
        if batch is None:
            raise StopAsyncIteration
        return batch


def _on_loop(callback: Callable[[list[tuple[str, int]]], Any] | None,
             loop_of: Callable[[], asyncio.AbstractEventLoop | None]) -> Any:
    """A rebalance callback that may be a coroutine function: called on rdk's thread, an
    awaitable result is run on the consumer's event loop and waited for."""
    if callback is None:
        return None

    async def await_it(result: Any) -> Any:
        return await result

    def call(partitions: list[tuple[str, int]]) -> Any:
        result = callback(partitions)
        if not inspect.isawaitable(result):
            return result
        loop = loop_of()
        if loop is None or loop.is_closed():
            result.close() if inspect.iscoroutine(result) else None
            raise RuntimeError("rdk.aio.Consumer: a coroutine rebalance callback needs the "
                               "consumer's event loop, which is closed")
        return asyncio.run_coroutine_threadsafe(await_it(result), loop).result(_CALLBACK_TIMEOUT)

    return call


async def start_on_own_thread(consumer: Any, name: str,
                             goes_on: Callable[[], Callable[[], None] | None]) -> None:
    """Start ``consumer`` (iterator mode) on a new thread named ``name`` that, once the start
    succeeded, goes on as the consumer's own thread (``goes_on()``: its fetch or share
    loop): no thread is made only for the call. The awaiting task waits for a future that
    thread settles; a cancelled await leaves the start going."""
    loop = asyncio.get_running_loop()
    fut: asyncio.Future = loop.create_future()

    def start_then_go_on() -> None:
        go_on = None
        try:
            consumer._check_process()
            with consumer._state_lock:
                if consumer._state == "new":
                    consumer._open("iterator", here=True)
                    go_on = goes_on()
                else:  # started meanwhile by another task: as batches() would
                    consumer._begin_iteration(None)
        except BaseException as e:  # noqa: BLE001 - handed to the awaiting task
            settle(loop, fut, exc=e)
            return
        settle(loop, fut)
        if go_on is not None:
            go_on()

    threading.Thread(target=start_then_go_on, daemon=True, name=name).start()
    await asyncio.shield(fut)


def stop_on_own_thread(consumer: Any, timeout: float,
                       after_loop: Callable[[], AfterLoop | None]) -> concurrent.futures.Future[None]:
    """Begin ``consumer.stop(timeout)`` (checked at once); its work runs on the consumer's
    own thread (``after_loop()``'s: the fetch or share thread) once that thread's loop has
    ended, and the returned future is settled there (at once if there was nothing to do).
    Only when that thread has already ended (a failure in it) does the work get a thread of
    its own (``rdk-aio-stop-*``)."""
    done: concurrent.futures.Future[None] = concurrent.futures.Future()
    handed: list[bool] = []

    def elsewhere(work: Callable[[], None]) -> None:
        handed.append(True)

        def run() -> None:
            try:
                work()
            except BaseException as e:  # noqa: BLE001 - handed to the awaiting tasks
                done.set_exception(e)
            else:
                done.set_result(None)
        own = after_loop()
        if own is None or not own.hand(run):
            threading.Thread(target=run, daemon=True,
                             name=f"rdk-aio-stop-{consumer._describe}").start()

    consumer._stop(timeout, elsewhere)
    if not handed:
        done.set_result(None)  # nothing to do: new, closed, or in a forked child
    return done


async def stop_and_wait(consumer: Any, timeout: float, stopped: concurrent.futures.Future | None,
                        after_loop: Callable[[], AfterLoop | None]) -> concurrent.futures.Future | None:
    """rdk.aio's consumers' ``stop()``: the stop begun once (see stop_on_own_thread) and
    awaited by every caller, on any loop; returns the future to keep."""
    if stopped is None and consumer._state == "stopping":  # stopped by the sync stop()
        await in_thread(consumer.stop, timeout, name=f"rdk-aio-stop-{consumer._describe}")
    elif stopped is None:
        stopped = stop_on_own_thread(consumer, timeout, after_loop)
    if stopped is not None:  # a cancelled await leaves the stop going
        await asyncio.shield(asyncio.wrap_future(stopped))
    return stopped


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

    Waiting for a batch holds no thread: the task waits on a file descriptor the consumer's
    own fetch thread signals (``loop.add_reader``), so any number of idle consumers leave
    the loop's default executor free. The consumer starts on the first iteration (on the
    thread that then becomes its fetch thread); ``stop()`` is a future the consumer's own
    fetch thread settles after doing the stop's work. A batch's offsets are recorded on
    ``await batch.commit()`` or when the next batch is asked for; leaving ``async with`` (or
    ``await stop()``) records every committed batch's offsets and never an uncommitted one's.
    A task cancelled while it waits for a batch loses nothing, and the same iterator goes on.
    In group mode ``on_assign``/``on_revoke`` may be coroutine functions: they run on the
    loop that iterates the consumer, and the rebalance waits for them.

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
        self._loop: asyncio.AbstractEventLoop | None = None
        for name in ("on_assign", "on_revoke"):
            if options.get(name) is not None:
                options[name] = _on_loop(options[name], lambda: self._loop)
        self._consumer = _consumer.Consumer(broker, topic, offset_directory, **options)
        self._waker = Waker()
        self._consumer._wakers.append(self._waker.wake)
        self._prev: _consumer.Batch | None = None  # handed out, committed when the next is asked
        self._stopped: concurrent.futures.Future[None] | None = None  # set by the stop's work

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

        Raises:
            TypeError: ``timeout`` is not a number.
            ValueError: ``timeout`` is negative or nan.
        """
        if timeout is not None:
            from ..validate import check_timeout

            timeout = check_timeout(timeout)
        return Batches(self._next, timeout)

    def __aiter__(self) -> AsyncIterator[Batch]:
        return Batches(self._next, None)

    async def _start(self) -> None:
        c = self._consumer
        self._loop = asyncio.get_running_loop()
        if c._state == "new":  # on the thread that becomes the consumer's fetch thread
            await start_on_own_thread(c, c._threads.fetch_thread_name, lambda: (
                c._threads.pipeline.run_fetch if c._threads.pipeline is not None else None))
        else:
            c._begin_iteration(None)  # raises as batches() does (stopped, callback mode)

    async def _next(self, timeout: float | None) -> Batch | None:
        """The next batch; None after ``timeout`` seconds without one or once stopped."""
        c = self._consumer
        if c._state != "running" or self._loop is not asyncio.get_running_loop():
            if c._state in ("stopping", "closed") and c._mode == "iterator":
                return None
            await self._start()
        if self._prev is not None:
            prev, self._prev = self._prev, None
            prev.commit()
        batch = await self._waker.until(c._take_batch, c._stop_event.is_set, timeout)
        if batch is None:
            return None
        self._prev = batch
        return Batch(batch)

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

        The stop's work (the last offset writes, leaving the group, freeing the librdkafka
        handle, whose ``rd_kafka_destroy`` blocks until librdkafka's threads end) runs on
        the consumer's own fetch thread once its last fetch returned; the awaiting task
        waits for a future that thread settles. Cancelling the await does not cancel the
        stop; several tasks (on any loops) may await it.

        Args:
            timeout: Seconds to wait in all.

        Raises:
            TypeError: ``timeout`` is not a number.
            ValueError: ``timeout`` is negative or nan.
        """
        c = self._consumer
        self._stopped = await stop_and_wait(c, timeout, self._stopped, lambda: (
            c._threads.pipeline.after_loop if c._threads.pipeline is not None else None))
        if self._waker.wake in c._wakers:
            c._wakers.remove(self._waker.wake)
        self._waker.close()
    async def __aenter__(self) -> Consumer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def __repr__(self) -> str:
        return f"<rdk.aio.Consumer {self._consumer!r}>"
