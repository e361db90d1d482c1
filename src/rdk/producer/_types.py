"""The plain values the Producer hands to its caller: send()'s result and callback arguments."""

from __future__ import annotations

from typing import NamedTuple


class SendResult(NamedTuple):
    """What ``send()`` returns (kafka-native's result fields)."""

    enqueued: int
    """How many of the call's messages were enqueued."""
    send_queue_length: int
    """Messages of this producer awaiting delivery right after the call."""


class FlushResult(int):
    """What ``flush()`` and ``stop()`` return: the messages **not delivered**, an ``int``.

    Its value is ``queued + failed``, so ``== 0`` means every message was delivered.
    ``queued``: enqueued messages still awaiting a delivery report at return; ``failed``:
    messages that failed (delivery reports with an error, purged at ``stop()``, or refused by
    librdkafka for another reason than a full queue) since the previous ``flush()``/``stop()``
    returned. Messages ``on_queue_full`` refused are not counted here: ``send()``'s
    ``enqueued`` and ``StatsInfo.dropped`` report those.

    Args:
        queued: Enqueued messages still awaiting a delivery report.
        failed: Messages that failed since the previous ``flush()``/``stop()`` returned.
    """

    queued: int
    """Enqueued messages still awaiting a delivery report at return."""
    failed: int
    """Messages that failed since the previous ``flush()``/``stop()`` returned."""

    def __new__(cls, queued: int = 0, failed: int = 0) -> FlushResult:
        obj = super().__new__(cls, queued + failed)
        obj.queued = queued
        obj.failed = failed
        return obj

    def __repr__(self) -> str:
        return f"FlushResult(queued={self.queued}, failed={self.failed})"


class Delivery(NamedTuple):
    """Accounting of one send() once every message is settled (what rdk.aio's send returns)."""

    delivered: int
    """How many of the call's messages were delivered."""
    failures: list
    """``[(rdk.Message, KafkaError)]``: every message of the call that was not delivered."""


class DeliveryReportInfo:
    """Argument of ``delivery_report_callback``: failures since the last report.

    ``errors`` is ``[(rdk.Message, KafkaError)]``; ``rdkafka_errinfo`` summarises them as
    ``[{"errcode", "errname", "errstr", "count"}]``, one entry per error code.

    Args:
        errors: ``[(rdk.Message, KafkaError)]``, the failed messages.
        rdkafka_errinfo: One ``{"errcode", "errname", "errstr", "count"}`` dict per error code.
    """

    __slots__ = ("errors", "rdkafka_errinfo")

    def __init__(self, errors: list, rdkafka_errinfo: list[dict]) -> None:
        self.errors = errors
        """``[(rdk.Message, KafkaError)]``: the messages that failed since the last report."""
        self.rdkafka_errinfo = rdkafka_errinfo
        """``[{"errcode", "errname", "errstr", "count"}]``, one entry per error code."""

    def __repr__(self) -> str:
        return f"DeliveryReportInfo(errors={len(self.errors)}, rdkafka_errinfo={self.rdkafka_errinfo!r})"


class StatsInfo:
    """Argument of ``stats_callback``, every ``statistics_interval_ms``.

    ``send_queue_length``: messages enqueued and not yet delivered nor failed;
    ``rdkafka_stats``: librdkafka's statistics, parsed; ``dropped``: messages
    ``on_queue_full`` has refused since the producer started.

    Args:
        send_queue_length: Messages enqueued and not yet delivered nor failed.
        rdkafka_stats: librdkafka's statistics JSON, parsed into a dict.
        dropped: Messages ``on_queue_full`` has refused since the producer started.
    """

    __slots__ = ("dropped", "rdkafka_stats", "send_queue_length")

    def __init__(self, send_queue_length: int, rdkafka_stats: dict, dropped: int) -> None:
        self.send_queue_length = send_queue_length
        """Messages enqueued and not yet delivered nor failed."""
        self.rdkafka_stats = rdkafka_stats
        """librdkafka's statistics JSON, parsed into a dict."""
        self.dropped = dropped
        """Messages ``on_queue_full`` has refused since the producer started."""

    def __repr__(self) -> str:
        return f"StatsInfo(send_queue_length={self.send_queue_length}, dropped={self.dropped})"
