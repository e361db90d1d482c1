"""The fetch pipeline: a fetch thread filling a rotating pool of ``rdk_batch`` buffers.

The **fetch thread** calls the C batch helper (one call copies up to
``max_messages_per_callback`` messages into contiguous buffers, with the GIL released) and
queues the filled buffer, so it goes straight back to fetching. The consuming thread (the
delivery thread, or the caller of ``batches()``) takes a filled buffer with
:meth:`FetchPipeline.wait_filled`, and :meth:`FetchPipeline.convert` turns it into a
:class:`Batch` in one call and gives the buffer back to the pool.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from .._binding import ERROR_CODES
from .._binding import fetch as _fetch
from .._binding.messages import build_messages
from .._binding.partitions import PARTITION_EOF, batch_errors, error_text
from .._lifecycle import AfterLoop
from ..errors import KafkaError
from ._batch import Batch, Parts

if TYPE_CHECKING:
    from ._state import ConsumerState

__all__ = ["FetchPipeline"]

FETCH_TIMEOUT_MS = 100      # one fetch call waits at most this long (stop latency)
QUEUE_DEPTH = 3             # filled batch buffers waiting for the consuming thread
EXTRA_BUFFERS = 2           # more, only while paused (to keep draining librdkafka's queue)
IDLE_CHECK_SECONDS = 1.0    # while idle, call on_idle at most this often

# fetch errors that stop the consumer by name (a topic it may not read never becomes readable
# by retrying: the Java client throws TopicAuthorizationException from poll() too)
_FATAL_FETCH_ERRORS = {ERROR_CODES["_AUTO_OFFSET_RESET"], ERROR_CODES["OFFSET_OUT_OF_RANGE"],
                       ERROR_CODES["TOPIC_AUTHORIZATION_FAILED"]}

#: a filled rdk_batch, its per-partition summary, its fetch number and its topic
Filled = tuple[Any, Parts, int, str]
_NEVER = 2**63  # a fence no fetch number reaches: the partition is not ours


class _BufferPool:
    """The rdk_batch buffers the fetch thread fills in turn (QUEUE_DEPTH + 1 of them, and up
    to EXTRA_BUFFERS more while paused), and the condition guarding them."""

    def __init__(self, max_messages: int, stopping: threading.Event, running: threading.Event) -> None:
        self._max_messages = max_messages
        self._stopping = stopping
        self._running = running
        self._cond = threading.Condition()
        # rows point into librdkafka's messages: rdk._messages makes the one copy
        self._buffers = [_fetch.new_batch(max_messages) for _ in range(QUEUE_DEPTH + 1)]
        self._free: deque[Any] = deque(self._buffers)
        self._converting = 0
        self._freed = False

    def take(self, which: Any = None) -> Any:
        """A free buffer (``which`` one, if given); None once stopping.

        While paused, the queued buffers wait for resume(), but the fetch thread must go on
        serving librdkafka's queue: that is where pause() drops the partitions' outdated
        messages (its own purge stops at the first message of another partition in a
        shared queue). So a paused consumer with no free buffer gets one more (at most
        EXTRA_BUFFERS; they join the pool).
        """
        with self._cond:
            while not self._stopping.is_set():
                if which is None and self._free:
                    return self._free.popleft()
                if which is not None and which in self._free:
                    self._free.remove(which)
                    return which
                if (which is None and not self._running.is_set()
                        and len(self._buffers) < QUEUE_DEPTH + 1 + EXTRA_BUFFERS):
                    b = _fetch.new_batch(self._max_messages)
                    self._buffers.append(b)
                    return b
                self._cond.wait(0.1)
        return None

    def begin_reading(self) -> bool:
        """A consuming thread starts reading a filled buffer; False once the pool is freed."""
        with self._cond:
            if self._freed:
                return False
            self._converting += 1
            return True

    def give_back(self, b: Any) -> None:
        """The consuming thread is done reading ``b``: it is free again (the librdkafka
        messages its rows point into are released now, not at its next fetch)."""
        _fetch.release_batch(b)
        with self._cond:
            self._converting -= 1
            self._free.append(b)
            self._cond.notify_all()

    def put_back(self, b: Any) -> None:
        """A filled buffer nobody reads (all of it dropped): free again."""
        _fetch.release_batch(b)
        with self._cond:
            self._free.append(b)
            self._cond.notify_all()

    def free(self) -> None:
        """Free every buffer (messages carried in them belong to the client, so this comes
        before the client is closed); waits up to 5 s for a conversion in progress."""
        with self._cond:
            self._freed = True
            self._cond.wait_for(lambda: self._converting == 0, 5.0)
            if self._converting:
                return  # pragma: no cover - a conversion stuck in C: leak rather than crash
            buffers, self._buffers = self._buffers, []
            self._free.clear()
        for b in buffers:
            _fetch.free_batch(b)


class FetchPipeline:
    """Fetching of the assigned partitions into rotating buffers, on a thread of its own.

    Reads and changes the consumer's :class:`ConsumerState`: waits on its ``stopping`` and
    ``running`` events, counts ``fetched``/``handed`` messages per (topic, partition),
    advances ``positions`` (the next offset of each) as batches are converted, sends what
    stops fetching to ``fail``, and gives every Batch ``progress.settle``. ``on_idle`` (set
    before :meth:`start_thread`) is called on the fetch thread at most once every
    IDLE_CHECK_SECONDS while nothing arrives; ``fetcher`` is a :class:`Fetcher` (worker
    slots) or a group's fetcher.

    **Fences** (:meth:`fence`) drop messages fetched before a seek or a (re)assignment, and
    every message of a partition that is not ours any more: each fetch call has a number,
    and a fence keeps a partition's messages of fetches numbered below it from being handed
    out.
    """

    def __init__(self, fetcher: Any, state: ConsumerState, *, max_messages: int,
                 decode: bool) -> None:
        self.state = state
        self.topic = state.name  # for logs
        self.max_messages = max_messages
        self.decode = decode
        self.logger = state.logger
        self.on_idle: Callable[[], None] | None = None
        self.on_filled: Callable[[], None] | None = None  # a batch is ready (rdk.aio's wake-up)
        self.fetch_thread: threading.Thread | None = None
        self._queue: queue.Queue[Filled] = queue.Queue()
        self._fetch_lock = threading.Lock()  # held by the fetch thread during a fetch call
        self.after_loop = AfterLoop()  # rdk.aio's stop runs on the fetch thread after its loop
        self._seq = 0  # number of the current (or next) fetch call
        self._fences: dict[tuple[str, int], int] = {}  # (topic, partition) -> first fetch number kept
        self._fence_lock = threading.Lock()
        # held from a buffer's fence check to its batch being tracked (see hand_out)
        self._handout_lock = threading.Lock()
        self._pool = _BufferPool(max_messages, state.stopping, state.running)
        self._fetcher: Any = fetcher

    @property
    def fetcher(self) -> Any:
        if self._fetcher is None:
            raise RuntimeError("the fetch pipeline is closed")
        return self._fetcher

    # ---- partitions ----------------------------------------------------------------------
    def start_partition(self, key: tuple[str, int], offset: int) -> None:
        """Start fetching ``key`` at ``offset`` (or a logical RD_KAFKA_OFFSET_*)."""
        self.fetcher.start(key[1], offset, key[0])

    def restart_partition(self, key: tuple[str, int], offset: int) -> None:
        """Fetch ``key`` again from ``offset`` (between two fetch calls)."""
        self.fetcher.stop(key[1], key[0])
        self.fetcher.start(key[1], offset, key[0])

    def fence(self, keys: Iterable[tuple[str, int]], keep_new: bool,
              then: Callable[[], Any] | None = None) -> Any:
        """Drop what was fetched so far of these (topic, partition)s, and keep what later
        fetches bring (``keep_new``: a seek or an assignment) or not (revoked). ``then()``
        (the seek) runs between two fetch calls, after the fence is up; its result is
        returned."""
        with self.between_fetches():
            mark = self._seq + 1 if keep_new else _NEVER
            with self._fence_lock:
                for key in keys:
                    self._fences[key] = mark
            result = then() if then is not None else None
        if not keep_new:
            # a batch that passed the fence check before the fence went up is tracked once
            # this lock is free: a revoke then waits for it to settle like any in flight
            with self._handout_lock:
                pass
        return result

    @contextmanager
    def between_fetches(self) -> Iterator[None]:
        """Hold the fetch thread between two fetch calls (a waiting call is ended early).

        For pause: librdkafka resumes at the position after the last message handed out
        before the pause, and a fetch call still collecting would hand out more after it
        (they would come again after resume()).
        """
        _fetch.wake(self.fetcher.queue)
        with self._fetch_lock:
            yield

    # ---- the fetch thread --------------------------------------------------------------
    def start_thread(self, name: str, here: bool = False) -> None:
        """Start the fetch thread; ``here``: the calling thread is it, and calls
        :meth:`run_fetch` next (rdk.aio's start runs on the thread that then fetches)."""
        if here:
            self.fetch_thread = threading.current_thread()
            return
        self.fetch_thread = threading.Thread(target=self._fetch_thread, name=name, daemon=True)
        self.fetch_thread.start()

    def run_fetch(self) -> None:
        """The fetch thread's work, on the thread ``start_thread(here=True)`` adopted."""
        self._fetch_thread()

    def _fetch_thread(self) -> None:
        try:
            self._fetch_loop()
        finally:
            self.after_loop.loop_ended()

    @property
    def fetching(self) -> bool:
        """Whether the fetch thread is still running (it may be inside a C call)."""
        return self.fetch_thread is not None and self.fetch_thread.is_alive()

    def _fetch_loop(self) -> None:
        """Fill buffers (one C call each, GIL released) and queue them; the consuming thread
        turns them into Messages, so this thread goes straight back to fetching."""
        fetcher, stopping, pool = self.fetcher, self.state.stopping, self._pool
        maximum, fetch_lock = self.max_messages, self._fetch_lock
        next_check = time.monotonic() + IDLE_CHECK_SECONDS
        b = None
        try:
            while not stopping.is_set():
                if b is None:
                    b = pool.take()
                    if b is None:
                        return
                with fetch_lock:
                    self._seq += 1
                    fetcher.fetch(FETCH_TIMEOUT_MS, maximum, b)
                n = b.n
                if n == 0:
                    if self.on_idle is not None and time.monotonic() >= next_check:
                        next_check = time.monotonic() + IDLE_CHECK_SECONDS
                        self.on_idle()
                    continue
                if b.n_errors:
                    self._handle_errors(b)
                    if b.n_errors == n:
                        continue
                carry = self._queue_filled(b)
                # messages carried over (Arrow 2 GiB limit) come first in the same buffer
                b = pool.take(b) if carry else None
        except BaseException as e:  # a bug or out of memory: say so and stop, never hang
            self.logger.exception("consumer of %s: fetch thread failed", self.topic)
            self.state.fail(e if isinstance(e, KafkaError) else
                           KafkaError(ERROR_CODES["_FAIL"], f"fetch thread failed: {e!r}",
                                      context=self.topic))

    def _queue_filled(self, b: Any) -> bool:
        """Queue filled buffer ``b``; True if it carries messages over to its next fetch."""
        topic, parts = _fetch.batch_parts(b)  # (every message names its topic)
        fetched = self.state.fetched
        for p, _first, _last, count in parts:
            fetched[(topic, p)] = fetched.get((topic, p), 0) + count
        carry = b.carry_end > b.carry_start
        self._queue.put((b, parts, self._seq, topic))  # never blocks: the buffers bound the queue
        if self.on_filled is not None:
            self.on_filled()
        return carry

    def _handle_errors(self, b: Any) -> None:
        for i, code in batch_errors(b):
            if code == PARTITION_EOF:
                continue
            p, offset = int(b.partition[i]), int(b.offset[i])
            topic = _fetch.batch_topic(b) or self.topic  # (an error of no topic: the consumer's)
            err = KafkaError(code, error_text(b, i), context=f"consume {topic}[{p}] at offset {offset}")
            if code in _FATAL_FETCH_ERRORS:
                self.state.fail(err)
            else:
                self.logger.warning("consumer of %s: %s", self.topic, err)

    # ---- the consuming side ------------------------------------------------------------
    def wait_filled(self, timeout: float) -> Filled:
        """The next filled buffer; raises queue.Empty after ``timeout`` seconds. A buffer
        whose every partition is fenced off is dropped here (the wait goes on)."""
        deadline = time.monotonic() + timeout
        while True:
            filled = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            if not self._fences or len(self._dropped(filled)) < len(filled[1]):
                return filled
            b, parts, _seq, topic = filled
            self._uncount(topic, parts)
            self._pool.put_back(b)

    def next_batch(self, timeout: float | None,
                   error: Callable[[], KafkaError | None]) -> Batch | None:
        """Iterator mode: the next batch, tracked; None after ``timeout`` seconds (None:
        never) or once stopping; raises ``error()`` once there is one. Waits while paused."""
        deadline = None if timeout is None else time.monotonic() + timeout
        running, stop = self.state.running, self.state.stopping
        while True:
            if stop.is_set():
                return None
            failed = error()
            if failed is not None:
                raise failed
            left = 0.1 if deadline is None else min(0.1, deadline - time.monotonic())
            if not running.is_set():
                if left <= 0:
                    return None
                running.wait(left)
                continue
            try:
                batch = self.hand_out(self.wait_filled(max(0.0, left)))
            except queue.Empty:
                if left <= 0:
                    return None  # timeout 0: one look, no wait (rdk.aio)
                continue
            if batch is None or batch.messages:
                return batch  # (empty: all of it was of partitions fenced off meanwhile)

    def _dropped(self, filled: Filled) -> set[int]:
        """Partitions of ``filled`` whose messages a fence drops (forgets passed fences)."""
        _b, parts, seq, topic = filled
        fences, dropped = self._fences, set()
        with self._fence_lock:
            for p, _first, _last, _count in parts:
                mark = fences.get((topic, p))
                if mark is None:
                    continue
                if seq < mark:
                    dropped.add(p)
                else:  # buffers come in fetch order: this fence has done its work
                    del fences[(topic, p)]
        return dropped

    def _uncount(self, topic: str, parts: Parts) -> None:
        fetched = self.state.fetched
        for p, _first, _last, count in parts:
            fetched[(topic, p)] = fetched.get((topic, p), 0) - count

    def hand_out(self, filled: Filled) -> Batch | None:
        """:meth:`convert`, then the settlement tracker's ``add`` if any message is left, as
        one step: a revoke's fence either drops the buffer's messages of its partitions or
        finds their batch tracked, never neither."""
        with self._handout_lock:
            batch = self.convert(filled)
            if batch is not None and batch.messages:
                self.state.progress.tracker.add(batch)
        return batch

    def convert(self, filled: Filled) -> Batch | None:
        """A filled buffer as a Batch of Messages; the buffer goes back to the pool.
        None once the pool is freed (the consumer is closing). Messages of fenced-off
        partitions are left out (the Batch may then be empty)."""
        b, parts, _seq, topic = filled
        dropped = self._dropped(filled) if self._fences else None
        pool = self._pool
        if not pool.begin_reading():
            return None
        arr, n = self.state.positions.array(topic)
        kept: dict[int, int] = {}
        try:
            messages = build_messages(b, topic, self.decode)
            if dropped:
                kept = {p: int(arr[p]) for p in dropped if p < n}
            repeats, misses = _fetch.track(b, arr, n)
        finally:
            pool.give_back(b)
        if dropped:
            for p, e in kept.items():
                arr[p] = e  # what was dropped does not move the partition's position
            self._uncount(topic, [x for x in parts if x[0] in dropped])
            parts = [x for x in parts if x[0] not in dropped]
            messages = [m for m in messages if m[5] not in dropped]
        handed = self.state.handed
        for p, _first, _last, count in parts:
            handed[(topic, p)] = handed.get((topic, p), 0) + count
        return Batch(messages, repeats, misses, topic, parts, self.state.progress.settle)

    # ---- closing -----------------------------------------------------------------------
    def close(self) -> bool:
        """Free the buffers and the fetcher, unless the fetch thread is still running (then
        nothing is freed, and the client must stay open). Returns whether it closed."""
        if self.fetching and threading.current_thread() is not self.fetch_thread:
            return False  # (on the fetch thread itself its loop has ended: rdk.aio's stop)
        self._pool.free()
        if self._fetcher is not None:
            self._fetcher.close()
            self._fetcher = None
        return True
