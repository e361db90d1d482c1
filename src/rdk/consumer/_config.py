"""A Consumer's arguments, checked once, and the librdkafka properties they make.

Every check of ``rdk.Consumer(...)``'s arguments lives here (the error names the bad
argument), and so do the handle's and the topic's librdkafka properties (librdkafka, the
validator of its own properties, checks them at construction, not at ``start()``) and the
choice of the offset store. What the Consumer's parts get is this one object.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import _binding, offsets, slots
from .._binding.partitions import OFFSET_BEGINNING, OFFSET_END
from .._loop_thread import is_event_loop
from ..errors import ConfigError, KafkaError
from ..validate import (
    check_bootstrap_rule,
    check_broker,
    check_callable,
    check_choice,
    check_group_id,
    check_int,
    check_logger,
    check_options,
    check_topic_name,
    check_topic_pattern,
)
from ._progress import TopicStores

if TYPE_CHECKING:
    import asyncio

__all__ = ["ConsumerConfig"]

log = logging.getLogger("rdk")
_INT32_MAX = 2**31 - 1
_INT64_MAX = 2**63 - 1
_REFUSED = {"GROUP_AUTHORIZATION_FAILED", "CLUSTER_AUTHORIZATION_FAILED"}  # stop the consumer


class ConsumerConfig:
    """The checked arguments of ``rdk.Consumer`` (same names), plus:

    ``topics``/``pattern`` (literal topics, or a ``^regex`` in group mode), ``topic`` (the
    name used in logs and thread names), ``props``/``topic_props`` (librdkafka's), ``store``
    (the progress store with ``(topic, partition)`` keys; None in group mode without
    ``offset_store``: the group's, made at start) and ``user_store`` (the user's
    ``offset_store``, whose optional ``bind()``/``close()`` the consumer calls).
    """

    def __init__(self, broker: Any, topic: Any, offset_directory: Any, *,
                 receive_callback: Any, stats_callback: Any, logger: Any,
                 max_messages_per_callback: Any, statistics_interval_ms: Any,
                 queued_max_messages_kbytes: Any, driver_options: Any, topic_options: Any,
                 num_workers: Any, worker_slot: Any, start_offset: Any,
                 on_offset_out_of_range: Any, decode: Any, commit_on_error: Any,
                 offset_store: Any, loop: Any, group_id: Any, on_assign: Any, on_revoke: Any,
                 oauth_cb: Any) -> None:
        self.broker = check_broker(broker)
        self.group_id = _check_group_id(group_id)
        self.topics, self.pattern = _check_topics(topic, group_id is not None)
        self.topic = self.pattern or ",".join(self.topics)
        self.multi_topic = self.pattern is not None or len(self.topics) > 1
        self.on_assign, self.on_revoke = (_check_group_callback(on_assign, "on_assign", group_id),
                                          _check_group_callback(on_revoke, "on_revoke", group_id))
        self.receive_callback = check_callable(receive_callback, "receive_callback")
        self.stats_callback = check_callable(stats_callback, "stats_callback")
        self.logger = check_logger(logger) or log
        self.max_messages_per_callback = check_int(
            max_messages_per_callback, "max_messages_per_callback", minimum=1, maximum=1_000_000)
        self.statistics_interval_ms = check_int(
            statistics_interval_ms, "statistics_interval_ms", minimum=0, maximum=86_400_000)
        self.queued_max_messages_kbytes = check_int(
            queued_max_messages_kbytes, "queued_max_messages_kbytes", minimum=1, maximum=2_097_151)
        self.num_workers, self.worker_slot = _check_slot(num_workers, worker_slot, group_id)
        self.start_offset = check_choice(start_offset, "start_offset", ("earliest", "latest"))
        self.on_offset_out_of_range = check_choice(
            on_offset_out_of_range, "on_offset_out_of_range", ("earliest", "latest", "error"))
        self.decode = check_choice(decode, "decode", (None, "utf-8"))
        if not isinstance(commit_on_error, bool):
            raise TypeError(f"commit_on_error must be bool, got {type(commit_on_error).__name__}")
        self.commit_on_error = commit_on_error
        if loop is not None and not is_event_loop(loop):
            raise TypeError(f"loop must be an asyncio event loop, got {type(loop).__name__}")
        self.loop: asyncio.AbstractEventLoop | None = loop
        self._configure(check_options(driver_options, "driver_options"),
                        check_options(topic_options, "topic_options"))
        self.oauth_cb = _binding.check_oauth_cb(oauth_cb, self.driver_options)
        self.offset_directory, self.store, self.user_store = self._choose_store(
            offset_store, offset_directory)

    def _configure(self, driver_options: dict, topic_options: dict) -> None:
        """librdkafka's properties for the handle and the topic, checked by librdkafka now."""
        if "auto.offset.reset" in topic_options:
            raise ConfigError("topic_options: set the out-of-range behaviour with "
                              "on_offset_out_of_range= instead of 'auto.offset.reset'")
        check_bootstrap_rule(self.broker, driver_options)
        self.props: dict[str, Any] = {
            "queued.max.messages.kbytes": self.queued_max_messages_kbytes,
            "statistics.interval.ms": self.statistics_interval_ms if self.stats_callback else 0,
            "enable.partition.eof": False,
            # librdkafka pauses a partition's fetching for fetch.queue.backoff.ms (1 s by
            # default) whenever its queue holds queued.min.messages. A broker that answers
            # with large responses (Tansu) crosses that at once, and a consumer that is not
            # instantly fast then idles for a second with an empty queue. Look again soon.
            "fetch.queue.backoff.ms": 10,
            **driver_options,
            "bootstrap.servers": self.broker,
        }
        self.driver_options = driver_options
        self.topic_props = {**topic_options, "auto.offset.reset": self.on_offset_out_of_range}
        _binding.validate_options(self.props)
        _binding.validate_topic_options(self.topic_props)

    def group_props(self) -> dict[str, Any]:
        """The handle's properties in group mode: rdk commits, cooperative-sticky by default."""
        props = {**self.props, "group.id": self.group_id, "enable.auto.commit": False,
                 "enable.auto.offset.store": False}
        if str(props.get("group.protocol", "classic")) != "consumer":
            props.setdefault("partition.assignment.strategy", "cooperative-sticky")
            # the classic protocol learns of added partitions and deleted topics only from
            # the leader's metadata refresh (librdkafka's default: every 5 minutes); the
            # KIP-848 coordinator tells its members at once
            props.setdefault("topic.metadata.refresh.interval.ms", CLASSIC_METADATA_REFRESH_MS)
        return props

    def _choose_store(self, offset_store: Any, directory: Any) -> tuple[Any, Any, Any]:
        """(offset directory or None, the (topic, partition)-keyed store, the user's store)."""
        if offset_store is not None:
            if self.multi_topic:
                where = ("group mode commits to the group" if self.group_id is not None
                         else "a worker-slot consumer keeps offset files")
                raise ValueError("offset_store= keeps one topic's progress; with several topics "
                                 f"(or a ^regex) {where}")
            for method in ("read", "commit"):
                if not callable(getattr(offset_store, method, None)):
                    raise TypeError(f"offset_store must have read(partitions) and commit(offsets) "
                                    f"methods; {type(offset_store).__name__} has no {method}()")
            path = offsets.ensure_directory(directory) if directory is not None else None
            return path, TopicStores({self.topic: offset_store}), offset_store
        if self.group_id is not None:
            path = offsets.ensure_directory(directory) if directory is not None else None
            return path, None, None
        if directory is None:
            raise TypeError("offset_directory is required (or give offset_store=)")
        path = offsets.ensure_directory(directory)
        return path, TopicStores.files(path, self.topics), None

    @property
    def first_topic(self) -> str | None:
        """The topic of the public one-topic views (``Consumer.partitions``,
        ``partition_count``, ``ConsumerStats.partitions``); None for a ``^regex``."""
        return self.topics[0] if self.topics else None

    def check_key(self, what: Any) -> tuple[str, int]:
        """seek()'s ``topic_or_partition`` as a (topic, partition) key."""
        if isinstance(what, tuple):
            if len(what) != 2:
                raise ValueError(f"topic_or_partition must be a partition or (topic, partition), "
                                 f"got {what!r}")
            topic = check_topic_name(what[0])
            return topic, check_int(what[1], "partition", maximum=_INT32_MAX)
        if self.multi_topic:
            raise TypeError(f"this consumer reads several topics: give (topic, partition), "
                            f"got {what!r}")
        return self.topic, check_int(what, "partition", maximum=_INT32_MAX)

    def bind_user_store(self) -> None:
        """Give the user's store (if it has ``bind``) the consumer's broker and options."""
        bind = getattr(self.user_store, "bind", None)
        if callable(bind):
            bind(topic=self.topic, broker=self.broker, driver_options=self.driver_options,
                 logger=self.logger)


def check_seek_offset(offset: Any) -> int:
    """seek()'s ``offset``: an int >= 0, or "earliest"/"latest" as librdkafka's logical offsets."""
    if isinstance(offset, str):
        target = {"earliest": OFFSET_BEGINNING, "latest": OFFSET_END}.get(offset)
        if target is None:
            raise ValueError(f"offset must be an int >= 0, 'earliest' or 'latest', got {offset!r}")
        return int(target)
    return check_int(offset, "offset", minimum=0, maximum=_INT64_MAX - 1)


#: topic.metadata.refresh.interval.ms of a classic-protocol group consumer unless given:
#: partitions added to its topics are assigned, and a deleted topic's revoked, within it
CLASSIC_METADATA_REFRESH_MS = 10_000


def stops_consumer(err: KafkaError, logger: logging.Logger | logging.LoggerAdapter, topic: str,
                   pattern: bool) -> bool:
    """Whether librdkafka's error event ``err`` stops the consumer; what does not is logged."""
    if err.fatal:
        logger.error("consumer of %s: fatal librdkafka error: %s", topic, err)
        return True
    if _binding.is_auth_failure(err):
        logger.error("consumer of %s: authentication failed: %s", topic, err)
        return False
    if err.name in _REFUSED or (err.name == "TOPIC_AUTHORIZATION_FAILED" and not pattern):
        # the broker's ACLs refuse this principal: a retry gets the same answer (the Java
        # consumer's poll() throws it too); stop and say so rather than idle
        return True
    logger.warning("consumer of %s: %s", topic, err)
    return False


def _check_group_id(group_id: Any) -> str | None:
    return None if group_id is None else check_group_id(group_id)


def _check_group_callback(fn: Any, name: str, group_id: str | None) -> Callable | None:
    check_callable(fn, name)
    if fn is not None and group_id is None:
        raise ValueError(f"{name} needs group_id=...: in worker-slot mode the "
                         "partitions are fixed (see start()'s return value)")
    return fn


def _check_slot(num_workers: Any, worker_slot: Any, group_id: str | None) -> tuple[int, int]:
    check_int(num_workers, "num_workers", maximum=_INT32_MAX)
    check_int(worker_slot, "worker_slot", maximum=_INT32_MAX)
    checked = slots.check_slot(num_workers, worker_slot)
    if group_id is not None and (num_workers, worker_slot) != (1, 0):
        raise ValueError("num_workers/worker_slot split partitions by worker slot; with "
                         "group_id the group coordinator assigns them: give one or the other")
    return checked


def _check_topics(topic: Any, group: bool) -> tuple[list[str], str | None]:
    """(literal topics, regex or None) from ``topic``: a name, a list of names, or "^regex"."""
    if isinstance(topic, str) and topic.startswith("^"):
        if not group:
            raise ValueError(f"topic {topic!r}: a ^regex subscription needs group mode (group_id=...)")
        # librdkafka's dialect (POSIX extended, libc regcomp), not Python's re
        return [], check_topic_pattern(topic)
    if isinstance(topic, str):
        return [check_topic_name(topic)], None
    if not isinstance(topic, (list, tuple)):
        raise TypeError(f"topic must be a str, a list of str or a '^regex' str, got {type(topic).__name__}")
    if not topic:
        raise ValueError("topic: the list of topics is empty")
    names = [check_topic_name(t, f"topic[{i}]") for i, t in enumerate(topic)]
    if len(set(names)) != len(names):
        raise ValueError(f"topic: {names!r} names a topic twice")
    return names, None

