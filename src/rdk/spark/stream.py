"""Structured Streaming reading: ``spark.readStream.format("rdkafka")``.

Offsets are JSON ``{topic: {partition: nextOffset}}`` (Spark keeps them in the query's
checkpoint, so a restart resumes exactly there; no offset files are used). Each
micro-batch reads [start, end) of every partition with ``read_range``, as batch reads do.
``maxOffsetsPerTrigger`` is Spark's ReadLimit (``ReadMaxRows``), shared between partitions
in proportion to their backlog; ``minOffsetsPerTrigger`` is ``ReadMinRows``: a micro-batch
waits until that many offsets are available or ``maxTriggerDelay`` has passed since the last
one (pyspark's ReadMinRows carries no delay, so the source keeps the time itself).
Trigger.AvailableNow reads up to the offsets that were latest when the query started and
never waits for minOffsetsPerTrigger. Partitions that appear later are read from the
earliest. An end offset below the start (startingOffsets past the end, a re-created topic)
is data loss, as in the built-in connector: the query fails, or with failOnDataLoss=false
the stream goes on from the partition's current end.

The first micro-batch's end offset also carries, under the key ``"rdk:first"`` (a colon
cannot be in a topic name), the start it was planned from. Spark asks ``initialOffset()``
again when it re-runs a first micro-batch that a crash left uncommitted, and "latest" (or
"earliest" after retention, or a timestamp) may then resolve elsewhere; the built-in
connector writes its initial offsets into the checkpoint, which a Python source cannot
reach, so the range is kept in Spark's offset log instead and the re-run reads the same rows.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator, Mapping

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)

from .options import ReadOptions
from .planner import TP, OffsetRange, Planner, split_ranges
from .reader import DataLossError, data_loss, read_range

# the data source's internals; rdk.spark re-exports what users see
__all__ = ["offsets_behind_latest"]

log = logging.getLogger("rdk.spark")

#: key of the first micro-batch's end offset that holds the start it was planned from
FIRST_START = "rdk:first"


def offsets_to_json(offsets: Mapping[TP, int]) -> dict:
    """{(topic, p): off} as Spark's offset dict {topic: {"p": off}}, in a fixed order."""
    out: dict[str, dict[str, int]] = {}
    for (t, p) in sorted(offsets):
        out.setdefault(t, {})[str(p)] = int(offsets[(t, p)])
    return out


def offsets_from_json(value: Mapping | None) -> dict[TP, int]:
    """Spark's offset dict as {(topic, p): off} (the ``"rdk:first"`` record left out)."""
    return {(t, int(p)): int(off) for t, parts in (value or {}).items() if t != FIRST_START
            for p, off in parts.items()}


def rate_limit(begin: Mapping[TP, int], available: Mapping[TP, int], max_rows: int) -> dict[TP, int]:
    """Ends that admit at most ``max_rows`` offsets in total, shared in proportion to each
    partition's backlog (largest remainders get the leftover rows). A partition whose
    available end is below its start keeps that end (the caller reports the data loss)."""
    lag = {tp: available[tp] - begin[tp] for tp in available if available[tp] > begin[tp]}
    total = sum(lag.values())
    if total <= max_rows:
        return dict(available)
    share = {tp: n * max_rows // total for tp, n in lag.items()}
    left = max_rows - sum(share.values())
    for tp in sorted(lag, key=lambda tp: (-(lag[tp] * max_rows % total), tp))[:left]:
        share[tp] += 1
    return {tp: begin[tp] + share.get(tp, 0) if available[tp] >= begin[tp] else available[tp]
            for tp in available}


def offsets_behind_latest(source: object) -> dict[str, float] | None:
    """The built-in connector's ``minOffsetsBehindLatest`` / ``maxOffsetsBehindLatest`` /
    ``avgOffsetsBehindLatest`` for one source of a query progress
    (``query.lastProgress.sources[i]``, or its dict form), computed from its ``endOffset``
    and ``latestOffset``: pyspark's Python sources cannot add metrics to the progress
    themselves. None when the source reported no latest offset.

    Args:
        source: One source's progress: a ``SourceProgress`` or its dict form.

    Returns:
        ``{"minOffsetsBehindLatest", "maxOffsetsBehindLatest", "avgOffsetsBehindLatest"}``,
        or None.
    """
    def field(name: str) -> object:
        if isinstance(source, Mapping):
            return source.get(name)
        return getattr(source, name, None)

    def load(v: object) -> dict[TP, int]:
        value = json.loads(v) if isinstance(v, str) else v
        return offsets_from_json(value if isinstance(value, Mapping) else None)

    latest = field("latestOffset")
    if not latest or latest == "null":
        return None
    end = load(field("endOffset") or "{}")
    behind = [max(0, off - end.get(tp, off)) for tp, off in load(latest).items()]
    if not behind:
        return None
    return {"minOffsetsBehindLatest": float(min(behind)),
            "maxOffsetsBehindLatest": float(max(behind)),
            "avgOffsetsBehindLatest": sum(behind) / len(behind)}


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """The micro-batch stream reader; its driver-side handle is made on first use."""

    def __init__(self, opts: ReadOptions) -> None:
        self.opts = opts
        self._planner: Planner | None = None
        self._target: dict[TP, int] | None = None  # Trigger.AvailableNow's last offsets
        self._latest: dict[TP, int] | None = None  # for reportLatestOffset
        self._initial: dict[TP, int] | None = None  # what initialOffset() resolved
        # time.monotonic() of the last micro-batch minOffsetsPerTrigger let go (None: the
        # first one always goes, as in the built-in connector)
        self._last_trigger: float | None = None

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_planner"] = None  # executors only need the options
        return state

    @property
    def planner(self) -> Planner:
        if self._planner is None:
            self._planner = Planner(self.opts)
        return self._planner

    # -- offsets ------------------------------------------------------------------
    def initialOffset(self) -> dict:
        planner = self.planner
        tps = planner.topic_partitions(missing_ok=True)
        self._initial = planner.resolve(self.opts.starting, tps, "startingOffsets")
        return offsets_to_json(self._initial)

    def getDefaultReadLimit(self) -> ReadLimit:
        """ReadMinRows for minOffsetsPerTrigger (maxOffsetsPerTrigger then applies too: the
        Python API has no composite limit), else ReadMaxRows, else ReadAllAvailable."""
        o = self.opts
        if o.min_offsets_per_trigger:
            return ReadMinRows(o.min_offsets_per_trigger)
        n = o.max_offsets_per_trigger
        return ReadMaxRows(n) if n else ReadAllAvailable()

    def _check_target(self, marks: Mapping[TP, tuple[int, int]]) -> None:
        """Trigger.AvailableNow cannot reach offsets that vanished since it started (a topic
        deleted, re-created smaller or with fewer partitions): fail whatever failOnDataLoss
        says, as the built-in connector does, rather than end early or never."""
        target = self._target or {}
        lost = sorted(tp for tp in target if tp not in marks)
        if lost:
            raise DataLossError(
                "rdkafka: Trigger.AvailableNow: partitions of its target are gone while the "
                f"query ran: {', '.join(f'{t}-{p}' for t, p in lost)} (target partitions: "
                f"{len(target)}, now: {len(marks)}); was a topic deleted or re-created?")
        short = sorted(tp for tp in target if marks[tp][1] < target[tp])
        if short:
            raise DataLossError(
                "rdkafka: Trigger.AvailableNow: the latest offset of "
                + ", ".join(f"{t}-{p} is {marks[(t, p)][1]}, below its target {target[(t, p)]}"
                            for t, p in short)
                + "; was a topic deleted or re-created?")

    def reportLatestOffset(self) -> dict | None:
        """The latest offsets the last latestOffset call saw (the query progress's
        ``latestOffset``), as the built-in connector reports them."""
        return offsets_to_json(self._latest) if self._latest is not None else None

    def _delay(self, begin: Mapping[TP, int], available: Mapping[TP, int], min_rows: int) -> bool:
        """minOffsetsPerTrigger / maxTriggerDelay: whether this micro-batch waits."""
        now = time.monotonic()
        last = self._last_trigger
        if last is None or (now - last) * 1000 >= self.opts.max_trigger_delay_ms:
            self._last_trigger = now
            return False
        new = sum(max(0, available[tp] - begin[tp]) for tp in available)
        if new < min_rows:
            return True
        self._last_trigger = now
        return False

    def prepareForTriggerAvailableNow(self) -> None:
        planner = self.planner
        tps = planner.topic_partitions(missing_ok=True)
        self._target = {tp: hi for tp, (_, hi) in planner.watermarks(tps, missing_ok=True).items()}

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        begin = offsets_from_json(start)
        planner = self.planner
        tps = planner.topic_partitions(missing_ok=True)
        marks = planner.watermarks(tps, missing_ok=True)
        tps = [tp for tp in tps if tp in marks]  # a topic deleted meanwhile is gone
        if self._target is not None:
            self._check_target(marks)
        available: dict[TP, int] = {}
        for tp in tps:
            low, high = marks[tp]
            if tp not in begin:  # a partition that appeared: read it from the earliest
                begin[tp] = low
            if self._target is not None:
                high = min(high, max(self._target.get(tp, begin[tp]), begin[tp]))
            available[tp] = high
        self._latest = {**begin, **{tp: hi for tp, (_, hi) in marks.items()}}
        max_rows = None
        if isinstance(limit, ReadMaxRows):
            max_rows = limit.max_rows
        elif isinstance(limit, ReadMinRows):
            if self._target is None and self._delay(begin, available, limit.min_rows):
                return start
            max_rows = self.opts.max_offsets_per_trigger
        elif not isinstance(limit, ReadAllAvailable):
            raise TypeError(f"rdkafka: unsupported read limit {limit!r}")
        if max_rows:
            available = rate_limit(begin, available, max_rows)
        end = {**begin, **available}  # partitions no longer listed keep their offsets
        given = offsets_from_json(start)
        # the first micro-batch (Spark runs one even with no data): record its start
        first = FIRST_START not in start and given == self._initial
        if end == given and not first:
            return start
        out = offsets_to_json(end)
        if first:
            out[FIRST_START] = dict(start)
        return out

    def partitions(self, start: dict, end: dict) -> list[OffsetRange]:
        begin = offsets_from_json(start)
        until = offsets_from_json(end)
        first = end.get(FIRST_START)
        if isinstance(first, Mapping):  # the first micro-batch: plan from its recorded start
            recorded = offsets_from_json(first)
            if recorded != begin:
                log.info("rdkafka: re-running the first micro-batch from the start it was "
                         "planned from, %s (initialOffset() now resolves to %s)",
                         offsets_to_json(recorded), offsets_to_json(begin))
            begin = recorded
        new = [tp for tp in until if tp not in begin]
        if new:
            begin.update(self.planner.resolve("earliest", new, "startingOffsets"))
        for tp in list(until):
            if until[tp] < begin[tp]:
                data_loss(self.opts, f"the offset of {tp[0]}-{tp[1]} went back from "
                                     f"{begin[tp]} to {until[tp]} (a starting offset past the "
                                     "end of the partition, or the topic was re-created); "
                                     "some data may have been missed")
                until[tp] = begin[tp]
        return split_ranges(begin, until, self.opts.min_partitions,
                            self.opts.max_records_per_partition)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_range(self.opts, partition)

    def commit(self, end: dict) -> None:
        """Spark's checkpoint holds the progress; nothing is committed to Kafka."""

    def stop(self) -> None:
        if self._planner is not None:
            self._planner.close()
            self._planner = None
