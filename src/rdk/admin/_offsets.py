"""rdk.Admin's offset lookups: watermarks (true and as ListOffsets answers them) and
offsets for timestamps."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from .. import _binding
from .._binding import partitions as _partitions
from ..validate import check_int, check_topic_name
from ._base import _AdminBase, _check_timeout, check_mapping


class _OffsetsAdmin(_AdminBase):
    """rdk.Admin's offset lookups (its docs are rdk.Admin's)."""

    def watermarks(self, topic: str, partition: int, timeout: float = 10.0) -> tuple[int, int]:
        """(low, high) watermarks; the high is right on every broker.

        ListOffsets(latest) is not trusted alone: Tansu answers the last record batch's
        base offset + 1. A short fetch from just below that answer returns the Fetch
        response's high watermark, which is right everywhere. The low is the broker's
        ListOffsets(earliest) answer, which Tansu 0.6 gives by the order it stored the
        batches, not by offset (docs/limitations.md).

        Args:
            topic: The topic name.
            partition: The partition number, >= 0.
            timeout: Seconds to wait for the answers.

        Returns:
            ``(low, high)``: the first offset and the offset after the last message.

        Raises:
            rdk.KafkaError: No answer within ``timeout``, an unknown topic or partition.
            TypeError: An argument of the wrong type.
            ValueError: An illegal topic name, a negative partition or ``timeout``.
            rdk.ClosedError: After ``close()``.
        """
        check_topic_name(topic)
        timeout = _check_timeout(timeout)
        check_int(partition, "partition", minimum=0, maximum=0x7FFFFFFF)
        return self._true_watermarks(topic, [partition], timeout)[partition]

    def topic_watermarks(self, topic: str, partitions: Iterable[int] | None = None,
                         timeout: float = 10.0) -> dict[int, tuple[int, int]]:
        """``watermarks`` of many partitions at once: two ListOffsets lookups and one short
        fetch for them all (one request per leader each), so the cost does not grow with a
        round trip per partition.

        Args:
            topic: The topic name.
            partitions: Partition numbers, each >= 0. None: every partition of the topic.
            timeout: Seconds to wait for the answers, all of them.

        Returns:
            ``{partition: (low, high)}``, in the order asked.

        Raises:
            rdk.KafkaError: An unknown topic or partition; the answers took over ``timeout``.
            TypeError: ``partitions`` is not an iterable of int (a str is refused).
            ValueError: A partition below 0 or past 2**31 - 1, a bad topic name or timeout.
            rdk.ClosedError: The Admin was closed.
        """
        check_topic_name(topic)
        timeout = _check_timeout(timeout)
        if partitions is None:
            self._client.ensure_open()
            parts = list(range(self._client.partition_count(topic, timeout)))
        else:
            if isinstance(partitions, (str, bytes)) or not isinstance(partitions, Iterable):
                raise TypeError(f"topic_watermarks: partitions must be an iterable of int, "
                                f"got {partitions!r}")
            parts = list(dict.fromkeys(partitions))
            for p in parts:
                check_int(p, "partition", minimum=0, maximum=0x7FFFFFFF)
        return self._true_watermarks(topic, parts, timeout)

    def _true_watermarks(self, topic: str, parts: list[int],
                         timeout: float) -> dict[int, tuple[int, int]]:
        self._client.ensure_open()
        if not parts:
            return {}
        if self._fetch_client is None:
            self._fetch_client = _binding.Client(
                "consumer", {"fetch.wait.max.ms": 10, **self._props,
                             "enable.partition.eof": True, "auto.offset.reset": "earliest"},
                oauth_cb=self._oauth_cb, logger=self._logger)
        marks = _partitions.true_watermarks(self._client, topic, parts, timeout,
                                            fetch_client=self._fetch_client)
        return {p: marks[p] for p in parts}

    def query_watermarks(self, topic: str, partition: int, timeout: float = 10.0) -> tuple[int, int]:
        """(low, high) from the broker's ListOffsets answers (earliest, latest), with no
        check by fetch: the smaller of the two is low, so a broker that answers them out of
        order (Tansu 0.6: docs/limitations.md) is not visible here. A retriable answer is
        asked again until ``timeout``.

        Args:
            topic: The topic name.
            partition: The partition number, >= 0.
            timeout: Seconds to wait for the answer.

        Returns:
            ``(low, high)``, the broker's two answers, the smaller first.

        Raises:
            rdk.KafkaError: No ListOffsets answer within ``timeout``, an unknown topic or
                partition.
            TypeError: An argument of the wrong type.
            ValueError: An illegal topic name, a negative partition or ``timeout``.
            rdk.ClosedError: After ``close()``.
        """
        check_topic_name(topic)
        check_int(partition, "partition", minimum=0, maximum=0x7FFFFFFF)
        timeout = _check_timeout(timeout)
        self._client.ensure_open()
        return _partitions.query_watermarks(self._client, topic, partition, timeout)

    def offsets_for_times(
        self, topic: str, timestamps: Mapping[int, int], timeout: float = 10.0
    ) -> dict[int, int]:
        """For each partition, the earliest offset whose timestamp is >= the given ms (-1: none).

        Args:
            topic: The topic name.
            timestamps: ``{partition: milliseconds since the epoch}``.
            timeout: Seconds to wait for the answer.

        Returns:
            ``{partition: offset}``; -1 where no message is that recent.

        Raises:
            rdk.KafkaError: The lookup failed (e.g. ``_TIMED_OUT``, an unknown partition).
            TypeError: ``timestamps`` is not a dict of int to int.
            ValueError: An illegal topic name, a negative partition, timestamp or ``timeout``.
            rdk.ClosedError: After ``close()``.
        """
        check_topic_name(topic)
        timeout = _check_timeout(timeout)
        check_mapping(timestamps, "offsets_for_times: timestamps must be a dict of partition to ms")
        for p, ms in timestamps.items():
            if not isinstance(p, int) or not isinstance(ms, int):
                raise TypeError("offsets_for_times: partition and timestamp must be int, "
                                f"got {p!r}: {ms!r}")
            check_int(p, "offsets_for_times: partition", minimum=0, maximum=2**31 - 1)
            check_int(ms, f"offsets_for_times: timestamp of partition {p} (ms)", minimum=0,
                      maximum=2**63 - 1)
        found = _partitions.offsets_for_times(
            self._rk, ((topic, p, ms) for p, ms in timestamps.items()), int(timeout * 1000),
            f"offsets_for_times on {topic!r}", "offsets_for_times")
        return {p: offset for (_, p), offset in found.items()}
