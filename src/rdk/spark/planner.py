"""Driver-side Kafka lookups: which partitions to read and their earliest / latest offsets.

``latest`` is the true end of each partition on every broker: ListOffsets gives a first
answer, then a short fetch from just below it returns the Fetch response's high
watermark (Tansu answers ListOffsets(latest) with the last batch's *base* offset + 1).
All partitions of a topic are fetched at once on one queue. Under
``kafka.isolation.level=read_committed`` the end is the last stable offset instead: the
offset where a read_committed fetch reports the end of the partition.

Timestamp positions (startingTimestamp...) are the broker's ListOffsets by timestamp
(``rd_kafka_offsets_for_times``): the earliest offset whose timestamp is at or after it.
"""

from __future__ import annotations

import logging
import math
import re
import time
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from typing import TypeVar

from pyspark.sql.datasource import InputPartition

from .. import _binding
from .._binding import ERROR_CODES
from .._binding.fetch import Fetcher
from .._binding.partitions import (
    PARTITION_EOF,
    batch_errors,
    error_text,
    listed_watermarks,
    offsets_for_times,
    true_watermarks,
)
from ..errors import ConfigError, KafkaError
from .options import EARLIEST, LATEST, Offsets, ReadOptions, Timestamps

# the data source's internals; rdk.spark re-exports what users see
__all__: list[str] = []

log = logging.getLogger("rdk.spark")

TP = tuple[str, int]
_UNKNOWN = ERROR_CODES["UNKNOWN_TOPIC_OR_PART"]
_TIMED_OUT = ERROR_CODES["_TIMED_OUT"]
_T = TypeVar("_T")


class NoOffsetForTimestamp(ConfigError):
    """startingOffsetsByTimestampStrategy=error and a partition has no record at or after the
    starting timestamp."""


class OffsetRange(InputPartition):
    """One Spark input partition: offsets [start, end) of one Kafka topic-partition."""

    def __init__(self, topic: str, partition: int, start: int, end: int) -> None:
        self.topic, self.partition, self.start, self.end = topic, partition, start, end
        self.value = (topic, partition, start, end)

    def __repr__(self) -> str:
        return f"OffsetRange({self.topic}-{self.partition} [{self.start}, {self.end}))"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OffsetRange) and other.value == self.value

    def __hash__(self) -> int:
        return hash(self.value)


def _share(size: int, total: int, parts: int) -> int:
    """``size``'s share of ``parts`` pieces, rounded half up, at least 1."""
    return max(math.floor(size * parts / total + 0.5), 1)


def split_ranges(starts: Mapping[TP, int], ends: Mapping[TP, int],
                 min_partitions: int | None,
                 max_records: int | None = None) -> list[OffsetRange]:
    """The built-in connector's ranges: one per topic-partition with data. With
    ``min_partitions`` above that count, ranges whose share of ``min_partitions`` (by size,
    rounded) is more than one are cut into that many nearly equal pieces, the small ones
    staying whole and out of the proportion; so there are about ``min_partitions``. With
    ``max_records`` (maxRecordsPerPartition) no piece holds more offsets than that."""
    sizes = {tp: ends[tp] - starts[tp] for tp in sorted(ends) if ends[tp] > starts[tp]}
    pieces = dict.fromkeys(sizes, 1)
    if min_partitions and len(sizes) < min_partitions:
        total = sum(sizes.values())
        whole = {tp for tp, n in sizes.items() if _share(n, total, min_partitions) == 1}
        cut_total = total - sum(sizes[tp] for tp in whole)
        cut_parts = max(min_partitions - len(whole), 1)
        for tp, n in sizes.items():
            if tp not in whole:
                pieces[tp] = _share(n, cut_total, cut_parts)
    out: list[OffsetRange] = []
    for (topic, p), size in sizes.items():
        parts = pieces[(topic, p)]
        if max_records:
            parts = max(parts, math.ceil(size / max_records))
        begin, left = starts[(topic, p)], size
        for k in range(parts):
            step = left // (parts - k)  # the last pieces take the remainder
            if step:
                out.append(OffsetRange(topic, p, begin, begin + step))
            begin, left = begin + step, left - step
    return out


class Planner:
    """Lookups for one query on the driver; ``close()`` (or ``with``) frees the handle."""

    def __init__(self, opts: ReadOptions, timeout: float = 30.0) -> None:
        self.opts = opts
        self.timeout = timeout
        props = {**opts.kafka, "enable.partition.eof": True, "enable.auto.commit": "false"}
        props.setdefault("fetch.wait.max.ms", "10")  # a stopped fetch must not hold the next
        self.read_committed = props.get("isolation.level") == "read_committed"
        self._client = _binding.Client("consumer", props)
        self.all_partitions: set[TP] = set()

    def _retrying(self, what: str, call: Callable[[], _T]) -> _T:
        """``call()``, retried fetchOffset.numRetries times, fetchOffset.retryIntervalMs apart,
        when it fails with a retriable Kafka error or a timeout."""
        o = self.opts
        for attempt in range(o.fetch_offset_retries + 1):
            try:
                return call()
            except KafkaError as e:
                if attempt >= o.fetch_offset_retries or not (e.retriable or e.code == _TIMED_OUT):
                    raise
                log.warning("rdkafka: %s failed (%s); retry %d of %d in %d ms "
                            "(fetchOffset.numRetries, fetchOffset.retryIntervalMs)", what, e,
                            attempt + 1, o.fetch_offset_retries, o.fetch_offset_retry_interval_ms)
                time.sleep(o.fetch_offset_retry_interval_ms / 1000)
        raise AssertionError("unreachable")

    # -- partitions ---------------------------------------------------------------
    def topic_partitions(self, *, missing_ok: bool) -> list[TP]:
        """The partitions this query reads (after worker-slot filtering), sorted.

        An unknown subscribed or assigned topic raises KafkaError unless ``missing_ok``
        (a stream waits for it to appear).
        """
        topics = self._retrying("metadata", lambda: self._client.metadata(None, self.timeout))
        counts = {t.name: len(t.partitions) for t in topics if t.error is None or t.partitions}
        o = self.opts
        wanted: dict[str, Iterable[int]] = {}
        if o.strategy == "subscribe":
            for t in o.topics:
                if t in counts:
                    wanted[t] = range(counts[t])
                elif not missing_ok:
                    raise KafkaError(_UNKNOWN, context=f"option 'subscribe': topic {t!r}")
        elif o.strategy == "assign":
            for t, parts in o.assignment.items():
                if t not in counts:
                    if missing_ok:
                        continue
                    raise KafkaError(_UNKNOWN, context=f"option 'assign': topic {t!r}")
                bad = [p for p in parts if p >= counts[t]]
                if bad:
                    raise KafkaError(_UNKNOWN, context=(
                        f"option 'assign': topic {t!r} has {counts[t]} partitions, "
                        f"no partition {bad[0]}"))
                wanted[t] = parts
        else:
            rx = re.compile(o.pattern or "")
            wanted = {t: range(n) for t, n in counts.items()
                      if not t.startswith("__") and rx.fullmatch(t)}
        self.all_partitions = {(t, p) for t, parts in wanted.items() for p in parts}
        if o.num_workers > 1 and o.strategy != "assign":
            for t in wanted:
                if counts[t] < o.num_workers:
                    raise ConfigError(
                        f"rdkafka: topic {t!r} has {counts[t]} partitions, fewer than "
                        f"numWorkers={o.num_workers}; worker slots would be left idle")
        return sorted(tp for tp in self.all_partitions if o.owns(tp[1]))

    # -- offsets ------------------------------------------------------------------
    def watermarks(self, tps: Iterable[TP], *, missing_ok: bool = False) -> dict[TP, tuple[int, int]]:
        """(low, end) per topic-partition: the true high watermark
        (:func:`rdk._binding.partitions.true_watermarks`), or under read_committed the last stable
        offset. ``missing_ok``: a topic deleted since it was listed (its lookup answers
        UNKNOWN_TOPIC_OR_PART) is left out, as if it had not been listed."""
        tps = list(tps)
        by_topic: dict[str, list[int]] = {}
        for t, p in tps:
            by_topic.setdefault(t, []).append(p)
        ends = self._stable_ends if self.read_committed else self._true_ends
        marks: dict[TP, tuple[int, int]] = {}
        for t, parts in by_topic.items():
            try:
                found = self._retrying(f"offsets of {t}", partial(ends, t, parts))
            except KafkaError as e:
                if missing_ok and e.code == _UNKNOWN:
                    log.warning("rdkafka: topic %r is gone (deleted since it was listed): %s", t, e)
                    continue
                raise
            marks.update(((t, p), m) for p, m in found.items())
        return {tp: marks[tp] for tp in tps if tp in marks}

    def _true_ends(self, topic: str, parts: list[int]) -> dict[int, tuple[int, int]]:
        return true_watermarks(self._client, topic, parts, self.timeout)

    def _stable_ends(self, topic: str, parts: list[int]) -> dict[int, tuple[int, int]]:
        """(low, last stable offset): a read_committed fetch reports the end of a partition
        at its last stable offset. ListOffsets is only a starting hint (Tansu answers
        ListOffsets(latest, read_committed) with 0), so the fetch starts just below it."""
        listed = listed_watermarks(self._client, topic, parts, self.timeout)
        out: dict[int, tuple[int, int]] = {}
        fetcher = Fetcher(self._client, topic, max_messages=10000)
        try:
            for p, (lo, hi) in listed.items():
                fetcher.start(p, max(lo, hi - 1))
            deadline = time.monotonic() + self.timeout
            while len(out) < len(listed):
                if time.monotonic() > deadline:
                    raise KafkaError(_TIMED_OUT, context=(
                        f"last stable offsets of {topic} {sorted(set(listed) - set(out))}"))
                b = fetcher.fetch(100)
                for i, code in batch_errors(b):
                    p = int(b.partition[i])
                    if code == PARTITION_EOF:
                        out[p] = (listed[p][0], int(b.offset[i]))
                    else:
                        raise KafkaError(code, error_text(b, i), context=f"fetch {topic}[{p}]")
        finally:
            fetcher.close()
        return out

    def offsets_for_times(self, stamps: Mapping[TP, int]) -> dict[TP, int]:
        """The earliest offset whose timestamp is >= the given ms, per topic-partition
        (-1 where there is none)."""
        def call() -> dict[TP, int]:
            return offsets_for_times(self._client.rk, ((t, p, ms) for (t, p), ms in stamps.items()),
                                     int(self.timeout * 1000), "offsets_for_times",
                                     "offsets for times of")
        return self._retrying("offsets for times", call) if stamps else {}

    def record_timestamps(self, positions: Mapping[TP, int]) -> dict[TP, int | None]:
        """The timestamp of the first record at or after each position (None: none there)."""
        out: dict[TP, int | None] = {}
        by_topic: dict[str, dict[int, int]] = {}
        for (t, p), off in positions.items():
            by_topic.setdefault(t, {})[p] = off
        for topic, starts in by_topic.items():
            fetcher = Fetcher(self._client, topic, max_messages=100)
            try:
                for p, off in starts.items():
                    fetcher.start(p, off)
                deadline = time.monotonic() + self.timeout
                while len(out) < len(positions) and any((topic, p) not in out for p in starts):
                    if time.monotonic() > deadline:
                        raise KafkaError(_TIMED_OUT, context=f"record timestamps of {topic}")
                    b = fetcher.fetch(100)
                    for i in range(b.n):
                        tp = (topic, int(b.partition[i]))
                        if tp in out or tp not in positions:
                            continue
                        if not b.err[i]:
                            out[tp] = int(b.timestamp[i])
                        elif b.err[i] == PARTITION_EOF:
                            out[tp] = None
                        else:
                            raise KafkaError(int(b.err[i]), error_text(b, i),
                                             context=f"fetch {topic}[{tp[1]}]")
            finally:
                fetcher.close()
        return out

    def _by_timestamp(self, spec: Timestamps, tps: list[TP], option: str,
                      marks: dict[TP, tuple[int, int]] | None) -> dict[TP, int]:
        starting = option.startswith("starting")
        if spec.by_partition is not None:
            option = option.replace("Offsets", "OffsetsByTimestamp")
            stamps = self._every_partition(spec.by_partition, tps, option, "timestamp")
        else:
            option = option.replace("Offsets", "Timestamp")
            stamps = dict.fromkeys(tps, spec.everywhere or 0)
        found = self.offsets_for_times(stamps)
        answered = {tp: off for tp, off in found.items() if off >= 0}
        for tp, ts in self.record_timestamps(answered).items():
            if ts is not None and ts < stamps[tp]:
                # Tansu answers a timestamp after its last record with offset 0: a record
                # older than the timestamp is never the answer, so there is none
                log.warning("rdkafka: the broker answered offset %d of %s-%d for timestamp %d, "
                            "but that record's timestamp is %d; taken as no such offset",
                            found[tp], tp[0], tp[1], stamps[tp], ts)
                found[tp] = -1
        missing = [tp for tp in tps if found.get(tp, -1) < 0]
        if missing and starting and self.opts.by_timestamp_strategy == "error":
            t, p = missing[0]
            raise NoOffsetForTimestamp(
                f"rdkafka option '{option}': no offset of {t}-{p} has a timestamp at or after "
                f"{stamps[(t, p)]} (startingOffsetsByTimestampStrategy=error; set it to "
                "'latest' to start such partitions at their end)")
        if missing:  # no such record: the end of the partition, as the built-in connector
            if marks is None:
                marks = self.watermarks(missing)
            for tp in missing:
                found[tp] = marks[tp][1]
        return {tp: found[tp] for tp in tps}

    def _every_partition(self, spec: Offsets, tps: list[TP], option: str,
                         what: str) -> dict[TP, int]:
        given: dict[TP, int] = {}
        for t, parts in spec.items():
            if isinstance(parts, int):  # a topic-level offset: every partition read of it
                if not any(tp[0] == t for tp in self.all_partitions):
                    raise ConfigError(f"rdkafka option '{option}' gives topic {t!r} an offset, "
                                      "but this query reads no partition of it")
                given.update((tp, parts) for tp in tps if tp[0] == t)
            else:
                given.update(((t, p), off) for p, off in parts.items())
        unknown = sorted(set(given) - self.all_partitions)
        if unknown:
            t, p = unknown[0]
            raise ConfigError(f"rdkafka option '{option}' names {t}-{p}, which this query "
                              "does not read (unknown topic or partition)")
        missing = sorted(set(tps) - set(given))
        if missing:
            hint = " (use -2 for earliest, -1 for latest)" if what == "offset" else ""
            raise ConfigError(
                f"rdkafka option '{option}' must give {'an' if what == 'offset' else 'a'} "
                f"{what} for every partition read; missing "
                f"{', '.join(f'{t}-{p}' for t, p in missing)}{hint}")
        return given

    def resolve(self, spec: str | Offsets | Timestamps, tps: list[TP], option: str,
                marks: dict[TP, tuple[int, int]] | None = None) -> dict[TP, int]:
        """Concrete offsets for ``tps`` from 'earliest' / 'latest' / JSON (-2 / -1) or a
        timestamp position."""
        if isinstance(spec, Timestamps):
            return self._by_timestamp(spec, tps, option, marks)
        if isinstance(spec, dict):
            given = self._every_partition(spec, tps, option, "offset")
        else:
            word = EARLIEST if spec == "earliest" else LATEST
            given = dict.fromkeys(tps, word)
        if marks is None:
            need = [tp for tp in tps if given[tp] < 0]
            marks = self.watermarks(need) if need else {}
        out = {}
        for tp in tps:
            off = given[tp]
            if off == EARLIEST:
                off = marks[tp][0]
            elif off == LATEST:
                off = marks[tp][1]
            out[tp] = off
        return out

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> Planner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
