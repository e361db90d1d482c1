"""rdk.aio.ShareConsumer: ``async for batch in consumer`` over a share group, waiting on a
file descriptor the share thread signals (as rdk.aio.Consumer)."""

from __future__ import annotations

import concurrent.futures
from collections.abc import AsyncIterator, Iterator
from typing import Any

from .. import share as _share
from .._asyncio_bridge import Waker
from ..message import Message
from ..validate import check_timeout
from ._consumer import Batches, start_on_own_thread, stop_and_wait

__all__ = ["ShareBatch", "ShareConsumer"]


class ShareBatch:
    """A batch from ``rdk.aio.ShareConsumer``: ``messages``, ``accept``/``release``/``reject``
    of single messages (as [rdk.ShareBatch][]), and ``await batch.commit()``.

    Args:
        batch: The [rdk.ShareBatch][] it wraps (rdk.aio.ShareConsumer makes them).
    """

    __slots__ = ("_batch",)

    def __init__(self, batch: _share.ShareBatch) -> None:
        self._batch = batch

    @property
    def messages(self) -> list[Any]:
        """The batch's [rdk.ShareMessage][]s."""
        return self._batch.messages

    def accept(self, message: Message) -> None:
        """Acknowledge ``message`` as processed ([rdk.ShareBatch.accept][]).

        Args:
            message: A message of this batch.

        Raises:
            ValueError: As [rdk.ShareBatch.accept][].
        """
        self._batch.accept(message)

    def release(self, message: Message) -> None:
        """Deliver ``message`` again, maybe to another member ([rdk.ShareBatch.release][]).

        Args:
            message: A message of this batch.

        Raises:
            ValueError: As [rdk.ShareBatch.release][].
        """
        self._batch.release(message)

    def reject(self, message: Message) -> None:
        """Never deliver ``message`` again ([rdk.ShareBatch.reject][]).

        Args:
            message: A message of this batch.

        Raises:
            ValueError: As [rdk.ShareBatch.reject][].
        """
        self._batch.reject(message)

    async def commit(self) -> None:
        """End this batch now: the messages not settled yet are accepted, and the share
        thread acknowledges the batch (never blocks). Settling a message afterwards raises
        ValueError. Without it, the batch ends when the next one is asked for.
        """
        self._batch._settled.set()

    def __len__(self) -> int:
        return len(self._batch.messages)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._batch.messages)

    def __repr__(self) -> str:
        return f"<rdk.aio.ShareBatch {len(self)} messages>"


class ShareConsumer:
    """``rdk.aio.ShareConsumer(broker, topics, group_id=..., **options)``: the keyword options
    of [rdk.ShareConsumer][], consumed by iteration:

    ```python
    async with rdk.aio.ShareConsumer(brokers, "events", group_id="workers",
                                     start_offset="earliest") as consumer:
        async for batch in consumer:
            for m in batch.messages:
                (batch.accept if await handle(m) else batch.release)(m)
            await batch.commit()
    ```

    Waiting for a batch holds no thread (a file descriptor the share thread signals); the
    start runs on the thread that then becomes its share thread; the stop's work
    (acknowledgements committed, group left, handle closed) runs on the share thread after
    its last poll.
    A batch's messages not settled are accepted by ``await batch.commit()`` or when the
    next batch is asked for; ``stop()`` releases a batch not ended yet.

    Args:
        broker: Comma-separated ``host:port`` list.
        topics: A topic name or a list of names.
        **options: The keyword arguments of [rdk.ShareConsumer][] (``group_id`` needed)
            except ``receive_callback``.

    Raises:
        TypeError: ``receive_callback`` was given, or as [rdk.ShareConsumer][].
        ValueError: As [rdk.ShareConsumer][].
        rdk.ConfigError: As [rdk.ShareConsumer][].
    """

    def __init__(self, broker: str, topics: str | list[str], **options: Any) -> None:
        if "receive_callback" in options:
            raise TypeError("rdk.aio.ShareConsumer has no receive_callback: iterate it "
                            "(async for batch in consumer)")
        self._consumer = _share.ShareConsumer(broker, topics, None, **options)
        self._waker = Waker()
        self._consumer._wakers.append(self._waker.wake)
        self._prev: _share.ShareBatch | None = None
        self._stopped: concurrent.futures.Future[None] | None = None  # set by the stop's work

    @property
    def consumer(self) -> _share.ShareConsumer:
        """The underlying synchronous [rdk.ShareConsumer][] (stats, last_stats...)."""
        return self._consumer

    def batches(self, timeout: float | None = None) -> AsyncIterator[ShareBatch]:
        """``async for batch in consumer.batches(timeout=5)``: ends after ``timeout`` seconds
        without a batch (None: never), or after ``stop()``.

        Args:
            timeout: Seconds without a batch after which the iteration ends.

        Returns:
            An async iterator of [rdk.aio.ShareBatch][].

        Raises:
            TypeError: ``timeout`` is not a number.
            ValueError: ``timeout`` is negative or nan.
        """
        return Batches(self._next, None if timeout is None else check_timeout(timeout))

    def __aiter__(self) -> AsyncIterator[ShareBatch]:
        return Batches(self._next, None)

    async def _next(self, timeout: float | None) -> ShareBatch | None:
        c = self._consumer
        if c._state == "new":  # joins the group on the thread that then polls (share thread)
            await start_on_own_thread(c, f"rdk-share-{c.group_id}", lambda: (
                c._worker.run if c._worker is not None else None))
        elif c._state in ("stopping", "closed") and c._mode == "iterator":
            return None
        else:
            c._begin_iteration(None)
        if self._prev is not None:
            prev, self._prev = self._prev, None
            prev._settled.set()
        batch = await self._waker.until(c._take_batch, c._stop_event.is_set, timeout)
        if batch is None:
            return None
        self._prev = batch
        return ShareBatch(batch)

    async def stop(self, timeout: float = 30.0) -> None:
        """[rdk.ShareConsumer.stop][] done by the share thread after its last poll (a future
        it settles; cancelling the await does not cancel the stop): the batch in hand is
        ended, the acknowledgements committed and the group left.

        Args:
            timeout: Seconds the stop may take in all.

        Raises:
            TypeError: ``timeout`` is not a number.
            ValueError: ``timeout`` is nan or below zero.
        """
        c = self._consumer
        self._stopped = await stop_and_wait(c, timeout, self._stopped, lambda: (
            c._worker.after_loop if c._worker is not None else None))
        if self._waker.wake in c._wakers:
            c._wakers.remove(self._waker.wake)
        self._waker.close()

    @property
    def error(self) -> Any:
        """The KafkaError that stopped the consumer, if any."""
        return self._consumer.error

    async def __aenter__(self) -> ShareConsumer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def __repr__(self) -> str:
        return f"<rdk.aio.ShareConsumer {self._consumer!r}>"
