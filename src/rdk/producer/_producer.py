"""rdk.Producer's API and lifecycle: construction, send(), flush(), stop().

``send()`` reads as the hot path it is: check the arguments, lay the payloads out
(``_layout``), one ``rdk_produce_batch`` call, the result. Per-call accounting lives in
``_accounting``, partition choice in ``_balancers``.
"""

from __future__ import annotations

import logging
import threading
import time
from array import array
from collections.abc import Callable, Mapping, Sequence
from itertools import compress
from typing import Any

from .. import _binding, _exit
from .._binding import ffi, lib
from ..errors import ClosedError, ConfigError, KafkaError, QueueFullError, TransactionError
from ..transactions import (
    GroupMetadata,
    check_offsets,
    check_partitions_exist,
    new_partition_list,
    raise_for_error,
)
from ..validate import (
    check_bootstrap_rule,
    check_broker,
    check_callable,
    check_choice,
    check_int,
    check_number,
    check_options,
    check_timeout,
    check_topic_name,
)
from ._accounting import ERR_QUEUE_FULL, Ledger, SendState, run_user
from ._balancers import BALANCERS, Balancers, topic_properties
from ._layout import layout, restrict
from ._types import DeliveryReportInfo, FlushResult, SendResult, StatsInfo

log = logging.getLogger("rdk")

QUEUE_FULL_POLICIES = ("drop", "block", "raise")

_UA = lib.RD_KAFKA_PARTITION_UA
_AUTH_PROBE = 0.5  # seconds: a drain notices an authentication failure this soon
_PURGE_ALL = lib.RD_KAFKA_PURGE_F_QUEUE | lib.RD_KAFKA_PURGE_F_INFLIGHT | lib.RD_KAFKA_PURGE_F_NON_BLOCKING
_INT32_MAX = 0x7FFFFFFF
_ERR_STATE = _binding.ERROR_CODES["_STATE"]
_ERR_NOT_CONFIGURED = _binding.ERROR_CODES["_NOT_CONFIGURED"]
# the longest wait librdkafka takes (int32 milliseconds, ~24.8 days): larger timeouts,
# inf included, wait this long, i.e. without a practical limit
MAX_TIMEOUT = _INT32_MAX / 1000


def _check_transactional_id(value: Any, driver: Mapping[str, Any]) -> str | None:
    """``transactional_id``, or ``driver_options["transactional.id"]``; never two different."""
    if value is not None:
        if not isinstance(value, str):
            raise TypeError(f"transactional_id must be str or None, got {type(value).__name__}")
        if not value:
            raise ValueError("transactional_id must be a non-empty str")
    given = driver.get("transactional.id")
    if value is not None and given is not None and str(given) != value:
        raise ConfigError(f"driver_options['transactional.id']={given!r} disagrees with "
                          f"transactional_id={value!r}: give it once")
    if value is None and given is not None and str(given):
        return str(given)
    return value


def _timeout(value: Any, name: str = "timeout") -> float:
    """A timeout in seconds (>= 0, not nan); beyond MAX_TIMEOUT (inf too) means MAX_TIMEOUT."""
    return min(check_timeout(value, name), MAX_TIMEOUT)


class Producer:
    """kafka-native's Producer: ``Producer(broker, *, stats_callback=None, ...)``.

    ``broker`` is a comma-separated ``host:port`` list. ``driver_options`` and
    ``topic_options`` go verbatim to librdkafka's global and topic configuration; a
    value librdkafka refuses raises ``ValueError`` (``rdk.ConfigError``) with its text,
    here, at construction; an argument of the wrong type raises ``TypeError``. Callbacks
    run on one background thread the producer owns; an exception in one is logged on the
    ``rdk`` logger.

    ``balancer`` picks the partition when ``send(..., partition=None)``:
    ``consistent_random`` (librdkafka's default), ``murmur2_random`` (Java client),
    ``fnv1a`` (sarama / kafka-go Hash), ``round_robin``, ``least_bytes`` (kafka-go).
    ``on_queue_full``: ``"drop"`` (kafka-native: enqueue what fits, ``enqueued < n``),
    ``"block"`` (wait for room until ``send(..., timeout=)``), ``"raise"``
    (``rdk.QueueFullError``).

    ``broker`` names the cluster: ``driver_options`` may repeat it as ``bootstrap.servers``
    (or ``metadata.broker.list``) only with the same value (ConfigError otherwise). Timeouts
    are seconds; ``inf`` or anything above ``MAX_TIMEOUT`` (~24.8 days, librdkafka's int32
    milliseconds) waits that long, ``nan`` or a negative one raises ValueError.

    A producer belongs to the process that created it: after ``os.fork()`` the child's
    ``send()``/``flush()`` raise ``rdk.ClosedError`` at once and its ``stop()``/``close()``
    return at once without touching the parent's librdkafka handle.

    ``transactional_id`` (librdkafka's ``transactional.id``) makes it a transactional
    producer (idempotence is then enabled implicitly): call ``init_transactions()`` once,
    then ``begin_transaction()``, ``send()``..., ``send_offsets_to_transaction()`` and
    ``commit_transaction()`` or ``abort_transaction()``. Their failures raise
    ``rdk.TransactionError`` classified by librdkafka (``fatal``, ``txn_requires_abort``,
    ``retriable``).

    ``oauth_cb(sasl.oauthbearer.config) -> (token, expiry_epoch_seconds[, principal[,
    extensions]])`` supplies SASL/OAUTHBEARER tokens (confluent-kafka's name and shape); it
    runs on the producer's event thread, and when it raises librdkafka is told the token
    failed (``_AUTHENTICATION``, asked again 10 s later).

    **Authentication failures** (wrong password, unknown user, refused token, a broker
    certificate that does not verify: ``_AUTHENTICATION``, ``_SSL``) are logged as ERROR at
    once; while one is current and no broker answers, ``send()`` raises its KafkaError
    (nothing enqueued), ``flush()`` raises it as soon as it is seen (the messages stay
    queued: librdkafka retries them until ``message.timeout.ms``), and ``stop()`` does not
    wait: it fails the queued messages at once and logs why.

    Args:
        broker: Comma-separated ``host:port`` list (an optional ``scheme://`` prefix is allowed).
        stats_callback: Called with a [rdk.producer.StatsInfo][] every
            ``statistics_interval_ms``. None: no stats are requested.
        delivery_report_callback: Called with a [rdk.producer.DeliveryReportInfo][] listing
            the failures since the previous report. None: failures reach only ``on_delivery``.
        statistics_interval_ms: Milliseconds between stats (librdkafka's
            ``statistics.interval.ms``; used only with ``stats_callback``).
        queue_buffering_max_messages: Most messages queued in librdkafka and not yet
            delivered (``queue.buffering.max.messages``); beyond it ``on_queue_full`` applies.
        queue_buffering_max_ms: Milliseconds librdkafka waits to fill a batch
            (``queue.buffering.max.ms``, the linger).
        driver_options: librdkafka global properties, verbatim (they win over the arguments).
        topic_options: librdkafka topic properties, verbatim.
        balancer: Partitioner for ``partition=None``: one of ``consistent_random``,
            ``murmur2_random``, ``fnv1a``, ``round_robin``, ``least_bytes``.
        on_queue_full: ``"drop"``, ``"block"`` or ``"raise"`` (see above).
        transactional_id: Makes the producer transactional; None: not transactional
            (unless ``driver_options`` set ``transactional.id``).
        oauth_cb: SASL/OAUTHBEARER token source (see above); None: librdkafka's own.

    Raises:
        TypeError: An argument of the wrong type (the message names it).
        ValueError: A value out of range or not one of the choices, an empty
            ``transactional_id``.
        rdk.ConfigError: A property librdkafka refuses, ``bootstrap.servers`` or
            ``transactional.id`` in ``driver_options`` disagreeing with the argument,
            ``delivery.report.only.error=true``, or ``oauth_cb`` with an OAUTHBEARER method
            that excludes it.
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
        transactional_id: str | None = None,
        oauth_cb: Callable[[str], Any] | None = None,
    ) -> None:
        check_broker(broker)
        self._stats_cb = check_callable(stats_callback, "stats_callback")
        dr_cb = check_callable(delivery_report_callback, "delivery_report_callback")
        check_int(statistics_interval_ms, "statistics_interval_ms", maximum=_INT32_MAX)
        check_int(queue_buffering_max_messages, "queue_buffering_max_messages", maximum=_INT32_MAX)
        check_number(queue_buffering_max_ms, "queue_buffering_max_ms")
        for kwname, prop, value in (
            ("statistics_interval_ms", "statistics.interval.ms", statistics_interval_ms),
            ("queue_buffering_max_messages", "queue.buffering.max.messages", queue_buffering_max_messages),
            ("queue_buffering_max_ms", "queue.buffering.max.ms", queue_buffering_max_ms),
        ):
            _binding.validate_options({prop: value}, kwname)  # librdkafka's range checks and text
        driver = check_options(driver_options, "driver_options")
        topic = check_options(topic_options, "topic_options")
        check_bootstrap_rule(broker, driver)
        self.transactional_id = _check_transactional_id(transactional_id, driver)
        """The ``transactional.id`` in use (from the argument or ``driver_options``), or None."""
        if transactional_id is not None:
            driver["transactional.id"] = transactional_id
        self.balancer = check_choice(balancer, "balancer", BALANCERS)
        self.on_queue_full = check_choice(on_queue_full, "on_queue_full", QUEUE_FULL_POLICIES)
        if str(driver.get("delivery.report.only.error", "false")).lower() in ("true", "1"):
            raise ConfigError("driver_options: delivery.report.only.error would break rdk's delivery "
                              "accounting; delivery_report_callback already reports failures only")
        props: dict[str, Any] = {
            "bootstrap.servers": broker,
            "statistics.interval.ms": statistics_interval_ms if stats_callback else 0,
            "queue.buffering.max.messages": queue_buffering_max_messages,
            "queue.buffering.max.ms": queue_buffering_max_ms,
            "allow.auto.create.topics": False,
            **driver,
        }
        _binding.validate_options(driver, "driver_options")
        topic_props = topic_properties(balancer, topic)
        _binding.validate_topic_options(topic_props)
        # effective value once librdkafka has accepted it (driver_options win)
        self._max_messages = int(driver.get("queue.buffering.max.messages", queue_buffering_max_messages))

        self._cond = threading.Condition(threading.Lock())  # guards the ledger and the flags below
        self._ledger = Ledger(self._cond, dr_cb)
        self._balancers = Balancers(balancer, driver)
        self._active = 0  # send() calls inside the C enqueue
        self._closing = False
        self._fatal: KafkaError | None = None
        self._topics_ok: set[str] = set()
        self._txn_calls = 0  # transaction calls inside librdkafka (guarded by _cond)
        self._txn_partitions: dict[str, int] = {}  # topic -> partitions seen in metadata
        self._close_deferred = False  # stop() left the handle to the last of them
        self._client = _binding.Client(
            "producer", props, topic_props,
            on_deliveries=self._on_deliveries, on_stats=self._on_stats,
            on_error=self._on_error, on_poll=self._on_poll, oauth_cb=oauth_cb,
        )
        self._rk = self._client.rk
        _exit.register(self, _exit.PRODUCERS)

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
        messages that were never enqueued. An explicit ``partition`` beyond the topic's
        partition count, when the producer already knows that count, raises ValueError.

        From a producer callback (``on_delivery``, ``delivery_report_callback``,
        ``stats_callback``: the thread that frees room) ``on_queue_full="block"`` cannot wait:
        a send that finds the queue full there raises ``QueueFullError`` as under ``"raise"``.
        In a process forked after the producer was created it raises ``rdk.ClosedError``.

        Args:
            topic: The topic name.
            partition: The partition (>= 0), or None to let the ``balancer`` choose.
            payloads: A list or tuple of messages, of the types above.
            timeout: Seconds to wait for room or a partition count; None waits without limit.
            on_delivery: ``on_delivery(delivered_count, failures)``, once per call; None: none.

        Returns:
            A [rdk.SendResult][]: ``enqueued`` (fewer than ``len(payloads)`` when
            ``on_queue_full="drop"`` or ``"block"`` ran out of room) and
            ``send_queue_length``.

        Raises:
            TypeError: A bad ``partition``, ``payloads`` not a list/tuple, an item of an
                unsupported type (naming its index), a non-callable ``on_delivery``.
            ValueError: An illegal topic name, a negative or nonexistent ``partition``, a
                negative ``timeout``.
            rdk.QueueFullError: The queue is full under ``on_queue_full="raise"`` (or
                ``"block"`` from a producer callback).
            rdk.TransactionError: A transactional producer with no open transaction.
            rdk.KafkaError: A fatal librdkafka error, or a current authentication failure.
            rdk.ClosedError: After ``stop()``, or in a forked child.
        """
        if self._closing:
            raise ClosedError("Producer is stopped: send() after stop() is not allowed")
        self._client.ensure_open()  # a forked child: before any lock or the parent's handle
        if self._fatal is not None:
            raise self._fatal
        part = self._check_send(topic, partition, payloads, timeout, on_delivery)
        failure = self._auth_failed(f"send to {topic!r}")
        if failure is not None:
            raise failure
        if timeout is not None:
            timeout = min(timeout, MAX_TIMEOUT)
        if part != _UA:
            self._check_partition(topic, part)
        args = ffi.new("rdk_produce_args *")
        buffers = layout(payloads, args)  # validates every payload before anything is enqueued
        self._topics_ok.add(topic)
        n = len(payloads)
        deadline = None if timeout is None else time.monotonic() + timeout
        if part == _UA:
            args.partition_cnt, args.balancer = self._balancers.choose(
                self._client, topic, args.keys != ffi.NULL, timeout)
        state = self._ledger.new_send(payloads, topic, None if part == _UA else part, on_delivery, buffers)
        args.rk = self._rk
        args.partition = part
        args.no_copy = 1  # state.buffers outlives every message of the send
        with self._cond:
            if self._closing:
                raise ClosedError("Producer is stopped: send() after stop() is not allowed")
            args.rkt = self._client.topic(topic)
            send_id = self._ledger.register(state)
            self._active += 1
        args.opaque_base = send_id << 32
        try:
            enqueued = self._enqueue(send_id, state, args, deadline) if n else 0
        finally:
            with self._cond:
                self._active -= 1
                if self._closing:
                    self._cond.notify_all()
        if n == 0:  # nothing to wait for: its on_delivery(0, []) is due now
            self._ledger.settle_unsent(send_id, state, [], [])
            self._client.wake()
        return SendResult(enqueued, self._ledger.outstanding)

    def _check_send(self, topic: Any, partition: Any, payloads: Any, timeout: Any,
                    on_delivery: Any) -> int:
        """send()'s arguments, all checked before anything is laid out; returns the C partition."""
        if topic not in self._topics_ok:
            check_topic_name(topic)
        if partition is None:
            part = _UA
        elif isinstance(partition, int) and not isinstance(partition, bool):
            if partition < 0:
                raise ValueError(f"partition must be >= 0 or None, got {partition}")
            if partition > _INT32_MAX:
                raise ValueError(f"partition must be <= 2147483647 (int32), got {partition}")
            part = partition
        else:
            raise TypeError(f"partition must be an int or None, got {type(partition).__name__}")
        if not isinstance(payloads, (list, tuple)):
            raise TypeError(f"payloads must be a list, got {type(payloads).__name__}")
        if timeout is not None:
            check_timeout(timeout)
        if on_delivery is not None:
            check_callable(on_delivery, "on_delivery")
        return part

    def _check_partition(self, topic: str, part: int) -> None:
        """An explicit partition against the partition count the producer already knows."""
        count = self._balancers.known_count(topic)
        if count is not None and part >= count:
            raise ValueError(f"partition {part} of topic {topic!r} does not exist: the topic has "
                             f"{count} partition(s), 0..{count - 1}")

    def _enqueue(self, send_id: int, state: SendState, args: Any, deadline: float | None) -> int:
        """The C call: enqueue what ``args`` lays out; returns how many librdkafka took.

        What it refuses becomes failures of the send. Under ``on_queue_full="block"`` the
        messages refused for lack of room are retried, in call order, once delivery reports
        free room (until ``deadline``); under ``"raise"`` they raise ``QueueFullError``, and so
        do they under ``"block"`` on the event thread, which is the thread that frees room.
        """
        total = args.n
        block = self.on_queue_full == "block"
        cannot_wait = block and self._client.on_event_thread()
        # call_index[p]: the position in the call of this attempt's p-th message
        call_index: Sequence[int] = range(total)
        enqueued = 0
        queue_full: list[int] = []  # call positions refused for lack of room, until taken
        refused: list[tuple[int, int]] = []  # (call position, error code) refused for another reason
        try:
            while True:
                gen = self._ledger.dr_gen
                errs = ffi.new("int32_t[]", args.n)
                args.errs = errs
                got = lib.rdk_produce_batch(args)
                enqueued += got
                if got == args.n:
                    return enqueued
                self._ledger.adjust_outstanding(got - args.n)  # only what librdkafka took is outstanding
                codes = ffi.unpack(errs, args.n)
                failed = list(compress(range(args.n), codes))
                queue_full = [call_index[p] for p in failed if codes[p] == ERR_QUEUE_FULL]
                refused += [(call_index[p], codes[p]) for p in failed if codes[p] != ERR_QUEUE_FULL]
                if not (queue_full and block and not cannot_wait
                        and self._wait_for_room(gen, len(queue_full), deadline)):
                    break
                call_index = array("i", queue_full)  # the retry enqueues exactly these, in order
                queue_full = []
                restrict(args, call_index, total, state.buffers)
                self._ledger.adjust_outstanding(args.n)
        finally:  # also when the wait is interrupted: every message is accounted for
            if queue_full or refused:
                self._ledger.settle_unsent(send_id, state, queue_full, refused)
                self._client.wake()
        if self.transactional_id is not None and any(code == _ERR_STATE for _, code in refused):
            raise TransactionError(
                _ERR_STATE, "librdkafka refused the messages: no transaction is open (call "
                "begin_transaction() first; after a failed transaction, abort_transaction()); "
                f"enqueued {enqueued} of {total}, the others are reported as failed",
                context=f"send to {state.topic!r}")
        if queue_full and cannot_wait:
            raise QueueFullError(
                f"send to {state.topic!r} from a producer callback: the producer queue is full and "
                "on_queue_full='block' cannot wait here (this callback runs on the thread that "
                f"frees room); enqueued {enqueued} of {total}", enqueued, queue_full)
        if queue_full and self.on_queue_full == "raise":
            raise QueueFullError(
                f"send to {state.topic!r}: the producer queue is full (queue_buffering_max_messages); "
                f"enqueued {enqueued} of {total}", enqueued, queue_full)
        return enqueued

    def _wait_for_room(self, gen: int, want: int, deadline: float | None) -> bool:
        """Block until delivery reports free room for ``want`` messages (or some room)."""
        limit = self._max_messages
        need = min(want, max(1, limit // 4)) if limit > 0 else 1
        ledger = self._ledger
        with self._cond:
            while not self._closing:
                if ledger.dr_gen != gen:
                    if limit <= 0 or limit - ledger.outstanding >= need:
                        return True
                    gen = ledger.dr_gen
                wait = 1.0
                if deadline is not None:
                    wait = min(wait, deadline - time.monotonic())
                    if wait <= 0:
                        return False
                self._cond.wait(wait)
        return False

    # -- transactions ------------------------------------------------------------
    def init_transactions(self, timeout: float = 30.0) -> None:
        """Register ``transactional_id`` with the transaction coordinator (once, first).

        Fences any older producer with the same id and completes or aborts the transaction
        it left open. Blocks up to ``timeout`` seconds (not from a producer callback);
        a retriable TransactionError (e.g. ``_TIMED_OUT``) may be retried.

        Args:
            timeout: Seconds to wait for the coordinator.

        Raises:
            rdk.TransactionError: librdkafka's failure, classified (``fatal``,
                ``txn_requires_abort``, ``retriable``); ``_NOT_CONFIGURED`` without
                ``transactional_id``.
            RuntimeError: Called from a producer callback.
            rdk.ClosedError: After ``stop()``, or in a forked child.
            TypeError: ``timeout`` is not a number.
            ValueError: ``timeout`` is negative or nan.
        """
        ms = self._txn_timeout_ms(timeout, "init_transactions")
        self._txn_call("init_transactions", lib.rd_kafka_init_transactions, ms)

    def begin_transaction(self) -> None:
        """Start a transaction: ``send()`` is allowed until it is committed or aborted.

        Does not block. TransactionError ``_STATE`` if one is already open or
        ``init_transactions()`` was not called.

        Raises:
            rdk.TransactionError: ``_STATE`` (see above), ``_NOT_CONFIGURED`` without
                ``transactional_id``, or another librdkafka failure.
            rdk.ClosedError: After ``stop()``, or in a forked child.
        """
        self._txn_check("begin_transaction")
        self._txn_call("begin_transaction", lib.rd_kafka_begin_transaction)

    def send_offsets_to_transaction(self, offsets: Mapping[tuple[str, int], int],
                                    group_metadata: GroupMetadata, timeout: float = 30.0) -> None:
        """Commit consumer offsets as part of the open transaction.

        ``offsets``: ``{(topic, partition): next_offset}``, the offset of the next message
        to consume (last processed + 1) per input partition. ``group_metadata``: from
        ``Consumer.group_metadata()`` of the group-mode consumer that read them. The
        offsets become the group's committed offsets only if the transaction commits.
        Blocks up to ``timeout`` seconds (not from a producer callback).

        A (topic, partition) the cluster does not have raises TransactionError
        ``UNKNOWN_TOPIC_OR_PART`` naming it at once, leaving the transaction usable (checked
        against one metadata request for topics this producer has not seen yet; librdkafka
        alone would retry until ``timeout`` and then fail the transaction).

        Args:
            offsets: ``{(topic, partition): next_offset}``.
            group_metadata: The consumer group's [rdk.GroupMetadata][].
            timeout: Seconds to wait for the group coordinator.

        Raises:
            rdk.TransactionError: librdkafka's failure, classified (``fatal``,
                ``txn_requires_abort``, ``retriable``), ``UNKNOWN_TOPIC_OR_PART`` (see above),
                or ``_NOT_CONFIGURED`` without ``transactional_id``.
            TypeError: ``offsets`` is not such a dict, or ``group_metadata`` is not an
                rdk.GroupMetadata.
            ValueError: A partition or offset out of range, a negative ``timeout``.
            RuntimeError: Called from a producer callback.
            rdk.ClosedError: After ``stop()``, or in a forked child.
        """
        start = time.monotonic()
        checked = check_offsets(offsets)
        if not isinstance(group_metadata, GroupMetadata):
            raise TypeError("group_metadata must be an rdk.GroupMetadata (from "
                            f"Consumer.group_metadata()), got {type(group_metadata).__name__}")
        ms = self._txn_timeout_ms(timeout, "send_offsets_to_transaction")
        parts = new_partition_list(checked)
        with group_metadata._lock:  # close() of the metadata waits for this call
            cgmd = group_metadata._pointer()
            check_partitions_exist(self._client, checked, self._txn_partitions, start + ms / 1000)
            ms = max(0, ms - int((time.monotonic() - start) * 1000))
            self._txn_call("send_offsets_to_transaction",
                           lib.rd_kafka_send_offsets_to_transaction, parts, cgmd, ms)

    def commit_transaction(self, timeout: float = 60.0) -> None:
        """Flush the transaction's messages and commit it.

        Blocks up to ``timeout`` seconds (not from a producer callback): delivery reports
        keep arriving on the producer's callback thread meanwhile. On a TransactionError
        with ``txn_requires_abort`` call ``abort_transaction()``; with ``retriable`` (e.g.
        ``_TIMED_OUT``) call ``commit_transaction()`` again; ``fatal``: stop the producer.

        Args:
            timeout: Seconds to wait for the flush and the commit.

        Raises:
            rdk.TransactionError: librdkafka's failure, classified (``fatal``,
                ``txn_requires_abort``, ``retriable``); ``_NOT_CONFIGURED`` without
                ``transactional_id``.
            RuntimeError: Called from a producer callback.
            rdk.ClosedError: After ``stop()``, or in a forked child.
            TypeError: ``timeout`` is not a number.
            ValueError: ``timeout`` is negative or nan.
        """
        ms = self._txn_timeout_ms(timeout, "commit_transaction")
        self._txn_call("commit_transaction", lib.rd_kafka_commit_transaction, ms)

    def abort_transaction(self, timeout: float = 60.0) -> None:
        """Abort the open transaction.

        Messages still queued or in flight are purged: each is reported as failed
        (``on_delivery``/``delivery_report_callback`` with ``_PURGE_QUEUE``/
        ``_PURGE_INFLIGHT``), none is dropped silently; messages already written stay in the
        log marked aborted (``read_committed`` consumers skip them). Blocks up to
        ``timeout`` seconds (not from a producer callback); a retriable error may be retried.

        Args:
            timeout: Seconds to wait for the abort.

        Raises:
            rdk.TransactionError: librdkafka's failure, classified (``fatal``,
                ``txn_requires_abort``, ``retriable``); ``_NOT_CONFIGURED`` without
                ``transactional_id``.
            RuntimeError: Called from a producer callback.
            rdk.ClosedError: After ``stop()``, or in a forked child.
            TypeError: ``timeout`` is not a number.
            ValueError: ``timeout`` is negative or nan.
        """
        ms = self._txn_timeout_ms(timeout, "abort_transaction")
        self._txn_call("abort_transaction", lib.rd_kafka_abort_transaction, ms)

    def _txn_check(self, what: str) -> None:
        self._check_open()
        if self.transactional_id is None:
            raise TransactionError(
                _ERR_NOT_CONFIGURED, f"{what}() needs a transactional producer: "
                "create it with Producer(..., transactional_id=...)", context=what)

    def _txn_timeout_ms(self, timeout: Any, what: str) -> int:
        self._txn_check(what)
        ms = int(_timeout(timeout) * 1000)
        self._not_on_event_thread(what)  # it waits for reports that thread delivers
        return min(ms, _INT32_MAX)

    def _txn_call(self, what: str, fn: Callable[..., Any], *args: Any) -> None:
        """One librdkafka transaction call; stop() never frees the handle under it."""
        with self._cond:
            if self._closing:
                raise ClosedError(f"Producer is stopped: {what}() after stop() is not allowed")
            on_event_thread = self._client.on_event_thread()
            if not on_event_thread:
                self._txn_calls += 1
        if on_event_thread:  # begin_transaction() from a callback: the Client frees the
            raise_for_error(fn(self._rk, *args), what)  # handle only after the callback
            return
        try:
            raise_for_error(fn(self._rk, *args), what)
        finally:
            with self._cond:
                self._txn_calls -= 1
                close_now = self._close_deferred and self._txn_calls == 0
                self._cond.notify_all()
            if close_now:
                self._client.close()

    # -- event thread (handlers of the Client) ---------------------------------
    def _on_deliveries(self, d: Any) -> None:
        if d.n_runs:  # delivered: the broker took our credentials
            self._client.auth_failure = None
        self._ledger.on_deliveries(d)

    def _on_poll(self) -> None:
        client = self.__dict__.get("_client")
        if client is None:  # the event thread polls before __init__ has stored the client
            return
        self._balancers.run_lookups(client)
        self._ledger.serve_pending()

    def _on_stats(self, stats: dict) -> None:
        if self._stats_cb is not None:
            run_user(self._stats_cb, "stats_callback",
                     StatsInfo(self._ledger.queue_length, stats, self._ledger.dropped))

    def _on_error(self, error: KafkaError) -> None:
        if error.fatal:
            self._fatal = error
            log.error("rdk.Producer: fatal librdkafka error: %s", error)
        elif _binding.is_auth_failure(error):
            log.error("rdk.Producer: authentication failed, nothing is delivered until it "
                      "succeeds: %s", error)
        else:
            log.warning("rdk.Producer: librdkafka error: %s", error)

    # -- draining and lifetime -------------------------------------------------
    @property
    def send_queue_length(self) -> int:
        """Messages enqueued and not yet delivered nor failed (ClosedError after ``stop()``)."""
        self._check_open()
        return self._ledger.queue_length

    def flush(self, timeout: float = 15.0) -> FlushResult:
        """Wait up to ``timeout`` seconds for every enqueued message to settle.

        Returns a ``FlushResult``, an int of the messages **not delivered**: ``.queued``
        still awaiting their report at the deadline plus ``.failed`` since the previous
        ``flush()``/``stop()`` (failed reports, refusals by librdkafka). ``0`` means every
        message was delivered and every ``on_delivery``/``delivery_report_callback`` of them
        has returned. Raises RuntimeError from a producer callback, ClosedError after
        ``stop()`` or in a forked child.

        Args:
            timeout: Seconds to wait.

        Returns:
            A [rdk.FlushResult][]: the messages not delivered (0: all delivered).

        Raises:
            RuntimeError: Called from a producer callback.
            rdk.ClosedError: After ``stop()``, or in a forked child.
            rdk.KafkaError: A current authentication failure (the messages stay queued).
            TypeError: ``timeout`` is not a number.
            ValueError: ``timeout`` is negative or nan.
        """
        self._check_open()
        timeout = _timeout(timeout)
        self._not_on_event_thread("flush")
        queued = self._drain(time.monotonic() + timeout, stop_on_auth=True)
        failure = self._auth_failed("flush()") if queued else None
        if failure is not None:
            raise KafkaError(failure.code, f"{failure.description}; {queued} message(s) still "
                             "queued (librdkafka retries them until message.timeout.ms; stop() "
                             "fails them at once)", context=failure.context)
        with self._cond:
            return FlushResult(queued, self._ledger.take_failed())

    def _auth_failed(self, what: str) -> KafkaError | None:
        """The KafkaError of a current authentication failure: one librdkafka reported and
        no broker answers now (a short metadata request, made only after such a report)."""
        if self._client.auth_failure is None:
            return None
        try:
            self._client.metadata(None, _AUTH_PROBE)
        except KafkaError as e:
            if _binding.is_auth_failure(e):
                return KafkaError(e.code, e.description, context=what)
        return None

    def _drain(self, deadline: float, stop_on_auth: bool = False) -> int:
        settled = self._ledger.settled
        while True:
            with self._cond:
                if settled():
                    return 0
            left = deadline - time.monotonic()
            if left <= 0 or (stop_on_auth and self._client.auth_failure is not None
                             and self._auth_failed("flush") is not None):
                with self._cond:
                    return self._ledger.queue_length
            # linger is immediate while rd_kafka_flush runs; it returns once librdkafka
            # has handed every report to our event thread (short calls: an authentication
            # failure is noticed within _AUTH_PROBE seconds)
            lib.rd_kafka_flush(self._rk, max(1, int(min(left, _AUTH_PROBE) * 1000)))
            with self._cond:
                self._cond.wait_for(settled, max(0.0, min(0.2, deadline - time.monotonic())))

    def partition_count(self, topic: str, timeout: float = 10.0) -> int:
        """Number of partitions of ``topic``; KafkaError UNKNOWN_TOPIC_OR_PART if it does not exist.

        Args:
            topic: The topic name.
            timeout: Seconds to wait for the metadata.

        Returns:
            The topic's partition count.

        Raises:
            rdk.KafkaError: ``UNKNOWN_TOPIC_OR_PART``, or no metadata within ``timeout``.
            rdk.ClosedError: After ``stop()``, or in a forked child.
            TypeError: ``topic`` is not a str, or ``timeout`` not a number.
            ValueError: An illegal topic name, a negative ``timeout``.
        """
        self._check_open()
        check_topic_name(topic)
        return self._client.partition_count(topic, _timeout(timeout))

    def stop(self, timeout: float = 15.0) -> FlushResult:
        """Flush for up to ``timeout`` seconds, then close. Returns a ``FlushResult``: the
        messages not delivered (``.queued`` + ``.failed``, as ``flush()``; 0: all delivered).

        Never waits past ``timeout``: what is still queued shortly before the deadline is
        purged, so every message is reported (failed, counted in ``.failed``) rather than
        silently lost. Idempotent (a second call returns 0); any later use raises
        ``rdk.ClosedError``. In a process forked after the producer was created it returns
        0 at once: the child never sent anything, and the parent's handle is not touched.

        Args:
            timeout: Seconds to wait in all.

        Returns:
            A [rdk.FlushResult][]: the messages not delivered.

        Raises:
            RuntimeError: Called from a producer callback.
            TypeError: ``timeout`` is not a number.
            ValueError: ``timeout`` is negative or nan.
        """
        timeout = _timeout(timeout)
        if self._client.in_child:  # no lock: the parent's threads may have held it at fork
            self._closing = True
            self._client.close()
            return FlushResult()
        with self._cond:
            if self._closing:
                return FlushResult()
            self._not_on_event_thread("stop")
            self._closing = True
            self._cond.notify_all()
        self._balancers.close()
        start = time.monotonic()
        deadline = start + timeout
        purge_at = deadline - min(1.0, timeout * 0.25)  # time left to report what is purged
        close_at = deadline - min(0.1, timeout * 0.05)  # time left to free the handle
        with self._cond:  # blocked sends see _closing and return
            self._cond.wait_for(lambda: self._active == 0, max(0.0, purge_at - start))
        left = self._drain(purge_at, stop_on_auth=True)
        if left:
            failure = self._auth_failed("stop()")
            lib.rd_kafka_purge(self._rk, _PURGE_ALL)  # purged messages are reported as failed
            if failure is not None:
                log.error("rdk.Producer.stop(): %d message(s) not delivered: %s", left, failure)
            left = self._drain(close_at)
        with self._cond:  # a transaction call still inside librdkafka closes it on return
            self._close_deferred = self._txn_calls > 0
            if self._close_deferred:
                log.warning("rdk.Producer.stop(): a transaction call is still running; the "
                            "librdkafka handle is freed when it returns")
        if not self._close_deferred:
            self._client.close(max(0.0, deadline - time.monotonic()))  # a stuck callback cannot hold us
        _exit.unregister(self, _exit.PRODUCERS)
        with self._cond:
            return FlushResult(left, self._ledger.take_failed())

    def _close_at_exit(self, timeout: float) -> None:
        """The interpreter exits with this producer open: ``stop(timeout)``, and say what was
        not delivered (see rdk._exit)."""
        if self._closing:
            return
        result = self.stop(timeout)
        if result:
            log.warning("rdk.Producer at interpreter exit: %d message(s) not delivered (%d still "
                        "queued at the %.1f s exit deadline, %d failed); call flush() or stop() "
                        "before the program ends", int(result), result.queued, timeout,
                        result.failed)

    def close(self) -> None:
        """Same as ``stop()`` (drains for up to 15 s, then closes)."""
        self.stop()

    def _check_open(self) -> None:
        if self._closing:
            raise ClosedError("Producer is stopped: it cannot be used after stop()")
        self._client.ensure_open()  # a forked child: ClosedError naming the fork

    def _not_on_event_thread(self, what: str) -> None:
        if self._client.on_event_thread():
            raise RuntimeError(f"Producer.{what}() cannot be called from a producer callback: "
                               "callbacks run on the thread that serves delivery reports")

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "stopped" if self._closing else "open"
        return f"<rdk.Producer {state} balancer={self.balancer!r} on_queue_full={self.on_queue_full!r}>"

