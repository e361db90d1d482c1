"""KafkaOffsetRangeCalculatorSuite's cases against rdkafka's split_ranges (no broker)."""

from __future__ import annotations

import pytest

from rdk.spark.planner import split_ranges

pytestmark = pytest.mark.spark

T1, T2, T3 = ("t1", 1), ("t2", 1), ("t3", 1)


def ranges(spec: dict, min_partitions: int | None = None, max_records: int | None = None):
    """spec: {tp: (from, until)} -> [(topic, from, until)] in plan order."""
    starts = {tp: a for tp, (a, _) in spec.items()}
    ends = {tp: b for tp, (_, b) in spec.items()}
    return [(r.topic, r.start, r.end)
            for r in split_ranges(starts, ends, min_partitions, max_records)]


@pytest.mark.parametrize(("spec", "min_partitions", "expected"), [
    # with no minPartition: N TopicPartitions to N offset ranges; empty ranges ignored
    ({T1: (1, 2)}, None, [("t1", 1, 2)]),
    ({T1: (1, 2), T2: (1, 1)}, None, [("t1", 1, 2)]),
    # N TopicPartitions to N offset ranges (3)
    ({T1: (1, 2), T2: (1, 2), T3: (1, 2)}, 3, [("t1", 1, 2), ("t2", 1, 2), ("t3", 1, 2)]),
    # 1 TopicPartition to N offset ranges (4)
    ({T1: (1, 5)}, 4, [("t1", 1, 2), ("t1", 2, 3), ("t1", 3, 4), ("t1", 4, 5)]),
    # N skewed TopicPartitions to M offset ranges (4)
    ({T1: (1, 5), T2: (1, 21)}, 4,
     [("t1", 1, 5), ("t2", 1, 7), ("t2", 7, 14), ("t2", 14, 21)]),
    # SPARK-30656: ignore empty ranges and split the rest (4)
    ({T1: (1, 1), T2: (1, 21)}, 4,
     [("t2", 1, 6), ("t2", 6, 11), ("t2", 11, 16), ("t2", 16, 21)]),
    # SPARK-30656: N very skewed TopicPartitions to M offset ranges (4)
    ({T1: (1, 2), T2: (1, 1001)}, 4,
     [("t1", 1, 2), ("t2", 1, 334), ("t2", 334, 667), ("t2", 667, 1001)]),
    # SPARK-30656: minPartitions less than the length of topic partitions (1)
    ({T1: (1, 5), T2: (1, 21)}, 1, [("t1", 1, 5), ("t2", 1, 21)]),
    # range inexact multiple of minPartitions (3)
    ({T1: (1, 11)}, 3, [("t1", 1, 4), ("t1", 4, 7), ("t1", 7, 11)]),
    # empty ranges ignored (4)
    ({T1: (1, 5), T2: (1, 21), T3: (1, 1)}, 4,
     [("t1", 1, 5), ("t2", 1, 7), ("t2", 7, 14), ("t2", 14, 21)]),
    # SPARK-28489: never drop offsets (6)
    ({T1: (0, 10), T2: (0, 10), T3: (0, 1)}, 6,
     [("t1", 0, 3), ("t1", 3, 6), ("t1", 6, 10), ("t2", 0, 3), ("t2", 3, 6), ("t2", 6, 10),
      ("t3", 0, 1)]),
    # SPARK-36576: 0 small unsplit ranges and 3 large split ranges (9)
    ({T1: (0, 10000), T2: (0, 15000), T3: (0, 20000)}, 9,
     [("t1", 0, 5000), ("t1", 5000, 10000), ("t2", 0, 5000), ("t2", 5000, 10000),
      ("t2", 10000, 15000), ("t3", 0, 5000), ("t3", 5000, 10000), ("t3", 10000, 15000),
      ("t3", 15000, 20000)]),
    # SPARK-36576: 1 small unsplit range and 2 large split ranges (6)
    ({T1: (0, 500), T2: (0, 12000), T3: (0, 15001)}, 6,
     [("t1", 0, 500), ("t2", 0, 6000), ("t2", 6000, 12000), ("t3", 0, 5000),
      ("t3", 5000, 10000), ("t3", 10000, 15001)]),
    # SPARK-36576: 2 small unsplit ranges and 1 large split range (6)
    ({T1: (0, 1), T2: (0, 1), T3: (0, 10000)}, 6,
     [("t1", 0, 1), ("t2", 0, 1), ("t3", 0, 2500), ("t3", 2500, 5000), ("t3", 5000, 7500),
      ("t3", 7500, 10000)]),
    # SPARK-46798 (locations are Spark's own; the ranges): unsplit (3) and split (4)
    ({T1: (0, 1), T2: (0, 1), T3: (0, 1)}, 3, [("t1", 0, 1), ("t2", 0, 1), ("t3", 0, 1)]),
    ({T1: (0, 1), T2: (0, 1), T3: (0, 2)}, 4,
     [("t1", 0, 1), ("t2", 0, 1), ("t3", 0, 1), ("t3", 1, 2)]),
])
def test_ranges_match_the_built_in_calculator(spec, min_partitions, expected):
    assert ranges(spec, min_partitions) == expected


def test_max_records_per_partition_caps_every_piece():
    got = ranges({T1: (0, 10), T2: (5, 8)}, None, max_records=4)
    assert got == [("t1", 0, 3), ("t1", 3, 6), ("t1", 6, 10), ("t2", 5, 8)]
    assert all(b - a <= 4 for _, a, b in got)
    # with minPartitions: whichever asks for more pieces wins
    assert len(ranges({T1: (0, 100)}, 2, max_records=10)) == 10
    assert len(ranges({T1: (0, 100)}, 20, max_records=10)) == 20
