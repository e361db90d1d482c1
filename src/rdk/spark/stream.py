"""Structured Streaming reading: ``spark.readStream.format("rdkafka")``.

Offsets are JSON ``{topic: {partition: nextOffset}}`` (Spark keeps them in the query's
checkpoint, so a restart resumes exactly there; no offset files are used). Each
micro-batch reads [start, end) of every partition with ``read_range``, as batch reads do.
``maxOffsetsPerTrigger`` is Spark's ReadLimit (``ReadMaxRows``), shared between partitions
in proportion to their backlog; Trigger.AvailableNow reads up to the offsets that were
latest when the query started. Partitions that appear later are read from the earliest.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from typing import cast

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from .options import ReadOptions
from .planner import TP, OffsetRange, Planner, split_ranges
from .reader import data_loss, read_range

__all__ = ["KafkaStreamReader", "offsets_from_json", "offsets_to_json", "rate_limit"]

log = logging.getLogger("rdk.spark")


def offsets_to_json(offsets: Mapping[TP, int]) -> dict:
    """{(topic, p): off} as Spark's offset dict {topic: {"p": off}}, in a fixed order."""
    out: dict[str, dict[str, int]] = {}
    for (t, p) in sorted(offsets):
        out.setdefault(t, {})[str(p)] = int(offsets[(t, p)])
    return out


def offsets_from_json(value: Mapping | None) -> dict[TP, int]:
    return {(t, int(p)): int(off) for t, parts in (value or {}).items() for p, off in parts.items()}


def rate_limit(begin: Mapping[TP, int], available: Mapping[TP, int], max_rows: int) -> dict[TP, int]:
    """Ends that admit at most ``max_rows`` offsets in total, shared in proportion to each
    partition's backlog (largest remainders get the leftover rows)."""
    lag = {tp: available[tp] - begin[tp] for tp in available if available[tp] > begin[tp]}
    total = sum(lag.values())
    if total <= max_rows:
        return dict(available)
    share = {tp: n * max_rows // total for tp, n in lag.items()}
    left = max_rows - sum(share.values())
    for tp in sorted(lag, key=lambda tp: (-(lag[tp] * max_rows % total), tp))[:left]:
        share[tp] += 1
    return {tp: begin[tp] + share.get(tp, 0) for tp in available}


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """The micro-batch stream reader; its driver-side handle is made on first use."""

    def __init__(self, opts: ReadOptions) -> None:
        self.opts = opts
        self._planner: Planner | None = None
        self._target: dict[TP, int] | None = None  # Trigger.AvailableNow's last offsets

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
        return offsets_to_json(planner.resolve(self.opts.starting, tps, "startingOffsets"))

    def getDefaultReadLimit(self) -> ReadLimit:
        n = self.opts.max_offsets_per_trigger
        return ReadMaxRows(n) if n else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        planner = self.planner
        tps = planner.topic_partitions(missing_ok=True)
        self._target = {tp: hi for tp, (_, hi) in planner.watermarks(tps).items()}

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        begin = offsets_from_json(start)
        planner = self.planner
        tps = planner.topic_partitions(missing_ok=True)
        marks = planner.watermarks(tps)
        available: dict[TP, int] = {}
        for tp in tps:
            low, high = marks[tp]
            if tp not in begin:  # a partition that appeared: read it from the earliest
                begin[tp] = low
            if self._target is not None:
                high = min(high, self._target.get(tp, begin[tp]))
            available[tp] = max(high, begin[tp])
        if isinstance(limit, ReadMaxRows):
            available = rate_limit(begin, available, limit.max_rows)
        elif not isinstance(limit, ReadAllAvailable):
            raise TypeError(f"rdkafka: unsupported read limit {limit!r}")
        end = {**begin, **available}  # partitions no longer listed keep their offsets
        if end == offsets_from_json(start):
            return start
        return offsets_to_json(end)

    def partitions(self, start: dict, end: dict) -> list[OffsetRange]:
        begin = offsets_from_json(start)
        until = offsets_from_json(end)
        new = [tp for tp in until if tp not in begin]
        if new:
            begin.update(self.planner.resolve("earliest", new, "startingOffsets"))
        for tp in list(until):
            if until[tp] < begin[tp]:
                data_loss(self.opts, f"{tp[0]}-{tp[1]} went back from offset {begin[tp]} to "
                                     f"{until[tp]}")
                until[tp] = begin[tp]
        return split_ranges(begin, until, self.opts.min_partitions)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_range(self.opts, cast(OffsetRange, partition))

    def commit(self, end: dict) -> None:
        """Spark's checkpoint holds the progress; nothing is committed to Kafka."""

    def stop(self) -> None:
        if self._planner is not None:
            self._planner.close()
            self._planner = None
