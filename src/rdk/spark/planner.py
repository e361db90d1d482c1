"""Driver-side Kafka lookups: which partitions to read and their earliest / latest offsets.

``latest`` is the true end of each partition on every broker: ListOffsets gives a first
answer, then a short fetch from just below it returns the Fetch response's high
watermark (Tansu answers ListOffsets(latest) with the last batch's *base* offset + 1).
All partitions of a topic are fetched at once on one queue.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Iterable, Mapping
from itertools import pairwise

from pyspark.sql.datasource import InputPartition

from .. import _binding
from .._binding import ERROR_CODES
from .._partitions import true_watermarks
from ..errors import ConfigError, KafkaError
from .options import EARLIEST, LATEST, Offsets, ReadOptions

__all__ = ["TP", "OffsetRange", "Planner", "split_ranges"]

log = logging.getLogger("rdk.spark")

TP = tuple[str, int]
_UNKNOWN = ERROR_CODES["UNKNOWN_TOPIC_OR_PART"]


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


def split_ranges(starts: Mapping[TP, int], ends: Mapping[TP, int],
                 min_partitions: int | None) -> list[OffsetRange]:
    """One range per topic-partition with data; with ``min_partitions`` larger than that
    count, big ranges are cut (in proportion to their size) so there are at least that many."""
    sizes = {tp: ends[tp] - starts[tp] for tp in sorted(ends) if ends[tp] > starts[tp]}
    total = sum(sizes.values())
    out: list[OffsetRange] = []
    for (topic, p), size in sizes.items():
        pieces = 1
        if min_partitions and min_partitions > len(sizes):
            pieces = min(size, max(1, math.ceil(size * min_partitions / total)))
        begin = starts[(topic, p)]
        cuts = [begin + size * k // pieces for k in range(pieces + 1)]
        out.extend(OffsetRange(topic, p, a, b) for a, b in pairwise(cuts))
    return out


class Planner:
    """Lookups for one query on the driver; ``close()`` (or ``with``) frees the handle."""

    def __init__(self, opts: ReadOptions, timeout: float = 30.0) -> None:
        self.opts = opts
        self.timeout = timeout
        props = {**opts.kafka, "enable.partition.eof": True}
        props.setdefault("fetch.wait.max.ms", "10")  # a stopped fetch must not hold the next
        self._client = _binding.Client("consumer", props)
        self.all_partitions: set[TP] = set()

    # -- partitions ---------------------------------------------------------------
    def topic_partitions(self, *, missing_ok: bool) -> list[TP]:
        """The partitions this query reads (after worker-slot filtering), sorted.

        An unknown subscribed or assigned topic raises KafkaError unless ``missing_ok``
        (a stream waits for it to appear).
        """
        counts = {t.name: len(t.partitions) for t in self._client.metadata(None, self.timeout)
                  if t.error is None or t.partitions}
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
    def watermarks(self, tps: Iterable[TP]) -> dict[TP, tuple[int, int]]:
        """(low, true high) per topic-partition (:func:`rdk._partitions.true_watermarks`)."""
        tps = list(tps)
        by_topic: dict[str, list[int]] = {}
        for t, p in tps:
            by_topic.setdefault(t, []).append(p)
        marks = {(t, p): m for t, parts in by_topic.items()
                 for p, m in true_watermarks(self._client, t, parts, self.timeout).items()}
        return {tp: marks[tp] for tp in tps}

    def resolve(self, spec: str | Offsets, tps: list[TP], option: str,
                marks: dict[TP, tuple[int, int]] | None = None) -> dict[TP, int]:
        """Concrete offsets for ``tps`` from 'earliest' / 'latest' / JSON (-2 / -1)."""
        if isinstance(spec, dict):
            given = {(t, p): off for t, parts in spec.items() for p, off in parts.items()}
            unknown = sorted(set(given) - self.all_partitions)
            if unknown:
                t, p = unknown[0]
                raise ConfigError(f"rdkafka option '{option}' names {t}-{p}, which this query "
                                  "does not read (unknown topic or partition)")
            missing = sorted(set(tps) - set(given))
            if missing:
                raise ConfigError(
                    f"rdkafka option '{option}' must give an offset for every partition read; "
                    f"missing {', '.join(f'{t}-{p}' for t, p in missing)} "
                    "(use -2 for earliest, -1 for latest)")
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
