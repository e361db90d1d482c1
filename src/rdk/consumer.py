"""rdk.Consumer: kafka-native's Consumer over librdkafka.

Explicit partitions (worker slots), progress in kafka-native's offset files (or any
OffsetStore), pause/resume that also stops fetching, and periodic stats.

Pipeline (no Python code per message on the C fast path):

- a **fetch thread** calls the C batch helper (one call copies up to
  ``max_messages_per_callback`` messages into contiguous buffers, with the GIL released)
  and queues the filled buffer (a few rotate), so it goes straight back to fetching;
- a **delivery thread** turns a buffer into :class:`rdk.Message` tuples in one call
  (``rdk._messages``, C; or ``map``/``zip`` in Python), gives the buffer back, hands the
  batch to ``receive_callback`` and settles it when the callback returns (or when the
  Future / awaitable it returned completes);
- an **offset thread** stores the contiguous settled prefix per partition, coalescing.
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
import queue
import threading
import time
import warnings
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from functools import partial
from itertools import islice, repeat
from typing import TYPE_CHECKING, Any

from . import _binding, offsets, slots, stats
from ._binding import ERROR_CODES, ffi, lib
from ._fetch import Fetcher
from ._partitions import error_text
from .errors import ClosedError, ConfigError, KafkaError
from .message import Message
from .validate import (
    check_broker,
    check_callable,
    check_choice,
    check_int,
    check_options,
    check_timeout,
    check_topic_name,
)

if TYPE_CHECKING:
    import asyncio

__all__ = ["Batch", "Consumer"]

log = logging.getLogger("rdk")

_FETCH_TIMEOUT_MS = 100     # one fetch call waits at most this long (stop latency)
_QUEUE_DEPTH = 3            # filled batch buffers waiting for the consuming thread
_EXTRA_BUFFERS = 2          # more, only while paused (to keep draining librdkafka's queue)
_MAX_IN_FLIGHT = 16         # unsettled batches (Futures / awaitables) before delivery waits
_END_CHECK_SECONDS = 1.0    # while idle: is a partition's position beyond the log end?
_OFFSET_WRITE_INTERVAL = 0.1   # offset writes start at most 10 times a second (they coalesce)

_PARTITION_EOF = ERROR_CODES["_PARTITION_EOF"]
_FATAL_FETCH_ERRORS = {ERROR_CODES["_AUTO_OFFSET_RESET"], ERROR_CODES["OFFSET_OUT_OF_RANGE"]}
_PENDING, _OK, _FAILED = 0, 1, 2
_NEW = object()
_DONE = object()


class Batch:
    """One delivery: what ``receive_callback(info)`` gets and ``batches()`` yields.

    ``messages`` (list of :class:`rdk.Message`), ``repeats`` and ``misses``
    (kafka-native's counts), ``topic``, ``offsets`` (``{partition: (first, last)}``).
    ``commit()`` records the batch's offsets now (the iterator interface; in a callback it
    settles the batch early).
    """

    __slots__ = ("_consumer", "_entries", "_parts", "messages", "misses", "repeats", "topic")

    def __init__(self, messages: list[Message], repeats: int, misses: int, topic: str,
                 parts: list[tuple[int, int, int, int]], consumer: Consumer | None) -> None:
        self.messages = messages
        self.repeats = repeats
        self.misses = misses
        self.topic = topic
        self._parts = parts
        self._consumer = consumer
        self._entries: Any = _NEW

    @property
    def offsets(self) -> dict[int, tuple[int, int]]:
        """``{partition: (first offset, last offset)}`` of the messages in this batch."""
        return {p: (first, last) for p, first, last, _ in self._parts}

    def commit(self) -> None:
        """Record this batch as processed (its offsets are stored once earlier ones are)."""
        if self._consumer is not None:
            self._consumer._settle(self, True)

    def __len__(self) -> int:
        return len(self.messages)

    def __iter__(self) -> Iterator[Message]:
        return iter(self.messages)

    def __repr__(self) -> str:
        return (f"<Batch {self.topic} {len(self.messages)} messages {self.offsets} "
                f"repeats={self.repeats} misses={self.misses}>")


class _Tracker:
    """Per partition, the settled prefix of delivered batches; returns what may be recorded."""

    def __init__(self, commit_on_error: bool, logger: logging.Logger, topic: str) -> None:
        self.cond = threading.Condition(threading.Lock())
        self.commit_on_error = commit_on_error
        self.logger = logger
        self.topic = topic
        self.unsettled = 0
        self.closed = False
        self._queues: dict[int, deque] = {}
        self._blocked: set[int] = set()

    def add(self, batch: Batch) -> None:
        with self.cond:
            entries = []
            for p, _first, last, _count in batch._parts:
                e = [last, _PENDING]
                q = self._queues.get(p)
                if q is None:
                    q = self._queues[p] = deque()
                q.append(e)
                entries.append((p, e))
            batch._entries = entries
            self.unsettled += 1

    def settle(self, batch: Batch, ok: bool) -> tuple[bool, dict[int, int]]:
        """(was it pending, offsets that became recordable)."""
        with self.cond:
            entries = batch._entries
            if entries is _NEW or entries is _DONE:
                return False, {}
            batch._entries = _DONE
            self.unsettled -= 1
            self.cond.notify_all()
            if self.closed:
                return True, {}
            state = _OK if ok else _FAILED
            for _, e in entries:
                e[1] = state
            record: dict[int, int] = {}
            for p, _ in entries:
                q = self._queues[p]
                while q and q[0][1] != _PENDING:
                    last, st = q.popleft()
                    if p in self._blocked:
                        continue
                    if st == _FAILED and not self.commit_on_error:
                        self._blocked.add(p)
                        self.logger.warning(
                            "%s[%d]: a batch failed and commit_on_error=False, so no offset "
                            "after %s is recorded in this run; it is delivered again after a "
                            "restart", self.topic, p, record.get(p, "the last recorded one"))
                        record.pop(p, None)
                        continue
                    record[p] = last
            return True, record

    def wait_settled(self, timeout: float) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: self.unsettled == 0, max(0.0, timeout))

    def close(self) -> None:
        with self.cond:
            self.closed = True


async def _await(awaitable: Any) -> Any:
    return await awaitable


def _is_event_loop(loop: Any) -> bool:
    import asyncio

    return isinstance(loop, asyncio.AbstractEventLoop)


try:  # the C fast path (setup.py builds it; optional)
    from . import _messages
except ImportError:  # pragma: no cover - exercised by the fallback test
    _messages = None


def _addr(ptr: Any) -> int:
    return int(ffi.cast("uintptr_t", ptr))


def _null_indices(bitmap: Any, n: int) -> list[int]:
    bits = ffi.buffer(bitmap, (n + 7) // 8)[:]
    return [i for i in range(n) if not (bits[i >> 3] >> (i & 7)) & 1]


def _slices(buf_ptr: Any, offsets_ptr: Any, n: int) -> list[bytes]:
    """n bytes objects cut from one Arrow-layout buffer: one copy of the area, then slices.

    (A comprehension over ``zip`` measured faster here than ``map(data.__getitem__,
    map(slice, ...))``: 0.17 vs 0.29 us per slice on CPython 3.11.)
    """
    offs = ffi.unpack(offsets_ptr, n + 1)
    data = ffi.buffer(buf_ptr, offs[n])[:]
    return [data[a:z] for a, z in zip(offs, islice(offs, 1, None))]


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
        if logger is None:
            logger = log
        elif not isinstance(logger, (logging.Logger, logging.LoggerAdapter)):
            raise TypeError(f"logger must be a logging.Logger, got {type(logger).__name__}")
        self.logger = logger
        self.max_messages_per_callback = check_int(
            max_messages_per_callback, "max_messages_per_callback", minimum=1, maximum=1_000_000)
        self.statistics_interval_ms = check_int(
            statistics_interval_ms, "statistics_interval_ms", minimum=0, maximum=86_400_000)
        self.queued_max_messages_kbytes = check_int(
            queued_max_messages_kbytes, "queued_max_messages_kbytes", minimum=1, maximum=2_097_151)
        self.num_workers, self.worker_slot = slots.check_slot(num_workers, worker_slot)
        self.start_offset = check_choice(start_offset, "start_offset", ("earliest", "latest"))
        self.on_offset_out_of_range = check_choice(
            on_offset_out_of_range, "on_offset_out_of_range", ("earliest", "latest", "error"))
        self.decode = check_choice(decode, "decode", (None, "utf-8"))
        if not isinstance(commit_on_error, bool):
            raise TypeError(f"commit_on_error must be bool, got {type(commit_on_error).__name__}")
        self.commit_on_error = commit_on_error
        if loop is not None and not _is_event_loop(loop):
            raise TypeError(f"loop must be an asyncio event loop, got {type(loop).__name__}")
        self._user_loop = loop

        driver_options = check_options(driver_options, "driver_options")
        topic_options = check_options(topic_options, "topic_options")
        if "auto.offset.reset" in topic_options:
            raise ConfigError("topic_options: set the out-of-range behaviour with "
                              "on_offset_out_of_range= instead of 'auto.offset.reset'")
        self._props = {
            "queued.max.messages.kbytes": self.queued_max_messages_kbytes,
            "statistics.interval.ms": self.statistics_interval_ms if stats_callback else 0,
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

        if offset_store is None:
            if offset_directory is None:
                raise TypeError("offset_directory is required (or give offset_store=)")
            self.offset_directory = offsets.ensure_directory(offset_directory)
            self._store: Any = offsets.FileOffsetStore(self.offset_directory, self.topic)
        else:
            for method in ("read", "commit"):
                if not callable(getattr(offset_store, method, None)):
                    raise TypeError(f"offset_store must have read(partitions) and commit(offsets) "
                                    f"methods; {type(offset_store).__name__} has no {method}()")
            self.offset_directory = (offsets.ensure_directory(offset_directory)
                                     if offset_directory is not None else None)
            self._store = offset_store

        self._state = "new"        # new -> running -> stopping -> closed
        self._mode: str | None = None
        self._state_lock = threading.RLock()
        self._stop_event = threading.Event()
        self._closed_event = threading.Event()
        self._running = threading.Event()
        self._running.set()
        self._queue: queue.Queue[tuple[Any, list]] = queue.Queue()
        self._buffers: list[Any] = []
        self._free: deque[Any] = deque()
        self._free_cond = threading.Condition()
        self._fetch_lock = threading.Lock()  # held by the fetch thread during a fetch call
        self._converting = 0
        self._buffers_freed = False
        self._in_flight = threading.BoundedSemaphore(_MAX_IN_FLIGHT)
        self._tracker = _Tracker(commit_on_error, logger, self.topic)
        self._error: KafkaError | None = None
        self._client: _binding.Client | None = None
        self._fetcher: Fetcher | None = None
        self._lock: offsets.PartitionLock | None = None
        self._committer: offsets.OffsetCommitter | None = None
        self._threads: list[threading.Thread] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: threading.Thread | None = None
        self._expected: Any = None
        self._fetched: dict[int, int] = {}
        self._reset_at: dict[int, int] = {}
        self._beyond: dict[int, tuple[int, int]] = {}
        self._handed: dict[int, int] = {}
        self.partitions: list[int] = []
        self.partition_count: int | None = None
        self.last_stats: stats.ConsumerStats | None = None

    # ---- lifecycle -------------------------------------------------------------------
    def start(self) -> list[int]:
        """Take the partition locks, resume from stored progress and begin delivering
        batches to ``receive_callback`` on a background thread. Returns the owned partitions."""
        if self._receive_callback is None:
            raise TypeError("start() needs receive_callback; or iterate consumer.batches()")
        return self._open("callback")

    def _open(self, mode: str) -> list[int]:
        with self._state_lock:
            if self._state != "new":
                if self._state == "running":
                    raise RuntimeError("this Consumer is already started")
                raise ClosedError("this Consumer is stopped; make a new one")
            try:
                self._setup()
            except BaseException:
                self._teardown()
                raise
            self._mode = mode
            self._state = "running"
            if not self._running.is_set():  # pause() came before start()
                self._pause_resume(True)
            self._spawn(self._fetch_loop, "fetch")
            if mode == "callback":
                self._spawn(self._deliver_loop, "deliver")
            return list(self.partitions)

    def _setup(self) -> None:
        self._client = _binding.Client(
            "consumer", self._props, self._topic_props, logger=self.logger,
            on_stats=self._on_stats if self._stats_callback else None,
            on_error=self._on_client_error)
        count = self._client.partition_count(self.topic)
        owned = slots.owned_partitions(count, self.num_workers, self.worker_slot, self.topic)
        if self.offset_directory is not None:
            self._lock = offsets.lock_partitions(self.offset_directory, self.topic, owned)
            offsets.remove_temp_files(self.offset_directory, self.topic, owned)
        bind = getattr(self._store, "bind", None)
        if callable(bind):
            bind(topic=self.topic, broker=self.broker, driver_options=self._driver_options,
                 logger=self.logger)
        stored = self._store.read(owned)
        self._expected = ffi.new("int64_t[]", [-1] * count)
        starts = {}
        for p in owned:
            last = stored.get(p)
            if last is None:
                continue
            if not isinstance(last, int) or isinstance(last, bool) or last < -1:
                raise ValueError(f"offset_store.read() gave {last!r} for partition {p}; "
                                 "expected the last processed offset, an int >= -1")
            starts[p] = last + 1
        fresh = [p for p in owned if p not in starts]
        if fresh and self.start_offset == "latest":
            starts.update(self._high_watermarks(fresh))
        for p in owned:
            if p in starts:
                self._expected[p] = starts[p]
            else:
                starts[p] = lib.RD_KAFKA_OFFSET_BEGINNING
        self._committer = offsets.OffsetCommitter(self._store, self.logger,
                                                  name=f"rdk-offsets-{self.topic}",
                                                  min_interval=_OFFSET_WRITE_INTERVAL)
        self._fetcher = Fetcher(self._client, self.topic, self.max_messages_per_callback)
        self._buffers = [self._new_buffer() for _ in range(_QUEUE_DEPTH + 1)]
        self._free.extend(self._buffers)
        self._buffers_freed = False
        self._fetched = dict.fromkeys(owned, 0)
        self._handed = dict.fromkeys(owned, 0)
        self.partition_count = count
        self.partitions = owned
        for p in owned:
            self._fetcher.start(p, starts[p])
        self.logger.info("consumer of %s owns partitions %s (slot %d of %d), starting at %s",
                         self.topic, owned, self.worker_slot, self.num_workers,
                         {p: stored[p] + 1 if p in stored else self.start_offset for p in owned})

    def _new_buffer(self) -> Any:
        b = lib.rdk_batch_new(self.max_messages_per_callback)
        if b == ffi.NULL:
            raise MemoryError("rdk_batch_new")
        return ffi.gc(b, lib.rdk_batch_free)

    def _high_watermarks(self, partitions: list[int]) -> dict[int, int]:
        """Explicit "latest" offsets, right on every broker (Admin.watermarks confirms
        ListOffsets with a fetch, since Tansu's ListOffsets(latest) is wrong)."""
        from .admin import Admin

        with Admin(self.broker, self._driver_options) as admin:
            return {p: admin.watermarks(self.topic, p)[1] for p in partitions}

    def _spawn(self, target: Callable[[], None], what: str) -> threading.Thread:
        t = threading.Thread(target=target, name=f"rdk-{what}-{self.topic}", daemon=True)
        self._threads.append(t)
        t.start()
        return t

    def run(self) -> None:
        """``start()``, then block until ``stop()`` (from anywhere) or KeyboardInterrupt.

        Raises the KafkaError that stopped the consumer, if one did (e.g. an out-of-range
        offset with ``on_offset_out_of_range="error"``).
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
        consumer finishes the stop once the callback has returned. Idempotent.
        """
        timeout = check_timeout(timeout)
        current = threading.current_thread()
        with self._state_lock:
            if self._state == "new":
                self._state = "closed"
                self._closed_event.set()
                return
            if self._state == "closed":
                return
            self._stop_event.set()
            self._running.set()
            if current in self._own_threads():
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

    def _own_threads(self) -> list[threading.Thread | None]:
        own: list[threading.Thread | None] = [*self._threads, self._loop_thread]
        if self._client is not None:
            own.append(self._client._thread)
        return own

    def _finish(self, deadline: float, timeout: float) -> None:
        reserve = min(2.0, timeout * 0.2)  # keep time to store offsets of settled batches
        current = threading.current_thread()
        try:
            for t in self._threads:
                if t is not current:
                    # the fetch thread never blocks long (one fetch call, a queue put)
                    least = 1.0 if t.name.startswith("rdk-fetch") else 0.0
                    t.join(max(least, deadline - reserve - time.monotonic()))
            stuck = [t for t in self._threads if t.is_alive() and t is not current]
            if stuck:
                self._warn(f"receive_callback has not returned within stop(timeout={timeout}); "
                           "stopping without it (its batch's offsets are not recorded)")
            # (batches() settles only on commit() or the next request: nothing to wait for)
            if self._mode == "callback" and not self._tracker.wait_settled(
                    deadline - reserve - time.monotonic()):
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

    def _warn(self, text: str) -> None:
        self.logger.warning("consumer of %s: %s", self.topic, text)
        warnings.warn(text, RuntimeWarning, stacklevel=3)

    def _teardown(self, deadline: float | None = None) -> None:
        """Free C objects, locks and the loop (after the threads that use them ended).

        By ``deadline`` (monotonic) if given: a stats_callback that never returns holds the
        client's event thread, whose handle is then freed once that callback returns."""
        if self._loop is not None and self._user_loop is None:
            import asyncio

            loop, self._loop = self._loop, None

            def shutdown() -> None:
                for task in asyncio.all_tasks(loop):
                    task.cancel()
                loop.stop()

            loop.call_soon_threadsafe(shutdown)
            if self._loop_thread is not None and self._loop_thread is not threading.current_thread():
                self._loop_thread.join(2.0)
                if not self._loop_thread.is_alive():
                    loop.close()
        fetch_alive = any(t.is_alive() and t.name.startswith("rdk-fetch") for t in self._threads)
        if not fetch_alive:
            self._free_buffers()
        if self._fetcher is not None and not fetch_alive:
            self._fetcher.close()
            self._fetcher = None
        if self._committer is not None:
            self._committer.close(0)
        close = getattr(self._store, "close", None)
        if callable(close):
            try:
                close()
            except Exception:
                self.logger.exception("offset_store.close() failed")
        if self._client is not None and not fetch_alive:
            self._client.close(5.0 if deadline is None else max(0.0, deadline - time.monotonic()))
            self._client = None
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def _free_buffers(self) -> None:
        """Free the batch buffers (messages carried in them belong to the client, so this
        comes before the client is closed); waits for a conversion in progress."""
        with self._free_cond:
            self._buffers_freed = True
            self._free_cond.wait_for(lambda: self._converting == 0, 5.0)
            if self._converting:
                return  # pragma: no cover - a conversion stuck in C: leak rather than crash
            buffers, self._buffers = self._buffers, []
            self._free.clear()
        for b in buffers:
            ffi.release(b)

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

    # ---- flow control ---------------------------------------------------------------
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
        with self._state_lock:
            if self._state in ("stopping", "closed"):
                raise ClosedError(f"this Consumer is stopped ({self._state})")
            if self._client is not None and self.partitions:
                tpl = ffi.gc(lib.rd_kafka_topic_partition_list_new(len(self.partitions)),
                             lib.rd_kafka_topic_partition_list_destroy)
                for p in self.partitions:
                    lib.rd_kafka_topic_partition_list_add(tpl, self.topic.encode(), p)
                if pause:
                    # Pause between two fetch calls, never during one: librdkafka resumes
                    # at the position after the last message handed out before the pause,
                    # and a fetch call still collecting would hand out more after it
                    # (they would come again after resume()). The yield ends a waiting call.
                    lib.rd_kafka_queue_yield(self._fetcher.queue)
                    with self._fetch_lock:
                        _binding.check(lib.rd_kafka_pause_partitions(self._client.rk, tpl), "pause")
                else:
                    _binding.check(lib.rd_kafka_resume_partitions(self._client.rk, tpl), "resume")
            if pause:
                self._running.clear()
            else:
                self._running.set()

    # ---- fetching ------------------------------------------------------------------
    def _fetch_loop(self) -> None:
        """Fill batch buffers (one C call each, GIL released) and queue them; the consuming
        thread turns them into Messages, so this thread goes straight back to fetching."""
        fetcher, q, stop = self._fetcher, self._queue, self._stop_event
        fetched, maximum = self._fetched, self.max_messages_per_callback
        fetch_lock = self._fetch_lock
        next_check = time.monotonic() + _END_CHECK_SECONDS
        b = None
        try:
            while not stop.is_set():
                if b is None:
                    b = self._take_buffer()
                    if b is None:
                        return
                with fetch_lock:
                    fetcher.fetch(_FETCH_TIMEOUT_MS, maximum, b)
                n = b.n
                if n == 0:
                    if time.monotonic() >= next_check:
                        next_check = time.monotonic() + _END_CHECK_SECONDS
                        self._check_beyond_end()
                    continue
                if b.n_errors:
                    self._handle_errors(b)
                    if b.n_errors == n:
                        continue
                np = b.n_parts
                parts = list(zip(ffi.unpack(b.part_id, np), ffi.unpack(b.part_first, np),
                                 ffi.unpack(b.part_last, np), ffi.unpack(b.part_count, np)))
                for p, _first, _last, count in parts:
                    fetched[p] += count
                carry = b.carry_end > b.carry_start
                q.put((b, parts))  # never blocks: the buffers bound the queue
                # messages carried over (Arrow 2 GiB limit) come first in the same buffer
                b = self._take_buffer(b) if carry else None
        except BaseException as e:  # a bug or out of memory: say so and stop, never hang
            self.logger.exception("consumer of %s: fetch thread failed", self.topic)
            self._fail(e if isinstance(e, KafkaError) else
                       KafkaError(ERROR_CODES["_FAIL"], f"fetch thread failed: {e!r}",
                                  context=self.topic))

    def _take_buffer(self, which: Any = None) -> Any:
        """A free batch buffer (``which`` one, if given); None once stopping.

        While paused, the queued buffers wait for resume(), but this thread must go on
        serving librdkafka's queue: that is where pause() drops the partitions' outdated
        messages (its own purge stops at the first message of another partition in a
        shared queue). So a paused consumer with no free buffer gets one more (at most
        _EXTRA_BUFFERS; they join the pool).
        """
        with self._free_cond:
            while not self._stop_event.is_set():
                if which is None and self._free:
                    return self._free.popleft()
                if which is not None and which in self._free:
                    self._free.remove(which)
                    return which
                if (which is None and not self._running.is_set()
                        and len(self._buffers) < _QUEUE_DEPTH + 1 + _EXTRA_BUFFERS):
                    b = self._new_buffer()
                    self._buffers.append(b)
                    return b
                self._free_cond.wait(0.1)
        return None

    def _next_batch(self, item: tuple[Any, list]) -> Batch | None:
        """Turn a queued buffer into a Batch and give the buffer back (consuming thread)."""
        b, parts = item
        with self._free_cond:
            if self._buffers_freed:
                return None
            self._converting += 1
        try:
            return self._convert(b, parts)
        finally:
            with self._free_cond:
                self._converting -= 1
                self._free.append(b)
                self._free_cond.notify_all()

    def _convert(self, b: Any, parts: list[tuple[int, int, int, int]]) -> Batch:
        """The C batch as a Batch of Message tuples: one call into rdk._messages (C), or
        the pure-Python equivalent built with map/zip when that module is absent."""
        n = b.n
        headers = self._headers(b, n) if b.n_headers else None
        if _messages is not None:
            messages = _messages.build(
                Message, self.topic, n, _addr(b.values), _addr(b.value_offsets),
                _addr(b.value_valid) if b.value_nulls else 0, self.decode is not None,
                _addr(b.keys) if b.key_nulls != n else 0, _addr(b.key_offsets),
                _addr(b.key_valid) if b.key_nulls else 0, _addr(b.timestamp),
                _addr(b.timestamp_type), _addr(b.partition), _addr(b.offset),
                _addr(b.err) if b.n_errors else 0, headers)
        else:
            messages = self._build_messages(b, n, headers)
        reps = ffi.new("int64_t[2]")
        lib.rdk_batch_track(b, self._expected, self.partition_count, reps, reps + 1)
        return Batch(messages, int(reps[0]), int(reps[1]), self.topic, parts, self)

    def _build_messages(self, b: Any, n: int, headers: list[Any] | None) -> list[Message]:
        """Pure-Python fallback of rdk._messages.build: columns, then map/zip at C speed."""
        values: list[Any] = _slices(b.values, b.value_offsets, n)
        if self.decode:
            values = list(map(str, values, repeat("utf-8"), repeat("replace")))
        if b.value_nulls:
            for i in _null_indices(b.value_valid, n):
                values[i] = None
        keys: Any = repeat(None)
        if b.key_nulls != n:
            keys = _slices(b.keys, b.key_offsets, n)
            if b.key_nulls:
                for i in _null_indices(b.key_valid, n):
                    keys[i] = None
        timestamps: list[Any] = ffi.unpack(b.timestamp, n)
        kinds = ffi.buffer(b.timestamp_type, n)[:]
        if b"\x00" in kinds:
            timestamps = [None if k == 0 else t for k, t in zip(kinds, timestamps)]
        messages = list(map(tuple.__new__, repeat(Message), zip(
            values, keys, repeat(None) if headers is None else headers, timestamps,
            repeat(self.topic), ffi.unpack(b.partition, n), ffi.unpack(b.offset, n))))
        if b.n_errors:
            messages = [m for m, e in zip(messages, ffi.unpack(b.err, n)) if not e]
        return messages

    def _headers(self, b: Any, n: int) -> list[Any]:
        nh = b.n_headers
        names = [s.decode("utf-8", "replace")
                 for s in _slices(b.header_names, b.header_name_offsets, nh)]
        hvalues: list[Any] = _slices(b.header_values, b.header_value_offsets, nh)
        for i in _null_indices(b.header_value_valid, nh):
            hvalues[i] = None
        index = ffi.unpack(b.header_index, n + 1)
        pairs = list(zip(names, hvalues))
        return [pairs[a:z] if z > a else None for a, z in zip(index, islice(index, 1, None))]

    def _handle_errors(self, b: Any) -> None:
        for i in range(b.n):
            code = b.err[i]
            if not code or code == _PARTITION_EOF:
                continue
            p, offset, text = int(b.partition[i]), int(b.offset[i]), error_text(b, i)
            err = KafkaError(code, text, context=f"consume {self.topic}[{p}] at offset {offset}")
            if code in _FATAL_FETCH_ERRORS:
                self._fail(err)
            else:
                self.logger.warning("consumer of %s: %s", self.topic, err)

    def _check_beyond_end(self) -> None:
        """Apply on_offset_out_of_range where the broker did not report it.

        Kafka answers a fetch beyond the log end with OFFSET_OUT_OF_RANGE and librdkafka
        applies auto.offset.reset; Tansu answers with no data and the high watermark. So
        while idle, a partition whose next offset lies beyond the high watermark of the
        last Fetch response (librdkafka's cached one) is treated the same way, once this is
        seen on two checks in a row. Restarting where librdkafka already reset the
        partition is harmless: nothing of it was delivered since (our position did not
        move), librdkafka's version barrier drops what the old fetch still brings, and
        "latest" restarts at the high watermark seen on the first check, so messages that
        arrived in between are fetched again rather than skipped.
        """
        lo, hi = ffi.new("int64_t *"), ffi.new("int64_t *")
        rk, name, expected = self._client.rk, self.topic.encode(), self._expected
        for p in self.partitions:
            e = int(expected[p])
            seen = self._beyond.get(p)
            if seen is not None and seen[0] != e:
                del self._beyond[p]  # the position moved: messages came
                seen = None
            if e < 0 or self._reset_at.get(p) == e:
                continue
            if lib.rd_kafka_get_watermark_offsets(rk, name, p, lo, hi) or hi[0] < 0 or e <= hi[0]:
                self._beyond.pop(p, None)
                continue
            text = f"next offset {e} is beyond the high watermark {hi[0]}"
            if self.on_offset_out_of_range == "error":
                self._fail(KafkaError(ERROR_CODES["OFFSET_OUT_OF_RANGE"], text,
                                      context=f"consume {self.topic}[{p}]"))
                return
            if seen is None:
                self._beyond[p] = (e, int(hi[0]))
                continue
            del self._beyond[p]
            self.logger.warning("consumer of %s: partition %d: %s; resetting to %s", self.topic,
                                p, text, self.on_offset_out_of_range)
            self._reset_at[p] = e
            # "latest" from the Fetch high watermark: Tansu's ListOffsets(latest) is wrong
            restart = (lib.RD_KAFKA_OFFSET_BEGINNING if self.on_offset_out_of_range == "earliest"
                       else min(seen[1], int(hi[0])))
            self._fetcher.stop(p)
            self._fetcher.start(p, restart)

    def _fail(self, err: KafkaError) -> None:
        """A fatal error: remember it; callback mode logs it and stops the consumer."""
        with self._state_lock:
            if self._error is not None:
                return
            self._error = err
        if self._mode == "callback":
            self.logger.error("consumer of %s stops: %s (on_offset_out_of_range=%r)",
                              self.topic, err, self.on_offset_out_of_range)
            self._stop_event.set()
            threading.Thread(target=self.stop, daemon=True, name=f"rdk-stop-{self.topic}").start()

    # ---- delivering ------------------------------------------------------------------
    def _deliver_loop(self) -> None:
        q, stop, running = self._queue, self._stop_event, self._running
        while True:
            try:
                item = q.get(timeout=0.1)
            except queue.Empty:
                if stop.is_set():
                    return
                continue
            while not running.is_set() and not stop.is_set():
                running.wait(0.1)
            while not stop.is_set() and not self._in_flight.acquire(timeout=0.1):
                pass
            if stop.is_set():
                return
            batch = self._next_batch(item)
            if batch is None:
                return
            self._hand(batch)
            self._dispatch(batch)

    def _hand(self, batch: Batch) -> None:
        handed = self._handed
        for p, _first, _last, count in batch._parts:
            handed[p] += count
        self._tracker.add(batch)

    def _dispatch(self, batch: Batch) -> None:
        try:
            result = self._receive_callback(batch)
        except Exception:
            self.logger.exception("receive_callback raised on %r", batch)
            self._settle(batch, False)
            return
        if result is None:
            self._settle(batch, True)
        elif isinstance(result, concurrent.futures.Future):
            result.add_done_callback(partial(self._future_done, batch))
        elif hasattr(result, "__await__"):
            import asyncio

            try:
                fut = asyncio.run_coroutine_threadsafe(_await(result), self._ensure_loop())
            except Exception:
                self.logger.exception("cannot run the awaitable receive_callback returned")
                self._settle(batch, False)
                return
            fut.add_done_callback(partial(self._future_done, batch))
        else:
            self._settle(batch, True)

    def _future_done(self, batch: Batch, fut: concurrent.futures.Future) -> None:
        if fut.cancelled():
            self.logger.error("the future for %r was cancelled", batch)
            self._settle(batch, False)
            return
        exc = fut.exception()
        if exc is not None:
            self.logger.error("processing %r failed", batch, exc_info=exc)
        self._settle(batch, exc is None)

    def _settle(self, batch: Batch, ok: bool) -> None:
        was_pending, record = self._tracker.settle(batch, ok)
        if not was_pending:
            return
        if record and self._committer is not None:
            self._committer.record(record)
        if self._mode == "callback":
            self._in_flight.release()

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        if self._user_loop is not None:
            return self._user_loop
        import asyncio

        with self._state_lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                self._loop_thread = threading.Thread(target=loop.run_forever, daemon=True,
                                                     name=f"rdk-asyncio-{self.topic}")
                self._loop = loop
                self._loop_thread.start()
            return self._loop

    # ---- iterator interface ------------------------------------------------------------
    def batches(self, timeout: float | None = None) -> Iterator[Batch]:
        """Yield batches for scripts: ``for batch in consumer.batches(timeout=5): ...``.

        Starts the consumer if needed (no receive_callback required). A batch's offsets are
        recorded on ``batch.commit()`` or when the next batch is requested. Ends when no
        batch arrives within ``timeout`` seconds (None: wait forever) or after ``stop()``;
        raises the KafkaError that stopped fetching, if any.
        """
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
        q, stop = self._queue, self._stop_event
        prev: Batch | None = None
        while True:
            if prev is not None:
                prev.commit()
                prev = None
            if self._error is not None:
                raise self._error
            deadline = None if timeout is None else time.monotonic() + timeout
            batch = None
            while batch is None:
                if stop.is_set():
                    return
                if self._error is not None:
                    raise self._error
                left = 0.1 if deadline is None else min(0.1, deadline - time.monotonic())
                if left <= 0:
                    return
                if not self._running.is_set():
                    self._running.wait(left)
                    continue
                try:
                    batch = self._next_batch(q.get(timeout=left))
                except queue.Empty:
                    continue
                if batch is None:
                    return
            self._hand(batch)
            prev = batch
            yield batch

    # ---- stats and errors ------------------------------------------------------------
    def _on_stats(self, rdkafka_stats: dict) -> None:
        owned = self.partitions
        expected = self._expected
        info = stats.consumer_stats(
            rdkafka_stats, self.topic, owned,
            buffered={p: self._fetched[p] - self._handed[p] for p in owned},
            next_offsets={p: int(expected[p]) for p in owned} if expected is not None else None,
            shared_queue=True,
        )
        self.last_stats = info
        if self._stats_callback is not None:
            self._stats_callback(info)

    def _on_client_error(self, err: KafkaError) -> None:
        if err.fatal:
            self.logger.error("consumer of %s: fatal librdkafka error: %s", self.topic, err)
            self._fail(err)
        else:
            self.logger.warning("consumer of %s: %s", self.topic, err)

    def __repr__(self) -> str:
        return (f"<rdk.Consumer {self.topic} slot {self.worker_slot}/{self.num_workers} "
                f"{self._state} partitions={self.partitions}>")
