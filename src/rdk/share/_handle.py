"""The ``rd_kafka_share_t`` handle: librdkafka's C callbacks, the group prepared with the
Admin API, the handle created (conf, callbacks, subscription), and closed.

The C callbacks are served inside share calls, so on the share thread; their opaque is
the "sink" (the share thread, :class:`Sink` here), which keeps what they collect (stats
JSON, errors) for the thread to serve after the call, and counts failed acknowledgements.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Protocol

from .. import _binding
from .._binding import ffi, lib
from ..errors import ConfigError, KafkaError

if TYPE_CHECKING:
    from ._config import ShareConfig

__all__ = ["METADATA_TIMEOUT", "close_handle", "destroy_handle", "new_handle", "prepare_group"]

METADATA_TIMEOUT = 10.0  # start(): seconds to learn the topics and set the group's config
RESET = "share.auto.offset.reset"
DEFAULT_LOCK_SECONDS = 30.0  # Kafka's group.share.record.lock.duration.ms, if unreadable
_SYSLOG_TO_LOGGING = {0: 50, 1: 50, 2: 50, 3: 40, 4: 30, 5: 20, 6: 20, 7: 10}


class Sink(Protocol):
    """What the C callbacks and the close hand their findings to (the share thread)."""

    group_id: str
    logger: logging.Logger | logging.LoggerAdapter
    stats_json: list[str]
    errors: list[KafkaError]
    repeats: _binding.RepeatLimiter

    def serve_collected(self) -> None: ...

    def ack_failed(self, topic: str, partition: int, count: int, err: int) -> None: ...


# ---- C -> Python callbacks (served inside share calls, on the share thread) ----------------

@ffi.def_extern()
def rdk_share_on_stats(rk: Any, json_text: Any, json_len: int, opaque: Any) -> int:
    sink = ffi.from_handle(opaque)
    sink.stats_json.append(ffi.string(json_text, json_len).decode(errors="replace"))
    return 0


@ffi.def_extern()
def rdk_share_on_error(rk: Any, err: int, reason: Any, opaque: Any) -> None:
    sink = ffi.from_handle(opaque)
    text = ffi.string(reason).decode(errors="replace") if reason != ffi.NULL else ""
    sink.errors.append(KafkaError(err, text))


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
        show, held = sink.repeats.allow((facility, line))
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
            sink.ack_failed(ffi.string(tp.topic).decode(), int(tp.partition), count, perr)


# ---- the group and the handle ----------------------------------------------------------

def prepare_group(config: ShareConfig) -> float:
    """Every topic exists; the group's share.auto.offset.reset is start_offset (None: kept as
    it is, with a warning when start_offset replaces a value of the group's own). Returns
    the group's acquisition lock in seconds (``share.record.lock.duration.ms``)."""
    from ..admin import Admin

    context = f"ShareConsumer of group {config.group_id!r}"
    with Admin(config.broker, config.admin_options()) as admin:
        for topic in config.topics:
            admin.partition_count(topic, METADATA_TIMEOUT)
        group_config = admin._group_config(config.group_id, METADATA_TIMEOUT, context)
        current, own = group_config.get(RESET, ("latest", False))
        wanted = config.start_offset
        if wanted is not None and wanted != current and own:
            # e.g. Admin.reset_share_group(g, "earliest") undone by this member
            config.logger.warning(
                "%s: start_offset=%r replaces the group's share.auto.offset.reset %r "
                "(set by Admin.reset_share_group, alter_group_config or another member); "
                "start_offset=None keeps the group's setting", context, wanted, current)
        if (wanted or current) != current or not own:
            # None on a group without a setting of its own: the broker's default made the
            # group's, so that describe_group_config knows the group (see there)
            admin._alter_group(config.group_id, {RESET: wanted or current}, METADATA_TIMEOUT,
                               context)
    try:
        return int(group_config["share.record.lock.duration.ms"][0]) / 1000
    except (KeyError, ValueError):
        return DEFAULT_LOCK_SECONDS


def new_handle(config: ShareConfig, sink: Sink) -> tuple[Any, Any]:
    """A subscribed share handle whose callbacks report to ``sink``; returns the handle and
    the cffi handle of ``sink`` (its opaque), which must outlive the share handle."""
    conf = _binding.new_conf(config.props)
    handle = ffi.new_handle(sink)
    lib.rd_kafka_conf_set_opaque(conf, handle)
    lib.rd_kafka_conf_set_error_cb(conf, lib.rdk_share_on_error)
    lib.rd_kafka_conf_set_log_cb(conf, lib.rdk_share_on_log)
    if config.wants_stats:
        lib.rd_kafka_conf_set_stats_cb(conf, lib.rdk_share_on_stats)
    errstr = ffi.new("char[]", 512)
    rkshare = lib.rd_kafka_share_consumer_new(conf, errstr, 512)
    if rkshare == ffi.NULL:
        lib.rd_kafka_conf_destroy(conf)
        raise ConfigError(ffi.string(errstr).decode(errors="replace"))
    try:
        _binding.check_error(lib.rd_kafka_share_set_log_queue(rkshare, ffi.NULL), "set_log_queue")
        _binding.check_error(lib.rd_kafka_share_set_acknowledgement_commit_cb(
            rkshare, lib.rdk_share_on_ack, handle), "acknowledgement commit callback")
        tpl = lib.rd_kafka_topic_partition_list_new(len(config.topics))
        try:
            for topic in config.topics:
                lib.rd_kafka_topic_partition_list_add(tpl, topic.encode(), -1)
            _binding.check(lib.rd_kafka_share_subscribe(rkshare, tpl), "share subscribe")
        finally:
            lib.rd_kafka_topic_partition_list_destroy(tpl)
    except BaseException:
        destroy_handle(rkshare, config.logger)
        raise
    return rkshare, handle


def close_handle(rkshare: Any, left_ms: int, sink: Sink) -> None:
    """Commit pending acknowledgements within ``left_ms``, leave the group, free the handle
    (on the share thread: ``sink`` serves what the commit's callbacks collected)."""
    parts = ffi.new("rd_kafka_topic_partition_list_t **")
    error = lib.rd_kafka_share_commit_sync(rkshare, left_ms, parts)
    sink.serve_collected()
    if error != ffi.NULL:
        code = lib.rd_kafka_error_code(error)
        lib.rd_kafka_error_destroy(error)
        sink.logger.warning("share consumer of group %s: committing acknowledgements at "
                            "stop failed: %s", sink.group_id, KafkaError(code))
    if parts[0] != ffi.NULL:
        tpl = parts[0]
        for i in range(tpl.cnt):
            tp = tpl.elems[i]
            if tp.err:
                sink.ack_failed(ffi.string(tp.topic).decode(), int(tp.partition), 1, int(tp.err))
        lib.rd_kafka_topic_partition_list_destroy(tpl)
    destroy_handle(rkshare, sink.logger)


def destroy_handle(rkshare: Any, logger: Any) -> None:
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
