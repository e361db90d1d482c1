"""rdk.ShareConsumer: Kafka share groups (KIP-932, "queues for Kafka") in kafka-native's style.

librdkafka 2.15's share consumer is a *preview* C API (``rd_kafka_share_*``); this module is
its one user. Shape (see ARCHITECTURE.md "Threads and callbacks"):

- One thread of ours (``rdk-share-<group>``) owns the ``rd_kafka_share_t``: the handle is not
  thread-safe, so every share call (poll, acknowledge, commit, close) is made there. librdkafka
  serves its stats, error, log and acknowledgement-commit callbacks inside those calls, so
  they too run on that thread and never on librdkafka's.
- Explicit acknowledgement mode: every record of a poll must be acknowledged before the next
  poll, so one batch is in flight per consumer: poll -> ``receive_callback(info)`` (or the
  Future/awaitable it returns) -> one C call acknowledges the whole batch -> the next poll
  sends those acknowledgements to the broker along with its fetch. ``stop()`` commits them
  synchronously (``rd_kafka_share_commit_sync``), then closes the handle.
- A batch is copied into contiguous buffers in C (``rdk_share_fill``, src/rdk/_share.c) and
  turned into :class:`ShareMessage` tuples with ``map``/``zip``.
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
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice, repeat
from typing import TYPE_CHECKING, Any

from . import _binding
from ._binding import ffi, lib
from ._lifecycle import Lifecycle
from .errors import ConfigError, KafkaError
from .message import Message, _tuplegetter
from .validate import (
    check_bootstrap_rule,
    check_broker,
    check_callable,
    check_choice,
    check_int,
    check_logger,
    check_options,
    check_topic_name,
)

if TYPE_CHECKING:
    import asyncio

__all__ = ["ShareBatch", "ShareConsumer", "ShareMessage", "ShareStats"]

log = logging.getLogger("rdk")

ACCEPT, RELEASE, REJECT = 1, 2, 3
_ACK_NAMES = {ACCEPT: "accepted", RELEASE: "released", REJECT: "rejected"}
_POLL_MS = 100          # no wakeup API in the preview: stop() waits at most one poll
METADATA_TIMEOUT = 10.0  # start(): seconds to learn the topics and set the group's config
_DEFAULT_LOCK_SECONDS = 30.0  # Kafka's group.share.record.lock.duration.ms, if unreadable
_SYSLOG_TO_LOGGING = {0: 50, 1: 50, 2: 50, 3: 40, 4: 30, 5: 20, 6: 20, 7: 10}


class ShareMessage(Message):
    """A [rdk.Message][] from a share group, with ``delivery_count`` (1 on the first
    delivery; the broker counts every acquisition, so a released or timed-out record comes
    back with one more). Still a tuple: built at C speed like every consumed Message."""

    __slots__ = ()
    delivery_count = _tuplegetter(7, "How many times the broker has delivered this record.")
    """How many times the broker has delivered this record (1 on the first delivery)."""

    def __reduce__(self):
        return (_rebuild_share, (tuple(self),))


def _rebuild_share(fields: tuple) -> ShareMessage:
    return tuple.__new__(ShareMessage, fields)


@dataclass
class ShareStats:
    """What ``stats_callback`` gets every ``statistics_interval_ms`` (also ``last_stats``).

    Counts since start: ``delivered`` messages handed to the application, of which
    ``accepted``, ``released`` (come back, delivery count + 1) and ``rejected`` (archived);
    ``redelivered`` (delivered with ``delivery_count > 1``); ``ack_errors`` (acknowledgements
    librdkafka or the broker refused, e.g. INVALID_RECORD_STATE for some acknowledgements
    sent after the lock ran out); ``lock_expired_batches`` (batches whose callback ran
    past the group's acquisition lock, ``share.record.lock.duration.ms``: their records may
    have gone to another delivery, so their acknowledgements are not counted as accepted,
    released or rejected; librdkafka 2.15 reports an error for such late acknowledgements only
    sometimes);
    ``in_flight_batches`` (0 or 1: explicit acknowledgement allows one); ``rdkafka``:
    librdkafka's statistics dict.
    """

    delivered: int = 0
    """Messages handed to the application since start."""
    accepted: int = 0
    """Messages acknowledged as processed."""
    released: int = 0
    """Messages given back (delivered again with ``delivery_count + 1``)."""
    rejected: int = 0
    """Messages refused for good (archived by the broker)."""
    redelivered: int = 0
    """Messages delivered with ``delivery_count > 1``."""
    ack_errors: int = 0
    """Acknowledgements librdkafka or the broker refused."""
    lock_expired_batches: int = 0
    """Batches whose callback ran past the group's acquisition lock."""
    in_flight_batches: int = 0
    """Batches being processed now: 0 or 1."""
    rdkafka: dict = field(default_factory=dict)
    """librdkafka's statistics dict, as of the last statistics interval."""


class ShareBatch:
    """One delivery of a share group: what ``receive_callback(info)`` gets.

    ``messages`` (list of [ShareMessage][rdk.ShareMessage], each with ``delivery_count``).
    ``accept(m)``, ``release(m)`` (deliver again, maybe to another member) and ``reject(m)``
    (never again) settle single messages before the batch ends; what is left is accepted
    when the callback returns (or its Future/awaitable completes) and released when it
    raises. Settling a message twice, or one of another batch: ValueError.

    Args:
        messages: The batch's messages (rdk builds batches; applications receive them).
    """

    __slots__ = ("_done", "_index", "_lock", "_settled", "_types", "messages")

    def __init__(self, messages: list[ShareMessage]) -> None:
        self.messages = messages
        """The batch's [rdk.ShareMessage][]s."""
        self._types = bytearray(len(messages))  # 0: not settled yet, else ACCEPT/RELEASE/REJECT
        self._index: dict[int, int] | None = None  # id(message) -> row (made on first use)
        self._lock = threading.Lock()
        self._done = False
        self._settled = threading.Event()  # batches(): the application moved on

    def accept(self, message: Message) -> None:
        """Acknowledge ``message`` as processed.

        Args:
            message: A message of this batch.

        Raises:
            ValueError: ``message`` is not of this batch, is settled already, or the batch is
                acknowledged already.
        """
        self._set(message, ACCEPT)

    def release(self, message: Message) -> None:
        """Give ``message`` back: the broker delivers it again (delivery count + 1).

        Args:
            message: A message of this batch.

        Raises:
            ValueError: ``message`` is not of this batch, is settled already, or the batch is
                acknowledged already.
        """
        self._set(message, RELEASE)

    def reject(self, message: Message) -> None:
        """Refuse ``message`` for good: the broker archives it and never delivers it again.

        Args:
            message: A message of this batch.

        Raises:
            ValueError: ``message`` is not of this batch, is settled already, or the batch is
                acknowledged already.
        """
        self._set(message, REJECT)

    def _set(self, message: Message, kind: int) -> None:
        with self._lock:
            if self._index is None:
                self._index = {id(m): i for i, m in enumerate(self.messages)}
            row = self._index.get(id(message))
            if row is None or self.messages[row] is not message:
                raise ValueError(f"{message!r} is not a message of this batch")
            if self._done:
                raise ValueError(f"{message!r}: this batch is already acknowledged")
            if self._types[row]:
                raise ValueError(f"{message!r} is already {_ACK_NAMES[self._types[row]]}")
            self._types[row] = kind

    def _finish(self, default: int) -> bytes:
        """The batch's final types (rows not settled get ``default``); no settling after."""
        with self._lock:
            self._done = True
            return bytes(t or default for t in self._types) if 0 in self._types else bytes(self._types)

    def __len__(self) -> int:
        return len(self.messages)

    def __iter__(self) -> Iterator[ShareMessage]:
        return iter(self.messages)

    def __repr__(self) -> str:
        return f"<ShareBatch {len(self.messages)} messages>"


# ---- C -> Python callbacks (served inside share calls, on the share thread) ----------------

@ffi.def_extern()
def rdk_share_on_stats(rk: Any, json_text: Any, json_len: int, opaque: Any) -> int:
    sink = ffi.from_handle(opaque)
    sink._stats_json.append(ffi.string(json_text, json_len).decode(errors="replace"))
    return 0


@ffi.def_extern()
def rdk_share_on_error(rk: Any, err: int, reason: Any, opaque: Any) -> None:
    sink = ffi.from_handle(opaque)
    text = ffi.string(reason).decode(errors="replace") if reason != ffi.NULL else ""
    sink._errors.append(KafkaError(err, text))


@ffi.def_extern()
def rdk_share_on_log(rk: Any, level: int, fac: Any, buf: Any) -> None:
    opaque = lib.rd_kafka_opaque(rk)
    if opaque == ffi.NULL:
        return
    sink = ffi.from_handle(opaque)
    facility = ffi.string(fac).decode(errors="replace")
    line = ffi.string(buf).decode(errors="replace")
    lvl = _SYSLOG_TO_LOGGING.get(level, 10)
    if facility == "SHARECONSUMER":  # "preview, not for production": said in the docs
        lvl = min(lvl, logging.INFO)
    if lvl >= logging.WARNING:
        show, held = sink._repeats.allow((facility, line))
        if show:
            more = f" (and {held} more like it)" if held else ""
            sink.logger.log(lvl, "librdkafka %s: %s%s", facility, line, more)
    else:
        sink.logger.log(lvl, "librdkafka %s: %s", facility, line)


@ffi.def_extern()
def rdk_share_on_ack(rkshare: Any, partitions: Any, err: int, opaque: Any) -> None:
    """librdkafka's acknowledgement-commit outcome, once per partition."""
    sink = ffi.from_handle(opaque)
    for i in range(lib.rd_kafka_share_partition_offsets_list_count(partitions)):
        entry = lib.rd_kafka_share_partition_offsets_list_get(partitions, i)
        tp = lib.rd_kafka_share_partition_offsets_partition(entry)
        perr = int(tp.err) or int(err)
        if perr:
            count = int(lib.rd_kafka_share_partition_offsets_offsets_cnt(entry))
            sink._ack_failed(ffi.string(tp.topic).decode(), int(tp.partition), count, perr)


# ---- the consumer ------------------------------------------------------------------------

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
    group has no progress yet. ``max_messages_per_callback`` is librdkafka's
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
        start_offset: The group's ``share.auto.offset.reset``: ``"latest"`` or ``"earliest"``.
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
            topic list, a topic named twice, a closed ``loop``.
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
        start_offset: str = "latest",
        max_messages_per_callback: int = 500,
        stats_callback: Callable[[ShareStats], Any] | None = None,
        statistics_interval_ms: int = 5000,
        driver_options: Mapping[str, Any] | None = None,
        logger: logging.Logger | logging.LoggerAdapter | None = None,
        loop: asyncio.AbstractEventLoop | None = None,
        decode: str | None = None,
    ) -> None:
        self.broker = check_broker(broker)
        self.topics = _check_topics(topics)
        if not isinstance(group_id, str):
            raise TypeError(f"group_id must be str, got {type(group_id).__name__}")
        if not group_id:
            raise ValueError("group_id must not be empty: a share consumer needs a share group")
        self.group_id = group_id
        self._receive_callback = check_callable(receive_callback, "receive_callback")
        self._stats_callback = check_callable(stats_callback, "stats_callback")
        self.start_offset = check_choice(start_offset, "start_offset", ("latest", "earliest"))
        self.max_messages_per_callback = check_int(
            max_messages_per_callback, "max_messages_per_callback", minimum=1, maximum=1_000_000)
        self.statistics_interval_ms = check_int(
            statistics_interval_ms, "statistics_interval_ms", minimum=0, maximum=86_400_000)
        self.decode = check_choice(decode, "decode", (None, "utf-8"))
        self.logger = check_logger(logger) or log
        from .consumer._loop_thread import LoopThread, is_event_loop

        if loop is not None and not is_event_loop(loop):
            raise TypeError(f"loop must be an asyncio event loop, got {type(loop).__name__}")
        self._loop_thread = LoopThread(loop, name=f"rdk-share-asyncio-{group_id}")
        self._loop_thread.check_open()
        options = check_options(driver_options, "driver_options")
        check_bootstrap_rule(self.broker, options)
        for name in ("group.id", "share.acknowledgement.mode"):
            if name in options:
                raise ConfigError(f"driver_options: {name!r} is set by ShareConsumer "
                                  "(group_id=; acknowledgement is always explicit)")
        self._driver_options = options
        self._props = {
            "max.poll.records": self.max_messages_per_callback,
            "statistics.interval.ms": self.statistics_interval_ms if self._stats_callback else 0,
            **options,
            "bootstrap.servers": self.broker,
            "group.id": group_id,
            "share.acknowledgement.mode": "explicit",
            "log.queue": True,
        }
        _binding.validate_options(self._props)  # librdkafka refuses bad properties now

        self._describe = f"share consumer of group {group_id}"
        self._owner = f"ShareConsumer of group {group_id!r}"
        self._init_lifecycle()
        self._give_up = threading.Event()  # stop()'s deadline passed: release, do not wait
        self._thread: threading.Thread | None = None
        self._handoff: queue.Queue[ShareBatch | None] = queue.Queue(maxsize=1)
        self._rkshare: Any = None
        self._handle: Any = None
        self._counts = ShareStats()
        self._stats_lock = threading.Lock()
        self._lock_seconds = _DEFAULT_LOCK_SECONDS  # the group's, read at start()
        self._stats_json: list[str] = []
        self._errors: list[KafkaError] = []
        self._repeats = _binding.RepeatLimiter()
        self._deadline = time.monotonic() + 30.0  # stop()'s, for the final commit
        self.last_stats: ShareStats | None = None
        """The latest [rdk.ShareStats][] given to ``stats_callback`` (None until then)."""

    # ---- lifecycle -------------------------------------------------------------------
    def start(self) -> None:
        """Check the topics, set the group's ``share.auto.offset.reset`` to ``start_offset``,
        join the share group and deliver batches to ``receive_callback`` on a thread of
        rdk's. An unknown topic: KafkaError UNKNOWN_TOPIC_OR_PART (within METADATA_TIMEOUT).

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

    def _open(self, mode: str) -> None:
        with self._state_lock:
            self._check_openable()
            if mode == "callback":
                self._loop_thread.check_open()
            self._prepare_group()
            self._rkshare = self._new_handle()
            self._mark_running(mode)
            self._thread = threading.Thread(target=self._run, daemon=True,
                                            name=f"rdk-share-{self.group_id}")
            self._thread.start()

    def _prepare_group(self) -> None:
        """Every topic exists; the group's share.auto.offset.reset is start_offset."""
        from .admin import Admin

        admin_options = {k: v for k, v in self._driver_options.items()
                         if not k.startswith("share.") and k not in ("max.poll.records",)}
        with Admin(self.broker, admin_options) as admin:
            for topic in self.topics:
                admin.partition_count(topic, METADATA_TIMEOUT)
            admin.alter_group_config(self.group_id, {"share.auto.offset.reset": self.start_offset},
                                     timeout=METADATA_TIMEOUT)
            config = admin.describe_group_config(self.group_id, timeout=METADATA_TIMEOUT)
        try:
            self._lock_seconds = int(config["share.record.lock.duration.ms"]) / 1000
        except (KeyError, ValueError):
            self._lock_seconds = _DEFAULT_LOCK_SECONDS

    def _new_handle(self) -> Any:
        conf = _binding.new_conf(self._props)
        self._handle = ffi.new_handle(self)
        lib.rd_kafka_conf_set_opaque(conf, self._handle)
        lib.rd_kafka_conf_set_error_cb(conf, lib.rdk_share_on_error)
        lib.rd_kafka_conf_set_log_cb(conf, lib.rdk_share_on_log)
        if self._stats_callback is not None and self.statistics_interval_ms:
            lib.rd_kafka_conf_set_stats_cb(conf, lib.rdk_share_on_stats)
        errstr = ffi.new("char[]", 512)
        rkshare = lib.rd_kafka_share_consumer_new(conf, errstr, 512)
        if rkshare == ffi.NULL:
            lib.rd_kafka_conf_destroy(conf)
            raise ConfigError(ffi.string(errstr).decode(errors="replace"))
        try:
            _binding.check_error(lib.rd_kafka_share_set_log_queue(rkshare, ffi.NULL), "set_log_queue")
            _binding.check_error(lib.rd_kafka_share_set_acknowledgement_commit_cb(
                rkshare, lib.rdk_share_on_ack, self._handle), "acknowledgement commit callback")
            tpl = lib.rd_kafka_topic_partition_list_new(len(self.topics))
            try:
                for topic in self.topics:
                    lib.rd_kafka_topic_partition_list_add(tpl, topic.encode(), -1)
                _binding.check(lib.rd_kafka_share_subscribe(rkshare, tpl), "share subscribe")
            finally:
                lib.rd_kafka_topic_partition_list_destroy(tpl)
        except BaseException:
            _destroy_handle(rkshare, self.logger)
            raise
        return rkshare

    def stop(self, timeout: float = 30.0) -> None:
        """Finish the batch in flight (its callback, or the Future/awaitable it returned),
        acknowledge it, commit every pending acknowledgement (commit sync), leave the group.

        Returns within ``timeout``: a batch whose processing has not ended by then is
        released (delivered again, maybe to another member), with a warning. Called from
        inside the callback it only asks for the stop. Idempotent; in a forked child it
        returns at once.

        Args:
            timeout: Seconds to wait in all; ``inf`` waits without a practical limit.

        Raises:
            TypeError: ``timeout`` is not a number.
            ValueError: ``timeout`` is negative or nan.
        """
        self._stop(timeout)

    def _on_own_thread(self) -> bool:
        return threading.current_thread() in (self._thread, self._loop_thread.thread)

    def _finish(self, deadline: float, timeout: float) -> None:
        """Wait for the share thread (it acknowledges, commits and closes), then the loop."""
        self._deadline = deadline
        thread = self._thread
        if thread is not None:
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
        with self._stats_lock:
            return ShareStats(**{**self._counts.__dict__, "rdkafka": dict(self._counts.rdkafka)})

    # ---- iterator interface ----------------------------------------------------------
    def batches(self, timeout: float | None = None) -> Iterator[ShareBatch]:
        """``for info in consumer.batches(timeout=5): ...``: starts the consumer if needed.
        A batch's messages not settled with accept/release/reject are accepted when the
        next batch is requested or the loop ends; ends after ``timeout`` seconds without a
        batch (None: never) or after ``stop()``; raises the KafkaError that stopped it.

        Args:
            timeout: Seconds to wait for the next batch before the iteration ends; None waits
                until ``stop()``.

        Yields:
            Each [rdk.ShareBatch][] in turn.

        Raises:
            TypeError: ``timeout`` is not a number.
            ValueError: ``timeout`` is negative or nan.
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

    # ---- the share thread ------------------------------------------------------------
    def _run(self) -> None:
        rkshare = self._rkshare
        cbatch = lib.rdk_share_batch_new()
        out = ffi.new("rd_kafka_messages_t **")
        try:
            while not self._stop_event.is_set():
                out[0] = ffi.NULL
                error = lib.rd_kafka_share_poll(rkshare, _POLL_MS, out)
                self._serve_collected()
                if error != ffi.NULL:
                    self._poll_error(error)
                    continue
                if out[0] == ffi.NULL:
                    continue
                if lib.rdk_share_fill(cbatch, out[0]) < 0:
                    lib.rdk_share_batch_clear(cbatch)
                    raise MemoryError("rdk_share_fill: out of memory")
                try:
                    self._one_batch(rkshare, cbatch)
                finally:
                    lib.rdk_share_batch_clear(cbatch)
        except BaseException as e:  # the consumer fails, the handle closes
            self._fail(e if isinstance(e, KafkaError)
                       else KafkaError(_binding.ERROR_CODES["_FAIL"], f"share thread: {e!r}"))
            self.logger.exception("share consumer of group %s: share thread failed", self.group_id)
        finally:
            lib.rdk_share_batch_free(cbatch)
            self._close_handle(rkshare)

    def _one_batch(self, rkshare: Any, cbatch: Any) -> None:
        if cbatch.n_errors:
            self._log_limited(logging.WARNING, ("record-error", cbatch.first_err),
                              "share consumer of group %s: %d record(s) with errors, which "
                              "librdkafka acknowledged itself (first: %s)", self.group_id,
                              cbatch.n_errors, KafkaError(cbatch.first_err))
        if cbatch.n == 0:
            return
        messages = _messages(cbatch, self.decode)
        info = ShareBatch(messages)
        redelivered = sum(1 for c in ffi.unpack(cbatch.delivery_count, cbatch.n) if c > 1)
        with self._stats_lock:
            self._counts.delivered += len(messages)
            self._counts.redelivered += redelivered
            self._counts.in_flight_batches = 1
        started = time.monotonic()
        ok = self._deliver(info)
        types = info._finish(ACCEPT if ok else RELEASE)
        took = time.monotonic() - started
        failed = lib.rdk_share_ack(rkshare, cbatch, types)
        # librdkafka 2.15 reports no error for an acknowledgement sent after the records'
        # acquisition lock ran out (the broker gave them to another delivery meanwhile): a
        # batch that outlived the lock is counted and logged here, not as settled
        expired = took >= self._lock_seconds
        with self._stats_lock:
            self._counts.in_flight_batches = 0
            if expired:
                self._counts.lock_expired_batches += 1
            else:
                for kind, name in _ACK_NAMES.items():
                    setattr(self._counts, name, getattr(self._counts, name) + types.count(kind))
            self._counts.ack_errors += failed
        if expired:
            self._log_limited(logging.WARNING, ("lock-expired",),
                              "share consumer of group %s: a batch of %d message(s) took %.1f s "
                              "in the callback, past the group's acquisition lock (%.1f s, "
                              "share.record.lock.duration.ms): the broker may have delivered its "
                              "records again, and its acknowledgements may not count",
                              self.group_id, len(types), took, self._lock_seconds)
        if failed:
            errs = ffi.unpack(cbatch.ack_err, cbatch.n)
            first = next(e for e in errs if e)
            self._log_limited(logging.WARNING, ("ack", first),
                              "share consumer of group %s: %d of %d acknowledgements refused "
                              "by librdkafka after %.1f s in the callback: %s", self.group_id,
                              failed, len(types), time.monotonic() - started, KafkaError(first))

    def _deliver(self, info: ShareBatch) -> bool:
        """Hand ``info`` to the application; True once processed, False to release it."""
        if self._mode == "iterator":
            while not self._handoff_put(info):
                if self._stop_event.is_set():
                    return False
            # stop() releases a batch the application has not finished with (the broker
            # delivers it again), rather than waiting for an iterator that may never resume
            while not info._settled.wait(0.1):
                if self._stop_event.is_set():
                    with info._lock:
                        info._done = True
                    return info._settled.is_set()
            return True
        try:
            result = self._receive_callback(info)
        except Exception:
            self.logger.exception("share consumer of group %s: receive_callback raised; "
                                  "releasing its %d message(s) for redelivery",
                                  self.group_id, len(info))
            return False
        except BaseException as e:  # SystemExit cannot end the program from this thread
            self.logger.error("share consumer of group %s: receive_callback raised %s; "
                              "releasing its batch and stopping", self.group_id,
                              type(e).__name__, exc_info=True)
            self._fail(KafkaError(_binding.ERROR_CODES["_FAIL"],
                                  f"receive_callback raised {type(e).__name__}"))
            return False
        if result is None:
            return True
        if inspect.isawaitable(result):
            try:
                result = self._loop_thread.submit(result)
            except Exception:
                self.logger.exception("share consumer of group %s: cannot run the awaitable "
                                      "receive_callback returned", self.group_id)
                return False
        if isinstance(result, concurrent.futures.Future):
            return self._wait_future(result, info)
        return True

    def _wait_future(self, future: concurrent.futures.Future, info: ShareBatch) -> bool:
        while not future.done():
            if self._give_up.is_set():
                self.logger.warning("share consumer of group %s: the Future/awaitable of a "
                                    "batch of %d did not finish before stop(); released",
                                    self.group_id, len(info))
                return False
            problem = self._loop_thread.problem()
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
            self._handoff.put(info, timeout=0.1)
            return True
        except queue.Full:
            return False

    def _serve_collected(self) -> None:
        """What librdkafka's callbacks collected during the last share call."""
        while self._errors:
            err = self._errors.pop(0)
            if err.fatal:
                self._fail(err)
            else:
                self._log_limited(logging.WARNING, (err.code, str(err)), "librdkafka error: %s", err)
        while self._stats_json:
            text = self._stats_json.pop(0)
            try:
                parsed = json.loads(text)
            except ValueError:
                continue
            with self._stats_lock:
                self._counts.rdkafka = parsed
            info = self.stats()
            self.last_stats = info
            if self._stats_callback is not None:
                try:
                    self._stats_callback(info)
                except Exception:
                    self.logger.exception("share consumer of group %s: stats_callback raised",
                                          self.group_id)

    def _ack_failed(self, topic: str, partition: int, count: int, err: int) -> None:
        """The broker (or librdkafka) refused ``count`` acknowledgements of a partition."""
        error = KafkaError(err)
        with self._stats_lock:  # (lock_expired_batches counts batches, from their timing)
            self._counts.ack_errors += count
        hint = (" (the acquisition lock ran out before the callback finished: those records "
                "go, or went, to another delivery)" if error.name == "INVALID_RECORD_STATE" else "")
        self._log_limited(logging.WARNING, ("ackcommit", topic, partition, err),
                          "share consumer of group %s: %d acknowledgement(s) of %s[%d] "
                          "failed: %s%s", self.group_id, count, topic, partition, error, hint)

    def _poll_error(self, error: Any) -> None:
        code = lib.rd_kafka_error_code(error)
        text = ffi.string(lib.rd_kafka_error_string(error)).decode(errors="replace")
        fatal = bool(lib.rd_kafka_error_is_fatal(error))
        lib.rd_kafka_error_destroy(error)
        err = KafkaError(code, text, fatal=fatal)
        if fatal or err.name in ("TOPIC_AUTHORIZATION_FAILED", "GROUP_AUTHORIZATION_FAILED"):
            self._fail(err)
            return
        self._log_limited(logging.WARNING, (code, text), "share consumer of group %s: poll: %s",
                          self.group_id, err)
        time.sleep(0.05)

    def _close_handle(self, rkshare: Any) -> None:
        """Commit pending acknowledgements, leave the group, free the handle (share thread)."""
        if self._pid != os.getpid() or rkshare is None:
            return
        deadline = self._deadline if self._stop_event.is_set() else time.monotonic() + 30.0
        left_ms = max(1000, int((deadline - time.monotonic()) * 1000))
        parts = ffi.new("rd_kafka_topic_partition_list_t **")
        error = lib.rd_kafka_share_commit_sync(rkshare, left_ms, parts)
        self._serve_collected()
        if error != ffi.NULL:
            code = lib.rd_kafka_error_code(error)
            lib.rd_kafka_error_destroy(error)
            self.logger.warning("share consumer of group %s: committing acknowledgements at "
                                "stop failed: %s", self.group_id, KafkaError(code))
        if parts[0] != ffi.NULL:
            tpl = parts[0]
            for i in range(tpl.cnt):
                tp = tpl.elems[i]
                if tp.err:
                    self._ack_failed(ffi.string(tp.topic).decode(), int(tp.partition), 1,
                                     int(tp.err))
            lib.rd_kafka_topic_partition_list_destroy(tpl)
        _destroy_handle(rkshare, self.logger)
        self._rkshare = None

    # ---- errors ----------------------------------------------------------------------
    def _fail(self, err: KafkaError) -> None:
        if not self._fail_once(err):
            return
        self.logger.error("share consumer of group %s stops: %s", self.group_id, err)
        self._stop_event.set()
        if self._mode == "callback" and threading.current_thread() is self._thread:
            self._stop_in_background()

    def _log_limited(self, level: int, key: Any, fmt: str, *args: Any) -> None:
        show, held = self._repeats.allow(key)
        if show:
            if held:
                fmt += f" (and {held} more like it)"
            self.logger.log(level, fmt, *args)

    def __repr__(self) -> str:
        return (f"<ShareConsumer group={self.group_id!r} topics={self.topics!r} "
                f"{self._state}>")


# ---- helpers ----------------------------------------------------------------------------

def _check_topics(topics: Any) -> list[str]:
    if isinstance(topics, str):
        return [check_topic_name(topics, "topics")]
    if not isinstance(topics, (list, tuple)):
        raise TypeError(f"topics must be a str or a list of str, got {type(topics).__name__}")
    if not topics:
        raise ValueError("topics: the list of topics is empty")
    names = [check_topic_name(t, f"topics[{i}]") for i, t in enumerate(topics)]
    if len(set(names)) != len(names):
        raise ValueError(f"topics: {names!r} names a topic twice")
    return names


def _destroy_handle(rkshare: Any, logger: Any) -> None:
    """Close (sends what is pending, leaves the group) and destroy a share handle."""
    error = lib.rd_kafka_share_consumer_close(rkshare)
    if error != ffi.NULL:
        code = lib.rd_kafka_error_code(error)
        lib.rd_kafka_error_destroy(error)
        logger.debug("rdk: share consumer close: %s", KafkaError(code))
    error = lib.rd_kafka_share_destroy(rkshare)
    if error != ffi.NULL:
        code = lib.rd_kafka_error_code(error)
        lib.rd_kafka_error_destroy(error)
        logger.warning("rdk: share consumer destroy failed: %s", KafkaError(code))


def _slices(data_ptr: Any, offsets_ptr: Any, n: int) -> list[bytes]:
    offs = ffi.unpack(offsets_ptr, n + 1)
    data = ffi.buffer(data_ptr, offs[n])[:] if offs[n] else b""
    return [data[a:z] for a, z in zip(offs, islice(offs, 1, None), strict=False)]


def _nulls(flags_ptr: Any, n: int) -> list[int]:
    flags = ffi.buffer(flags_ptr, n)[:]
    return [i for i, f in enumerate(flags) if f] if b"\x01" in flags else []


def _messages(b: Any, decode: str | None) -> list[ShareMessage]:
    """The rows of a filled rdk_share_batch as ShareMessages (columns, then map/zip)."""
    n = b.n
    values: list[Any] = _slices(b.values, b.value_offsets, n)
    if decode:
        values = list(map(str, values, repeat(decode), repeat("replace")))
    for i in _nulls(b.value_null, n):
        values[i] = None
    keys: list[Any] = _slices(b.keys, b.key_offsets, n)
    for i in _nulls(b.key_null, n):
        keys[i] = None
    headers: Any = repeat(None)
    if b.n_headers:
        nh = b.n_headers
        names = [s.decode("utf-8", "replace") for s in _slices(b.header_names, b.header_name_offsets, nh)]
        hvalues: list[Any] = _slices(b.header_values, b.header_value_offsets, nh)
        for i in _nulls(b.header_value_null, nh):
            hvalues[i] = None
        pairs = list(zip(names, hvalues, strict=True))
        index = ffi.unpack(b.header_index, n + 1)
        headers = [pairs[a:z] if z > a else None
                   for a, z in zip(index, islice(index, 1, None), strict=False)]
    timestamps = [None if t < 0 else t for t in ffi.unpack(b.timestamp, n)]
    names_by_index = [ffi.string(b.topic_names[t]).decode() for t in range(b.n_topics)]
    topics = [names_by_index[t] for t in ffi.unpack(b.topic, n)] if b.n_topics > 1 \
        else repeat(names_by_index[0])
    return list(map(tuple.__new__, repeat(ShareMessage), zip(
        values, keys, headers, timestamps, topics, ffi.unpack(b.partition, n),
        ffi.unpack(b.offset, n), ffi.unpack(b.delivery_count, n), strict=False)))
