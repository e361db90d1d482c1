"""The share thread (``rdk-share-<group>``): the one thread that calls into the
``rd_kafka_share_t`` (the handle is not thread-safe).

It polls, turns each batch into a [ShareBatch][rdk.ShareBatch], delivers it (to
``receive_callback``, waiting for the Future/awaitable it returns, or through the
hand-off queue to ``batches()``), acknowledges the whole batch in one C call and counts
the outcome; it serves what librdkafka's callbacks collected during each call (stats,
errors); at the end it commits the pending acknowledgements and closes the handle.
"""

from __future__ import annotations

import concurrent.futures
import inspect
import json
import logging
import os
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from .. import _binding
from .._binding import share as _share
from .._binding.messages import share_messages
from .._lifecycle import AfterLoop
from .._loop_thread import LoopThread
from ..errors import KafkaError
from ._messages import ACCEPT, ACK_NAMES, RELEASE, ShareBatch, ShareMessage, ShareStats

__all__ = ["ShareCounts", "ShareThread"]

POLL_MS = 100  # no wakeup API in the preview: stop() waits at most one poll


class ShareCounts:
    """A share consumer's counts (a [rdk.ShareStats][]), their lock, and ``last``: the
    latest ShareStats given to ``stats_callback`` (None until then)."""

    def __init__(self) -> None:
        self.counts = ShareStats()
        self.lock = threading.Lock()
        self.last: ShareStats | None = None

    def snapshot(self) -> ShareStats:
        """A copy of the counts so far."""
        with self.lock:
            return ShareStats(**{**self.counts.__dict__, "rdkafka": dict(self.counts.rdkafka)})


class ShareThread:
    """Runs the share thread of one consumer (see the module docstring); also the sink of
    librdkafka's callbacks (``stats_json``, ``errors``, ``repeats``, ``logger``,
    ``ack_failed``).

    ``fail(err)`` stops the consumer with ``err``; ``stop_event`` ends the polling;
    ``give_up`` (stop()'s time is up) releases a batch whose Future/awaitable is pending;
    ``deadline`` (monotonic) bounds the final commit once ``stop_event`` is set; ``pid``
    is the process the consumer belongs to (no commit nor close in another).
    """

    def __init__(self, *, group_id: str, mode: str,
                 receive_callback: Callable[[ShareBatch], Any] | None,
                 stats_callback: Callable[[ShareStats], Any] | None, loop_thread: LoopThread,
                 handoff: queue.Queue[ShareBatch | None], stop_event: threading.Event,
                 give_up: threading.Event, fail: Callable[[KafkaError], None],
                 logger: logging.Logger | logging.LoggerAdapter, decode: str | None,
                 lock_seconds: float, counts: ShareCounts, pid: int, deadline: float) -> None:
        self.group_id = group_id
        self.mode = mode
        self.receive_callback = receive_callback
        self.stats_callback = stats_callback
        self.loop_thread = loop_thread
        self.handoff = handoff
        self.stop_event = stop_event
        self.give_up = give_up
        self.fail = fail
        self.logger = logger
        self.decode = decode
        self.lock_seconds = lock_seconds
        self.counts = counts
        self.pid = pid
        self.deadline = deadline
        self.stats_json: list[str] = []
        self.errors: list[KafkaError] = []
        self.repeats = _binding.RepeatLimiter()
        self.rkshare: Any = None
        self.thread: threading.Thread | None = None
        self.after_loop = AfterLoop()

    def new_thread(self, rkshare: Any, name: str) -> threading.Thread:
        """The share thread on ``rkshare`` (closed by the thread when it ends), not started
        yet: the caller keeps it before starting it, so a failure on it is seen as its own."""
        self.rkshare = rkshare
        self.thread = threading.Thread(target=self._run, daemon=True, name=name)
        return self.thread

    def adopt_thread(self, rkshare: Any) -> threading.Thread:
        """The calling thread is the share thread on ``rkshare``: it calls :meth:`run` next."""
        self.rkshare = rkshare
        self.thread = threading.current_thread()
        return self.thread

    def run(self) -> None:
        """The share thread's work, on the thread ``adopt_thread`` took."""
        self._run()

    def _run(self) -> None:
        rkshare = self.rkshare
        cbatch = _share.new_batch()
        try:
            while not self.stop_event.is_set():
                filled, error = _share.poll(rkshare, POLL_MS, cbatch)
                self.serve_collected()
                if error is not None:
                    self._poll_error(error)
                    continue
                if not filled:
                    continue
                try:
                    self._one_batch(rkshare, cbatch)
                finally:
                    _share.clear_batch(cbatch)
        except BaseException as e:  # the consumer fails, the handle closes
            self.fail(e if isinstance(e, KafkaError)
                      else KafkaError(_binding.ERROR_CODES["_FAIL"], f"share thread: {e!r}"))
            self.logger.exception("share consumer of group %s: share thread failed", self.group_id)
        finally:
            _share.free_batch(cbatch)
            self._close_handle(rkshare)
            self.after_loop.loop_ended()  # rdk.aio's stop finishes here

    def _one_batch(self, rkshare: Any, cbatch: Any) -> None:
        if cbatch.n_errors:
            self._log_limited(logging.WARNING, ("record-error", cbatch.first_err),
                              "share consumer of group %s: %d record(s) with errors, which "
                              "librdkafka acknowledged itself (first: %s)", self.group_id,
                              cbatch.n_errors, KafkaError(cbatch.first_err))
        if cbatch.n == 0:
            return
        messages = share_messages(cbatch, self.decode, ShareMessage)
        info = ShareBatch(messages)
        redelivered = sum(1 for c in _share.share_delivery_counts(cbatch) if c > 1)
        counts = self.counts.counts
        with self.counts.lock:
            counts.delivered += len(messages)
            counts.redelivered += redelivered
            counts.in_flight_batches = 1
        started = time.monotonic()
        ok = self._deliver(info)
        types = info._finish(ACCEPT if ok else RELEASE)
        took = time.monotonic() - started
        failed = _share.acknowledge(rkshare, cbatch, types)
        # librdkafka 2.15 reports no error for an acknowledgement sent after the records'
        # acquisition lock ran out (the broker gave them to another delivery meanwhile): a
        # batch that outlived the lock is counted and logged here, not as settled
        expired = took >= self.lock_seconds
        with self.counts.lock:
            counts.in_flight_batches = 0
            if expired:
                counts.lock_expired_batches += 1
            else:
                for kind, name in ACK_NAMES.items():
                    setattr(counts, name, getattr(counts, name) + types.count(kind))
            counts.ack_errors += failed
        if expired:
            self._log_limited(logging.WARNING, ("lock-expired",),
                              "share consumer of group %s: a batch of %d message(s) took %.1f s "
                              "in the callback, past the group's acquisition lock (%.1f s, "
                              "share.record.lock.duration.ms): the broker may have delivered its "
                              "records again, and its acknowledgements may not count",
                              self.group_id, len(types), took, self.lock_seconds)
        if failed:
            errs = _share.share_ack_errors(cbatch)
            first = next(e for e in errs if e)
            self._log_limited(logging.WARNING, ("ack", first),
                              "share consumer of group %s: %d of %d acknowledgements refused "
                              "by librdkafka after %.1f s in the callback: %s", self.group_id,
                              failed, len(types), time.monotonic() - started, KafkaError(first))

    def _deliver(self, info: ShareBatch) -> bool:
        """Hand ``info`` to the application; True once processed, False to release it."""
        if self.mode == "iterator":
            while not self._handoff_put(info):
                if self.stop_event.is_set():
                    return False
            # stop() releases a batch the application has not finished with (the broker
            # delivers it again), rather than waiting for an iterator that may never resume
            while not info._settled.wait(0.1):
                if self.stop_event.is_set():
                    with info._lock:
                        info._done = True
                    return info._settled.is_set()
            return True
        callback = self.receive_callback
        if callback is None:  # (callback mode always has one: start() checks)
            return False
        try:
            result = callback(info)
        except Exception:
            self.logger.exception("share consumer of group %s: receive_callback raised; "
                                  "releasing its %d message(s) for redelivery",
                                  self.group_id, len(info))
            return False
        except BaseException as e:  # SystemExit cannot end the program from this thread
            self.logger.error("share consumer of group %s: receive_callback raised %s; "
                              "releasing its batch and stopping", self.group_id,
                              type(e).__name__, exc_info=True)
            self.fail(KafkaError(_binding.ERROR_CODES["_FAIL"],
                                 f"receive_callback raised {type(e).__name__}"))
            return False
        if result is None:
            return True
        if inspect.isawaitable(result):
            try:
                result = self.loop_thread.submit(result)
            except Exception:
                self.logger.exception("share consumer of group %s: cannot run the awaitable "
                                      "receive_callback returned", self.group_id)
                return False
        if isinstance(result, concurrent.futures.Future):
            return self._wait_future(result, info)
        return True

    def _wait_future(self, future: concurrent.futures.Future, info: ShareBatch) -> bool:
        while not future.done():
            if self.give_up.is_set():
                self.logger.warning("share consumer of group %s: the Future/awaitable of a "
                                    "batch of %d did not finish before stop(); released",
                                    self.group_id, len(info))
                return False
            problem = self.loop_thread.problem()
            if problem is not None:
                self.logger.error("share consumer of group %s: %s", self.group_id, problem)
                return False
            concurrent.futures.wait([future], 0.1)
        if future.cancelled():
            return False
        exc = future.exception()
        if exc is not None:
            self.logger.error("share consumer of group %s: the Future/awaitable of a batch "
                              "raised; releasing its messages", self.group_id, exc_info=exc)
            return False
        return True

    def _handoff_put(self, info: ShareBatch) -> bool:
        try:
            self.handoff.put(info, timeout=0.1)
            return True
        except queue.Full:
            return False

    def serve_collected(self) -> None:
        """What librdkafka's callbacks collected during the last share call."""
        while self.errors:
            err = self.errors.pop(0)
            if err.fatal:
                self.fail(err)
            else:
                self._log_limited(logging.WARNING, (err.code, str(err)), "librdkafka error: %s", err)
        while self.stats_json:
            text = self.stats_json.pop(0)
            try:
                parsed = json.loads(text)
            except ValueError:
                continue
            with self.counts.lock:
                self.counts.counts.rdkafka = parsed
            info = self.counts.snapshot()
            self.counts.last = info
            if self.stats_callback is not None:
                try:
                    self.stats_callback(info)
                except Exception:
                    self.logger.exception("share consumer of group %s: stats_callback raised",
                                          self.group_id)

    def ack_failed(self, topic: str, partition: int, count: int, err: int) -> None:
        """The broker (or librdkafka) refused ``count`` acknowledgements of a partition."""
        error = KafkaError(err)
        with self.counts.lock:  # (lock_expired_batches counts batches, from their timing)
            self.counts.counts.ack_errors += count
        hint = (" (the acquisition lock ran out before the callback finished: those records "
                "go, or went, to another delivery)" if error.name == "INVALID_RECORD_STATE" else "")
        self._log_limited(logging.WARNING, ("ackcommit", topic, partition, err),
                          "share consumer of group %s: %d acknowledgement(s) of %s[%d] "
                          "failed: %s%s", self.group_id, count, topic, partition, error, hint)

    def _poll_error(self, err: KafkaError) -> None:
        code, text = err.code, err.description
        if err.fatal or err.name in ("TOPIC_AUTHORIZATION_FAILED", "GROUP_AUTHORIZATION_FAILED"):
            self.fail(err)
            return
        self._log_limited(logging.WARNING, (code, text), "share consumer of group %s: poll: %s",
                          self.group_id, err)
        time.sleep(0.05)

    def _close_handle(self, rkshare: Any) -> None:
        """Commit pending acknowledgements, leave the group, free the handle."""
        if self.pid != os.getpid() or rkshare is None:
            return
        deadline = self.deadline if self.stop_event.is_set() else time.monotonic() + 30.0
        left_ms = max(1000, int((deadline - time.monotonic()) * 1000))
        _share.close_handle(rkshare, left_ms, self)
        self.rkshare = None

    def _log_limited(self, level: int, key: Any, fmt: str, *args: Any) -> None:
        show, held = self.repeats.allow(key)
        if show:
            if held:
                fmt += f" (and {held} more like it)"
            self.logger.log(level, fmt, *args)
