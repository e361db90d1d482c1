"""rdk.Consumer: the public API and its state machine (new -> running -> stopping -> closed).

The Consumer checks its arguments once (:class:`ConsumerConfig`) and builds one
:class:`ConsumerState` (events, assignment, positions, and :class:`Progress`: the tracker,
the one committer and the store) that it hands to its parts: the assignment strategy chosen
at construction (:class:`SlotAssignment` or :class:`GroupAssignment`) makes the client and
the :class:`FetchPipeline`; the :class:`ThreadSet` starts and stops the threads in order.
The lifecycle (fork ownership, stop from a callback, exit) is
:class:`rdk._lifecycle.Lifecycle`, shared with the ShareConsumer.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from .. import stats
from .._lifecycle import Lifecycle
from .._loop_thread import LoopThread
from ..errors import ClosedError, KafkaError
from ._assignment import METADATA_TIMEOUT, GroupAssignment, SlotAssignment
from ._batch import Batch
from ._config import ConsumerConfig, check_seek_offset
from ._delivery import DeliveryThread
from ._pipeline import FetchPipeline
from ._state import ConsumerState
from ._threads import ThreadSet

if TYPE_CHECKING:
    import asyncio

__all__ = ["METADATA_TIMEOUT", "Consumer"]

_REFUSED = {"GROUP_AUTHORIZATION_FAILED", "CLUSTER_AUTHORIZATION_FAILED"}  # stop the consumer
_INT32_MAX = 2**31 - 1
_INT64_MAX = 2**63 - 1


class Consumer(Lifecycle):
    """kafka-native's Consumer: ``Consumer(broker, topic, offset_directory, receive_callback, ...)``.

    Reads the partitions of its worker slot (``num_workers``/``worker_slot``) or, in group
    mode (``group_id="..."``), those Kafka's group coordinator assigns (``cooperative-sticky``
    unless ``driver_options`` choose another assignor or ``group.protocol=consumer``).
    Batches go to ``receive_callback`` on a thread of rdk's (``start()``/``run()``), or to
    ``for batch in consumer.batches(timeout=...)``. Progress is recorded as batches settle:
    in kafka-native's offset files, the group (group mode) or any ``offset_store``.

    A consumer belongs to the process that created it: in a forked child every call raises
    ClosedError and ``stop()``/``close()`` return at once, touching nothing. An
    authentication or TLS failure (``_AUTHENTICATION``, ``_SSL``) makes ``start()`` raise
    its KafkaError, naming the broker; after start() one is logged as ERROR (librdkafka
    keeps retrying). The user guide's Consumer page has the details.

    Args:
        broker: Comma-separated ``host:port`` list (an optional ``scheme://`` prefix is allowed);
            ``driver_options`` may repeat it as ``bootstrap.servers`` (or
            ``metadata.broker.list``) only with the same value.
        topic: A topic name, a list of topic names, or, in group mode only, a ``"^regex"``
            subscription (librdkafka's POSIX extended dialect, not Python's ``re``).
        offset_directory: Directory of the offset files, created if missing. None is allowed
            only with ``offset_store`` or in group mode.
        receive_callback: ``receive_callback(batch)`` gets each [rdk.Batch][] on the delivery
            thread; needed by `start()`/`run()`. When it returns a Future or an awaitable, the
            batch settles once that completes. None: iterate `batches()` instead.
        stats_callback: Called with a [rdk.ConsumerStats][] every ``statistics_interval_ms``
            on rdk's event thread; exceptions are logged. None: no stats are requested.
        logger: A ``logging.Logger`` or ``LoggerAdapter`` for the consumer's messages. None:
            the ``rdk`` logger.
        max_messages_per_callback: Most messages in one batch, 1 to 1,000,000.
        statistics_interval_ms: Milliseconds between stats, 0 to 86,400,000 (used only with
            ``stats_callback``).
        queued_max_messages_kbytes: librdkafka's ``queued.max.messages.kbytes``, 1 to 2,097,151.
        driver_options: librdkafka global properties, verbatim.
        topic_options: librdkafka topic properties, verbatim, except ``auto.offset.reset``
            (refused: use ``on_offset_out_of_range``).
        num_workers: Number of worker slots the topic's partitions are split among.
        worker_slot: This consumer's slot, ``0 <= worker_slot < num_workers``.
        start_offset: Where a partition without stored progress starts: ``"earliest"`` or
            ``"latest"``.
        on_offset_out_of_range: ``"earliest"``, ``"latest"`` (start there again) or ``"error"``
            (stop the consumer with a KafkaError, see [rdk.Consumer.error][]).
        decode: None (values are bytes) or ``"utf-8"`` (values are str).
        commit_on_error: Whether a batch whose callback raised still counts as processed. With
            False, no later offset of its partition is recorded in this run.
        offset_store: An object with ``read(partitions)`` and ``commit(offsets)`` keeping the
            progress (an [rdk.offsets.OffsetStore][], e.g. [rdk.BrokerOffsetStore][]). None:
            offset files in ``offset_directory`` (the group's commits in group mode).
        loop: The asyncio event loop that runs awaitables ``receive_callback`` returns. None:
            a loop on a thread of rdk's own.
        group_id: Join this Kafka consumer group (group mode). None: worker-slot mode.
        on_assign: Group mode only: called with ``[(topic, partition), ...]`` newly assigned.
        on_revoke: Group mode only: called with ``[(topic, partition), ...]`` being revoked,
            after their in-flight batches settled (up to REVOKE_TIMEOUT, 30 s, or half of
            ``max.poll.interval.ms`` if less) and their offsets were committed.
        oauth_cb: SASL/OAUTHBEARER tokens for every client the consumer makes:
            ``oauth_cb(sasl.oauthbearer.config) -> (token, expiry_epoch_seconds[, principal[,
            extensions]])`` (confluent-kafka's shape); None: librdkafka's own.
        value_deserializer: An ``rdk.schema_registry`` deserializer: each batch's values are
            decoded in one call before delivery; records that fail go to ``batch.undecodable``
            (see [rdk.Batch][]); while the registry does not answer the batch waits. None: bytes.
        key_deserializer: The same for keys. None: bytes.

    Raises:
        TypeError: An argument of the wrong type (the message names it), or neither
            ``offset_directory`` nor ``offset_store`` in worker-slot mode.
        ValueError: A value out of range or not one of the choices, an empty ``group_id`` or
            one librdkafka would rewrite (leading white space, a NUL), ``on_assign``/
            ``on_revoke`` without ``group_id``, ``num_workers``/``worker_slot`` with
            ``group_id``, ``offset_store`` with several topics, a ``^regex`` without
            ``group_id``, or a closed ``loop``.
        rdk.ConfigError: A property librdkafka refuses, ``bootstrap.servers`` in
            ``driver_options`` differing from ``broker``, ``auto.offset.reset`` in
            ``topic_options``, or ``oauth_cb`` with an OAUTHBEARER method that excludes it.
        rdk.OffsetFileError: ``offset_directory`` is not a directory or not writable.
    """

    def __init__(
        self,
        broker: str,
        topic: str | Sequence[str],
        offset_directory: str | os.PathLike | None = None,
        receive_callback: Callable[[Batch], Any] | None = None,
        *,
        stats_callback: Callable[[stats.ConsumerStats], Any] | None = None,
        logger: logging.Logger | logging.LoggerAdapter | None = None,
        max_messages_per_callback: int = 10000,
        statistics_interval_ms: int = 5000,
        queued_max_messages_kbytes: int = 1000000,
        driver_options: Mapping[str, Any] | None = None,
        topic_options: Mapping[str, Any] | None = None,
        num_workers: int = 1,
        worker_slot: int = 0,
        start_offset: str = "earliest",
        on_offset_out_of_range: str = "earliest",
        decode: str | None = None,
        commit_on_error: bool = True,
        offset_store: Any = None,
        loop: asyncio.AbstractEventLoop | None = None,
        group_id: str | None = None,
        on_assign: Callable[[list[tuple[str, int]]], Any] | None = None,
        on_revoke: Callable[[list[tuple[str, int]]], Any] | None = None,
        oauth_cb: Callable[[str], Any] | None = None,
        value_deserializer: Any = None,
        key_deserializer: Any = None,
    ) -> None:
        if value_deserializer is not None or key_deserializer is not None:
            from ._deserialize import check_deserializers

            check_deserializers(value_deserializer, key_deserializer)
        cfg = self._config = ConsumerConfig(
            broker, topic, offset_directory, receive_callback=receive_callback,
            stats_callback=stats_callback, logger=logger,
            max_messages_per_callback=max_messages_per_callback,
            statistics_interval_ms=statistics_interval_ms,
            queued_max_messages_kbytes=queued_max_messages_kbytes, driver_options=driver_options,
            topic_options=topic_options, num_workers=num_workers, worker_slot=worker_slot,
            start_offset=start_offset, on_offset_out_of_range=on_offset_out_of_range,
            decode=decode, commit_on_error=commit_on_error, offset_store=offset_store, loop=loop,
            group_id=group_id, on_assign=on_assign, on_revoke=on_revoke, oauth_cb=oauth_cb)
        self.broker, self.topic, self.topics, self.pattern = cfg.broker, cfg.topic, cfg.topics, cfg.pattern
        self.group_id, self.logger, self.offset_directory = cfg.group_id, cfg.logger, cfg.offset_directory
        self.max_messages_per_callback = cfg.max_messages_per_callback
        self.statistics_interval_ms = cfg.statistics_interval_ms
        self.queued_max_messages_kbytes = cfg.queued_max_messages_kbytes
        self.num_workers, self.worker_slot = cfg.num_workers, cfg.worker_slot
        self.start_offset, self.on_offset_out_of_range = cfg.start_offset, cfg.on_offset_out_of_range
        self.decode, self.commit_on_error = cfg.decode, cfg.commit_on_error
        self._describe, self._owner = f"consumer of {cfg.topic}", f"Consumer of {cfg.topic!r}"
        self._init_lifecycle()
        self._build_parts(cfg)
        self._decoder = None
        if value_deserializer is not None or key_deserializer is not None:
            from ._deserialize import BatchDecoder

            self._decoder = BatchDecoder(value_deserializer, key_deserializer, self.logger, self._stop_event)

    def _build_parts(self, cfg: ConsumerConfig) -> None:
        """The state, then the parts it is handed to: loop, assignment strategy, threads."""
        shared = self._shared = ConsumerState(cfg, self._stop_event, self._fail)
        self._running = shared.running  # clear while paused
        self._loop_thread = LoopThread(cfg.loop, name=f"rdk-asyncio-{cfg.topic}")
        self._loop_thread.check_open()
        strategy = GroupAssignment if cfg.group_id is not None else SlotAssignment
        self._assignment: SlotAssignment | GroupAssignment = strategy(cfg, shared)
        self._threads = ThreadSet(self._assignment, shared, self._loop_thread, self._warn)

    @property
    def partitions(self) -> list[int]:
        """The partitions of ``topic`` (the first topic) this consumer owns or was assigned."""
        first = self._config.first_topic
        return sorted(p for t, p in self._shared.owned() if t == first)

    @property
    def partition_count(self) -> int | None:
        """Partitions of ``topic`` (the first topic) once started; None before."""
        first = self._config.first_topic
        return self._shared.partition_counts.get(first) if first is not None else None

    @property
    def last_stats(self) -> stats.ConsumerStats | None:
        """The latest [rdk.ConsumerStats][] (None until the first, or without ``stats_callback``)."""
        return self._assignment.stats.last

    # ---- lifecycle -------------------------------------------------------------------
    def start(self) -> list[Any]:
        """Take the partition locks, resume from stored progress and begin delivering
        batches to ``receive_callback`` on a background thread. Returns the owned partitions
        (``[(topic, partition)]`` with several topics; ``[]`` in group mode: see on_assign).

        Waits up to METADATA_TIMEOUT (10 s) for the topic's partitions: an unknown topic on a
        reachable broker fails at once (UNKNOWN_TOPIC_OR_PART); a broker that does not
        answer fails after that wait, with an error naming the broker and the wait.

        Returns:
            The owned partitions: ``[partition, ...]`` with one topic,
            ``[(topic, partition), ...]`` with several, ``[]`` in group mode.

        Raises:
            TypeError: No ``receive_callback`` was given.
            RuntimeError: Already started.
            rdk.ClosedError: Stopped, or called in a process forked after the consumer was made.
            ValueError: ``loop=`` is closed.
            rdk.KafkaError: No metadata for the topic (``UNKNOWN_TOPIC_OR_PART``, an
                unreachable broker, an authentication or TLS failure).
            rdk.LockedError: Another consumer holds the offset-file lock of a partition.
            rdk.OffsetFileError: A stored offset file is corrupt.
        """
        self._check_process()
        self._check_not_stopped("start()")
        if self._config.receive_callback is None:
            raise TypeError("start() needs receive_callback; or iterate consumer.batches()")
        return self._open("callback")

    def _open(self, mode: str, here: bool = False) -> list[Any]:
        with self._state_lock:
            self._check_openable()
            if mode == "callback":
                self._loop_thread.check_open()
            try:
                pipeline = self._assignment.open()
                pipeline.on_filled = self._wake
            except BaseException:
                self._threads.teardown()
                raise
            self._mark_running(mode)
            if not self._running.is_set():  # pause() came before start()
                self._pause_resume(True)
            delivery = None
            if mode == "callback":
                callback = cast(Callable[[Batch], Any], self._config.receive_callback)
                delivery = DeliveryThread(
                    pipeline, self._decoder.wrap(callback) if self._decoder else callback,
                    self._shared, self._loop_thread)
            self._threads.start(pipeline, delivery, here)  # here: rdk.aio's start
            return self._assignment.result()

    def stop(self, timeout: float = 30.0) -> None:
        """Stop fetching, wait for in-flight callbacks and pending offset writes, close.

        Returns within ``timeout`` even if a callback never returns (with a warning saying
        so); ``inf`` waits for every callback without a practical limit (nan or a negative
        timeout raises ValueError). Called from inside a callback, it only asks for the stop
        and returns; the consumer finishes the stop once the callback has returned.
        Idempotent. In a forked child it returns at once, leaving the parent's handle, locks
        and offsets alone.

        Args:
            timeout: Seconds to wait in all; ``inf`` waits without a practical limit.

        Raises:
            TypeError: ``timeout`` is not a number.
            ValueError: ``timeout`` is negative or nan.
        """
        self._stop(timeout)

    def _stop_requested(self) -> None:
        self._running.set()  # a paused consumer's threads wake up and see the stop

    def _on_own_thread(self) -> bool:
        return self._threads.is_own(threading.current_thread())

    def _finish(self, deadline: float, timeout: float) -> None:
        self._threads.finish(deadline, timeout, wait_in_flight=self._mode == "callback")

    def _fail(self, err: KafkaError) -> None:
        """A fatal error: remember it; callback mode logs it and stops the consumer."""
        if self._fail_once(err) and self._mode == "callback":
            self.logger.error("consumer of %s stops: %s", self.topic, err)
            self._stop_event.set()
            self._stop_in_background()

    # ---- flow control ---------------------------------------------------------------
    def pause(self) -> None:
        """Stop deliveries and fetching of the owned partitions (librdkafka's pause), so
        memory stays bounded. Callable from ``receive_callback`` and from any thread.

        Raises:
            rdk.ClosedError: The consumer is stopped, or in a forked child.
            rdk.KafkaError: librdkafka refused to pause.
        """
        self._pause_resume(True)

    def resume(self) -> None:
        """Restart fetching and deliveries after ``pause()``.

        Raises:
            rdk.ClosedError: The consumer is stopped, or in a forked child.
            rdk.KafkaError: librdkafka refused to resume.
        """
        self._pause_resume(False)

    @property
    def paused(self) -> bool:
        """True between ``pause()`` and ``resume()``."""
        return not self._running.is_set()

    def _pause_resume(self, pause: bool) -> None:
        self._check_process()
        with self._state_lock:
            if self._state in ("stopping", "closed"):
                raise ClosedError(f"this Consumer is stopped ({self._state})")
            self._assignment.set_paused(pause)
            if pause:
                self._running.clear()
            else:
                self._running.set()
                self._wake()

    # ---- iterator interface ------------------------------------------------------------
    def batches(self, timeout: float | None = None) -> Iterator[Batch]:
        """Yield batches for scripts: ``for batch in consumer.batches(timeout=5): ...``.

        Starts the consumer if needed (no receive_callback required). A batch's offsets are
        recorded on ``batch.commit()`` or when the next batch is requested. Ends when no
        batch arrives within ``timeout`` seconds (None: wait forever) or after ``stop()``;
        raises the KafkaError that stopped fetching, if any.

        Args:
            timeout: Seconds to wait for the next batch before the iteration ends; None waits
                until ``stop()``.

        Yields:
            Each [rdk.Batch][] in turn.

        Raises:
            TypeError: ``timeout`` is not a number.
            ValueError: ``timeout`` is negative or nan.
            RuntimeError: The consumer was started with ``start()``/``run()``.
            rdk.ClosedError: In a process forked after the consumer was made, or stopped.
            rdk.KafkaError: The error that stopped fetching, and the errors of ``start()``.
        """
        return self._iterate(self._begin_iteration(timeout))

    def _iterate(self, timeout: float | None) -> Iterator[Batch]:
        prev: Batch | None = None
        while True:
            self._check_process()
            if prev is not None:
                prev.commit()
                prev = None
            if self._error is not None:
                raise self._error
            pipeline = cast(FetchPipeline, self._assignment.pipeline)
            batch = pipeline.next_batch(timeout, lambda: self._error)  # (tracked)
            if batch is None:
                return
            prev = batch
            yield self._decoder.decode(batch) if self._decoder else batch

    def _take_batch(self) -> Batch | None:
        """Iterator mode without waiting (rdk.aio): the next ready batch, tracked, or None
        (none ready, paused or stopping); raises the error that stopped fetching."""
        self._check_process()
        if self._error is not None:
            raise self._error
        pipeline = cast(FetchPipeline, self._assignment.pipeline)
        return pipeline.next_batch(0, lambda: self._error)

    # ---- assignment, seek, group -----------------------------------------------------------
    @property
    def assignment(self) -> list[tuple[str, int]]:
        """The (topic, partition)s this consumer reads now: its worker slot's, or what the
        group assigned (changes with every rebalance)."""
        return self._assignment.keys()

    def seek(self, topic_or_partition: int | tuple[str, int], offset: int | str) -> None:
        """Fetch a partition again from ``offset`` (an int >= 0, or "earliest"/"latest").

        ``topic_or_partition``: a partition number (one-topic consumer) or a
        ``(topic, partition)`` pair; it must be assigned/owned now (ValueError otherwise).
        Batches already handed out are not affected: they still settle and record their
        offsets, in order. Batches fetched but not handed out yet are dropped, and the next
        batch of that partition starts at ``offset``; its offsets are recorded as it
        settles (so a seek backwards moves the stored progress back). "latest" is the
        broker's ListOffsets answer (one message early on Tansu).

        Args:
            topic_or_partition: A partition number (one-topic consumer) or a
                ``(topic, partition)`` pair.
            offset: The offset to fetch from, an int >= 0, or ``"earliest"``/``"latest"``.

        Raises:
            TypeError: A partition number on a consumer of several topics, or a non-int.
            ValueError: The partition is not assigned/owned, or a bad ``offset``.
            RuntimeError: The consumer was not started.
            rdk.ClosedError: The consumer is stopped, or in a forked child.
            rdk.KafkaError: librdkafka refused the seek (group mode).
        """
        self._check_process()
        key = self._config.check_key(topic_or_partition)
        target = check_seek_offset(offset)
        with self._state_lock:
            if self._state != "running":
                raise (ClosedError(f"this Consumer is {self._state}") if self._state != "new"
                       else RuntimeError("seek() needs a started consumer (start() or batches())"))
            if key not in self.assignment:
                raise ValueError(f"seek: {key[0]}[{key[1]}] is not assigned to this consumer "
                                 f"(assigned: {self.assignment})")
        self._seek_key(key, target)

    def _seek_key(self, key: tuple[str, int], offset: int) -> None:
        self._assignment.seek(key, offset)
        self.logger.info("consumer of %s: %s[%d] seeks to %s", self.topic, key[0], key[1], offset)

    def group_metadata(self) -> Any:
        """This member's group metadata (group id, member id, generation), for
        [rdk.Producer.send_offsets_to_transaction][]. Group mode only (ValueError otherwise).

        Returns:
            An [rdk.GroupMetadata][]; close it (or use ``with``) when done.

        Raises:
            ValueError: Not in group mode.
            RuntimeError: The consumer was not started.
            rdk.ClosedError: The consumer is stopped, or in a forked child.
        """
        self._check_process()
        if self.group_id is None:
            raise ValueError("group_metadata() needs group mode (group_id=...): a worker-slot "
                             "consumer is not a group member")
        self._check_not_stopped("group_metadata()")
        client = self._assignment.client
        if client is None or self._state != "running":
            raise RuntimeError("group_metadata() needs a started consumer (start() or batches())")
        from ..transactions import group_metadata_of

        return group_metadata_of(client)

    def __repr__(self) -> str:
        if self.group_id is not None:
            return (f"<rdk.Consumer {self.topic} group {self.group_id!r} {self._state} "
                    f"assignment={self.assignment}>")
        return (f"<rdk.Consumer {self.topic} slot {self.worker_slot}/{self.num_workers} "
                f"{self._state} partitions={self.partitions}>")

