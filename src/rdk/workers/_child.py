"""rdk.workers, the worker process's side: build the consumer with the slot (or group) it
was given, start it, report to the parent (started, stats, failures, a request to stop the
pool) over a pipe, stop it gracefully on SIGTERM/SIGINT; die with the parent."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["FIGURES", "SHARE_FIGURES", "current_slot", "request_stop", "worker_main"]

log = logging.getLogger("rdk.workers")

FIGURES = ("waiting_kafka", "waiting_local", "kafka_log_size")
# rdk.ShareStats counters, forwarded when a worker's consumer reports them
SHARE_FIGURES = ("delivered", "accepted", "released", "rejected", "redelivered", "ack_errors",
                 "lock_expired_batches")


# KafkaError names that no restart can fix: the topic is not there.
_PERMANENT_KAFKA_ERRORS = frozenset({"UNKNOWN_TOPIC_OR_PART", "UNKNOWN_TOPIC", "TOPIC_EXCEPTION",
                                     "TOPIC_AUTHORIZATION_FAILED", "INVALID_TOPIC_EXCEPTION"})


def _is_permanent(error: BaseException) -> bool:
    """A start failure that a restart would only repeat: wrong input, refused configuration,
    an unusable offset directory, or a topic that does not exist."""
    from ..errors import KafkaError, LockedError

    if isinstance(error, LockedError):
        return False  # the previous worker of the slot may still hold the lock
    if isinstance(error, (ValueError, TypeError)):  # ConfigError and OffsetFileError too
        return True
    name = getattr(error, "name", "") if isinstance(error, KafkaError) else ""
    return name.lstrip("_") in _PERMANENT_KAFKA_ERRORS


def _describe_error(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}".rstrip(": ")


_child: dict[str, Any] = {}  # conn, lock, slot, num_workers, stop: set in a worker process


def current_slot() -> tuple[int, int] | None:
    """``(worker_slot, num_workers)`` inside a worker process started by rdk.workers, else None.

    Returns:
        ``(worker_slot, num_workers)``, or None outside a worker process.
    """
    if "slot" not in _child:
        return None
    return _child["slot"], _child["num_workers"]


def request_stop() -> None:
    """Inside a worker: ask the parent to stop the whole pool gracefully (e.g. work is done).

    Raises:
        RuntimeError: Not inside a worker process started by rdk.workers.
    """
    if "conn" not in _child:
        raise RuntimeError("request_stop() works only inside a worker process started by rdk.workers")
    _send(("stop",))


def _send(msg: tuple) -> None:
    conn = _child.get("conn")
    if conn is None:
        return
    # OSError, ValueError: the parent is gone; the death signal will stop us
    with _child["lock"], contextlib.suppress(OSError, ValueError):
        conn.send(msg)


def _figure(obj: Any, name: str) -> int:
    value = obj.get(name, 0) if isinstance(obj, Mapping) else getattr(obj, name, 0)
    return int(value or 0)


def _stats_payload(info: Any) -> dict:
    """The parts of a consumer stats info worth shipping to the parent (no rdkafka_stats)."""
    parts = info.get("partitions") if isinstance(info, Mapping) else getattr(info, "partitions", None)
    per: dict[int, dict[str, int]] = {}
    items: Iterable[tuple[Any, Any]]
    if isinstance(parts, Mapping):
        items = parts.items()
    else:  # a list of per-partition objects carrying .partition
        items = ((_figure(p, "partition"), p) for p in (parts or ()))
    for p, figs in items:
        per[int(p)] = {name: _figure(figs, name) for name in FIGURES}
    payload: dict[str, Any] = {name: _figure(info, name) for name in FIGURES}
    payload["partitions"] = per
    from ..share import ShareStats

    if isinstance(info, ShareStats):
        payload["share"] = {name: _figure(info, name) for name in SHARE_FIGURES}
    return payload


def _forward_stats(info: Any) -> None:
    """The stats_callback a worker's consumer gets: ship the figures to the parent."""
    _send(("stats", _stats_payload(info)))


def _set_parent_death_signal() -> None:
    """Linux: SIGTERM this worker if the parent dies without stopping it."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass


def worker_main(slot: int, num_workers: int, factory: Callable, conn: Any,
                 forward_stats: bool, stop_timeout: float, parent_pid: int,
                 group_id: str | None = None) -> None:
    """Body of worker process ``slot``: build, start, wait for the stop signal, stop."""
    stop = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    _set_parent_death_signal()
    if os.getppid() != parent_pid:  # the parent died before we could ask to follow it
        raise SystemExit(1)
    _child.update(conn=conn, lock=threading.Lock(), slot=slot, num_workers=num_workers, stop=stop)
    kwargs: dict[str, Any] = ({"group_id": group_id} if group_id is not None
                              else {"worker_slot": slot, "num_workers": num_workers})
    if forward_stats:
        kwargs["stats_callback"] = _forward_stats
    try:
        consumer = factory(**kwargs)
        for method in ("start", "stop"):
            if not callable(getattr(consumer, method, None)):
                raise TypeError(f"consumer_factory returned {type(consumer).__name__}, which has "
                                f"no {method}() method; return an rdk.Consumer (or an object "
                                "with start() and stop(timeout))")
        partitions = consumer.start()
    except BaseException as e:
        log.exception("worker slot %d (pid %d): the consumer failed to start", slot, os.getpid())
        _send(("failed", _describe_error(e), _is_permanent(e), "start"))
        raise SystemExit(1) from None
    owned = [int(p) if isinstance(p, int) else (str(p[0]), int(p[1])) for p in (partitions or ())]
    _send(("started", os.getpid(), sorted(owned)))
    while not stop.wait(1.0):
        err = _consumer_failure(consumer)
        if err is not None:
            log.error("worker slot %d (pid %d): consumer failed: %s", slot, os.getpid(), err)
            _send(("failed", _describe_error(err), False, "run"))
            with contextlib.suppress(BaseException):
                consumer.stop(min(stop_timeout, 5.0))
            raise SystemExit(1)
    try:
        consumer.stop(stop_timeout)
    except BaseException as e:
        log.exception("worker slot %d (pid %d): stopping the consumer failed", slot, os.getpid())
        _send(("failed", _describe_error(e), False, "stop"))
        raise SystemExit(1) from None
    _send(("stopped",))
    raise SystemExit(0)


def _consumer_failure(consumer: Any) -> Any:
    """A fatal error the consumer reports about itself (``.error``/``.failed``), if any."""
    for name in ("fatal_error", "error"):
        err = getattr(consumer, name, None)
        if isinstance(err, BaseException):
            return err
    return None
