"""Transactional topics under both isolation levels (KafkaRelationSuite and
KafkaMicroBatchSourceSuite "read Kafka transactional messages"), on Apache Kafka and on Tansu,
written by an independent client (confluent-kafka's transactional producer).

On Apache Kafka the tests assert exactly what read_committed means: aborted records never
appear. Tansu 0.6 writes transaction markers and honours the last stable offset, but its Fetch
responses list no aborted transactions, so every client (confluent-kafka too) returns
aborted records under read_committed there. The tests therefore compare rdkafka with
confluent-kafka reading the same topic at the same isolation level, and assert outright
only what Tansu implements: records of an open transaction stay invisible, committed ones
appear, markers never do.
"""

from __future__ import annotations

import pytest

from rdk.testing import KafkaCluster

pytestmark = pytest.mark.spark

COMMITTED = {"kafka.isolation.level": "read_committed"}
UNCOMMITTED = {"kafka.isolation.level": "read_uncommitted"}


@pytest.fixture(params=["kafka", "tansu"])
def txn_broker(request):
    """The broker of the transactions: the session's Apache Kafka, and Tansu."""
    return request.getfixturevalue("kafka_cluster" if request.param == "kafka" else "tansu")


@pytest.fixture
def txn_producer(txn_broker, new_topic):
    tansu = txn_broker
    ck = pytest.importorskip("confluent_kafka")
    topic = new_topic(tansu, 1)
    producer = ck.Producer({"bootstrap.servers": tansu.bootstrap_servers,
                            "transactional.id": f"rdk-suite-{topic}"})
    producer.init_transactions(30)

    state = {"open": False}

    def send(values, end):
        """Send ``values`` in the open transaction (or a new one), then end it as said."""
        if not state["open"]:
            producer.begin_transaction()
        state["open"] = end == "open"
        for v in values:
            producer.produce(topic, str(v).encode(), partition=0)
        assert producer.flush(30) == 0
        if end == "commit":
            producer.commit_transaction(30)
        elif end == "abort":
            producer.abort_transaction(30)

    yield topic, send
    if state["open"]:
        producer.abort_transaction(30)


def values(df):
    return sorted(int(r.value) for r in df.select("value").collect())


def independent(tansu, topic, level):
    """What confluent-kafka reads from ``topic`` at isolation ``level`` (sorted values)."""
    ck = pytest.importorskip("confluent_kafka")
    consumer = ck.Consumer({"bootstrap.servers": tansu.bootstrap_servers, "group.id": "rdk-ref",
                            "enable.partition.eof": True, "enable.auto.commit": False,
                            **{k.removeprefix("kafka."): v for k, v in level.items()}})
    try:
        consumer.assign([ck.TopicPartition(topic, 0, 0)])
        got = []
        while True:
            m = consumer.poll(30)
            assert m is not None, "confluent-kafka read nothing within 30 s"
            if m.error():
                assert m.error().code() == ck.KafkaError._PARTITION_EOF, m.error()
                return sorted(got)
            got.append(int(m.value()))
    finally:
        consumer.close()


def test_batch_reads_transactions_by_isolation_level(txn_broker, txn_producer, kafka_reader):
    tansu, topic, send = txn_broker, *txn_producer

    def read(level):
        return kafka_reader(tansu, subscribe=topic, **level).load()

    send(range(1, 6), end="open")
    assert values(read(COMMITTED)) == []  # nothing committed yet
    assert values(read(UNCOMMITTED)) == [1, 2, 3, 4, 5]
    send([], end="commit")
    assert values(read(COMMITTED)) == [1, 2, 3, 4, 5]
    send(range(6, 11), end="abort")
    send(range(11, 16), end="commit")
    committed = values(read(COMMITTED))
    assert committed == independent(tansu, topic, COMMITTED)
    assert set(committed) >= {*range(1, 6), *range(11, 16)}  # aborted: as the broker says
    if isinstance(tansu, KafkaCluster):  # the reference: aborted records never appear
        assert committed == [*range(1, 6), *range(11, 16)]
    assert values(read(UNCOMMITTED)) == independent(tansu, topic, UNCOMMITTED) == list(
        range(1, 16))  # aborted ones too, never the markers


def test_stream_reads_committed_records_through_markers_and_aborts(
        txn_broker, txn_producer, kafka_reader, tmp_path):
    """Micro-batches of 3 offsets whose ranges hold only markers or aborted records."""
    tansu, topic, send = txn_broker, *txn_producer
    seen: list[list[int]] = []
    checkpoint = str(tmp_path / "cp")

    def run():
        df = kafka_reader(tansu, stream=True, subscribe=topic, startingOffsets="earliest",
                          maxOffsetsPerTrigger="3", **{"kafkaConsumer.pollTimeoutMs": "5000"},
                          **COMMITTED).load()
        query = (df.select("value").writeStream.trigger(availableNow=True)
                 .foreachBatch(lambda b, _id: seen.append(values(b)))
                 .option("checkpointLocation", checkpoint).start())
        try:
            assert query.awaitTermination(120)
        finally:
            query.stop()
        assert query.exception() is None
        got = [v for batch in seen for v in batch]
        seen.clear()
        return got

    send(range(0, 5), end="open")
    assert run() == []  # not committed: not visible, and the stream stays at offset 0
    send([], end="commit")
    assert run() == [0, 1, 2, 3, 4]
    send(range(6, 11), end="abort")
    send(range(12, 17), end="commit")
    for v in (18, 20):
        send([v], end="commit")
    send([22, 23], end="commit")
    later = run()
    assert [0, 1, 2, 3, 4, *later] == independent(tansu, topic, COMMITTED)
    assert set(later) >= {12, 13, 14, 15, 16, 18, 20, 22, 23}
    if isinstance(tansu, KafkaCluster):  # the reference: aborted records never appear
        assert later == [12, 13, 14, 15, 16, 18, 20, 22, 23]
