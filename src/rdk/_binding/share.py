"""librdkafka's share consumer (KIP-932): the only caller of ``rd_kafka_share_*`` and of
rdk's share batch helpers (``rdk_share_*``).

The C callbacks are served inside share calls, so on the share thread; their opaque is
the "sink" (the share thread, :class:`Sink`), which keeps what they collect (stats JSON,
errors) for the thread to serve after the call, and counts failed acknowledgements.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from ..errors import ConfigError, KafkaError
from . import RepeatLimiter, check, check_error, ffi, lib, new_conf

_SYSLOG_TO_LOGGING = {0: 50, 1: 50, 2: 50, 3: 40, 4: 30, 5: 20, 6: 20, 7: 10}


class Sink(Protocol):
    """What the C callbacks and the close hand their findings to (the share thread)."""

    group_id: str
    logger: logging.Logger | logging.LoggerAdapter
    stats_json: list[str]
    errors: list[KafkaError]
    repeats: RepeatLimiter

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


# ---- the handle -------------------------------------------------------------------------

def new_handle(props: Mapping[str, Any], topics: Sequence[str], wants_stats: bool, sink: Sink,
               logger: Any) -> tuple[Any, Any]:
    """A subscribed share handle whose callbacks report to ``sink``; returns the handle and
    the cffi handle of ``sink`` (its opaque), which must outlive the share handle."""
    conf = new_conf(props)
    handle = ffi.new_handle(sink)
    lib.rd_kafka_conf_set_opaque(conf, handle)
    lib.rd_kafka_conf_set_error_cb(conf, lib.rdk_share_on_error)
    lib.rd_kafka_conf_set_log_cb(conf, lib.rdk_share_on_log)
    if wants_stats:
        lib.rd_kafka_conf_set_stats_cb(conf, lib.rdk_share_on_stats)
    errstr = ffi.new("char[]", 512)
    rkshare = lib.rd_kafka_share_consumer_new(conf, errstr, 512)
    if rkshare == ffi.NULL:
        lib.rd_kafka_conf_destroy(conf)
        raise ConfigError(ffi.string(errstr).decode(errors="replace"))
    try:
        check_error(lib.rd_kafka_share_set_log_queue(rkshare, ffi.NULL), "set_log_queue")
        check_error(lib.rd_kafka_share_set_acknowledgement_commit_cb(
            rkshare, lib.rdk_share_on_ack, handle), "acknowledgement commit callback")
        tpl = lib.rd_kafka_topic_partition_list_new(len(topics))
        try:
            for topic in topics:
                lib.rd_kafka_topic_partition_list_add(tpl, topic.encode(), -1)
            check(lib.rd_kafka_share_subscribe(rkshare, tpl), "share subscribe")
        finally:
            lib.rd_kafka_topic_partition_list_destroy(tpl)
    except BaseException:
        destroy_handle(rkshare, logger)
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


# ---- polling and acknowledging, one batch at a time --------------------------------------

def new_batch() -> Any:
    """An empty ``rdk_share_batch`` (freed with ``free_batch``)."""
    return lib.rdk_share_batch_new()


def free_batch(batch: Any) -> None:
    lib.rdk_share_batch_free(batch)


def clear_batch(batch: Any) -> None:
    """Release the messages ``poll`` put in ``batch``."""
    lib.rdk_share_batch_clear(batch)


def poll(rkshare: Any, timeout_ms: int, batch: Any) -> tuple[bool, KafkaError | None]:
    """One ``rd_kafka_share_poll``: (whether ``batch`` now holds records, the poll's error)."""
    out = ffi.new("rd_kafka_messages_t **")
    error = lib.rd_kafka_share_poll(rkshare, timeout_ms, out)
    if error != ffi.NULL:
        try:
            return False, KafkaError(
                int(lib.rd_kafka_error_code(error)),
                ffi.string(lib.rd_kafka_error_string(error)).decode(errors="replace"),
                fatal=bool(lib.rd_kafka_error_is_fatal(error)))
        finally:
            lib.rd_kafka_error_destroy(error)
    if out[0] == ffi.NULL:
        return False, None
    if lib.rdk_share_fill(batch, out[0]) < 0:
        lib.rdk_share_batch_clear(batch)
        raise MemoryError("rdk_share_fill: out of memory")
    return True, None


def acknowledge(rkshare: Any, batch: Any, types: Any) -> int:
    """Acknowledge each record of ``batch`` with its type (``types``: one byte each); the
    number librdkafka refused (their errors are in ``batch.ack_err``)."""
    return int(lib.rdk_share_ack(rkshare, batch, types))


def share_delivery_counts(b: Any) -> list[int]:
    """Each row's delivery count of a filled ``rdk_share_batch``."""
    return ffi.unpack(b.delivery_count, b.n)


def share_ack_errors(b: Any) -> list[int]:
    """Each row's acknowledgement error code (0: accepted) after ``rdk_share_ack``."""
    return ffi.unpack(b.ack_err, b.n)
