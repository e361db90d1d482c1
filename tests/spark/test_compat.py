"""The built-in connector's behaviour where rdkafka used to differ (issue 16's bugs)."""

from __future__ import annotations

import json

import pytest
from pyspark.sql.types import IntegerType, StringType, StructField, StructType

from rdk.spark.options import parse_read_options
from rdk.spark.planner import OffsetRange, Planner
from rdk.spark.reader import DataLossError, read_range
from rdk.spark.stream import KafkaStreamReader

pytestmark = pytest.mark.spark


def offsets(df):
    return sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect())


def run_available_now(df, checkpoint, seen):
    """Run ``df`` with Trigger.AvailableNow into ``seen`` (list of (partition, offset));
    return the query's exception (None when it finished cleanly)."""
    query = (df.select("partition", "offset").writeStream.trigger(availableNow=True)
             .foreachBatch(lambda b, _id: seen.extend(tuple(r) for r in b.collect()))
             .option("checkpointLocation", checkpoint).start())
    try:
        query.awaitTermination(180)
    except Exception as e:  # the caller judges the failure
        return e
    finally:
        query.stop()
    return query.exception()


def test_a_batch_read_that_plans_no_range_returns_no_rows(broker, new_topic, produce,
                                                          kafka_reader):
    """Bug 1: pyspark replaces an empty plan with InputPartition(None); that is 0 rows."""
    empty = new_topic(broker, 2)
    assert kafka_reader(broker, subscribe=empty).load().count() == 0
    assert kafka_reader(broker, subscribePattern="matches-no-topic-.*").load().count() == 0
    full = new_topic(broker, 1)
    produce(broker, full, 0, [b"x"] * 5)
    same = json.dumps({full: {"0": 3}})
    df = kafka_reader(broker, subscribe=full, startingOffsets=same, endingOffsets=same).load()
    assert df.collect() == []
    assert offsets(kafka_reader(broker, subscribe=full).load()) == [(0, o) for o in range(5)]


def test_stream_starting_offsets_past_the_end_is_data_loss(mock_broker, new_topic, produce,
                                                           kafka_reader, tmp_path):
    """Bug 2: as the built-in connector, an end offset below the start is data loss: the
    query fails (failOnDataLoss=true), or goes on from the partition's end (false)."""
    topic = new_topic(mock_broker, 2)
    produce(mock_broker, topic, 0, [b"a"] * 10)
    produce(mock_broker, topic, 1, [b"b"] * 4)
    past = json.dumps({topic: {"0": 100, "1": 0}})

    seen: list = []
    error = run_available_now(
        kafka_reader(mock_broker, stream=True, subscribe=topic, startingOffsets=past).load(),
        str(tmp_path / "strict"), seen)
    assert error is not None and "DataLossError" in str(error)
    assert f"the offset of {topic}-0 went back from 100 to 10" in str(error)

    def lenient():
        return kafka_reader(mock_broker, stream=True, subscribe=topic, startingOffsets=past,
                            failOnDataLoss="false").load()

    checkpoint = str(tmp_path / "lenient")
    assert run_available_now(lenient(), checkpoint, seen) is None
    assert sorted(seen) == [(1, o) for o in range(4)]
    produce(mock_broker, topic, 0, [b"later"] * 3)  # read: the stream goes on from 10
    seen.clear()
    assert run_available_now(lenient(), checkpoint, seen) is None
    assert sorted(seen) == [(0, 10), (0, 11), (0, 12)]


@pytest.fixture
def open_transaction(tansu, new_topic):
    """A Tansu topic: offsets 0-4 plain, 5-9 a committed transaction (10 its marker),
    11-14 a transaction left open for the test (aborted afterwards)."""
    ck = pytest.importorskip("confluent_kafka")
    topic = new_topic(tansu, 1)
    plain = ck.Producer({"bootstrap.servers": tansu.bootstrap_servers})
    for i in range(5):
        plain.produce(topic, b"plain%d" % i, partition=0)
    assert plain.flush(30) == 0
    txn = ck.Producer({"bootstrap.servers": tansu.bootstrap_servers,
                       "transactional.id": f"rdk-test-{topic}"})
    txn.init_transactions(30)
    txn.begin_transaction()
    for i in range(5):
        txn.produce(topic, b"committed%d" % i, partition=0)
    txn.commit_transaction(30)
    txn.begin_transaction()
    for i in range(4):
        txn.produce(topic, b"open%d" % i, partition=0)
    assert txn.flush(30) == 0
    yield topic
    txn.abort_transaction(30)


def test_one_isolation_level_plans_and_reads(tansu, open_transaction, kafka_reader):
    """Bug 3: the driver planned read_committed while executors read read_uncommitted."""
    topic = open_transaction
    # read_uncommitted, the built-in default: the open transaction's records too
    df = kafka_reader(tansu, subscribe=topic).load()
    assert offsets(df) == [(0, o) for o in (*range(10), *range(11, 15))]
    committed = kafka_reader(tansu, subscribe=topic,
                             **{"kafka.isolation.level": "read_committed"}).load()
    rows = committed.select("offset", "value").orderBy("offset").collect()
    assert [(r.offset, r.value) for r in rows] == (
        [(i, b"plain%d" % i) for i in range(5)] + [(5 + i, b"committed%d" % i) for i in range(5)])
    too_far = kafka_reader(tansu, subscribe=topic, endingOffsets=json.dumps({topic: {"0": 15}}),
                           **{"kafka.isolation.level": "read_committed"}).load()
    with pytest.raises(Exception, match=r"past the last stable offset .11.*open transaction"):
        too_far.collect()
    # an executor asked for offsets behind the last stable offset says so, not "deleted"
    base = {"kafka.bootstrap.servers": tansu.bootstrap_servers, "subscribe": topic,
            "kafka.isolation.level": "read_committed", "kafkaConsumer.pollTimeoutMs": "1500"}
    strict = parse_read_options(base, streaming=False)
    with pytest.raises(DataLossError, match=r"\[11, 15\) .* behind the last stable offset 11 "
                                            r"\(an open transaction"):
        list(read_range(strict, OffsetRange(topic, 0, 0, 15)))
    lenient = parse_read_options({**base, "failOnDataLoss": "false"}, streaming=False)
    assert sum(b.num_rows for b in read_range(lenient, OffsetRange(topic, 0, 0, 15))) == 10
    opts = parse_read_options({"kafka.bootstrap.servers": tansu.bootstrap_servers,
                               "subscribe": topic, "kafka.isolation.level": "read_committed"},
                              streaming=True)
    reader = KafkaStreamReader(opts)
    try:  # a stream under read_committed stops at the last stable offset too
        assert reader.latestOffset({topic: {"0": 0}}, reader.getDefaultReadLimit()) == {
            topic: {"0": 11}}
    finally:
        reader.stop()


def test_rows_for_one_partition_keep_the_dataframe_order(broker, new_topic, spark,
                                                         kafka_reader):
    """Bug 4: explicit and null partitions mixed in one task must not reorder rows."""
    topic = new_topic(broker, 1)
    other = new_topic(broker, 2)
    schema = StructType([StructField("topic", StringType()), StructField("value", StringType()),
                         StructField("partition", IntegerType())])
    rows = [(topic, f"v{i}", 0 if i % 3 == 0 else None) for i in range(60)]
    rows += [(other, f"w{i}", i % 2) for i in range(20)]  # explicit only: grouped per partition
    df = spark.createDataFrame(rows, schema).coalesce(1)
    (df.write.format("rdkafka").option("kafka.bootstrap.servers", broker.bootstrap_servers)
     .mode("append").save())
    back = kafka_reader(broker, subscribe=topic).load().orderBy("offset").collect()
    assert [r.value.decode() for r in back] == [f"v{i}" for i in range(60)]
    back = kafka_reader(broker, subscribe=other).load().orderBy("partition", "offset").collect()
    assert [(r.partition, r.value.decode()) for r in back] == (
        [(0, f"w{i}") for i in range(0, 20, 2)] + [(1, f"w{i}") for i in range(1, 20, 2)])


def test_planner_retries_lookups_as_fetch_offset_options_say(mock_broker):
    from rdk import KafkaError
    from rdk._binding import ERROR_CODES

    def planner(retries: int) -> Planner:
        return Planner(parse_read_options(
            {"kafka.bootstrap.servers": mock_broker.bootstrap_servers, "subscribe": "t",
             "fetchOffset.numRetries": str(retries), "fetchOffset.retryIntervalMs": "1"},
            streaming=False))

    calls = []

    def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise KafkaError(ERROR_CODES["LEADER_NOT_AVAILABLE"], retriable=True)
        return "answer"

    with planner(2) as p:
        assert p._retrying("lookup", flaky) == "answer" and len(calls) == 3
    calls.clear()
    with planner(1) as p, pytest.raises(KafkaError, match="LEADER_NOT_AVAILABLE"):
        p._retrying("lookup", flaky)
    assert len(calls) == 2

    def fatal() -> None:
        calls.append(1)
        raise KafkaError(ERROR_CODES["TOPIC_AUTHORIZATION_FAILED"], retriable=False)

    calls.clear()
    with planner(5) as p, pytest.raises(KafkaError, match="TOPIC_AUTHORIZATION_FAILED"):
        p._retrying("lookup", fatal)
    assert len(calls) == 1
