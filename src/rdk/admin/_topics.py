"""rdk.Admin's topic calls: create and delete topics, grow partitions, list topics and
count partitions."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from typing import Any

from .._binding import TopicMetadata
from .._binding import admin as _admin
from ..errors import KafkaError
from ..validate import check_int, check_options, check_topic_name
from ._base import _AdminBase, _check_timeout, check_mapping


class _TopicsAdmin(_AdminBase):
    """rdk.Admin's topic calls (its docs are rdk.Admin's)."""

    def create_topics(
        self,
        topics: Mapping[str, int] | Iterable[tuple],
        *,
        exist_ok: bool = False,
        timeout: float = 30.0,
    ) -> None:
        """Create topics from ``{name: partitions}`` or ``[(name, partitions, replication, config)]``.

        With ``exist_ok=True`` a topic that already exists is not an error.
        Raises KafkaError naming the first topic that failed, with librdkafka's text.

        Args:
            topics: ``{name: partitions}``, or ``(name, partitions, replication, config)``
                tuples (trailing items may be left out; None or -1: the broker's default;
                ``config``: a dict of topic properties).
            exist_ok: Whether a topic that already exists is fine.
            timeout: Seconds to wait for the brokers.

        Raises:
            rdk.KafkaError: The first topic that failed, the whole request, ``_TIMED_OUT``, or an
                authentication failure.
            TypeError: A malformed spec or argument.
            ValueError: An illegal topic name or count, a negative ``timeout``.
            rdk.ClosedError: After ``close()``.
        """
        timeout = _check_timeout(timeout)
        specs = _topic_specs(topics)
        _admin.create_topics(self._client, specs, exist_ok, timeout)

    def delete_topics(self, names: Iterable[str], *, timeout: float = 30.0) -> None:
        """Delete topics; KafkaError names the first that failed.

        Args:
            names: Topic names (a single str is one topic).
            timeout: Seconds to wait for the brokers.

        Raises:
            rdk.KafkaError: The first topic that failed (e.g. ``UNKNOWN_TOPIC_OR_PART``), the
                whole request, ``_TIMED_OUT``, or an authentication failure.
            TypeError: ``timeout`` is not a number.
            ValueError: ``timeout`` is negative or nan.
            rdk.ClosedError: After ``close()``.
        """
        timeout = _check_timeout(timeout)
        names = list(names) if not isinstance(names, str) else [names]
        for n in names:
            check_topic_name(n)
        _admin.delete_topics(self._client, names, timeout)

    def create_partitions(self, totals: Mapping[str, int], *, timeout: float = 30.0) -> None:
        """Grow topics to ``{name: new total partition count}`` (Kafka only adds partitions:
        a total at or below the current count is refused by the broker, INVALID_PARTITIONS).
        Raises KafkaError naming the first topic that failed, with librdkafka's text.

        Returns once Metadata answers show the new totals (within ``timeout``): the
        controller accepts the request before the brokers' metadata has the new partitions,
        and a ``partition_count()`` right after it could still see the old count. If they
        do not show within ``timeout`` (the request itself succeeded), a warning says so.

        Args:
            totals: ``{topic: new total partition count}``.
            timeout: Seconds to wait for the brokers.

        Raises:
            rdk.KafkaError: The first topic that failed (e.g. ``INVALID_PARTITIONS``), the whole
                request, ``_TIMED_OUT``, or an authentication failure.
            TypeError: ``totals`` is not a dict, a count is not an int.
            ValueError: An illegal topic name, a count below 1, a negative ``timeout``.
            rdk.ClosedError: After ``close()``.
        """
        timeout = _check_timeout(timeout)
        deadline = time.monotonic() + timeout
        check_mapping(totals, "create_partitions: expected {topic: new total partition count}")
        for name, total in totals.items():
            check_topic_name(name)
            check_int(total, f"topic {name!r}: new total partition count", maximum=2**31 - 1)
            if total < 1:
                raise ValueError(f"topic {name!r}: new total partition count must be a positive "
                                 f"int, got {total!r}")
        _admin.create_partitions(self._client, totals, timeout)
        self._wait_partition_counts(dict(totals), deadline)

    def _wait_partition_counts(self, totals: dict[str, int], deadline: float) -> None:
        """Ask for metadata until it shows ``totals`` (bounded by monotonic ``deadline``)."""
        while totals:
            for name in list(totals):
                try:
                    count = self._client.partition_count(name, max(0.1, deadline - time.monotonic()))
                except KafkaError:
                    continue
                if count >= totals[name]:
                    del totals[name]
            if not totals:
                return
            if time.monotonic() >= deadline:
                logger = self._logger or logging.getLogger("rdk")
                logger.warning("create_partitions: the brokers' metadata does not show %s yet; "
                               "the request succeeded", totals)
                return
            time.sleep(0.02)  # metadata propagation has no event to wait for

    def list_topics(self, timeout: float = 10.0) -> list[TopicMetadata]:
        """Every topic with its partitions' leader, replicas and ISR.

        Internal topics (names starting with ``__``) are left out.

        Args:
            timeout: Seconds to wait for the metadata.

        Returns:
            [rdk.admin.TopicMetadata][] of each topic, sorted by name.

        Raises:
            rdk.KafkaError: No metadata within ``timeout``, or an authentication failure.
            TypeError: ``timeout`` is not a number.
            ValueError: ``timeout`` is negative or nan.
            rdk.ClosedError: After ``close()``.
        """
        timeout = _check_timeout(timeout)
        return sorted(
            (t for t in self._client.metadata(None, timeout) if not t.name.startswith("__")),
            key=lambda t: t.name,
        )

    def partition_count(self, topic: str, timeout: float = 10.0) -> int:
        """Number of partitions of ``topic``.

        Args:
            topic: The topic name.
            timeout: Seconds to wait for the metadata.

        Returns:
            The topic's partition count.

        Raises:
            rdk.KafkaError: ``UNKNOWN_TOPIC_OR_PART``, or no metadata within ``timeout``.
            TypeError: ``topic`` is not a str, or ``timeout`` not a number.
            ValueError: An illegal topic name, a negative ``timeout``.
            rdk.ClosedError: After ``close()``.
        """
        check_topic_name(topic)
        timeout = _check_timeout(timeout)
        return self._client.partition_count(topic, timeout)


def _topic_specs(topics: Mapping[str, int] | Iterable[tuple]) -> list[tuple[str, int, int, dict]]:
    """(name, partitions, replication, config) of each topic to create, checked (-1: the
    broker's default)."""
    items: list[tuple[Any, Any, Any, Any]]
    if isinstance(topics, Mapping):
        items = [(name, parts, -1, {}) for name, parts in topics.items()]
    else:
        items = []
        for spec in topics:
            if not isinstance(spec, (tuple, list)) or not 1 <= len(spec) <= 4:
                raise TypeError("create_topics: expected (name, partitions, replication, config), "
                                f"got {spec!r}")
            name, parts, repl, config = tuple(spec) + (None,) * (4 - len(spec))
            items.append((name, -1 if parts is None else parts, -1 if repl is None else repl, config))
    out = []
    for name, parts, repl, config in items:
        check_topic_name(name)
        for what, n in (("partitions", parts), ("replication", repl)):
            check_int(n, f"topic {name!r}: {what}", maximum=2**31 - 1)
            if n < 1 and n != -1:
                raise ValueError(f"topic {name!r}: {what} must be a positive int, got {n!r}")
        out.append((name, parts, repl, check_options(config, f"topic {name!r}: config")))
    return out

