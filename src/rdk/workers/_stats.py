"""rdk.workers: what one worker slot last reported (a leaf: the supervision fills it and the
pool's API hands it out, and neither needs the other for it)."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["WorkerStats"]


@dataclass(frozen=True)
class WorkerStats:
    """The latest stats one worker slot reported."""

    slot: int
    """The worker slot."""
    pid: int
    """The worker process's pid."""
    waiting_kafka: int
    """The worker consumer's ``waiting_kafka`` (see [rdk.ConsumerStats][])."""
    waiting_local: int
    """The worker consumer's ``waiting_local``."""
    kafka_log_size: int
    """The worker consumer's ``kafka_log_size``."""
    partitions: dict[int, dict[str, int]] = field(default_factory=dict)
    """``{partition: {"waiting_kafka", "waiting_local", "kafka_log_size"}}``."""
    received: float = 0.0  # time.monotonic() in the parent when it arrived
    """``time.monotonic()`` in the parent when the report arrived."""
    share: dict[str, int] = field(default_factory=dict)  # a ShareConsumer's counts (SHARE_FIGURES)
    """A share consumer's counts (``delivered``, ``accepted``...); ``{}`` for other consumers."""
