"""rdk.Admin: topic admin, metadata, offsets lookup and group admin (group configs, deleting
and resetting share groups) over librdkafka's admin APIs."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, NamedTuple

from . import _binding, _partitions
from ._binding import ERROR_CODES, PartitionMetadata, TopicMetadata, check, ffi, lib
from .errors import KafkaError
from .validate import (
    check_broker,
    check_int,
    check_logger,
    check_options,
    check_topic_name,
    check_wait,
)

__all__ = ["Admin", "PartitionMetadata", "TopicMetadata"]


class _TopicOp(NamedTuple):
    """One of librdkafka's topic admin requests and how to read its result."""

    name: str  # for error messages
    array_type: str  # cdata type of the request objects' array
    request: Callable[..., None]  # rd_kafka_CreateTopics / DeleteTopics / CreatePartitions
    result: Callable[[Any], Any]  # event -> *_result_t
    topics: Callable[[Any, Any], Any]  # (*_result_t, size_t *) -> rd_kafka_topic_result_t **


_CREATE = _TopicOp("create_topics", "rd_kafka_NewTopic_t *[]", lib.rd_kafka_CreateTopics,
                   lib.rd_kafka_event_CreateTopics_result, lib.rd_kafka_CreateTopics_result_topics)
_DELETE = _TopicOp("delete_topics", "rd_kafka_DeleteTopic_t *[]", lib.rd_kafka_DeleteTopics,
                   lib.rd_kafka_event_DeleteTopics_result, lib.rd_kafka_DeleteTopics_result_topics)
_PARTITIONS = _TopicOp("create_partitions", "rd_kafka_NewPartitions_t *[]", lib.rd_kafka_CreatePartitions,
                       lib.rd_kafka_event_CreatePartitions_result,
                       lib.rd_kafka_CreatePartitions_result_topics)


_AUTH_CHECK_MS = 500  # admin waits look for an authentication failure this often

# librdkafka takes timeouts as int milliseconds (and rdk waits 2 s longer for the answer)
MAX_TIMEOUT = 2_000_000.0


def _check_timeout(value: Any, name: str = "timeout") -> float:
    """Seconds >= 0 (ValueError naming it otherwise); ``inf`` or anything beyond
    MAX_TIMEOUT (about 23 days) waits MAX_TIMEOUT, i.e. without a practical limit."""
    return check_wait(value, name, MAX_TIMEOUT)


class Admin:
    """Topic admin, metadata and group admin: ``Admin(broker, driver_options=None, *,
    oauth_cb=None, logger=None)``.

    librdkafka's log lines go to ``logger`` (default: the ``rdk`` logger), as for Producer and
    Consumer.

    ``oauth_cb(sasl.oauthbearer.config) -> (token, expiry_epoch_seconds[, principal[,
    extensions]])`` supplies SASL/OAUTHBEARER tokens (confluent-kafka's name and shape; it runs
    on rdk's event thread). A call that waits for a broker raises the KafkaError of an
    authentication or TLS failure (``_AUTHENTICATION``, ``_SSL``...) as soon as librdkafka
    reports one, naming the broker, instead of waiting out its timeout.
    Usable as a context manager; ``close()`` is idempotent.

    Args:
        broker: Comma-separated ``host:port`` list (an optional ``scheme://`` prefix is allowed).
        driver_options: librdkafka global properties, verbatim.
        oauth_cb: SASL/OAUTHBEARER token source (see above); None: librdkafka's own.
        logger: Logger for librdkafka's log lines. None: the ``rdk`` logger.

    Raises:
        TypeError: An argument of the wrong type (the message names it).
        ValueError: A malformed ``broker``.
        rdk.ConfigError: A property librdkafka refuses.
    """

    def __init__(self, broker: str, driver_options: Mapping[str, Any] | None = None, *,
                 oauth_cb: Callable[[str], Any] | None = None,
                 logger: logging.Logger | None = None) -> None:
        check_broker(broker)
        # a metadata lookup must not create the topic it asks about
        self._props = {"bootstrap.servers": broker, "allow.auto.create.topics": False,
                       **check_options(driver_options, "driver_options")}
        self._oauth_cb = oauth_cb
        self._logger = check_logger(logger)
        self._client = _binding.Client("producer", self._props, oauth_cb=oauth_cb, logger=logger)
        self._fetch_client: _binding.Client | None = None

    # -- topics ------------------------------------------------------------------
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
        errstr = ffi.new("char[]", 512)
        new_topics = []
        try:
            for name, partitions, replication, config in specs:
                nt = lib.rd_kafka_NewTopic_new(name.encode(), partitions, replication, errstr, 512)
                if nt == ffi.NULL:
                    raise ValueError(f"topic {name!r}: {ffi.string(errstr).decode()}")
                new_topics.append(nt)
                for key, value in config.items():
                    check(lib.rd_kafka_NewTopic_set_config(
                        nt, str(key).encode(), _binding.conf_value(key, value).encode()),
                        f"topic {name!r} config {key!r}")
            ok = {ERROR_CODES["TOPIC_ALREADY_EXISTS"]} if exist_ok else set()
            self._topic_request(_CREATE, new_topics, ok, timeout, [x[0] for x in specs])
        finally:
            for nt in new_topics:
                lib.rd_kafka_NewTopic_destroy(nt)

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
        dels = [lib.rd_kafka_DeleteTopic_new(n.encode()) for n in names]
        try:
            self._topic_request(_DELETE, dels, set(), timeout, names)
        finally:
            for d in dels:
                lib.rd_kafka_DeleteTopic_destroy(d)

    def create_partitions(self, totals: Mapping[str, int], *, timeout: float = 30.0) -> None:
        """Grow topics to ``{name: new total partition count}`` (Kafka only adds partitions:
        a total at or below the current count is refused by the broker, INVALID_PARTITIONS).
        Raises KafkaError naming the first topic that failed, with librdkafka's text.

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
        if not isinstance(totals, Mapping):
            raise TypeError("create_partitions: expected {topic: new total partition count}, "
                            f"got {type(totals).__name__}")
        for name, total in totals.items():
            check_topic_name(name)
            check_int(total, f"topic {name!r}: new total partition count", maximum=2**31 - 1)
            if total < 1:
                raise ValueError(f"topic {name!r}: new total partition count must be a positive "
                                 f"int, got {total!r}")
        errstr = ffi.new("char[]", 512)
        requests = []
        try:
            for name, total in totals.items():
                np = lib.rd_kafka_NewPartitions_new(name.encode(), total, errstr, 512)
                if np == ffi.NULL:
                    raise ValueError(f"topic {name!r}: {ffi.string(errstr).decode()}")
                requests.append(np)
            if requests:
                self._topic_request(_PARTITIONS, requests, set(), timeout, list(totals))
        finally:
            for np in requests:
                lib.rd_kafka_NewPartitions_destroy(np)

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

    # -- offsets -----------------------------------------------------------------
    def watermarks(self, topic: str, partition: int, timeout: float = 10.0) -> tuple[int, int]:
        """(low, high) watermarks, correct on every broker.

        ListOffsets(latest) is not trusted alone: Tansu answers the last record batch's
        base offset + 1. A short fetch from just below that answer returns the Fetch
        response's high watermark, which is right everywhere.

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
        self._client.ensure_open()
        if self._fetch_client is None:
            self._fetch_client = _binding.Client(
                "consumer", {"fetch.wait.max.ms": 10, **self._props,
                             "enable.partition.eof": True, "auto.offset.reset": "earliest"},
                oauth_cb=self._oauth_cb, logger=self._logger)
        marks = _partitions.true_watermarks(self._client, topic, [partition], timeout,
                                            fetch_client=self._fetch_client)
        return marks[partition]

    def query_watermarks(self, topic: str, partition: int, timeout: float = 10.0) -> tuple[int, int]:
        """(low, high) exactly as the broker's ListOffsets answers them.

        Args:
            topic: The topic name.
            partition: The partition number, >= 0.
            timeout: Seconds to wait for the answer.

        Returns:
            ``(low, high)`` as the broker reports them.

        Raises:
            rdk.KafkaError: No answer within ``timeout``, an unknown topic or partition.
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
        if not isinstance(timestamps, Mapping):
            raise TypeError("offsets_for_times: timestamps must be a dict of partition to ms, "
                            f"got {type(timestamps).__name__}")
        for p, ms in timestamps.items():
            if not isinstance(p, int) or not isinstance(ms, int):
                raise TypeError("offsets_for_times: partition and timestamp must be int, "
                                f"got {p!r}: {ms!r}")
            check_int(p, "offsets_for_times: partition", minimum=0, maximum=2**31 - 1)
            check_int(ms, f"offsets_for_times: timestamp of partition {p} (ms)", minimum=0,
                      maximum=2**63 - 1)
        tpl = _partitions.partition_list((topic, p, ms) for p, ms in timestamps.items())
        check(lib.rd_kafka_offsets_for_times(self._rk, tpl, int(timeout * 1000)),
              f"offsets_for_times on {topic!r}")
        found = _partitions.partition_list_offsets(tpl, "offsets_for_times")
        return {p: offset for (_, p), offset in found.items()}

    # -- groups ------------------------------------------------------------------
    def alter_group_config(self, group_id: str, configs: Mapping[str, Any], *,
                           timeout: float = 30.0) -> None:
        """Set group configuration properties, ``{name: value}`` (a value of None removes the
        group's own setting, back to the broker's default): IncrementalAlterConfigs on the
        GROUP resource. E.g. ``{"share.auto.offset.reset": "earliest"}`` or
        ``{"share.record.lock.duration.ms": 5000}`` for a share group (within the broker's
        ``group.share.min/max.record.lock.duration.ms``). The group need not exist yet.
        Raises KafkaError with the broker's text (``INVALID_CONFIG`` for an unknown name or a
        value out of bounds).

        Args:
            group_id: The group's id.
            configs: ``{name: value}``; a value of None removes the group's own setting.
            timeout: Seconds to wait for the broker.

        Raises:
            rdk.KafkaError: The broker refused (e.g. ``INVALID_CONFIG``), ``_TIMED_OUT``, or an
                authentication failure.
            TypeError: ``group_id`` is not a str, ``configs`` not a dict, a name not a
                non-empty str.
            ValueError: An empty ``group_id``, a negative ``timeout``.
            rdk.ClosedError: After ``close()``.
        """
        check_group_id(group_id)
        timeout = _check_timeout(timeout)
        if not isinstance(configs, Mapping):
            raise TypeError("alter_group_config: configs must be a dict of name to value, "
                            f"got {type(configs).__name__}")
        if not configs:
            return
        res = lib.rd_kafka_ConfigResource_new(lib.RD_KAFKA_RESOURCE_GROUP, group_id.encode())
        context = f"alter_group_config of group {group_id!r}"
        try:
            for name, value in configs.items():
                if not isinstance(name, str) or not name:
                    raise TypeError(f"alter_group_config: config names must be non-empty str, "
                                    f"got {name!r}")
                if value is None:
                    op, text = lib.RD_KAFKA_ALTER_CONFIG_OP_TYPE_DELETE, ffi.NULL
                else:
                    op = lib.RD_KAFKA_ALTER_CONFIG_OP_TYPE_SET
                    text = _binding.conf_value(name, value).encode()
                error = lib.rd_kafka_ConfigResource_add_incremental_config(
                    res, name.encode(), op, text)
                _binding.check_error(error, f"{context}: {name!r}")
            array = ffi.new("rd_kafka_ConfigResource_t *[1]", [res])
            with self._admin_result(lambda opts, q: lib.rd_kafka_IncrementalAlterConfigs(
                    self._rk, array, 1, opts, q), timeout, context) as ev:
                cnt = ffi.new("size_t *")
                resources = lib.rd_kafka_IncrementalAlterConfigs_result_resources(
                    lib.rd_kafka_event_IncrementalAlterConfigs_result(ev), cnt)
                for i in range(cnt[0]):
                    _raise_resource_error(resources[i], context)
        finally:
            lib.rd_kafka_ConfigResource_destroy(res)

    def describe_group_config(self, group_id: str, *, timeout: float = 30.0) -> dict[str, str]:
        """The group's configuration, ``{name: value}`` (DescribeConfigs on the GROUP
        resource): the group's own settings and the broker's defaults for the rest, e.g.
        ``share.auto.offset.reset``, ``share.record.lock.duration.ms``,
        ``share.delivery.count.limit``. A group that does not exist gets the defaults.

        Args:
            group_id: The group's id.
            timeout: Seconds to wait for the broker.

        Returns:
            ``{name: value}``, sorted by name.

        Raises:
            rdk.KafkaError: The broker refused, ``_TIMED_OUT``, or an authentication failure.
            TypeError: ``group_id`` is not a str, or ``timeout`` not a number.
            ValueError: An empty ``group_id``, a negative ``timeout``.
            rdk.ClosedError: After ``close()``.
        """
        check_group_id(group_id)
        timeout = _check_timeout(timeout)
        res = lib.rd_kafka_ConfigResource_new(lib.RD_KAFKA_RESOURCE_GROUP, group_id.encode())
        context = f"describe_group_config of group {group_id!r}"
        try:
            array = ffi.new("rd_kafka_ConfigResource_t *[1]", [res])
            with self._admin_result(lambda opts, q: lib.rd_kafka_DescribeConfigs(
                    self._rk, array, 1, opts, q), timeout, context) as ev:
                cnt = ffi.new("size_t *")
                resources = lib.rd_kafka_DescribeConfigs_result_resources(
                    lib.rd_kafka_event_DescribeConfigs_result(ev), cnt)
                out: dict[str, str] = {}
                for i in range(cnt[0]):
                    _raise_resource_error(resources[i], context)
                    n = ffi.new("size_t *")
                    entries = lib.rd_kafka_ConfigResource_configs(resources[i], n)
                    for j in range(n[0]):
                        value = lib.rd_kafka_ConfigEntry_value(entries[j])
                        if value != ffi.NULL:
                            out[ffi.string(lib.rd_kafka_ConfigEntry_name(entries[j])).decode()] = \
                                ffi.string(value).decode(errors="replace")
                return dict(sorted(out.items()))
        finally:
            lib.rd_kafka_ConfigResource_destroy(res)

    def delete_share_group(self, group_id: str, *, missing_ok: bool = False,
                           timeout: float = 30.0) -> None:
        """Delete a share group and its progress (DeleteGroups, which Kafka 4.x applies to
        share groups too; any other group kind is deleted the same way). The group must have
        no members: ``NON_EMPTY_GROUP`` otherwise. ``GROUP_ID_NOT_FOUND`` unless
        ``missing_ok``. The group's configuration (``alter_group_config``) is kept.

        Args:
            group_id: The group's id.
            missing_ok: Whether a group that does not exist is fine.
            timeout: Seconds to wait for the broker.

        Raises:
            rdk.KafkaError: ``NON_EMPTY_GROUP``, ``GROUP_ID_NOT_FOUND`` (unless
                ``missing_ok``), ``_TIMED_OUT``, or an authentication failure.
            TypeError: ``group_id`` is not a str, or ``timeout`` not a number.
            ValueError: An empty ``group_id``, a negative ``timeout``.
            rdk.ClosedError: After ``close()``.
        """
        check_group_id(group_id)
        timeout = _check_timeout(timeout)
        request = lib.rd_kafka_DeleteGroup_new(group_id.encode())
        context = f"delete_share_group of group {group_id!r}"
        try:
            array = ffi.new("rd_kafka_DeleteGroup_t *[1]", [request])
            with self._admin_result(lambda opts, q: lib.rd_kafka_DeleteGroups(
                    self._rk, array, 1, opts, q), timeout, context) as ev:
                cnt = ffi.new("size_t *")
                groups = lib.rd_kafka_DeleteGroups_result_groups(
                    lib.rd_kafka_event_DeleteGroups_result(ev), cnt)
                for i in range(cnt[0]):
                    error = lib.rd_kafka_group_result_error(groups[i])
                    if error == ffi.NULL:
                        continue
                    code = lib.rd_kafka_error_code(error)
                    if missing_ok and code == ERROR_CODES["GROUP_ID_NOT_FOUND"]:
                        continue
                    text = ffi.string(lib.rd_kafka_error_string(error)).decode(errors="replace")
                    raise KafkaError(code, text, context=context)
        finally:
            lib.rd_kafka_DeleteGroup_destroy(request)

    def reset_share_group(self, group_id: str, to: str, *, timeout: float = 30.0) -> None:
        """Start share group ``group_id`` over from ``to``: "earliest", "latest" or
        "by_duration:<ISO-8601 duration>" (e.g. "by_duration:PT1H"). librdkafka 2.15 has no
        AlterShareGroupOffsets, so this deletes the group's progress (``delete_share_group``,
        which needs a group without members; a group that does not exist is fine) and sets
        its ``share.auto.offset.reset``: the next member starts every partition there.
        A specific offset per partition is not possible this way.

        Args:
            group_id: The share group's id.
            to: ``"earliest"``, ``"latest"`` or ``"by_duration:<ISO-8601 duration>"``.
            timeout: Seconds to wait for each of the two requests.

        Raises:
            rdk.KafkaError: ``NON_EMPTY_GROUP`` (the group has members), a refused config,
                ``_TIMED_OUT``, or an authentication failure.
            TypeError: ``group_id`` is not a str, or ``timeout`` not a number.
            ValueError: An empty ``group_id``, a bad ``to``, a negative ``timeout``.
            rdk.ClosedError: After ``close()``.
        """
        check_group_id(group_id)
        if not isinstance(to, str) or not (to in ("earliest", "latest")
                                           or to.startswith("by_duration:")):
            raise ValueError("reset_share_group: to must be 'earliest', 'latest' or "
                             f"'by_duration:<ISO-8601 duration>', got {to!r}")
        timeout = _check_timeout(timeout)
        self.delete_share_group(group_id, missing_ok=True, timeout=timeout)
        self.alter_group_config(group_id, {"share.auto.offset.reset": to}, timeout=timeout)

    # -- plumbing ----------------------------------------------------------------
    @property
    def _rk(self) -> Any:
        self._client.ensure_open()
        return self._client.rk

    def _topic_request(self, op: _TopicOp, objects: list, ok: set[int], timeout: float,
                       topics: list[str]) -> None:
        """Send one CreateTopics / DeleteTopics request for ``objects`` (the caller frees
        them) and raise KafkaError for the first topic whose error is not in ``ok``."""
        array = ffi.new(op.array_type, objects)
        ev = self._run_admin(lambda opts, q: op.request(self._rk, array, len(objects), opts, q),
                             timeout)
        try:
            err = lib.rd_kafka_event_error(ev)
            if err:  # the whole request failed: name the request and its topics
                text = ffi.string(lib.rd_kafka_event_error_string(ev)).decode(errors="replace")
                raise KafkaError(err, text, context=f"{op.name} of {topics!r}")
            cnt = ffi.new("size_t *")
            topics = op.topics(op.result(ev), cnt)
            for i in range(cnt[0]):
                t = topics[i]
                terr = lib.rd_kafka_topic_result_error(t)
                if terr and terr not in ok:
                    name = ffi.string(lib.rd_kafka_topic_result_name(t)).decode()
                    msg = lib.rd_kafka_topic_result_error_string(t)
                    text = ffi.string(msg).decode(errors="replace") if msg != ffi.NULL else None
                    raise KafkaError(terr, text, context=f"topic {name!r}")
        finally:
            lib.rd_kafka_event_destroy(ev)

    @contextlib.contextmanager
    def _admin_result(self, call: Callable[[Any, Any], None], timeout: float,
                      context: str) -> Iterator[Any]:
        """The result event of an admin request (``_run_admin``), after raising the whole
        request's error; freed on leaving."""
        ev = self._run_admin(call, timeout)
        try:
            _raise_event_error(ev, context)
            yield ev
        finally:
            lib.rd_kafka_event_destroy(ev)

    def _run_admin(self, call: Callable[[Any, Any], None], timeout: float) -> Any:
        """Make an admin request with ``call(options, queue)``; its result event (the caller
        destroys it), or KafkaError _TIMED_OUT."""
        q = lib.rd_kafka_queue_new(self._rk)
        opts = lib.rd_kafka_AdminOptions_new(self._rk, lib.RD_KAFKA_ADMIN_OP_ANY)
        try:
            errstr = ffi.new("char[]", 256)
            lib.rd_kafka_AdminOptions_set_request_timeout(opts, int(timeout * 1000), errstr, 256)
            lib.rd_kafka_AdminOptions_set_operation_timeout(opts, int(timeout * 1000), errstr, 256)
            call(opts, q)
            # short polls: an authentication failure ends the wait at once
            deadline = time.monotonic() + timeout + 2.0
            while True:
                left = deadline - time.monotonic()
                ev = lib.rd_kafka_queue_poll(q, max(0, min(_AUTH_CHECK_MS, int(left * 1000))))
                if ev != ffi.NULL:
                    if not lib.rd_kafka_event_error(ev):
                        self._client.auth_failure = None  # a broker answered
                    return ev
                self._client.raise_auth_failure("admin request")
                if left <= 0:
                    raise KafkaError(ERROR_CODES["_TIMED_OUT"], context="admin request")
        finally:
            lib.rd_kafka_AdminOptions_destroy(opts)
            lib.rd_kafka_queue_destroy(q)

    def close(self) -> None:
        """Free the handles. Idempotent."""
        if self._fetch_client is not None:
            self._fetch_client.close()
        self._client.close()

    def __enter__(self) -> Admin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


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


def check_group_id(group_id: Any) -> str:
    if not isinstance(group_id, str):
        raise TypeError(f"group_id must be str, got {type(group_id).__name__}")
    if not group_id:
        raise ValueError("group_id must not be empty")
    return group_id


def _raise_event_error(ev: Any, context: str) -> None:
    """The whole admin request failed: its KafkaError."""
    err = lib.rd_kafka_event_error(ev)
    if err:
        text = ffi.string(lib.rd_kafka_event_error_string(ev)).decode(errors="replace")
        raise KafkaError(err, text, context=context)


def _raise_resource_error(resource: Any, context: str) -> None:
    err = lib.rd_kafka_ConfigResource_error(resource)
    if err:
        msg = lib.rd_kafka_ConfigResource_error_string(resource)
        text = ffi.string(msg).decode(errors="replace") if msg != ffi.NULL else None
        raise KafkaError(err, text, context=context)
