"""rdk.Admin: topic admin, metadata and offsets lookup over librdkafka's admin APIs."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from . import _binding
from ._binding import ERROR_CODES, PartitionMetadata, TopicMetadata, check, ffi, lib
from .errors import KafkaError
from . import _partitions
from .validate import check_broker, check_int, check_timeout, check_topic_name

__all__ = ["Admin", "TopicMetadata", "PartitionMetadata"]


class Admin:
    """Topic admin and metadata: ``Admin(broker, driver_options=None)``.

    Usable as a context manager; ``close()`` is idempotent.
    """

    def __init__(self, broker: str, driver_options: Mapping[str, Any] | None = None) -> None:
        check_broker(broker)
        # a metadata lookup must not create the topic it asks about
        self._props = {"bootstrap.servers": broker, "allow.auto.create.topics": False,
                       **dict(driver_options or {})}
        self._client = _binding.Client("producer", self._props)
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
        """
        check_timeout(timeout)
        specs = _topic_specs(topics)
        errstr = ffi.new("char[]", 512)
        new_topics = []
        try:
            for name, partitions, replication, config in specs:
                nt = lib.rd_kafka_NewTopic_new(name.encode(), partitions, replication, errstr, 512)
                if nt == ffi.NULL:
                    raise ValueError(f"topic {name!r}: {ffi.string(errstr).decode()}")
                new_topics.append(nt)
                for key, value in (config or {}).items():
                    check(lib.rd_kafka_NewTopic_set_config(
                        nt, str(key).encode(), _binding.conf_value(key, value).encode()),
                        f"topic {name!r} config {key!r}")
            array = ffi.new("rd_kafka_NewTopic_t *[]", new_topics)
            results = self._run_admin(
                lambda opts, q: lib.rd_kafka_CreateTopics(self._rk, array, len(new_topics), opts, q),
                lib.RD_KAFKA_EVENT_CREATETOPICS_RESULT,
                timeout,
            )
        finally:
            for nt in new_topics:
                lib.rd_kafka_NewTopic_destroy(nt)
        self._raise_topic_errors(results, lib.rd_kafka_event_CreateTopics_result,
                                 lib.rd_kafka_CreateTopics_result_topics,
                                 ok={ERROR_CODES["TOPIC_ALREADY_EXISTS"]} if exist_ok else set())

    def delete_topics(self, names: Iterable[str], *, timeout: float = 30.0) -> None:
        """Delete topics; KafkaError names the first that failed."""
        check_timeout(timeout)
        names = list(names) if not isinstance(names, str) else [names]
        for n in names:
            check_topic_name(n)
        dels = [lib.rd_kafka_DeleteTopic_new(n.encode()) for n in names]
        try:
            array = ffi.new("rd_kafka_DeleteTopic_t *[]", dels)
            results = self._run_admin(
                lambda opts, q: lib.rd_kafka_DeleteTopics(self._rk, array, len(dels), opts, q),
                lib.RD_KAFKA_EVENT_DELETETOPICS_RESULT,
                timeout,
            )
        finally:
            for d in dels:
                lib.rd_kafka_DeleteTopic_destroy(d)
        self._raise_topic_errors(results, lib.rd_kafka_event_DeleteTopics_result,
                                 lib.rd_kafka_DeleteTopics_result_topics, ok=set())

    def list_topics(self, timeout: float = 10.0) -> list[TopicMetadata]:
        """Every topic with its partitions' leader, replicas and ISR."""
        check_timeout(timeout)
        return sorted(
            (t for t in self._client.metadata(None, timeout) if not t.name.startswith("__")),
            key=lambda t: t.name,
        )

    def partition_count(self, topic: str, timeout: float = 10.0) -> int:
        check_topic_name(topic)
        check_timeout(timeout)
        return self._client.partition_count(topic, timeout)

    # -- offsets -----------------------------------------------------------------
    def watermarks(self, topic: str, partition: int, timeout: float = 10.0) -> tuple[int, int]:
        """(low, high) watermarks, correct on every broker.

        ListOffsets(latest) is not trusted alone: Tansu answers the last record batch's
        base offset + 1. A short fetch from just below that answer returns the Fetch
        response's high watermark, which is right everywhere.
        """
        check_topic_name(topic)
        check_timeout(timeout)
        check_int(partition, "partition", minimum=0, maximum=0x7FFFFFFF)
        self._client.ensure_open()
        if self._fetch_client is None:
            self._fetch_client = _binding.Client(
                "consumer", {"fetch.wait.max.ms": 10, **self._props,
                             "enable.partition.eof": True, "auto.offset.reset": "earliest"})
        marks = _partitions.true_watermarks(self._client, topic, [partition], timeout,
                                            fetch_client=self._fetch_client)
        return marks[partition]

    def query_watermarks(self, topic: str, partition: int, timeout: float = 10.0) -> tuple[int, int]:
        """(low, high) exactly as the broker's ListOffsets answers them."""
        check_topic_name(topic)
        check_int(partition, "partition", minimum=0, maximum=0x7FFFFFFF)
        check_timeout(timeout)
        self._client.ensure_open()
        return _partitions.query_watermarks(self._client, topic, partition, timeout)

    def offsets_for_times(
        self, topic: str, timestamps: Mapping[int, int], timeout: float = 10.0
    ) -> dict[int, int]:
        """For each partition, the earliest offset whose timestamp is >= the given ms (-1: none)."""
        check_topic_name(topic)
        check_timeout(timeout)
        parts = lib.rd_kafka_topic_partition_list_new(len(timestamps))
        try:
            for p, ms in timestamps.items():
                if not isinstance(p, int) or not isinstance(ms, int):
                    raise TypeError(f"offsets_for_times: partition and timestamp must be int, got {p!r}: {ms!r}")
                lib.rd_kafka_topic_partition_list_add(parts, topic.encode(), p).offset = ms
            check(lib.rd_kafka_offsets_for_times(self._rk, parts, int(timeout * 1000)),
                  f"offsets_for_times on {topic!r}")
            out = {}
            for i in range(parts.cnt):
                el = parts.elems[i]
                if el.err:
                    raise KafkaError(el.err, context=f"offsets_for_times {topic}[{el.partition}]")
                out[int(el.partition)] = int(el.offset)
            return out
        finally:
            lib.rd_kafka_topic_partition_list_destroy(parts)

    # -- plumbing ----------------------------------------------------------------
    @property
    def _rk(self) -> Any:
        self._client.ensure_open()
        return self._client.rk

    def _run_admin(self, call, event_type: int, timeout: float):
        q = lib.rd_kafka_queue_new(self._rk)
        opts = lib.rd_kafka_AdminOptions_new(self._rk, lib.RD_KAFKA_ADMIN_OP_ANY)
        try:
            errstr = ffi.new("char[]", 256)
            lib.rd_kafka_AdminOptions_set_request_timeout(opts, int(timeout * 1000), errstr, 256)
            lib.rd_kafka_AdminOptions_set_operation_timeout(opts, int(timeout * 1000), errstr, 256)
            call(opts, q)
            ev = lib.rd_kafka_queue_poll(q, int(timeout * 1000) + 2000)
            if ev == ffi.NULL:
                raise KafkaError(ERROR_CODES["_TIMED_OUT"], context="admin request")
            return ev
        finally:
            lib.rd_kafka_AdminOptions_destroy(opts)
            lib.rd_kafka_queue_destroy(q)

    @staticmethod
    def _raise_topic_errors(ev, get_result, get_topics, ok: set[int]) -> None:
        try:
            err = lib.rd_kafka_event_error(ev)
            if err:
                text = ffi.string(lib.rd_kafka_event_error_string(ev)).decode(errors="replace")
                raise KafkaError(err, text)
            res = get_result(ev)
            cnt = ffi.new("size_t *")
            topics = get_topics(res, cnt)
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

    def close(self) -> None:
        """Free the handles. Idempotent."""
        if self._fetch_client is not None:
            self._fetch_client.close()
        self._client.close()

    def __enter__(self) -> Admin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _topic_specs(topics) -> list[tuple[str, int, int, dict]]:
    if isinstance(topics, Mapping):
        items = [(name, parts, -1, {}) for name, parts in topics.items()]
    else:
        items = []
        for spec in topics:
            if not isinstance(spec, (tuple, list)) or not 1 <= len(spec) <= 4:
                raise TypeError(f"create_topics: expected (name, partitions, replication, config), got {spec!r}")
            spec = tuple(spec) + (None,) * (4 - len(spec))
            name, parts, repl, config = spec
            items.append((name, parts if parts is not None else -1,
                          repl if repl is not None else -1, dict(config or {})))
    for name, parts, repl, _ in items:
        check_topic_name(name)
        if not isinstance(parts, int) or isinstance(parts, bool) or (parts < 1 and parts != -1):
            raise ValueError(f"topic {name!r}: partitions must be a positive int, got {parts!r}")
        if not isinstance(repl, int) or isinstance(repl, bool) or (repl < 1 and repl != -1):
            raise ValueError(f"topic {name!r}: replication must be a positive int, got {repl!r}")
    return items
