"""rdk.Producer: kafka-native's Producer over librdkafka, one C call per send().

``send(topic, partition, payloads)`` validates the whole list, lays it out as one
contiguous buffer plus an int64 offsets array (keys, headers and timestamps likewise
when present) and hands it to ``rdk_produce_batch`` in a single call. Delivery
reports arrive on the Client's event thread already folded in C into runs of
``(send id, count)`` and a list of failures; per-send accounting turns them into
``on_delivery(delivered_count, failures)`` and ``delivery_report_callback(info)``.
"""

from __future__ import annotations

import logging
import struct
import threading
import time
from array import array
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from itertools import accumulate, compress, count
from typing import Any, NamedTuple

from . import _binding
from ._binding import ERROR_CODES, ffi, lib
from .errors import ClosedError, ConfigError, KafkaError, QueueFullError
from .message import Message
from .validate import check_broker, check_timeout, check_topic_name

__all__ = [
    "BALANCERS",
    "QUEUE_FULL_POLICIES",
    "Delivery",
    "DeliveryReportInfo",
    "Producer",
    "SendResult",
    "StatsInfo",
]

log = logging.getLogger("rdk")

BALANCERS = ("consistent_random", "murmur2_random", "fnv1a", "round_robin", "least_bytes")
QUEUE_FULL_POLICIES = ("drop", "block", "raise")

# balancer -> librdkafka topic "partitioner", or rdk's C balancer kind
_PARTITIONERS = {
    "consistent_random": "consistent_random",
    "murmur2_random": "murmur2_random",
    "fnv1a": "fnv1a_random",
}
_C_BALANCERS = {
    "round_robin": lib.RDK_BALANCE_ROUND_ROBIN,
    "least_bytes": lib.RDK_BALANCE_LEAST_BYTES,
}
_PARTITION_COUNT_TTL = 60.0  # seconds a partition count is trusted by the C balancers
_LOOKUP_RETRY = 10.0  # seconds before a failed background partition-count lookup is retried
_LOOKUP_TIMEOUT = 1.0  # seconds a background lookup may hold the event thread

_QUEUE_FULL = ERROR_CODES["_QUEUE_FULL"]
_UA = lib.RD_KAFKA_PARTITION_UA
_PURGE_ALL = lib.RD_KAFKA_PURGE_F_QUEUE | lib.RD_KAFKA_PURGE_F_INFLIGHT | lib.RD_KAFKA_PURGE_F_NON_BLOCKING
_EMPTY = ffi.new("char[1]")  # a non-NULL pointer for all-empty buffers
_MAX_BUFFER = 1 << 31  # int32 lengths: larger sends take int64 offsets


class SendResult(NamedTuple):
    """What ``send()`` returns (kafka-native's result fields)."""

    enqueued: int
    """How many of the call's messages were enqueued."""
    send_queue_length: int
    """Messages of this producer awaiting delivery right after the call."""


class Delivery(NamedTuple):
    """Accounting of one send() once every message is settled (what rdk.aio's send returns)."""

    delivered: int
    failures: list
    """``[(rdk.Message, KafkaError)]``: every message of the call that was not delivered."""


class DeliveryReportInfo:
    """Argument of ``delivery_report_callback``: failures since the last report.

    ``errors`` is ``[(rdk.Message, KafkaError)]``; ``rdkafka_errinfo`` summarises them as
    ``[{"errcode", "errname", "errstr", "count"}]``, one entry per error code.
    """

    __slots__ = ("errors", "rdkafka_errinfo")

    def __init__(self, errors: list, rdkafka_errinfo: list[dict]) -> None:
        self.errors = errors
        self.rdkafka_errinfo = rdkafka_errinfo

    def __repr__(self) -> str:
        return f"DeliveryReportInfo(errors={len(self.errors)}, rdkafka_errinfo={self.rdkafka_errinfo!r})"


class StatsInfo:
    """Argument of ``stats_callback``, every ``statistics_interval_ms``.

    ``send_queue_length``: messages enqueued and not yet delivered nor failed;
    ``rdkafka_stats``: librdkafka's statistics, parsed; ``dropped``: messages
    ``on_queue_full`` has refused since the producer started.
    """

    __slots__ = ("dropped", "rdkafka_stats", "send_queue_length")

    def __init__(self, send_queue_length: int, rdkafka_stats: dict, dropped: int) -> None:
        self.send_queue_length = send_queue_length
        self.rdkafka_stats = rdkafka_stats
        self.dropped = dropped

    def __repr__(self) -> str:
        return f"StatsInfo(send_queue_length={self.send_queue_length}, dropped={self.dropped})"


# per-send state: a list indexed by these (cheaper than an object on the DR path).
# _BUFFERS keeps the send's value buffer alive: librdkafka points into it (no copy) until
# the last delivery report of the send has been served.
_PAYLOADS, _TOPIC, _PART, _REMAINING, _DELIVERED, _FAILURES, _ON_DELIVERY, _BUFFERS = range(8)


def _bad_option(message: str) -> ConfigError:
    return ConfigError(message)


def _check_callback(value: Any, name: str) -> Any:
    if value is not None and not callable(value):
        raise _bad_option(f"{name} must be callable or None, got {type(value).__name__}")
    return value


def _check_number(value: Any, name: str, *, integer: bool = True) -> Any:
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds):
        kind = "an int" if integer else "a number"
        raise _bad_option(f"{name} must be {kind}, got {type(value).__name__} {value!r}")
    return value


def _check_dict(value: Any, name: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _bad_option(f"{name} must be a dict of librdkafka properties, got {type(value).__name__}")
    return dict(value)


class Producer:
    """kafka-native's Producer: ``Producer(broker, *, stats_callback=None, ...)``.

    ``broker`` is a comma-separated ``host:port`` list. ``driver_options`` and
    ``topic_options`` go verbatim to librdkafka's global and topic configuration; a
    value librdkafka refuses raises ``ValueError`` (``rdk.ConfigError``) with its text,
    here, at construction. Callbacks run on one background thread the producer owns;
    an exception in one is logged on the ``rdk`` logger.

    ``balancer`` picks the partition when ``send(..., partition=None)``:
    ``consistent_random`` (librdkafka's default), ``murmur2_random`` (Java client),
    ``fnv1a`` (sarama / kafka-go Hash), ``round_robin``, ``least_bytes`` (kafka-go).
    ``on_queue_full``: ``"drop"`` (kafka-native: enqueue what fits, ``enqueued < n``),
    ``"block"`` (wait for room until ``send(..., timeout=)``), ``"raise"``
    (``rdk.QueueFullError``).
    """

    def __init__(
        self,
        broker: str,
        *,
        stats_callback: Callable[[StatsInfo], Any] | None = None,
        delivery_report_callback: Callable[[DeliveryReportInfo], Any] | None = None,
        statistics_interval_ms: int = 5000,
        queue_buffering_max_messages: int = 500000,
        queue_buffering_max_ms: float = 250,
        driver_options: Mapping[str, Any] | None = None,
        topic_options: Mapping[str, Any] | None = None,
        balancer: str = "consistent_random",
        on_queue_full: str = "drop",
    ) -> None:
        try:
            check_broker(broker)
        except TypeError as e:
            raise _bad_option(str(e)) from None
        self._stats_cb = _check_callback(stats_callback, "stats_callback")
        self._dr_cb = _check_callback(delivery_report_callback, "delivery_report_callback")
        kw_props = {
            "statistics_interval_ms": ("statistics.interval.ms",
                                       _check_number(statistics_interval_ms, "statistics_interval_ms")),
            "queue_buffering_max_messages": ("queue.buffering.max.messages",
                                             _check_number(queue_buffering_max_messages,
                                                           "queue_buffering_max_messages")),
            "queue_buffering_max_ms": ("queue.buffering.max.ms",
                                       _check_number(queue_buffering_max_ms, "queue_buffering_max_ms",
                                                     integer=False)),
        }
        for kwname, (prop, value) in kw_props.items():
            _binding.validate_options({prop: value}, kwname)  # librdkafka's range checks and text
        driver = _check_dict(driver_options, "driver_options")
        topic = _check_dict(topic_options, "topic_options")
        if balancer not in BALANCERS:
            raise _bad_option(f"balancer must be one of {', '.join(map(repr, BALANCERS))}; got {balancer!r}")
        if on_queue_full not in QUEUE_FULL_POLICIES:
            raise _bad_option(f"on_queue_full must be one of {', '.join(map(repr, QUEUE_FULL_POLICIES))}; "
                              f"got {on_queue_full!r}")
        if str(driver.get("delivery.report.only.error", "false")).lower() in ("true", "1"):
            raise _bad_option("driver_options: delivery.report.only.error would break rdk's delivery "
                              "accounting; delivery_report_callback already reports failures only")
        self.balancer = balancer
        self.on_queue_full = on_queue_full

        props: dict[str, Any] = {
            "bootstrap.servers": broker,
            "statistics.interval.ms": statistics_interval_ms if stats_callback else 0,
            "queue.buffering.max.messages": queue_buffering_max_messages,
            "queue.buffering.max.ms": queue_buffering_max_ms,
            "allow.auto.create.topics": False,
            **driver,
        }
        _binding.validate_options(driver, "driver_options")
        # effective values once librdkafka has accepted them (driver_options win)
        self._max_messages = int(driver.get("queue.buffering.max.messages",
                                            queue_buffering_max_messages))
        topic_props = dict(topic)
        if balancer in _PARTITIONERS:
            topic_props = {"partitioner": _PARTITIONERS[balancer], **topic_props}
        _binding.validate_topic_options(topic_props)

        self._cond = threading.Condition(threading.Lock())
        self._sends: dict[int, list] = {}
        self._send_ids = count(1)
        self._outstanding = 0  # enqueued messages whose delivery report has not been served
        self._dr_gen = 0  # bumped each time delivery reports free room in the queue
        self._active = 0  # send() calls inside the C enqueue
        self._dropped = 0
        self._ready: list[list] = []  # settled sends whose on_delivery is still due
        # failures not yet reported: (message, error) items for delivery_report_callback and
        # counts per error code (for its rdkafka_errinfo, or one log line without it)
        self._report: list = []
        self._report_counts: dict[int, int] = {}
        self._closing = False
        self._closed = False
        self._fatal: KafkaError | None = None
        self._topics_ok: set[str] = set()
        self._balancers: dict[str, tuple[int, Any, float]] = {}  # topic -> (count, balancer, when)
        self._lookups: dict[str, float] = {}  # topic -> when to look its partition count up
        self._sticky_ms = int(float(driver.get("sticky.partitioning.linger.ms", 10)))
        self._sticky_messages = int(driver.get("batch.num.messages", 10000))

        self._client = _binding.Client(
            "producer", props, topic_props,
            on_deliveries=self._on_deliveries, on_stats=self._on_stats,
            on_error=self._on_error, on_poll=self._on_poll,
        )
        self._rk = self._client.rk
        self._event_thread = self._client._thread

    # -- sending ---------------------------------------------------------------
    def send(
        self,
        topic: str,
        partition: int | None,
        payloads: Sequence[Any],
        *,
        timeout: float | None = None,
        on_delivery: Callable[[int, list], Any] | None = None,
    ) -> SendResult:
        """Enqueue ``payloads`` for ``topic`` in one call into librdkafka.

        ``payloads``: a list of bytes, bytearray, memoryview, str (UTF-8), ``(key, value)``
        tuples or ``rdk.Message(value, key, headers, timestamp)``. Nothing is enqueued if
        any item has an unsupported type (TypeError naming its index). ``partition=None``
        lets the balancer choose. ``timeout`` bounds waiting for room (``on_queue_full=
        "block"``) and the first partition-count lookup of ``round_robin``/``least_bytes``.
        ``on_delivery(delivered_count, failures)`` runs once every message of this call is
        delivered or failed; ``failures`` is ``[(rdk.Message, KafkaError)]`` and includes
        messages that were never enqueued.
        """
        if self._closing:
            raise ClosedError("Producer is stopped: send() after stop() is not allowed")
        if self._fatal is not None:
            raise self._fatal
        if topic not in self._topics_ok:
            check_topic_name(topic)
        if partition is None:
            part = _UA
        elif isinstance(partition, int) and not isinstance(partition, bool):
            if partition < 0:
                raise ValueError(f"partition must be >= 0 or None, got {partition}")
            if partition > 0x7FFFFFFF:
                raise ValueError(f"partition must be <= 2147483647 (int32), got {partition}")
            part = partition
        else:
            raise TypeError(f"partition must be an int or None, got {type(partition).__name__}")
        if not isinstance(payloads, (list, tuple)):
            raise TypeError(f"payloads must be a list, got {type(payloads).__name__}")
        if timeout is not None:
            check_timeout(timeout)
        if on_delivery is not None and not callable(on_delivery):
            raise TypeError(f"on_delivery must be callable, got {type(on_delivery).__name__}")

        args = ffi.new("rdk_produce_args *")
        buffers = _layout(payloads, args)  # validates everything before anything is enqueued
        if topic not in self._topics_ok:
            self._topics_ok.add(topic)
        n = len(payloads)
        deadline = None if timeout is None else time.monotonic() + timeout

        balancer = ffi.NULL
        partition_cnt = 0
        if part == _UA:
            if self.balancer in _C_BALANCERS:
                partition_cnt, balancer = self._c_balancer(topic, 10.0 if timeout is None else timeout)
            elif args.keys == ffi.NULL and self._sticky_ms > 0:
                partition_cnt, balancer = self._sticky_balancer(topic)

        keep = payloads if (on_delivery is not None or self._dr_cb is not None) else None
        if keep is not None and isinstance(keep, list):
            keep = tuple(keep)  # the caller may reuse its list; failures must name the right message
        state = [keep, topic, None if part == _UA else part, n, 0, None, on_delivery, buffers]
        send_id = next(self._send_ids)
        args.rk = self._rk
        args.partition = part
        args.balancer = balancer
        args.partition_cnt = partition_cnt
        args.opaque_base = send_id << 32
        args.no_copy = 1  # state[_BUFFERS] outlives every message of the send

        with self._cond:
            if self._closing:
                raise ClosedError("Producer is stopped: send() after stop() is not allowed")
            args.rkt = self._client.topic(topic)
            self._sends[send_id] = state
            self._outstanding += n  # before the C call: reports may come back before it returns
            self._active += 1
        enqueued = 0
        refused: list[int] = []  # call indices refused for lack of room
        other: list[tuple[int, int]] = []  # (call index, error) refused for other reasons
        try:
            indices = None  # attempt position p is call message indices[p] (p on the first try)
            while n:
                gen = self._dr_gen
                errs = ffi.new("int32_t[]", args.n)
                args.errs = errs
                got = lib.rdk_produce_batch(args)
                enqueued += got
                if got == args.n:
                    break
                with self._cond:  # only what librdkafka took is outstanding
                    self._outstanding -= args.n - got
                codes = ffi.unpack(errs, args.n)
                at = (lambda p: p) if indices is None else indices.__getitem__
                failed = list(compress(range(args.n), codes))
                full = [at(p) for p in failed if codes[p] == _QUEUE_FULL]
                other += [(at(p), codes[p]) for p in failed if codes[p] != _QUEUE_FULL]
                if not full:
                    break
                refused = full  # until librdkafka takes them (also if the wait is interrupted)
                if self.on_queue_full != "block" or not self._wait_for_room(gen, len(full), deadline):
                    break
                refused = []
                indices = array("i", full)
                buffers.append(ffi.from_buffer("int32_t[]", indices))
                args.indices = buffers[-1]
                if args.value_lengths != ffi.NULL:  # random access needs offsets
                    lengths = ffi.unpack(args.value_lengths, n)
                    args.value_offsets = _offsets(lengths, buffers)
                    args.value_lengths = ffi.NULL
                args.n = len(indices)
                with self._cond:
                    self._outstanding += args.n
        finally:
            with self._cond:
                self._active -= 1
                if self._closing:
                    self._cond.notify_all()
            if refused or other or n == 0:
                self._settle_unsent(send_id, state, refused, other)
        queue_length = self._outstanding
        if refused and self.on_queue_full == "raise":
            raise QueueFullError(
                f"send to {topic!r}: the producer queue is full (queue_buffering_max_messages); "
                f"enqueued {enqueued} of {n}", enqueued, refused)
        return SendResult(enqueued, queue_length)

    def _c_balancer(self, topic: str, timeout: float) -> tuple[int, Any]:
        """round_robin / least_bytes: the topic's C balancer and partition count.

        The first send to a topic looks the count up (and raises UNKNOWN_TOPIC_OR_PART for
        a missing topic); later refreshes happen in the background.
        """
        entry = self._balancers.get(topic)
        if entry is None:
            cnt = self._client.partition_count(topic, timeout)
            entry = self._store_balancer(topic, cnt)
        elif time.monotonic() - entry[2] > _PARTITION_COUNT_TTL:
            self._want_lookup(topic)
        return entry[0], entry[1]

    def _sticky_balancer(self, topic: str) -> tuple[int, Any]:
        """Keyless messages under librdkafka's *_random partitioners: rdk's C sticky
        balancer once the partition count is known (looked up in the background; until
        then librdkafka partitions, with the same sticky semantics)."""
        entry = self._balancers.get(topic)
        if entry is None or time.monotonic() - entry[2] > _PARTITION_COUNT_TTL:
            self._want_lookup(topic)
            if entry is None:
                return 0, ffi.NULL
        return entry[0], entry[1]

    def _store_balancer(self, topic: str, cnt: int) -> tuple[int, Any, float]:
        entry = self._balancers.get(topic)
        if entry is not None:
            b = entry[1]
        else:
            kind = _C_BALANCERS.get(self.balancer, lib.RDK_BALANCE_STICKY)
            b = ffi.gc(lib.rdk_balancer_new(kind), lib.rdk_balancer_free)
            if b == ffi.NULL:
                raise MemoryError("rdk_balancer_new")
            if kind == lib.RDK_BALANCE_STICKY:
                lib.rdk_balancer_set_sticky(b, self._sticky_ms, self._sticky_messages)
        entry = self._balancers[topic] = (cnt, b, time.monotonic())
        return entry

    def _want_lookup(self, topic: str) -> None:
        if topic in self._lookups:
            return
        with self._cond:
            retry_at = self._lookups.get(topic)
            if retry_at is not None:
                return
            self._lookups[topic] = 0.0  # due now
        self._client.wake()

    def _run_lookups(self) -> None:
        """On the event thread: partition counts the balancers asked for."""
        now = time.monotonic()
        due = [t for t, at in list(self._lookups.items()) if at <= now]
        for topic in due:
            if self._closing:
                return
            try:
                self._store_balancer(topic, self._client.partition_count(topic, _LOOKUP_TIMEOUT))
            except Exception as e:  # noqa: BLE001 - an optimisation only: retry later
                log.debug("rdk.Producer: partition count of %r: %s", topic, e)
                self._lookups[topic] = time.monotonic() + _LOOKUP_RETRY
                continue
            self._lookups.pop(topic, None)

    def _wait_for_room(self, gen: int, want: int, deadline: float | None) -> bool:
        """Block until delivery reports free room for ``want`` messages (or some room)."""
        limit = self._max_messages
        need = min(want, max(1, limit // 4)) if limit > 0 else 1
        with self._cond:
            while not self._closing:
                if self._dr_gen != gen:
                    if limit <= 0 or limit - self._outstanding >= need:
                        return True
                    gen = self._dr_gen
                wait = 1.0
                if deadline is not None:
                    wait = min(wait, deadline - time.monotonic())
                    if wait <= 0:
                        return False
                self._cond.wait(wait)
        return False

    def _settle_unsent(self, send_id: int, state: list, refused: list[int],
                       other: list[tuple[int, int]]) -> None:
        """Account for messages librdkafka never took; the event thread reports them.

        All of them become failures of the send (on_delivery); those refused for a reason
        other than a full queue are delivery failures too (delivery_report_callback).
        """
        context = f"send to {state[_TOPIC]!r}: not enqueued"
        errors: dict[int, KafkaError] = {}
        for code in {_QUEUE_FULL} | {code for _, code in other}:
            errors[code] = KafkaError(code, context=context)
        kept = state[_PAYLOADS] is not None
        dropped = [(_message_at(state, i, None) if kept else None, errors[_QUEUE_FULL])
                   for i in refused]
        failed = [(_message_at(state, i, None) if kept else None, errors[code]) for i, code in other]
        with self._cond:
            k = len(dropped) + len(failed)
            self._dropped += len(dropped)
            state[_REMAINING] -= k
            if k and kept:
                state[_FAILURES] = (state[_FAILURES] or []) + failed + dropped
            if failed and (self._dr_cb is not None or state[_ON_DELIVERY] is None):
                self._add_report(failed if self._dr_cb is not None else [],
                                 Counter(code for _, code in other))
            if state[_REMAINING] == 0:
                self._sends.pop(send_id, None)
                self._ready.append(state)
            self._cond.notify_all()
        self._client.wake()

    def _add_report(self, items: list, counts: Mapping[int, int]) -> None:
        """Queue failures for the next report (caller holds the lock)."""
        self._report += items
        for code, cnt in counts.items():
            self._report_counts[code] = self._report_counts.get(code, 0) + cnt

    # -- event thread ----------------------------------------------------------
    def _on_deliveries(self, d: Any) -> None:
        done = []
        with self._cond:
            sends = self._sends
            n_runs = d.n_runs
            if n_runs:
                run_send, run_count = d.run_send, d.run_count
                settled = 0
                for i in range(n_runs):
                    c = run_count[i]
                    settled += c
                    sid = run_send[i]
                    st = sends.get(sid)
                    if st is None:
                        log.error("delivery report for unknown send %d (%d messages)", sid, c)
                        continue
                    st[_DELIVERED] += c
                    st[_REMAINING] -= c
                    if st[_REMAINING] == 0:
                        done.append(sends.pop(sid))
                self._outstanding -= settled
            if d.n_failed:
                self._fold_failures(d, d.n_failed, done)
            self._dr_gen += 1
            self._cond.notify_all()
        if self._dr_cb is not None and self._report_counts:
            self._flush_report()  # promptly; without a callback the log line waits for _on_poll
        for st in done:
            self._complete(st)

    def _fold_failures(self, d: Any, n_failed: int, done: list) -> None:
        """Record failures on their sends (caller holds the lock).

        Counting is done at C speed; messages are rebuilt only for sends whose caller
        will see them (on_delivery or delivery_report_callback).
        """
        sends = self._sends
        sids = ffi.unpack(d.failed_send, n_failed)
        codes = ffi.unpack(d.failed_err, n_failed)
        detailed: dict[int, list] = {}
        for sid, cnt in Counter(sids).items():
            st = sends.get(sid)
            if st is None:
                log.error("delivery report for unknown send %d (%d failed messages)", sid, cnt)
                continue
            if st[_PAYLOADS] is not None:
                detailed[sid] = st
            st[_REMAINING] -= cnt
            if st[_REMAINING] == 0:
                done.append(sends.pop(sid))
        self._outstanding -= n_failed
        if not detailed:  # nobody sees these messages one by one: count them for the log line
            self._add_report([], Counter(codes))
            return
        reporting = self._dr_cb is not None
        errors: dict[int, KafkaError] = {}
        items, counts = [], Counter()
        indices = ffi.unpack(d.failed_index, n_failed)
        partitions = ffi.unpack(d.failed_partition, n_failed)
        for sid, idx, code, part in zip(sids, indices, codes, partitions):
            st = detailed.get(sid)
            if st is None:  # a send without callbacks (only when reporting is off), or unknown
                if not reporting:
                    counts[code] += 1
                continue
            err = errors.get(code)
            if err is None:
                err = errors[code] = KafkaError(code)
            item = (_message_at(st, idx, part), err)
            if st[_FAILURES] is None:
                st[_FAILURES] = []
            st[_FAILURES].append(item)
            if reporting:
                items.append(item)
                counts[code] += 1
            elif st[_ON_DELIVERY] is None:
                counts[code] += 1
        self._add_report(items, counts)

    def _on_poll(self) -> None:
        if self._lookups:
            self._run_lookups()
        if self._report_counts:
            self._flush_report()
        if self._ready:
            with self._cond:
                ready, self._ready = self._ready, []
            for st in ready:
                self._complete(st)

    def _flush_report(self) -> None:
        """Pending failures -> delivery_report_callback (or one warning when there is none)."""
        with self._cond:
            items, self._report = self._report, []
            counts, self._report_counts = self._report_counts, {}
        if not counts:
            return
        errinfo = [
            {"errcode": code, "errname": _binding.err_name(code),
             "errstr": _binding.err_description(code), "count": cnt}
            for code, cnt in counts.items()
        ]
        if self._dr_cb is None:
            log.warning("rdk.Producer: %d message(s) not delivered: %s", sum(counts.values()),
                        ", ".join(f"{e['errname']} x{e['count']}" for e in errinfo))
            return
        self._dr_cb(DeliveryReportInfo(items, errinfo))

    def _complete(self, st: list) -> None:
        cb = st[_ON_DELIVERY]
        if cb is None:
            return
        try:
            cb(st[_DELIVERED], st[_FAILURES] or [])
        except Exception:
            log.exception("exception in on_delivery callback %r", getattr(cb, "__name__", cb))

    def _on_stats(self, stats: dict) -> None:
        if self._stats_cb is not None:
            self._stats_cb(StatsInfo(max(self._outstanding, 0), stats, self._dropped))

    def _on_error(self, error: KafkaError) -> None:
        if error.fatal:
            self._fatal = error
            log.error("rdk.Producer: fatal librdkafka error: %s", error)
        else:
            log.warning("rdk.Producer: librdkafka error: %s", error)

    # -- draining and lifetime -------------------------------------------------
    @property
    def send_queue_length(self) -> int:
        """Messages enqueued and not yet delivered nor failed."""
        self._check_open()
        return max(self._outstanding, 0)

    def flush(self, timeout: float = 15.0) -> int:
        """Wait up to ``timeout`` seconds for every enqueued message to settle.

        Returns how many are still undelivered (0: all settled; their callbacks ran).
        """
        self._check_open()
        check_timeout(timeout)
        self._not_on_event_thread("flush")
        return self._drain(time.monotonic() + timeout)

    def _drain(self, deadline: float) -> int:
        while True:
            with self._cond:
                if self._outstanding <= 0 and not self._ready and not self._report_counts:
                    return 0
            left = deadline - time.monotonic()
            if left <= 0:
                with self._cond:
                    return max(self._outstanding, 0)
            # linger is immediate while rd_kafka_flush runs; it returns once librdkafka
            # has handed every report to our event thread
            lib.rd_kafka_flush(self._rk, max(1, int(left * 1000)))
            with self._cond:
                self._cond.wait_for(
                    lambda: self._outstanding <= 0 and not self._ready and not self._report_counts,
                    max(0.0, min(0.2, deadline - time.monotonic())),
                )

    def partition_count(self, topic: str, timeout: float = 10.0) -> int:
        """Number of partitions of ``topic``; KafkaError UNKNOWN_TOPIC_OR_PART if it does not exist."""
        self._check_open()
        check_topic_name(topic)
        check_timeout(timeout)
        return self._client.partition_count(topic, timeout)

    def stop(self, timeout: float = 15.0) -> int:
        """Flush for up to ``timeout`` seconds, then close. Returns how many messages were
        left undelivered (0: all delivered).

        Never waits past ``timeout``: what is still queued shortly before the deadline is
        purged, so every message is reported (failed) rather than silently lost.
        Idempotent; any later use raises ``rdk.ClosedError``.
        """
        check_timeout(timeout)
        with self._cond:
            if self._closing:
                return 0
            self._not_on_event_thread("stop")
            self._closing = True
            self._cond.notify_all()
        start = time.monotonic()
        deadline = start + timeout
        purge_at = deadline - min(1.0, timeout * 0.25)  # time left to report what is purged
        close_at = deadline - min(0.1, timeout * 0.05)  # time left to free the handle
        with self._cond:  # blocked sends see _closing and return
            self._cond.wait_for(lambda: self._active == 0, max(0.0, purge_at - start))
        left = self._drain(purge_at)
        if left:
            lib.rd_kafka_purge(self._rk, _PURGE_ALL)
            self._drain(close_at)
        self._closed = True
        self._client.close(max(0.0, deadline - time.monotonic()))  # a stuck callback cannot hold us
        return left

    def close(self) -> None:
        """Same as ``stop()`` (drains for up to 15 s, then closes)."""
        self.stop()

    def _check_open(self) -> None:
        if self._closing:
            raise ClosedError("Producer is stopped: it cannot be used after stop()")

    def _not_on_event_thread(self, what: str) -> None:
        if threading.current_thread() is self._event_thread:
            raise RuntimeError(f"Producer.{what}() cannot be called from a producer callback: "
                               "callbacks run on the thread that serves delivery reports")

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "stopped" if self._closing else "open"
        return f"<rdk.Producer {state} balancer={self.balancer!r} on_queue_full={self.on_queue_full!r}>"


def _message_at(state: list, index: int, partition: int | None) -> Message:
    """Message ``index`` of a send as an rdk.Message with its topic and partition."""
    item = state[_PAYLOADS][index]
    topic = state[_TOPIC]
    if partition is None or partition < 0:
        partition = state[_PART]
    if isinstance(item, Message):
        return tuple.__new__(Message, (item[0], item[1], item[2], item[3], topic, partition, None))
    if isinstance(item, tuple):
        return tuple.__new__(Message, (item[1], item[0], None, None, topic, partition, None))
    return tuple.__new__(Message, (item, None, None, None, topic, partition, None))


# ---- payload layout ----------------------------------------------------------------


def _buffer(chunks: list, keep: list) -> Any:
    joined = b"".join(chunks)
    if not joined:
        return _EMPTY
    buf = ffi.from_buffer(joined)
    keep.append(buf)
    return buf


def _offsets(lengths: Any, keep: list) -> Any:
    buf = ffi.from_buffer("int64_t[]", array("q", list(accumulate(lengths, initial=0))))
    keep.append(buf)
    return buf


def _nulls(flags: list, keep: list) -> Any:
    buf = ffi.from_buffer("unsigned char[]", bytes(flags))
    keep.append(buf)
    return buf


def _layout(payloads: Sequence[Any], args: Any) -> list:
    """Validate every payload, then lay the list out in ``args`` (an ``rdk_produce_args``)
    for one rdk_produce_batch call. Returns the buffers ``args`` points into."""
    args.n = len(payloads)
    keep: list = []
    if not payloads:
        return keep
    try:  # the hot path, no per-message Python code: join accepts only bytes-like items
        joined = b"".join(payloads)
    except TypeError:
        joined = None
    if joined is not None:
        # lengths, not offsets: small lengths are cached ints (no allocation), struct packs
        # them at C speed, and C sums them up
        lengths = tuple(map(len, payloads))
        # len() is the byte size for bytes, bytearray and byte-format memoryviews; any
        # other buffer (array, 2-D view) makes the total differ: lay it out item by item
        if sum(lengths) == len(joined) and len(joined) < _MAX_BUFFER:
            values = ffi.from_buffer(joined) if joined else _EMPTY
            value_lengths = ffi.from_buffer("int32_t[]", struct.pack(f"{len(lengths)}i", *lengths))
            args.values = values
            args.value_lengths = value_lengths
            return [values, value_lengths]
        return _layout_general(payloads, args, keep)
    if set(map(type, payloads)) == {str}:
        if all(map(str.isascii, payloads)):
            args.values = _buffer(["".join(payloads).encode("ascii")], keep)
            args.value_offsets = _offsets(map(len, payloads), keep)
        else:
            try:
                encoded = list(map(str.encode, payloads))
            except UnicodeEncodeError:
                encoded = [_utf8(v, i, "payload") for i, v in enumerate(payloads)]
            args.values = _buffer(encoded, keep)
            args.value_offsets = _offsets(map(len, encoded), keep)
        return keep
    return _layout_general(payloads, args, keep)


def _utf8(text: str, index: int, what: str) -> bytes:
    try:
        return text.encode()
    except UnicodeEncodeError as e:
        raise ValueError(f"payloads[{index}]: {what} cannot be encoded as UTF-8: {e}") from None


def _as_bytes(value: Any, index: int, what: str, allow_none: bool) -> bytes | bytearray | None:
    t = type(value)
    if t is bytes or t is bytearray:
        return value
    if t is str:
        return _utf8(value, index, what)
    if value is None and allow_none:
        return None
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        return _utf8(str(value), index, what)
    raise TypeError(
        f"payloads[{index}]: {what} of type {type(value).__name__} is not supported "
        "(bytes, bytearray, memoryview or str" + (", or None)" if allow_none else ")"))


def _layout_general(payloads: Sequence[Any], args: Any, keep: list) -> list:
    n = len(payloads)
    values: list = [None] * n
    keys: list = [None] * n
    headers: list = [None] * n
    stamps: list = [0] * n
    any_key = any_headers = any_ts = False
    for i, p in enumerate(payloads):
        if isinstance(p, Message):
            values[i] = _as_bytes(p[0], i, "value", True)
            keys[i] = _as_bytes(p[1], i, "key", True)
            if p[2] is not None:
                headers[i] = _headers(p[2], i)
                any_headers = any_headers or bool(headers[i])
            if p[3] is not None:
                ts = p[3]
                if isinstance(ts, bool) or not isinstance(ts, int) or ts < 0:
                    raise TypeError(f"payloads[{i}]: timestamp must be an int of ms since the epoch "
                                    f"(>= 0) or None, got {ts!r}")
                stamps[i] = ts
                any_ts = True
        elif isinstance(p, tuple):
            if len(p) != 2:
                raise TypeError(f"payloads[{i}]: a tuple payload must be (key, value), "
                                f"got a tuple of {len(p)} items")
            keys[i] = _as_bytes(p[0], i, "key", True)
            values[i] = _as_bytes(p[1], i, "value", True)
        else:
            values[i] = _as_bytes(p, i, "payload", False)
        if keys[i] is not None:
            any_key = True
    args.values = _buffer([v for v in values if v], keep)
    args.value_offsets = _offsets((len(v) if v is not None else 0 for v in values), keep)
    if None in values:
        args.value_null = _nulls([v is None for v in values], keep)
    if any_key:
        args.keys = _buffer([k for k in keys if k], keep)
        args.key_offsets = _offsets((len(k) if k is not None else 0 for k in keys), keep)
        args.key_null = _nulls([k is None for k in keys], keep)
    if any_ts:
        stamps_buf = ffi.from_buffer("int64_t[]", array("q", stamps))
        keep.append(stamps_buf)
        args.timestamps = stamps_buf
    if any_headers:
        flat = [h for hs in headers if hs for h in hs]
        index = ffi.from_buffer("int32_t[]", array(
            "i", list(accumulate((len(hs) if hs else 0 for hs in headers), initial=0))))
        keep.append(index)
        args.header_index = index
        args.header_names = _buffer([name for name, _ in flat], keep)
        args.header_name_offsets = _offsets((len(name) for name, _ in flat), keep)
        args.header_values = _buffer([v for _, v in flat if v], keep)
        args.header_value_offsets = _offsets((len(v) if v is not None else 0 for _, v in flat), keep)
        args.header_value_null = _nulls([v is None for _, v in flat], keep)
    return keep


def _headers(hs: Any, index: int) -> list[tuple[bytes, bytes | None]]:
    items = hs.items() if isinstance(hs, Mapping) else hs
    if not isinstance(items, (list, tuple)) and not isinstance(hs, Mapping):
        raise TypeError(f"payloads[{index}]: headers must be a list of (name, value) pairs or a "
                        f"dict, got {type(hs).__name__}")
    out = []
    for item in items:
        if not isinstance(item, tuple) or len(item) != 2:
            raise TypeError(f"payloads[{index}]: each header must be a (name, value) pair, got {item!r}")
        name, value = item
        if isinstance(name, str):
            name = _utf8(name, index, "header name")
        elif not isinstance(name, (bytes, bytearray)):
            raise TypeError(f"payloads[{index}]: header name must be str or bytes, "
                            f"got {type(name).__name__}")
        if b"\0" in name:  # librdkafka keeps header names as C strings: a NUL would cut it
            raise ValueError(f"payloads[{index}]: header name {bytes(name)!r} contains a NUL byte")
        out.append((bytes(name), _as_bytes(value, index, "header value", True)))
    return out
