"""rdk.Consumer: the public API and lifecycle (new -> running -> stopping -> closed).

The work is done by its parts: the :class:`FetchPipeline` (fetch thread and buffers), the
:class:`DeliveryThread` (callback mode), the :class:`SettlementTracker` with an
``offsets.OffsetCommitter`` (progress), the :class:`BeyondEndRule` and the
:class:`LoopThread`. This module builds them, starts and stops them in order, and holds
pause/resume, ``batches()``, stats and the error that stopped the consumer.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, cast

from .. import _binding, _exit, _partitions, offsets, slots, stats
from .._binding import lib
from .._fetch import GroupFetcher
from ..errors import ClosedError, ConfigError, KafkaError
from ..validate import (
    check_bootstrap_rule,
    check_broker,
    check_callable,
    check_choice,
    check_int,
    check_logger,
    check_options,
    check_timeout,
    check_topic_name,
    check_topic_pattern,
    check_wait,
)
from ._batch import Batch
from ._beyond_end import BeyondEndRule
from ._delivery import DeliveryThread
from ._group import (
    GroupMember,
    GroupOffsetStore,
    Key,
    TopicFileStores,
    TopicKeyedStore,
    TopicTrackers,
    wait_partitions,
)
from ._loop_thread import LoopThread, is_event_loop
from ._pipeline import FetchPipeline
from ._tracker import SettlementTracker, is_pending

if TYPE_CHECKING:
    import asyncio

__all__ = ["Consumer"]

log = logging.getLogger("rdk")

_OFFSET_WRITE_INTERVAL = 0.1   # offset writes start at most 10 times a second (they coalesce)
_OFFSET_WRITE_CPU_SHARE = 0.05  # ...and take at most ~5 % of a core (thousands of partitions)
_WATERMARK_TIMEOUT = 10.0      # start_offset="latest": seconds to learn the high watermarks
_REFUSED = {"GROUP_AUTHORIZATION_FAILED", "CLUSTER_AUTHORIZATION_FAILED"}  # stop the consumer
METADATA_TIMEOUT = 10.0        # start(): seconds to learn the topic's partitions from the broker
_INT32_MAX = 2**31 - 1
_INT64_MAX = 2**63 - 1


class Consumer:
    """kafka-native's Consumer: ``Consumer(broker, topic, offset_directory, receive_callback, ...)``.

    Options (kafka-native's names): ``stats_callback``, ``logger``,
    ``max_messages_per_callback=10000``, ``statistics_interval_ms=5000``,
    ``queued_max_messages_kbytes=1000000``, ``driver_options``, ``topic_options``,
    ``num_workers=1``, ``worker_slot=0``. Beyond kafka-native: ``start_offset``
    ("earliest"/"latest", for partitions without stored progress),
    ``on_offset_out_of_range`` ("earliest"/"latest"/"error"), ``decode`` (None or "utf-8"),
    ``commit_on_error=True``, ``offset_store`` (any [rdk.offsets.OffsetStore][], e.g.
    [rdk.BrokerOffsetStore][]) and ``loop`` (asyncio loop for awaitables the callback
    returns).

    ``receive_callback`` is needed for ``start()``/``run()``; scripts can instead iterate
    ``for batch in consumer.batches(timeout=...)``.

    **Group mode** (``group_id="..."``): Kafka's group coordinator assigns the partitions
    (``cooperative-sticky`` unless ``driver_options`` choose another
    ``partition.assignment.strategy`` or ``group.protocol=consumer``), and progress is
    committed to the group unless ``offset_store`` is given (``offset_directory`` may then
    be None). ``topic`` may be a list of topics or a ``"^regex"``. ``on_assign(partitions)``
    and ``on_revoke(partitions)`` get ``[(topic, partition), ...]`` on rdk's group thread;
    before a revoke completes, the revoked partitions' in-flight batches settle (up to
    REVOKE_TIMEOUT, 30 s, or half of ``max.poll.interval.ms`` if less) and their offsets
    are committed.

    ``broker`` names the cluster: ``driver_options`` may repeat it as ``bootstrap.servers``
    (or ``metadata.broker.list``) only with the same value (else ConfigError), as for the
    Producer. A consumer belongs to the process that created it: in a forked child every
    call raises ClosedError and ``stop()``/``close()`` return at once, touching nothing.

    ``oauth_cb(sasl.oauthbearer.config) -> (token, expiry_epoch_seconds[, principal[,
    extensions]])`` supplies SASL/OAUTHBEARER tokens to every client the consumer makes
    (confluent-kafka's name and shape). An authentication or TLS failure (``_AUTHENTICATION``,
    ``_SSL``) makes ``start()`` raise its KafkaError as soon as librdkafka reports it, naming
    the broker; after start() one is logged as ERROR (librdkafka keeps retrying).

    Args:
        broker: Comma-separated ``host:port`` list (an optional ``scheme://`` prefix is allowed).
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
            after their in-flight batches settled and their offsets were committed.
        oauth_cb: SASL/OAUTHBEARER token source (see above); None: librdkafka's own.

    Raises:
        TypeError: An argument of the wrong type (the message names it), or neither
            ``offset_directory`` nor ``offset_store`` in worker-slot mode.
        ValueError: A value out of range or not one of the choices, an empty ``group_id``,
            ``on_assign``/``on_revoke`` without ``group_id``, ``num_workers``/``worker_slot``
            with ``group_id``, ``offset_store`` with several topics, a ``^regex`` without
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
    ) -> None:
        self.broker = check_broker(broker)
        if group_id is not None:
            if not isinstance(group_id, str):
                raise TypeError(f"group_id must be str, got {type(group_id).__name__}")
            if not group_id:
                raise ValueError("group_id must not be empty")
        self.group_id = group_id
        self.topics, self.pattern = _check_topics(topic, group_id is not None)
        self.topic = self.pattern or ",".join(self.topics)
        self._multi_topic = self.pattern is not None or len(self.topics) > 1
        for name, fn in (("on_assign", on_assign), ("on_revoke", on_revoke)):
            check_callable(fn, name)
            if fn is not None and group_id is None:
                raise ValueError(f"{name} needs group_id=...: in worker-slot mode the "
                                 "partitions are fixed (see start()'s return value)")
        self._on_assign, self._on_revoke = on_assign, on_revoke
        self._receive_callback = check_callable(receive_callback, "receive_callback")
        self._stats_callback = check_callable(stats_callback, "stats_callback")
        self.logger = check_logger(logger) or log
        self.max_messages_per_callback = check_int(
            max_messages_per_callback, "max_messages_per_callback", minimum=1, maximum=1_000_000)
        self.statistics_interval_ms = check_int(
            statistics_interval_ms, "statistics_interval_ms", minimum=0, maximum=86_400_000)
        self.queued_max_messages_kbytes = check_int(
            queued_max_messages_kbytes, "queued_max_messages_kbytes", minimum=1, maximum=2_097_151)
        check_int(num_workers, "num_workers", maximum=_INT32_MAX)
        check_int(worker_slot, "worker_slot", maximum=_INT32_MAX)
        self.num_workers, self.worker_slot = slots.check_slot(num_workers, worker_slot)
        if group_id is not None and (num_workers, worker_slot) != (1, 0):
            raise ValueError("num_workers/worker_slot split partitions by worker slot; with "
                             "group_id the group coordinator assigns them: give one or the other")
        self.start_offset = check_choice(start_offset, "start_offset", ("earliest", "latest"))
        self.on_offset_out_of_range = check_choice(
            on_offset_out_of_range, "on_offset_out_of_range", ("earliest", "latest", "error"))
        self.decode = check_choice(decode, "decode", (None, "utf-8"))
        if not isinstance(commit_on_error, bool):
            raise TypeError(f"commit_on_error must be bool, got {type(commit_on_error).__name__}")
        self.commit_on_error = commit_on_error
        if loop is not None and not is_event_loop(loop):
            raise TypeError(f"loop must be an asyncio event loop, got {type(loop).__name__}")
        self._pid = os.getpid()  # the process this consumer belongs to
        self._configure(check_options(driver_options, "driver_options"),
                        check_options(topic_options, "topic_options"))
        self._oauth_cb = _binding.check_oauth_cb(oauth_cb, self._driver_options)
        if group_id is not None:
            if offset_store is not None and self._multi_topic:
                raise ValueError("offset_store= keeps one topic's progress; with several topics "
                                 "(or a ^regex) group mode commits to the group")
            self.offset_directory = (offsets.ensure_directory(offset_directory)
                                     if offset_directory is not None else None)
            if offset_store is not None:
                self.offset_directory, self._store = _offset_store(
                    offset_store, offset_directory, self.topic)
            else:
                self._store = None  # the group's, made at start()
        elif self._multi_topic:
            if offset_store is not None:
                raise ValueError("offset_store= keeps one topic's progress; with several topics "
                                 "a worker-slot consumer keeps offset files")
            self.offset_directory, _ = _offset_store(None, offset_directory, self.topics[0])
            self._store = TopicFileStores(self.offset_directory, self.topics)
        else:
            self.offset_directory, self._store = _offset_store(offset_store, offset_directory,
                                                               self.topic)

        self._state = "new"        # new -> running -> stopping -> closed
        self._mode: str | None = None   # "callback" (start/run) or "iterator" (batches)
        self._state_lock = threading.RLock()
        self._stop_event = threading.Event()
        self._closed_event = threading.Event()
        self._running = threading.Event()  # clear while paused
        self._running.set()
        self._tracker: Any = (TopicTrackers(commit_on_error, self.logger) if self._multi_topic
                              else SettlementTracker(commit_on_error, self.logger, self.topic))
        self._loop_thread = LoopThread(loop, name=f"rdk-asyncio-{self.topic}")
        self._loop_thread.check_open()
        self._error: KafkaError | None = None
        self._client: _binding.Client | None = None
        self._pipeline: FetchPipeline | None = None
        self._delivery: DeliveryThread | None = None
        self._lock: offsets.PartitionLock | None = None
        self._committer: offsets.OffsetCommitter | None = None
        self._member: GroupMember | None = None
        self._slot_keys: list[Key] = []   # slot mode: the owned (topic, partition)s
        self._extra_locks: list[offsets.PartitionLock] = []  # slot mode: topics after the first
        self.partitions: list[int] = []
        """The partitions of ``topic`` (the first topic) this consumer owns or was assigned."""
        self.partition_count: int | None = None
        """Partitions of ``topic`` (the first topic) once started; None before."""
        self.last_stats: stats.ConsumerStats | None = None
        """The latest [rdk.ConsumerStats][] (None until the first, or without ``stats_callback``)."""

    def _configure(self, driver_options: dict, topic_options: dict) -> None:
        """librdkafka's properties for the handle and the topic, checked by librdkafka now."""
        if "auto.offset.reset" in topic_options:
            raise ConfigError("topic_options: set the out-of-range behaviour with "
                              "on_offset_out_of_range= instead of 'auto.offset.reset'")
        check_bootstrap_rule(self.broker, driver_options)
        self._props = {
            "queued.max.messages.kbytes": self.queued_max_messages_kbytes,
            "statistics.interval.ms": self.statistics_interval_ms if self._stats_callback else 0,
            "enable.partition.eof": False,
            # librdkafka pauses a partition's fetching for fetch.queue.backoff.ms (1 s by
            # default) whenever its queue holds queued.min.messages. A broker that answers
            # with large responses (Tansu) crosses that at once, and a consumer that is not
            # instantly fast then idles for a second with an empty queue. Look again soon.
            "fetch.queue.backoff.ms": 10,
            **driver_options,
            "bootstrap.servers": self.broker,
        }
        self._driver_options = driver_options
        self._topic_props = {**topic_options, "auto.offset.reset": self.on_offset_out_of_range}
        # librdkafka is the validator of its properties: refuse bad ones now, not at start().
        lib.rd_kafka_conf_destroy(_binding.new_conf(self._props))
        _binding.validate_topic_options(self._topic_props)

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
        if self._receive_callback is None:
            raise TypeError("start() needs receive_callback; or iterate consumer.batches()")
        return self._open("callback")

    def _check_not_stopped(self, what: str) -> None:
        if self._state in ("stopping", "closed"):
            raise ClosedError(f"{what}: this Consumer of {self.topic!r} is stopped; make a new one")

    def _open(self, mode: str) -> list[Any]:
        with self._state_lock:
            self._check_process()
            if self._state != "new":
                if self._state == "running":
                    raise RuntimeError("this Consumer is already started")
                raise ClosedError("this Consumer is stopped; make a new one")
            if mode == "callback":
                self._loop_thread.check_open()
            try:
                pipeline = self._setup()
            except BaseException:
                self._teardown()
                raise
            self._mode = mode
            self._state = "running"
            _exit.register(self, _exit.CONSUMERS)
            if not self._running.is_set():  # pause() came before start()
                self._pause_resume(True)
            pipeline.start_thread(f"rdk-fetch-{self.topic}")
            if mode == "callback":
                self._delivery = DeliveryThread(
                    pipeline, self._receive_callback, tracker=self._tracker, settle=self._settle,
                    loop=self._loop_thread, stopping=self._stop_event, running=self._running,
                    logger=self.logger, abandon=self._abandon, fail=self._fail, topic=self.topic)
                self._delivery.start(f"rdk-deliver-{self.topic}")
            if self._multi_topic and self.group_id is None:
                return list(self._slot_keys)
            return list(self.partitions)

    def _setup(self) -> FetchPipeline:
        """Client, owned partitions and their locks, stored progress, committer, pipeline."""
        if self.group_id is not None:
            return self._setup_group()
        if self._multi_topic:
            return self._setup_slot_topics()
        client = self._client = _binding.Client(
            "consumer", self._props, self._topic_props, logger=cast(logging.Logger, self.logger),
            on_stats=self._on_stats if self._stats_callback else None,
            on_error=self._on_client_error, oauth_cb=self._oauth_cb)
        count = self._partition_count(client)
        owned = slots.owned_partitions(count, self.num_workers, self.worker_slot, self.topic)
        if self.offset_directory is not None:
            self._lock = offsets.lock_partitions(self.offset_directory, self.topic, owned)
            offsets.remove_temp_files(self.offset_directory, self.topic, owned)
        bind = getattr(self._store, "bind", None)
        if callable(bind):
            bind(topic=self.topic, broker=self.broker, driver_options=self._driver_options,
                 logger=self.logger)
        stored = self._store.read(owned)
        starts = _stored_starts(stored, owned, self._store)
        fresh = [p for p in owned if p not in starts]
        if fresh and self.start_offset == "latest":
            starts.update(self._high_watermarks(client, fresh))
        self._committer = self._new_committer()
        pipeline = self._pipeline = FetchPipeline(
            client, self.topic, partition_count=count, partitions=owned, next_offsets=starts,
            max_messages=self.max_messages_per_callback, decode=self.decode is not None,
            stopping=self._stop_event, running=self._running, logger=self.logger,
            on_fatal=self._fail, settle=self._settle)
        pipeline.on_idle = BeyondEndRule(
            client, self.topic, owned, pipeline.expected, self.on_offset_out_of_range, self.logger,
            fail=self._fail, restart=pipeline.restart_partition).check
        self.partition_count = count
        self.partitions = owned
        for p in owned:
            pipeline.start_partition(p, starts.get(p, lib.RD_KAFKA_OFFSET_BEGINNING))
        self.logger.info("consumer of %s owns partitions %s (slot %d of %d), starting at %s",
                         self.topic, owned, self.worker_slot, self.num_workers,
                         {p: stored[p] + 1 if p in stored else self.start_offset for p in owned})
        return pipeline

    def _new_committer(self) -> offsets.OffsetCommitter:
        """The one committer of every mode: writes start at most 10 times a second and take
        at most ~5 % of a core (thousands of partitions' offset files)."""
        return offsets.OffsetCommitter(self._store, cast(logging.Logger, self.logger),
                                       name=f"rdk-offsets-{self.topic}",
                                       min_interval=_OFFSET_WRITE_INTERVAL,
                                       max_cpu_share=_OFFSET_WRITE_CPU_SHARE)

    def _setup_group(self) -> FetchPipeline:
        """Group mode: client with group.id, the group's store, pipeline, then subscribe."""
        props = {**self._props, "group.id": self.group_id, "enable.auto.commit": False,
                 "enable.auto.offset.store": False}
        if (str(props.get("group.protocol", "classic")) != "consumer"
                and "partition.assignment.strategy" not in props):
            props["partition.assignment.strategy"] = "cooperative-sticky"
        client = self._client = _binding.Client(
            "consumer", props, self._topic_props, logger=cast(logging.Logger, self.logger),
            on_stats=self._on_stats if self._stats_callback else None,
            on_error=self._on_client_error, extra_events=lib.RD_KAFKA_EVENT_REBALANCE,
            oauth_cb=self._oauth_cb)
        count = 1
        for t in self.topics:  # literal topics must exist: fail at once, as slot mode does
            n = self._partition_count(client, t)
            count = n if t == self.topic else count
        fetcher = GroupFetcher(client, self.max_messages_per_callback)
        pipeline = self._pipeline = FetchPipeline(
            client, self.topic, partition_count=count, partitions=[], next_offsets={},
            max_messages=self.max_messages_per_callback, decode=self.decode is not None,
            stopping=self._stop_event, running=self._running, logger=self.logger,
            on_fatal=self._fail, settle=self._settle, fetcher=fetcher,
            multi_topic=self._multi_topic)
        member = self._member = GroupMember(
            self, client, pipeline, fetcher, self.topics or [cast(str, self.pattern)],
            name=f"rdk-group-{self.topic}",
            rebalance_timeout=float(props.get("max.poll.interval.ms", 300_000)) / 1000)
        if self._store is None:
            self._store = GroupOffsetStore(client, cast(str, self.group_id), member.owned,
                                           self.logger)
        else:
            bind = getattr(self._store, "bind", None)
            if callable(bind):
                bind(topic=self.topic, broker=self.broker, driver_options=self._driver_options,
                     logger=self.logger)
            self._store = TopicKeyedStore(self._store, self.topic)
        self._committer = self._new_committer()
        if not self._multi_topic:
            self._beyond_end = BeyondEndRule(
                client, self.topic, [], pipeline.expected, self.on_offset_out_of_range,
                self.logger, fail=self._fail, restart=self._restart_group_partition)
            pipeline.on_idle = self._beyond_end.check
        self.partition_count = count
        self.partitions = []
        member.start()
        self.logger.info("consumer of %s joins group %r", self.topic, self.group_id)
        return pipeline

    def _setup_slot_topics(self) -> FetchPipeline:
        """Worker-slot mode over several topics: each topic's slot partitions, locked, resumed
        from their offset files, fetched on one queue (a batch holds one topic)."""
        client = self._client = _binding.Client(
            "consumer", self._props, self._topic_props, logger=cast(logging.Logger, self.logger),
            on_stats=self._on_stats if self._stats_callback else None,
            on_error=self._on_client_error, oauth_cb=self._oauth_cb)
        counts = {t: self._partition_count(client, t) for t in self.topics}
        owned = {t: slots.owned_partitions(n, self.num_workers, self.worker_slot, t)
                 for t, n in counts.items()}
        directory = cast(Any, self.offset_directory)
        for t, ps in owned.items():
            lock = offsets.lock_partitions(directory, t, ps)
            if t == self.topics[0]:
                self._lock = lock
            else:
                self._extra_locks.append(lock)
            offsets.remove_temp_files(directory, t, ps)
        keys = [(t, p) for t, ps in owned.items() for p in ps]
        stored = cast(Any, self._store).read(keys)
        starts = {k: v + 1 for k, v in stored.items()}
        for t, ps in owned.items():
            fresh = [p for p in ps if (t, p) not in starts]
            if fresh and self.start_offset == "latest":
                starts.update({(t, p): hi for p, hi in self._high_watermarks(client, fresh, t).items()})
        self._committer = self._new_committer()
        first = self.topics[0]
        pipeline = self._pipeline = FetchPipeline(
            client, first, partition_count=counts[first], partitions=[], next_offsets={},
            max_messages=self.max_messages_per_callback, decode=self.decode is not None,
            stopping=self._stop_event, running=self._running, logger=self.logger,
            on_fatal=self._fail, settle=self._settle, multi_topic=True)
        rules = []
        for t, ps in owned.items():
            arr, _n = pipeline.expected_of(t, counts[t] - 1)
            rules.append(BeyondEndRule(
                client, t, ps, arr, self.on_offset_out_of_range, self.logger, fail=self._fail,
                restart=partial(_restart_topic, pipeline, t)))
        pipeline.on_idle = partial(_check_all, rules)
        self.partition_count = counts[first]
        self.partitions = owned[first]
        self._slot_keys = keys
        for t, p in keys:
            start = starts.get((t, p), lib.RD_KAFKA_OFFSET_BEGINNING)
            pipeline.set_expected(t, p, start if start >= 0 else -1)
            pipeline.start_partition(p, start, t)
        self.logger.info("consumer of %s owns %s (slot %d of %d)", self.topic, keys,
                         self.worker_slot, self.num_workers)
        return pipeline

    # ---- group mode: called by the GroupMember on the group thread ----------------------
    def _group_starts(self, keys: list[Key]) -> dict[Key, int]:
        """Next offset of each newly assigned (topic, partition): stored progress + 1, else
        ``start_offset`` (a logical offset; "latest" read from the broker, Tansu-proof)."""
        stored = cast(Any, self._store).read(keys)
        starts: dict[Key, int] = {}
        fresh: dict[str, list[int]] = {}
        for key in keys:
            last = stored.get(key)
            if last is None:
                fresh.setdefault(key[0], []).append(key[1])
                starts[key] = lib.RD_KAFKA_OFFSET_BEGINNING
                continue
            if not isinstance(last, int) or isinstance(last, bool) or not -1 <= last < _INT64_MAX:
                raise ValueError(f"offset_store.read() gave {last!r} for {key[0]}[{key[1]}]; "
                                 f"expected the last processed offset, an int in -1..{_INT64_MAX - 1}")
            starts[key] = last + 1
        if fresh and self.start_offset == "latest":
            assert self._client is not None
            for t, parts in fresh.items():
                for p, hi in self._high_watermarks(self._client, parts, t).items():
                    starts[(t, p)] = hi
        return starts

    def _group_assigned(self, keys: list[Key], added: bool) -> None:
        """The assignment changed: update ``partitions`` and the beyond-end rule."""
        member = self._member
        if member is None:
            return
        owned = sorted(p for t, p in member.owned() if t == self.topic)
        self.partitions = owned
        rule = getattr(self, "_beyond_end", None)
        if rule is not None and self._pipeline is not None:
            rule.expected = self._pipeline.expected
            rule.partitions = owned

    def _wait_partitions(self, keys: list[Key], until: float) -> bool:
        """Wait (until monotonic ``until``) for in-flight batches of ``keys`` to settle."""
        if self._mode != "callback" and self._mode != "iterator":
            return True
        while not self._tracker_wait(keys, min(0.1, until - time.monotonic())):
            if time.monotonic() >= until or self._stop_event.is_set():
                return False
            if self._delivery is not None:
                self._delivery.watch_loop()
        return True

    def _tracker_wait(self, keys: list[Key], timeout: float) -> bool:
        tracker = self._tracker
        if isinstance(tracker, TopicTrackers):
            return tracker.wait_partitions_settled(keys, timeout)
        return wait_partitions(tracker, [p for _t, p in keys], timeout)

    def _flush_offsets(self, until: float) -> None:
        committer = self._committer
        if committer is not None and not committer.flush(max(0.0, until - time.monotonic())):
            self.logger.warning("consumer of %s: offsets %s not committed before the revoke",
                                self.topic, committer.pending)

    def _restart_group_partition(self, partition: int, offset: int) -> None:
        """The beyond-end rule's restart, in group mode: a seek."""
        self._seek_key((self.topic, partition), offset)

    def _partition_count(self, client: _binding.Client, topic: str | None = None) -> int:
        """The topic's partitions, within METADATA_TIMEOUT; an error naming what was waited for."""
        topic = self.topic if topic is None else topic
        t0 = time.monotonic()
        try:
            return client.partition_count(topic, METADATA_TIMEOUT)
        except KafkaError as e:
            if _binding.is_auth_failure(e):  # names the broker and librdkafka's reason
                raise KafkaError(e.code, e.description, context="start()") from e
            if e.name == "UNKNOWN_TOPIC_OR_PART":
                raise
            raise KafkaError(
                e.code, f"no metadata for topic {topic!r} from broker {self.broker!r} "
                f"after waiting {time.monotonic() - t0:.1f} s (start() waits up to "
                f"{METADATA_TIMEOUT:g} s): {e.description}; is the broker reachable?",
                context="start()") from e

    def _high_watermarks(self, client: _binding.Client, partitions: list[int],
                         topic: str | None = None) -> dict[int, int]:
        """Explicit "latest" offsets, right on every broker: ListOffsets confirmed by a short
        fetch (Tansu's ListOffsets(latest) is wrong) on a client with partition EOF."""
        fetch_client = _binding.Client(
            "consumer", {"fetch.wait.max.ms": 10, "bootstrap.servers": self.broker,
                         "allow.auto.create.topics": False, **self._driver_options,
                         "enable.partition.eof": True, "auto.offset.reset": "earliest"},
            oauth_cb=self._oauth_cb)
        try:
            marks = _partitions.true_watermarks(client, topic or self.topic, partitions,
                                                _WATERMARK_TIMEOUT, fetch_client=fetch_client)
        finally:
            fetch_client.close()
        return {p: hi for p, (_lo, hi) in marks.items()}

    def run(self) -> None:
        """``start()``, then block until ``stop()`` (from anywhere) or KeyboardInterrupt.

        Raises the KafkaError that stopped the consumer, if one did (e.g. an out-of-range
        offset with ``on_offset_out_of_range="error"``, or ``_FAIL`` when receive_callback,
        or the Future/awaitable it returned, ended with a BaseException such as SystemExit:
        that exception is the error's ``__cause__``).

        Raises:
            rdk.KafkaError: The error that stopped the consumer, and the errors of `start()`.
            rdk.ClosedError: The consumer is stopped already.
        """
        self._check_not_stopped("run()")
        self.start()
        try:
            while not self._closed_event.wait(0.25):
                pass
        except KeyboardInterrupt:
            self.stop()
        if self._error is not None:
            raise self._error

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
        timeout = check_wait(timeout, "timeout", threading.TIMEOUT_MAX)
        if os.getpid() != self._pid:
            return
        with self._state_lock:
            if self._state == "new":
                self._state = "closed"
                self._closed_event.set()
                return
            if self._state == "closed":
                return
            self._stop_event.set()
            self._running.set()
            if self._on_own_thread():
                if self._state == "running":
                    threading.Thread(target=self.stop, args=(timeout,), daemon=True,
                                     name=f"rdk-stop-{self.topic}").start()
                return
            first = self._state == "running"
            self._state = "stopping"
        if first:
            self._finish(time.monotonic() + timeout, timeout)
        else:
            self._closed_event.wait(timeout)

    def _own_threads(self) -> list[threading.Thread]:
        """The fetch and delivery threads, in the order they stop."""
        threads = [self._pipeline.fetch_thread if self._pipeline is not None else None,
                   self._delivery.thread if self._delivery is not None else None]
        return [t for t in threads if t is not None]

    def _on_own_thread(self) -> bool:
        """Whether the caller runs on a thread of this consumer (a callback's thread)."""
        current = threading.current_thread()
        return (current in self._own_threads() or current is self._loop_thread.thread
                or (self._client is not None and self._client.on_event_thread())
                or (self._member is not None and current is self._member.thread))

    def _finish(self, deadline: float, timeout: float) -> None:
        reserve = min(2.0, timeout * 0.2)  # keep time to store offsets of settled batches
        current = threading.current_thread()
        fetch_thread = self._pipeline.fetch_thread if self._pipeline is not None else None
        try:
            threads = [t for t in self._own_threads() if t is not current]
            for t in threads:
                # the fetch thread never blocks long (one fetch call, a queue put)
                least = 1.0 if t is fetch_thread else 0.0
                t.join(max(least, deadline - reserve - time.monotonic()))
            if any(t.is_alive() for t in threads):
                self._warn(f"receive_callback has not returned within stop(timeout={timeout}); "
                           "stopping without it (its batch's offsets are not recorded)")
            # (batches() settles only on commit() or the next request: nothing to wait for)
            if self._mode == "callback" and not self._wait_settled(deadline - reserve):
                self._warn(f"{self._tracker.unsettled} batch(es) still in flight at "
                           f"stop(timeout={timeout}); their offsets are not recorded")
            self._tracker.close()
            committer = self._committer
            # in group mode keep time to leave the group (else rd_kafka_destroy does, unbounded)
            leave = min(5.0, timeout * 0.25) if self._member is not None else 0.0
            if committer is not None and not committer.close(
                    max(0.0, deadline - leave - time.monotonic())):
                self._warn(f"offsets {committer.pending} were not stored within "
                           f"stop(timeout={timeout}): {committer.last_error}")
            if self._member is not None and not self._member.close(deadline):
                self.logger.warning("consumer of %s: did not leave group %r cleanly within "
                                    "stop(timeout=%s)", self.topic, self.group_id, timeout)
        finally:
            self._teardown(deadline)
            with self._state_lock:
                self._state = "closed"
            self._closed_event.set()
            _exit.unregister(self, _exit.CONSUMERS)

    def _close_at_exit(self, timeout: float) -> None:
        """The interpreter exits with this consumer running: ``stop(timeout)`` (rdk._exit)."""
        if self._state in ("running", "stopping"):
            self.logger.info("consumer of %s: stopping at interpreter exit (up to %.1f s)",
                             self.topic, timeout)
            self.stop(timeout)

    def _wait_settled(self, until: float) -> bool:
        """Wait (until monotonic ``until``) for in-flight batches; awaitables on a loop that
        cannot run them are given up at once (see DeliveryThread.watch_loop)."""
        while not self._tracker.wait_settled(min(0.1, until - time.monotonic())):
            if time.monotonic() >= until:
                return False
            if self._delivery is not None:
                self._delivery.watch_loop()
        return True

    def _warn(self, text: str) -> None:
        self.logger.warning("consumer of %s: %s", self.topic, text)
        warnings.warn(text, RuntimeWarning, stacklevel=3)

    def _teardown(self, deadline: float | None = None) -> None:
        """Free C objects, locks and the loop (after the threads that use them ended).

        By ``deadline`` (monotonic) if given: a stats_callback that never returns holds the
        client's event thread, whose handle is then freed once that callback returns. While
        the fetch thread still runs (inside a C call), its buffers and the client stay."""
        self._loop_thread.close()
        if self._member is not None and self._member.thread.is_alive():
            self._member.close(time.monotonic() + 1.0 if deadline is None else deadline)
        fetch_ended = self._pipeline is None or self._pipeline.close()
        if self._committer is not None:
            self._committer.close(0)
        close = getattr(self._store, "close", None)
        if callable(close):
            try:
                close()
            except Exception:
                self.logger.exception("offset_store.close() failed")
        if self._client is not None and fetch_ended:
            self._client.close(5.0 if deadline is None else max(0.0, deadline - time.monotonic()))
            self._client = None
        elif self._client is not None:
            # the fetch thread is inside a C call on this handle: it is freed when the
            # thread ends and lets go of it, never at interpreter exit under the thread
            self._client.keep_at_exit()
        if self._lock is not None:
            self._lock.release()
            self._lock = None
        for lock in self._extra_locks:
            lock.release()
        self._extra_locks = []

    def close(self) -> None:
        """Same as ``stop()``."""
        self.stop()

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def closed(self) -> bool:
        """True once the consumer is stopped and closed."""
        return self._state == "closed"

    @property
    def error(self) -> KafkaError | None:
        """The KafkaError that stopped the consumer, if any."""
        return self._error

    def _fail(self, err: KafkaError) -> None:
        """A fatal error: remember it; callback mode logs it and stops the consumer."""
        with self._state_lock:
            if self._error is not None:
                return
            self._error = err
        if self._mode == "callback":
            self.logger.error("consumer of %s stops: %s", self.topic, err)
            self._stop_event.set()
            threading.Thread(target=self.stop, daemon=True, name=f"rdk-stop-{self.topic}").start()

    # ---- flow control ---------------------------------------------------------------
    def _check_process(self) -> None:
        """ClosedError in a process forked after this consumer was created."""
        if os.getpid() != self._pid:
            raise ClosedError(
                f"this Consumer of {self.topic!r} was created in process {self._pid} and this is "
                f"process {os.getpid()}: librdkafka handles do not survive fork(); create the "
                "Consumer in the process that uses it")

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
            client, pipeline = self._client, self._pipeline
            keys = self.assignment
            if client is not None and pipeline is not None and keys:
                tpl = _partitions.partition_list(
                    (t, p, lib.RD_KAFKA_OFFSET_INVALID) for t, p in keys)
                if pause:
                    # between two fetch calls, never during one (see between_fetches)
                    with pipeline.between_fetches():
                        _binding.check(lib.rd_kafka_pause_partitions(client.rk, tpl), "pause")
                else:
                    _binding.check(lib.rd_kafka_resume_partitions(client.rk, tpl), "resume")
            if pause:
                self._running.clear()
            else:
                self._running.set()

    # ---- settling --------------------------------------------------------------------
    def _settle(self, batch: Batch, ok: bool, part: dict[int, int] | None = None,
                by_user: bool = False) -> None:
        """A batch is done (``ok``: processed; ``part``: only up to these offsets, see
        SettlementTracker.settle): record what became recordable. ``by_user``: the user's
        ``batch.commit()``, which raises ClosedError once the consumer can record nothing."""
        self._check_process()
        if by_user and self._tracker.closed and is_pending(batch):
            raise ClosedError(
                f"batch.commit(): this Consumer of {self.topic!r} is stopped, so this batch's "
                f"offsets {batch.offsets} were not recorded; it is delivered again after a restart")
        committer = self._committer
        record_to: Callable[[dict[int, int]], None] | None = None
        if committer is not None:
            if self.group_id is not None or self._multi_topic:  # (topic, partition) keys
                topic = batch.topic

                def record_keyed(record: dict[int, int]) -> None:
                    keyed: dict[Any, int] = {(topic, p): last for p, last in record.items()}
                    committer.record(keyed)
                record_to = record_keyed
            else:
                record_to = committer.record
        # recorded inside the tracker's lock: a revoke (or stop) that waited for this batch
        # must find its offsets in the committer, else it flushes without them and a late
        # record is dropped as "no longer assigned" (the new owner reads them again)
        was_pending, _record = self._tracker.settle(batch, ok, part, record_to)
        if not was_pending:
            return
        if self._delivery is not None:
            self._delivery.release()

    def _abandon(self, batch: Batch) -> None:
        """A batch whose processing never ended: never recorded (see SettlementTracker)."""
        if self._tracker.abandon(batch) and self._delivery is not None:
            self._delivery.release()

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
        self._check_process()
        if timeout is not None:
            timeout = check_timeout(timeout)
        with self._state_lock:
            if self._state == "new":
                self._open("iterator")
            elif self._mode != "iterator":
                raise RuntimeError("batches() cannot be used after start(); receive_callback "
                                   "already receives the batches")
        return self._iterate(timeout)

    def _iterate(self, timeout: float | None) -> Iterator[Batch]:
        prev: Batch | None = None
        while True:
            self._check_process()
            if prev is not None:
                prev.commit()
                prev = None
            if self._error is not None:
                raise self._error
            batch = self._next_batch(timeout)  # (tracked already)
            if batch is None:
                return
            prev = batch
            yield batch

    def _next_batch(self, timeout: float | None) -> Batch | None:
        """The next batch for batches(); None after ``timeout`` seconds or once stopped."""
        pipeline, stop = self._pipeline, self._stop_event
        assert pipeline is not None
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if stop.is_set():
                return None
            if self._error is not None:
                raise self._error
            left = 0.1 if deadline is None else min(0.1, deadline - time.monotonic())
            if left <= 0:
                return None
            if not self._running.is_set():
                self._running.wait(left)
                continue
            try:
                batch = pipeline.hand_out(pipeline.wait_filled(left), self._tracker.add)
            except queue.Empty:
                continue
            if batch is None or batch.messages:
                return batch  # (empty: all of it was of partitions fenced off meanwhile)

    # ---- stats and errors ------------------------------------------------------------
    def _on_stats(self, rdkafka_stats: dict) -> None:
        pipeline = self._pipeline
        keys = self.assignment  # every owned or assigned (topic, partition)
        info = stats.topics_stats(
            rdkafka_stats, keys,
            buffered=pipeline.buffered_keys(keys) if pipeline is not None else None,
            next_offsets=pipeline.next_offsets(keys) if pipeline is not None else None,
            shared_queue=True, first_topic=self.topics[0] if self.topics else None)
        self.last_stats = info
        if self._stats_callback is None:
            return
        try:
            self._stats_callback(info)
        except Exception:
            self.logger.exception("consumer of %s: stats_callback raised", self.topic)
        except BaseException as e:  # it runs on the client's event thread
            self.logger.error("consumer of %s: stats_callback raised %s; it runs on rdk's event "
                              "thread, so it cannot stop the program: logged, the consumer goes on",
                              self.topic, type(e).__name__, exc_info=True)

    def _on_client_error(self, err: KafkaError) -> None:
        if err.fatal:
            self.logger.error("consumer of %s: fatal librdkafka error: %s", self.topic, err)
            self._fail(err)
        elif _binding.is_auth_failure(err):
            self.logger.error("consumer of %s: authentication failed: %s", self.topic, err)
        elif err.name in _REFUSED or (err.name == "TOPIC_AUTHORIZATION_FAILED" and self.pattern is None):
            # the broker's ACLs refuse this principal: a retry gets the same answer (the Java
            # consumer's poll() throws it too); stop and say so rather than idle
            self._fail(err)
        else:
            self.logger.warning("consumer of %s: %s", self.topic, err)

    # ---- assignment, seek, group -----------------------------------------------------------
    @property
    def assignment(self) -> list[tuple[str, int]]:
        """The (topic, partition)s this consumer reads now: its worker slot's, or what the
        group assigned (changes with every rebalance)."""
        if self._member is not None:
            return sorted(self._member.owned())
        if self._multi_topic:
            return list(self._slot_keys)
        return [(self.topic, p) for p in self.partitions]

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
        key = self._check_key(topic_or_partition)
        if isinstance(offset, str):
            target = {"earliest": lib.RD_KAFKA_OFFSET_BEGINNING,
                      "latest": lib.RD_KAFKA_OFFSET_END}.get(offset)
            if target is None:
                raise ValueError(f"offset must be an int >= 0, 'earliest' or 'latest', got {offset!r}")
        else:
            target = check_int(offset, "offset", minimum=0, maximum=_INT64_MAX - 1)
        with self._state_lock:
            if self._state != "running":
                raise (ClosedError(f"this Consumer is {self._state}") if self._state != "new"
                       else RuntimeError("seek() needs a started consumer (start() or batches())"))
            if key not in self.assignment:
                raise ValueError(f"seek: {key[0]}[{key[1]}] is not assigned to this consumer "
                                 f"(assigned: {self.assignment})")
        self._seek_key(key, target)

    def _check_key(self, what: Any) -> Key:
        if isinstance(what, tuple):
            if len(what) != 2:
                raise ValueError(f"topic_or_partition must be a partition or (topic, partition), "
                                 f"got {what!r}")
            topic = check_topic_name(what[0])
            return topic, check_int(what[1], "partition", maximum=_INT32_MAX)
        if self._multi_topic:
            raise TypeError(f"this consumer reads several topics: give (topic, partition), "
                            f"got {what!r}")
        return self.topic, check_int(what, "partition", maximum=_INT32_MAX)

    def _seek_key(self, key: Key, offset: int) -> None:
        pipeline, client = self._pipeline, self._client
        assert pipeline is not None and client is not None
        topic, partition = key

        def seek() -> None:
            if self._member is None:
                pipeline.restart_partition(partition, offset, topic)
            else:
                tpl = _partitions.partition_list([(topic, partition, offset)])
                _binding.check_error(lib.rd_kafka_seek_partitions(client.rk, tpl, 10_000),
                                     f"seek {topic}[{partition}] to {offset}")
                _partitions.partition_list_offsets(tpl, "seek")
            pipeline.set_expected(topic, partition, offset if offset >= 0 else -1)

        pipeline.fence([key], keep_new=True, then=seek)
        self.logger.info("consumer of %s: %s[%d] seeks to %s", self.topic, topic, partition, offset)

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
        if self._client is None or self._state != "running":
            raise RuntimeError("group_metadata() needs a started consumer (start() or batches())")
        from ..transactions import GroupMetadata

        return GroupMetadata._from_client(self._client)

    def __repr__(self) -> str:
        if self.group_id is not None:
            return (f"<rdk.Consumer {self.topic} group {self.group_id!r} {self._state} "
                    f"assignment={self.assignment}>")
        return (f"<rdk.Consumer {self.topic} slot {self.worker_slot}/{self.num_workers} "
                f"{self._state} partitions={self.partitions}>")


def _check_all(rules: list[BeyondEndRule]) -> None:
    for rule in rules:
        rule.check()


def _restart_topic(pipeline: FetchPipeline, topic: str, partition: int, offset: int) -> None:
    pipeline.restart_partition(partition, offset, topic)


def _check_topics(topic: Any, group: bool) -> tuple[list[str], str | None]:
    """(literal topics, regex or None) from ``topic``: a name, a list of names, or "^regex"."""
    if isinstance(topic, str) and topic.startswith("^"):
        if not group:
            raise ValueError(f"topic {topic!r}: a ^regex subscription needs group mode (group_id=...)")
        # librdkafka's dialect (POSIX extended, libc regcomp), not Python's re
        return [], check_topic_pattern(topic)
    if isinstance(topic, str):
        return [check_topic_name(topic)], None
    if not isinstance(topic, (list, tuple)):
        raise TypeError(f"topic must be a str, a list of str or a '^regex' str, got {type(topic).__name__}")
    if not topic:
        raise ValueError("topic: the list of topics is empty")
    names = [check_topic_name(t, f"topic[{i}]") for i, t in enumerate(topic)]
    if len(set(names)) != len(names):
        raise ValueError(f"topic: {names!r} names a topic twice")
    return names, None


def _offset_store(store: Any, directory: str | os.PathLike | None, topic: str) -> tuple[Any, Any]:
    """(offset directory or None, the OffsetStore): files in ``directory`` unless ``store``."""
    if store is None:
        if directory is None:
            raise TypeError("offset_directory is required (or give offset_store=)")
        path = offsets.ensure_directory(directory)
        return path, offsets.FileOffsetStore(path, topic)
    for method in ("read", "commit"):
        if not callable(getattr(store, method, None)):
            raise TypeError(f"offset_store must have read(partitions) and commit(offsets) "
                            f"methods; {type(store).__name__} has no {method}()")
    return (offsets.ensure_directory(directory) if directory is not None else None), store


def _stored_starts(stored: Any, owned: list[int], store: Any) -> dict[int, int]:
    """{partition: next offset} from what ``offset_store.read()`` gave (last processed)."""
    what = f"offset_store.read() of {type(store).__name__}"
    if not isinstance(stored, Mapping):
        raise TypeError(f"{what} must return a dict {{partition: last processed offset}}, "
                        f"got {type(stored).__name__}")
    starts = {}
    for p in owned:
        last = stored.get(p)
        if last is None:
            continue
        if not isinstance(last, int) or isinstance(last, bool) or not -1 <= last < _INT64_MAX:
            raise ValueError(f"{what} gave {last!r} for partition {p}; expected the last "
                             f"processed offset, an int in -1..{_INT64_MAX - 1}")
        starts[p] = last + 1
    return starts
