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
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, cast

from .. import _binding, _partitions, offsets, slots, stats
from .._binding import lib
from ..errors import ClosedError, ConfigError, KafkaError
from ..validate import (
    check_bootstrap_rule,
    check_broker,
    check_callable,
    check_choice,
    check_int,
    check_options,
    check_timeout,
    check_topic_name,
)
from ._batch import Batch
from ._beyond_end import BeyondEndRule
from ._delivery import DeliveryThread
from ._loop_thread import LoopThread, is_event_loop
from ._pipeline import FetchPipeline
from ._tracker import SettlementTracker

if TYPE_CHECKING:
    import asyncio

__all__ = ["Consumer"]

log = logging.getLogger("rdk")

_OFFSET_WRITE_INTERVAL = 0.1   # offset writes start at most 10 times a second (they coalesce)
_WATERMARK_TIMEOUT = 10.0      # start_offset="latest": seconds to learn the high watermarks
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
    ``commit_on_error=True``, ``offset_store`` (any :class:`rdk.offsets.OffsetStore`, e.g.
    :class:`rdk.BrokerOffsetStore`) and ``loop`` (asyncio loop for awaitables the callback
    returns).

    ``receive_callback`` is needed for ``start()``/``run()``; scripts can instead iterate
    ``for batch in consumer.batches(timeout=...)``.

    ``broker`` names the cluster: ``driver_options`` may repeat it as ``bootstrap.servers``
    (or ``metadata.broker.list``) only with the same value (else ConfigError), as for the
    Producer. A consumer belongs to the process that created it: in a forked child every
    call raises ClosedError and ``stop()``/``close()`` return at once, touching nothing.
    """

    def __init__(
        self,
        broker: str,
        topic: str,
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
    ) -> None:
        self.broker = check_broker(broker)
        self.topic = check_topic_name(topic)
        self._receive_callback = check_callable(receive_callback, "receive_callback")
        self._stats_callback = check_callable(stats_callback, "stats_callback")
        self.logger = _check_logger(logger)
        self.max_messages_per_callback = check_int(
            max_messages_per_callback, "max_messages_per_callback", minimum=1, maximum=1_000_000)
        self.statistics_interval_ms = check_int(
            statistics_interval_ms, "statistics_interval_ms", minimum=0, maximum=86_400_000)
        self.queued_max_messages_kbytes = check_int(
            queued_max_messages_kbytes, "queued_max_messages_kbytes", minimum=1, maximum=2_097_151)
        check_int(num_workers, "num_workers", maximum=_INT32_MAX)
        check_int(worker_slot, "worker_slot", maximum=_INT32_MAX)
        self.num_workers, self.worker_slot = slots.check_slot(num_workers, worker_slot)
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
        self.offset_directory, self._store = _offset_store(offset_store, offset_directory, self.topic)

        self._state = "new"        # new -> running -> stopping -> closed
        self._mode: str | None = None   # "callback" (start/run) or "iterator" (batches)
        self._state_lock = threading.RLock()
        self._stop_event = threading.Event()
        self._closed_event = threading.Event()
        self._running = threading.Event()  # clear while paused
        self._running.set()
        self._tracker = SettlementTracker(commit_on_error, self.logger, self.topic)
        self._loop_thread = LoopThread(loop, name=f"rdk-asyncio-{self.topic}")
        self._loop_thread.check_open()
        self._error: KafkaError | None = None
        self._client: _binding.Client | None = None
        self._pipeline: FetchPipeline | None = None
        self._delivery: DeliveryThread | None = None
        self._lock: offsets.PartitionLock | None = None
        self._committer: offsets.OffsetCommitter | None = None
        self.partitions: list[int] = []
        self.partition_count: int | None = None
        self.last_stats: stats.ConsumerStats | None = None

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
    def start(self) -> list[int]:
        """Take the partition locks, resume from stored progress and begin delivering
        batches to ``receive_callback`` on a background thread. Returns the owned partitions.

        Waits up to METADATA_TIMEOUT (10 s) for the topic's partitions: an unknown topic on a
        reachable broker fails at once (UNKNOWN_TOPIC_OR_PART); a broker that does not
        answer fails after that wait, with an error naming the broker and the wait.
        ``loop=`` closed: ValueError."""
        self._check_process()
        if self._receive_callback is None:
            raise TypeError("start() needs receive_callback; or iterate consumer.batches()")
        return self._open("callback")

    def _open(self, mode: str) -> list[int]:
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
            if not self._running.is_set():  # pause() came before start()
                self._pause_resume(True)
            pipeline.start_thread(f"rdk-fetch-{self.topic}")
            if mode == "callback":
                self._delivery = DeliveryThread(
                    pipeline, self._receive_callback, tracker=self._tracker, settle=self._settle,
                    loop=self._loop_thread, stopping=self._stop_event, running=self._running,
                    logger=self.logger, abandon=self._abandon, fail=self._fail, topic=self.topic)
                self._delivery.start(f"rdk-deliver-{self.topic}")
            return list(self.partitions)

    def _setup(self) -> FetchPipeline:
        """Client, owned partitions and their locks, stored progress, committer, pipeline."""
        client = self._client = _binding.Client(
            "consumer", self._props, self._topic_props, logger=cast(logging.Logger, self.logger),
            on_stats=self._on_stats if self._stats_callback else None,
            on_error=self._on_client_error)
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
        self._committer = offsets.OffsetCommitter(self._store, cast(logging.Logger, self.logger),
                                                  name=f"rdk-offsets-{self.topic}",
                                                  min_interval=_OFFSET_WRITE_INTERVAL)
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

    def _partition_count(self, client: _binding.Client) -> int:
        """The topic's partitions, within METADATA_TIMEOUT; an error naming what was waited for."""
        t0 = time.monotonic()
        try:
            return client.partition_count(self.topic, METADATA_TIMEOUT)
        except KafkaError as e:
            if e.name == "UNKNOWN_TOPIC_OR_PART":
                raise
            raise KafkaError(
                e.code, f"no metadata for topic {self.topic!r} from broker {self.broker!r} "
                f"after waiting {time.monotonic() - t0:.1f} s (start() waits up to "
                f"{METADATA_TIMEOUT:g} s): {e.description}; is the broker reachable?",
                context="start()") from e

    def _high_watermarks(self, client: _binding.Client, partitions: list[int]) -> dict[int, int]:
        """Explicit "latest" offsets, right on every broker: ListOffsets confirmed by a short
        fetch (Tansu's ListOffsets(latest) is wrong) on a client with partition EOF."""
        fetch_client = _binding.Client(
            "consumer", {"fetch.wait.max.ms": 10, "bootstrap.servers": self.broker,
                         "allow.auto.create.topics": False, **self._driver_options,
                         "enable.partition.eof": True, "auto.offset.reset": "earliest"})
        try:
            marks = _partitions.true_watermarks(client, self.topic, partitions,
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
        """
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
        so). Called from inside a callback, it only asks for the stop and returns; the
        consumer finishes the stop once the callback has returned. Idempotent. ``timeout``
        must be finite (ValueError for inf, nan or beyond threading.TIMEOUT_MAX). In a forked
        child it returns at once, leaving the parent's handle, locks and offsets alone.
        """
        timeout = check_timeout(timeout)
        if timeout > threading.TIMEOUT_MAX:
            raise ValueError(f"timeout must be a finite number of seconds <= "
                             f"{threading.TIMEOUT_MAX:.0f}, got {timeout}")
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
                or (self._client is not None and self._client.on_event_thread()))

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
            if committer is not None and not committer.close(max(0.0, deadline - time.monotonic())):
                self._warn(f"offsets {committer.pending} were not stored within "
                           f"stop(timeout={timeout}): {committer.last_error}")
        finally:
            self._teardown(deadline)
            with self._state_lock:
                self._state = "closed"
            self._closed_event.set()

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
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def close(self) -> None:
        """Same as ``stop()``."""
        self.stop()

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def closed(self) -> bool:
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
        memory stays bounded. Callable from ``receive_callback`` and from any thread."""
        self._pause_resume(True)

    def resume(self) -> None:
        """Restart fetching and deliveries after ``pause()``."""
        self._pause_resume(False)

    @property
    def paused(self) -> bool:
        return not self._running.is_set()

    def _pause_resume(self, pause: bool) -> None:
        self._check_process()
        with self._state_lock:
            if self._state in ("stopping", "closed"):
                raise ClosedError(f"this Consumer is stopped ({self._state})")
            client, pipeline = self._client, self._pipeline
            if client is not None and pipeline is not None and self.partitions:
                tpl = _partitions.partition_list(
                    (self.topic, p, lib.RD_KAFKA_OFFSET_INVALID) for p in self.partitions)
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
    def _settle(self, batch: Batch, ok: bool) -> None:
        """A batch is done (``ok``: processed): record what became recordable."""
        self._check_process()
        was_pending, record = self._tracker.settle(batch, ok)
        if not was_pending:
            return
        if record and self._committer is not None:
            self._committer.record(record)
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
            batch = self._next_batch(timeout)
            if batch is None:
                return
            self._tracker.add(batch)
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
                return pipeline.convert(pipeline.wait_filled(left))
            except queue.Empty:
                continue

    # ---- stats and errors ------------------------------------------------------------
    def _on_stats(self, rdkafka_stats: dict) -> None:
        owned, pipeline = self.partitions, self._pipeline
        expected = pipeline.expected if pipeline is not None else None
        info = stats.consumer_stats(
            rdkafka_stats, self.topic, owned,
            buffered=pipeline.buffered(owned) if pipeline is not None else {},
            next_offsets={p: int(expected[p]) for p in owned} if expected is not None else None,
            shared_queue=True,
        )
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
        else:
            self.logger.warning("consumer of %s: %s", self.topic, err)

    def __repr__(self) -> str:
        return (f"<rdk.Consumer {self.topic} slot {self.worker_slot}/{self.num_workers} "
                f"{self._state} partitions={self.partitions}>")


def _check_logger(logger: Any) -> logging.Logger | logging.LoggerAdapter:
    if logger is None:
        return log
    if not isinstance(logger, (logging.Logger, logging.LoggerAdapter)):
        raise TypeError(f"logger must be a logging.Logger, got {type(logger).__name__}")
    return logger


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
