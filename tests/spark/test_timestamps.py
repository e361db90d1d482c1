"""The built-in connector's timestamp options, on Tansu (the mock cluster has no time index).

Tansu answers ListOffsets by timestamp with the append time of the records: here the
records are produced in two phases with a deliberate gap between them, so a timestamp in
the gap separates the phases whichever of create time or append time the broker uses.
"""

from __future__ import annotations

import json
import time

import pytest

pytestmark = pytest.mark.spark


@pytest.fixture
def two_phases(tansu, new_topic, produce):
    """A 2-partition Tansu topic: phase A (offsets 0-4 on p0, 0-2 on p1), a time gap, then
    phase B (5-9 on p0, 3-5 on p1). Returns (topic, ms in the gap)."""
    topic = new_topic(tansu, 2)
    produce(tansu, topic, 0, [b"a0-%d" % i for i in range(5)])
    produce(tansu, topic, 1, [b"a1-%d" % i for i in range(3)])
    time.sleep(0.6)  # the gap the timestamps fall into (not synchronisation)
    middle = int(time.time() * 1000)
    time.sleep(0.6)
    produce(tansu, topic, 0, [b"b0-%d" % i for i in range(5)])
    produce(tansu, topic, 1, [b"b1-%d" % i for i in range(3)])
    return topic, middle


def offsets(df):
    return sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect())


A = [(0, o) for o in range(5)] + [(1, o) for o in range(3)]
B = [(0, o) for o in range(5, 10)] + [(1, o) for o in range(3, 6)]


def test_batch_timestamp_options_and_their_precedence(tansu, two_phases, kafka_reader):
    topic, middle = two_phases
    future = int(time.time() * 1000) + 3_600_000

    def read(**options):
        return offsets(kafka_reader(tansu, subscribe=topic, **options).load())

    assert read(startingTimestamp=str(middle)) == B
    assert read(endingTimestamp=str(middle)) == A
    # startingTimestamp beats startingOffsetsByTimestamp, which beats startingOffsets
    assert read(startingTimestamp=str(middle), startingOffsetsByTimestamp=json.dumps(
        {topic: {"0": 0, "1": 0}}), startingOffsets=json.dumps({topic: {"0": 9, "1": 5}})) == B
    by_partition = json.dumps({topic: {"0": middle, "1": 0}})
    assert read(startingOffsetsByTimestamp=by_partition,
                startingOffsets=json.dumps({topic: {"0": 9, "1": 5}})) == B[:5] + A[5:] + B[5:]
    # endingOffsetsByTimestamp beats endingOffsets; no record at or after it means latest
    assert read(endingOffsetsByTimestamp=json.dumps({topic: {"0": middle, "1": future}}),
                endingOffsets=json.dumps({topic: {"0": 1, "1": 1}})) == sorted(A[:5] + A[5:] + B[5:])
    # no record at or after the starting timestamp: the strategy decides
    with pytest.raises(Exception, match=r"no offset of .* has a timestamp at or after"):
        read(startingTimestamp=str(future))
    assert read(startingTimestamp=str(future), startingOffsetsByTimestampStrategy="latest") == []
    with pytest.raises(Exception, match="'startingOffsetsByTimestamp' must give a timestamp "
                                        f"for every partition read; missing {topic}-1"):
        read(startingOffsetsByTimestamp=json.dumps({topic: {"0": middle}}))


def run_available_now(df, checkpoint, seen):
    query = (df.select("partition", "offset").writeStream.trigger(availableNow=True)
             .foreachBatch(lambda b, _id: seen.extend(tuple(r) for r in b.collect()))
             .option("checkpointLocation", checkpoint).start())
    try:
        query.awaitTermination(180)
    except Exception as e:  # returned for the caller to judge
        return e
    finally:
        query.stop()
    return query.exception()


def test_stream_starts_at_timestamps_and_the_strategy_decides_no_match(
        tansu, two_phases, produce, kafka_reader, tmp_path):
    """KafkaMicroBatchSourceSuite's "from specific timestamps" / "from global timestamp" /
    "with non-matching starting offset": the start is resolved once, a restart resumes
    from the checkpoint, later records are read."""
    topic, middle = two_phases
    future = int(time.time() * 1000) + 3_600_000
    seen: list = []
    df = kafka_reader(tansu, stream=True, subscribe=topic, startingTimestamp=str(middle)).load()
    assert run_available_now(df, str(tmp_path / "global"), seen) is None
    assert sorted(seen) == B

    by_partition = json.dumps({topic: {"0": middle, "1": future}})
    seen.clear()
    error = run_available_now(kafka_reader(tansu, stream=True, subscribe=topic,
                                           startingOffsetsByTimestamp=by_partition).load(),
                              str(tmp_path / "strict"), seen)
    assert error is not None and f"no offset of {topic}-1 has a timestamp at or after" in str(error)

    def lenient():
        return kafka_reader(tansu, stream=True, subscribe=topic,
                            startingOffsetsByTimestamp=by_partition,
                            startingOffsetsByTimestampStrategy="latest").load()

    checkpoint = str(tmp_path / "latest")
    assert run_available_now(lenient(), checkpoint, seen) is None
    assert sorted(seen) == B[:5]  # partition 1 starts at its end
    produce(tansu, topic, 1, [b"c1-0", b"c1-1"])
    seen.clear()
    assert run_available_now(lenient(), checkpoint, seen) is None  # resumes, not re-resolved
    assert sorted(seen) == [(1, 6), (1, 7)]


def test_a_broker_without_a_time_index_has_no_offset_for_any_timestamp(
        mock_broker, new_topic, produce, kafka_reader):
    """librdkafka's mock cluster answers every timestamp with "no such offset"."""
    topic = new_topic(mock_broker, 1)
    produce(mock_broker, topic, 0, [b"x"] * 3)

    def read(**options):
        return offsets(kafka_reader(mock_broker, subscribe=topic, **options).load())

    with pytest.raises(Exception, match="startingOffsetsByTimestampStrategy=error"):
        read(startingTimestamp="0")
    assert read(startingTimestamp="0", startingOffsetsByTimestampStrategy="latest") == []
    assert read(endingTimestamp="0") == [(0, 0), (0, 1), (0, 2)]  # ending: latest
