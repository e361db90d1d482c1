"""rdk.ShareConsumer: the public API of a share-group member, over its parts.

``ShareConfig`` checks the arguments, ``_handle`` prepares the group and creates the
handle, ``ShareThread`` runs the share thread; the lifecycle (state machine, fork check,
stop protocol, run/close/with) is ``rdk._lifecycle.Lifecycle``'s.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._binding.share import new_handle
from .._lifecycle import Lifecycle
from ..errors import KafkaError
from ._config import ShareConfig
from ._handle import prepare_group
from ._messages import ShareBatch, ShareStats
from ._thread import ShareCounts, ShareThread

if TYPE_CHECKING:
    import asyncio

__all__ = ["ShareConsumer"]


class ShareConsumer(Lifecycle):
    """``ShareConsumer(broker, topics, receive_callback, *, group_id, ...)``: a member of
    share group ``group_id`` (Kafka >= 4.2; librdkafka's preview share consumer).

    Unlike a consumer group, every member of a share group reads from every partition: the
    broker hands each record to one member at a time under an acquisition lock
    (``group.share.record.lock.duration.ms``, 30 s by default) and the member acknowledges it.
    ``receive_callback(info)`` gets a [ShareBatch][rdk.ShareBatch]: returning accepts what it did not
    settle itself, raising releases it (it comes back with ``delivery_count + 1``; after the
    broker's ``group.share.delivery.count.limit``, 5 by default, it is archived). A returned
    ``concurrent.futures.Future`` or awaitable (run on ``loop``, or a loop of rdk's) settles
    the batch when it completes.

    ``start_offset`` ("latest" or "earliest") is the *group's* ``share.auto.offset.reset``,
    set with the Admin API at ``start()``: it applies to every member, and only where the
    group has no progress yet. The default, None, keeps what the group has (e.g. what
    ``Admin.reset_share_group`` set; the broker's default is "latest"); a value that replaces
    one the group has of its own logs a warning naming both. ``max_messages_per_callback`` is librdkafka's
    ``max.poll.records`` (a soft bound in the preview). ``stats_callback(ShareStats)`` every
    ``statistics_interval_ms``. ``decode="utf-8"`` gives str values.

    ``pause()``/``resume()`` raise NotImplementedError (see there). A consumer belongs to the
    process that created it: in a forked child every call raises ClosedError and ``stop()``
    returns at once.

    Args:
        broker: Comma-separated ``host:port`` list (an optional ``scheme://`` prefix is allowed).
        topics: A topic name or a list of topic names.
        receive_callback: ``receive_callback(info)`` gets each [rdk.ShareBatch][]; needed by
            `start()`/`run()`. None: iterate `batches()` instead.
        group_id: The share group's id (required, non-empty).
        start_offset: The group's ``share.auto.offset.reset``: ``"latest"`` or ``"earliest"``;
            None keeps the group's setting (the broker's default: "latest").
        max_messages_per_callback: librdkafka's ``max.poll.records``, 1 to 1,000,000.
        stats_callback: Called with a [rdk.ShareStats][] every ``statistics_interval_ms``.
            None: no stats are requested.
        statistics_interval_ms: Milliseconds between stats, 0 to 86,400,000.
        driver_options: librdkafka properties, verbatim (not ``group.id`` nor
            ``share.acknowledgement.mode``).
        logger: A ``logging.Logger`` or ``LoggerAdapter``. None: the ``rdk`` logger.
        loop: The asyncio event loop that runs awaitables ``receive_callback`` returns. None:
            a loop on a thread of rdk's own.
        decode: None (values are bytes) or ``"utf-8"`` (values are str).

    Raises:
        TypeError: An argument of the wrong type (the message names it).
        ValueError: A value out of range or not one of the choices, an empty ``group_id`` or
            one librdkafka would rewrite (leading white space, a NUL), an empty topic list, a
            topic named twice, a closed ``loop``.
        rdk.ConfigError: A property librdkafka refuses, ``group.id`` or
            ``share.acknowledgement.mode`` in ``driver_options``, or ``bootstrap.servers``
            there differing from ``broker``.
    """

    def __init__(
        self,
        broker: str,
        topics: str | Sequence[str],
        receive_callback: Callable[[ShareBatch], Any] | None,
        *,
        group_id: str,
        start_offset: str | None = None,
        max_messages_per_callback: int = 500,
        stats_callback: Callable[[ShareStats], Any] | None = None,
        statistics_interval_ms: int = 5000,
        driver_options: Mapping[str, Any] | None = None,
        logger: logging.Logger | logging.LoggerAdapter | None = None,
        loop: asyncio.AbstractEventLoop | None = None,
        decode: str | None = None,
    ) -> None:
        config = ShareConfig(
            broker, topics, receive_callback, group_id=group_id, start_offset=start_offset,
            max_messages_per_callback=max_messages_per_callback, stats_callback=stats_callback,
            statistics_interval_ms=statistics_interval_ms, driver_options=driver_options,
            logger=logger, loop=loop, decode=decode)
        self._config = config
        self.broker = config.broker
        self.topics = config.topics
        self.group_id = config.group_id
        self.start_offset = config.start_offset
        self.max_messages_per_callback = config.max_messages_per_callback
        self.statistics_interval_ms = config.statistics_interval_ms
        self.decode = config.decode
        self.logger = config.logger
        self._receive_callback = config.receive_callback
        self._loop_thread = config.loop_thread

        self._describe = f"share consumer of group {group_id}"
        self._owner = f"ShareConsumer of group {group_id!r}"
        self._init_lifecycle()
        self._give_up = threading.Event()  # stop()'s deadline passed: release, do not wait
        self._thread: threading.Thread | None = None
        self._worker: ShareThread | None = None
        self._handoff: queue.Queue[ShareBatch | None] = _Handoff(self._wake)
        self._handle: Any = None  # the cffi handle of the worker: the C callbacks' opaque
        self._counts = ShareCounts()
        self._deadline = time.monotonic() + 30.0  # stop()'s, for the final commit

    @property
    def last_stats(self) -> ShareStats | None:
        """The latest [rdk.ShareStats][] given to ``stats_callback`` (None until then)."""
        return self._counts.last

    # ---- lifecycle -------------------------------------------------------------------
    def start(self) -> None:
        """Check the topics, set the group's ``share.auto.offset.reset`` to ``start_offset``
        (unless None), join the share group and deliver batches to ``receive_callback`` on a
        thread of rdk's. An unknown topic: KafkaError UNKNOWN_TOPIC_OR_PART (within METADATA_TIMEOUT).

        Raises:
            TypeError: No ``receive_callback`` was given.
            RuntimeError: Already started.
            rdk.ClosedError: Stopped, or in a process forked after the consumer was made.
            ValueError: ``loop=`` is closed.
            rdk.KafkaError: An unknown topic, a group config the broker refuses, no answer.
            rdk.ConfigError: librdkafka refused to create the share consumer.
        """
        self._check_process()
        if self._receive_callback is None:
            raise TypeError("start() needs receive_callback; or iterate consumer.batches()")
        self._open("callback")

    def _open(self, mode: str, here: bool = False) -> None:
        """Start in ``mode``; ``here``: the calling thread is the share thread and calls
        ``self._worker.run()`` next (rdk.aio's start)."""
        with self._state_lock:
            self._check_openable()
            if mode == "callback":
                self._loop_thread.check_open()
            worker = ShareThread(
                group_id=self.group_id, mode=mode, receive_callback=self._receive_callback,
                stats_callback=self._config.stats_callback, loop_thread=self._loop_thread,
                handoff=self._handoff, stop_event=self._stop_event, give_up=self._give_up,
                fail=self._fail, logger=self.logger, decode=self.decode,
                lock_seconds=prepare_group(self._config), counts=self._counts, pid=self._pid,
                deadline=self._deadline)
            rkshare, self._handle = new_handle(self._config.props, self._config.topics,
                                               self._config.wants_stats, worker,
                                               self._config.logger)
            self._worker = worker
            self._mark_running(mode)
            if here:
                self._thread = worker.adopt_thread(rkshare)
                return
            self._thread = worker.new_thread(rkshare, f"rdk-share-{self.group_id}")
            self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        """Finish the batch in flight (its callback, or the Future/awaitable it returned),
        acknowledge it, commit every pending acknowledgement (commit sync), leave the group.

        Returns within ``timeout``: a batch whose processing has not ended by then is
        released (delivered again, maybe to another member), with a warning. Called from
        inside the callback it only asks for the stop. Idempotent; in a forked child it
        returns at once.

        Args:
            timeout: How many seconds stop() may take in all; ``inf``: no practical limit.

        Raises:
            TypeError: ``timeout`` is not a number.
            ValueError: ``timeout`` is nan or below zero.
        """
        self._stop(timeout)

    def _on_own_thread(self) -> bool:
        return threading.current_thread() in (self._thread, self._loop_thread.thread)

    def _finish(self, deadline: float, timeout: float) -> None:
        """Wait for the share thread (it acknowledges, commits and closes), then the loop."""
        self._deadline = deadline
        if self._worker is not None:
            self._worker.deadline = deadline
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():  # (rdk.aio: on it)
            # keep a share of the time for committing acknowledgements and leaving the group
            thread.join(max(0.0, deadline - min(5.0, timeout * 0.3) - time.monotonic()))
            if thread.is_alive():
                self._give_up.set()
                thread.join(max(0.0, deadline - time.monotonic()))
            if thread.is_alive():
                self._warn(f"receive_callback has not returned within stop(timeout={timeout}); "
                           "its batch is released by the broker once its acquisition lock "
                           "runs out, and the handle is closed when the callback returns")
        self._loop_thread.close()

    def pause(self) -> None:
        """Not available: librdkafka 2.15's share consumer (preview) has no pause/resume,
        and not polling is no pause either: records it already acquired would stay locked
        (invisible to the other members) until their acquisition locks run out. Stop the
        consumer instead; the other members of the group take over its share.

        Raises:
            NotImplementedError: Always.
        """
        raise NotImplementedError(
            "ShareConsumer.pause(): librdkafka 2.15's share consumer (a preview API) has no "
            "pause/resume, and leaving the poll idle would keep its acquired records locked "
            "from the other members until their acquisition locks expire; stop() it instead")

    def resume(self) -> None:
        """Not available: see [pause][rdk.ShareConsumer.pause].

        Raises:
            NotImplementedError: Always.
        """
        raise NotImplementedError("ShareConsumer.resume(): see pause(): the preview share "
                                  "consumer API of librdkafka 2.15 cannot pause")

    def stats(self) -> ShareStats:
        """The counts so far (``rdkafka`` as of the last statistics interval).

        Returns:
            A new [rdk.ShareStats][].
        """
        return self._counts.snapshot()

    # ---- iterator interface ----------------------------------------------------------
    def batches(self, timeout: float | None = None) -> Iterator[ShareBatch]:
        """``for info in consumer.batches(timeout=5): ...``: starts the consumer if needed.
        A batch's messages not settled with accept/release/reject are accepted when the
        next batch is requested or the loop ends; ends after ``timeout`` seconds without a
        batch (None: never) or after ``stop()``; raises the KafkaError that stopped it.

        Args:
            timeout: Seconds without a batch after which the iteration ends; None: it ends
                only at ``stop()``.

        Yields:
            Each [rdk.ShareBatch][] in turn.

        Raises:
            TypeError: ``timeout`` is not a number.
            ValueError: ``timeout`` is nan or below zero.
            RuntimeError: The consumer was started with ``start()``/``run()``.
            rdk.ClosedError: In a process forked after the consumer was made, or stopped.
            rdk.KafkaError: The error that stopped the consumer, and the errors of `start()`.
        """
        return self._iterate(self._begin_iteration(timeout))

    def _iterate(self, timeout: float | None) -> Iterator[ShareBatch]:
        prev: ShareBatch | None = None
        try:
            while True:
                self._check_process()
                if prev is not None:
                    prev._settled.set()
                    prev = None
                if self._error is not None:
                    raise self._error
                deadline = None if timeout is None else time.monotonic() + timeout
                batch = None
                while batch is None and not self._stop_event.is_set():
                    left = 0.1 if deadline is None else min(0.1, deadline - time.monotonic())
                    if left <= 0:
                        return
                    try:
                        batch = self._handoff.get(timeout=left)
                    except queue.Empty:
                        if self._error is not None:
                            raise self._error from None
                if batch is None:
                    return
                prev = batch
                yield batch
        finally:
            if prev is not None:
                prev._settled.set()

    def _take_batch(self) -> ShareBatch | None:
        """Iterator mode without waiting (rdk.aio): the batch handed over, or None; raises
        the error that stopped the consumer."""
        self._check_process()
        if self._error is not None:
            raise self._error
        try:
            return self._handoff.get_nowait()
        except queue.Empty:
            return None

    # ---- errors ----------------------------------------------------------------------
    def _fail(self, err: KafkaError) -> None:
        if not self._fail_once(err):
            return
        self.logger.error("share consumer of group %s stops: %s", self.group_id, err)
        self._stop_event.set()
        if self._mode == "callback" and threading.current_thread() is self._thread:
            self._stop_in_background()

    def __repr__(self) -> str:
        return (f"<ShareConsumer group={self.group_id!r} topics={self.topics!r} "
                f"{self._state}>")


class _Handoff(queue.Queue):
    """The one-batch hand-over of iterator mode; each batch put wakes rdk.aio's waiting task."""

    def __init__(self, wake: Callable[[], None]) -> None:
        super().__init__(maxsize=1)
        self._wake_up = wake

    def _put(self, item: Any) -> None:
        super()._put(item)
        self._wake_up()
