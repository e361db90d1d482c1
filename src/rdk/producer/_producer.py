"""rdk.Producer's API: construction, send(), flush(), stop() and the transaction calls.

The class reads as the API it is; the work is its collaborators': ``_config`` checks the
constructor's arguments, ``_sending`` normalises send()'s arguments and makes the one
``rdk_produce_batch`` call, ``_transactions`` runs the transaction calls, ``_lifetime``
drains, flushes and stops, ``_events`` handles what the event thread delivers. Per-call
accounting lives in ``_accounting``, partition choice in ``_balancers``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..transactions import GroupMetadata
from ..validate import check_topic_name
from ._config import MAX_TIMEOUT, QUEUE_FULL_POLICIES, ProducerConfig, timeout_seconds
from ._core import ProducerCore
from ._types import DeliveryReportInfo, FlushResult, SendResult, StatsInfo

__all__ = ["MAX_TIMEOUT", "QUEUE_FULL_POLICIES", "Producer"]


class Producer(ProducerCore):
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
        value_serializer: An ``rdk.schema_registry`` serializer: ``send`` then takes records
            (a record, ``(key, record)`` or ``rdk.Message(record, key)``), encoded in one call
            per send before anything is enqueued. None: payloads are bytes/str.
        key_serializer: The same for keys. None: keys are bytes/str.

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
        value_serializer: Any = None,
        key_serializer: Any = None,
    ) -> None:
        self._encoder = None
        if value_serializer is not None or key_serializer is not None:
            from ._serialize import PayloadEncoder

            self._encoder = PayloadEncoder(value_serializer, key_serializer)
        cfg = ProducerConfig.check(broker, stats_callback, delivery_report_callback, statistics_interval_ms,
                                   queue_buffering_max_messages, queue_buffering_max_ms, driver_options,
                                   topic_options, balancer, on_queue_full, transactional_id)
        self.transactional_id = cfg.transactional_id
        """The ``transactional.id`` in use (from the argument or ``driver_options``), or None."""
        self.balancer = cfg.balancer
        self.on_queue_full = cfg.on_queue_full
        self._start(cfg, oauth_cb)

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
        if self._encoder is not None:
            payloads = self._encoder.encode(topic, payloads)
        part, timeout = self._sender.check(topic, partition, payloads, timeout, on_delivery)
        return self._sender.produce(topic, part, payloads, timeout, on_delivery)

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
            RuntimeError: Called from a producer callback (it would wait for itself).
            rdk.ClosedError: After ``stop()``, or in a forked child.
            TypeError: ``timeout`` is not a number.
            ValueError: ``timeout`` is negative or nan.
        """
        self._txn.init(timeout)

    def begin_transaction(self) -> None:
        """Start a transaction: ``send()`` is allowed until it is committed or aborted.

        Does not block. TransactionError ``_STATE`` if one is already open or
        ``init_transactions()`` was not called.

        Raises:
            rdk.TransactionError: ``_STATE`` (see above), ``_NOT_CONFIGURED`` without
                ``transactional_id``, or another librdkafka failure.
            rdk.ClosedError: After ``stop()``, or in a forked child.
        """
        self._txn.begin()

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
            RuntimeError: Called from a producer callback (it waits for the coordinator).
            rdk.ClosedError: After ``stop()``, or in a forked child.
        """
        self._txn.send_offsets(offsets, group_metadata, timeout)

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
            RuntimeError: Called from a producer callback (the commit flushes first).
            rdk.ClosedError: After ``stop()``, or in a forked child.
            TypeError: ``timeout`` is not a number.
            ValueError: ``timeout`` is negative or nan.
        """
        self._txn.commit(timeout)

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
            RuntimeError: Called from a producer callback (the abort purges and waits).
            rdk.ClosedError: After ``stop()``, or in a forked child.
            TypeError: ``timeout`` is not a number.
            ValueError: ``timeout`` is negative or nan.
        """
        self._txn.abort(timeout)

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
        timeout = timeout_seconds(timeout)
        self._not_on_event_thread("flush")
        return self._closer.flush(timeout)

    def partition_count(self, topic: str, timeout: float = 10.0) -> int:
        """Number of partitions of ``topic``; KafkaError UNKNOWN_TOPIC_OR_PART if it does not exist.

        Args:
            topic: The topic to look up, on the producer's own connection.
            timeout: Seconds to wait for the brokers' metadata answer.

        Returns:
            How many partitions ``topic`` has now.

        Raises:
            rdk.KafkaError: ``UNKNOWN_TOPIC_OR_PART``, or no metadata within ``timeout``.
            rdk.ClosedError: After ``stop()``, or in a forked child.
            TypeError: ``topic`` is not a str, or ``timeout`` not a number.
            ValueError: An illegal topic name, a negative ``timeout``.
        """
        self._check_open()
        check_topic_name(topic)
        return self._client.partition_count(topic, timeout_seconds(timeout))

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
        return self._closer.stop(timeout_seconds(timeout))

    def close(self) -> None:
        """Same as ``stop()`` (drains for up to 15 s, then closes)."""
        self.stop()

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "stopped" if self._closing else "open"
        return f"<rdk.Producer {state} balancer={self.balancer!r} on_queue_full={self.on_queue_full!r}>"

