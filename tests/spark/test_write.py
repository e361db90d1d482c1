"""Writing DataFrames to Kafka with format("rdkafka"), batch and streaming."""

from __future__ import annotations

import pytest
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    StringType,
    StructField,
    StructType,
)

pytestmark = pytest.mark.spark

HEADERS = ArrayType(StructType([StructField("key", StringType()),
                                StructField("value", BinaryType())]))
SCHEMA = StructType([StructField("key", BinaryType()), StructField("value", BinaryType()),
                     StructField("partition", IntegerType()), StructField("headers", HEADERS)])


def writer(df, broker, **options):
    w = df.write.format("rdkafka").option("kafka.bootstrap.servers", broker.bootstrap_servers)
    for k, v in options.items():
        w = w.option(k, v)
    return w


def test_write_then_read_back_is_equal(broker, new_topic, spark, kafka_reader):
    topic = new_topic(broker, 3)
    rows = [(b"k%d" % i, b"\x00value %d" % i, i % 3, [(f"h{i}", b"%d" % i), ("n", None)])
            for i in range(60)]
    rows += [(None, b"no key", 1, []), (b"tomb", None, 2, None)]
    df = spark.createDataFrame(rows, SCHEMA).repartition(2)
    writer(df, broker, topic=topic).mode("append").save()
    back = kafka_reader(broker, subscribe=topic, includeHeaders="true").load().collect()
    # (a record without headers reads back as null, as in Spark's own connector)
    assert sorted((r.key or b"", r.value or b"", r.partition,
                   [(h.key, h.value) for h in r.headers or []])
                  for r in back) == sorted(
        (k or b"", v or b"", p, list(h or [])) for k, v, p, h in rows)
    for p in range(3):  # offsets are dense per partition: nothing written twice
        offsets = sorted(r.offset for r in back if r.partition == p)
        assert offsets == list(range(len(offsets)))


def test_string_columns_and_a_topic_column_route_each_row(mock_broker, new_topic, spark,
                                                          kafka_reader):
    a, b = new_topic(mock_broker, 2), new_topic(mock_broker, 1)
    rows = [(a if i % 3 else b, f"user-{i % 5}", f"event {i} ü") for i in range(30)]
    df = spark.createDataFrame(rows, "topic string, key string, value string")
    writer(df, mock_broker).mode("append").save()
    got = kafka_reader(mock_broker, subscribe=f"{a},{b}").load().collect()
    assert sorted((r.topic, r.key.decode(), r.value.decode()) for r in got) == sorted(rows)
    # no partition column: keys are spread by murmur2, so one key stays in one partition
    by_key: dict[bytes, set[int]] = {}
    for r in got:
        if r.topic == a:
            by_key.setdefault(r.key, set()).add(r.partition)
    assert all(len(parts) == 1 for parts in by_key.values())


def test_the_default_save_mode_appends_and_ignore_or_overwrite_are_refused(
        mock_broker, new_topic, spark, kafka_reader):
    topic = new_topic(mock_broker, 1)
    df = spark.createDataFrame([(b"v",)], "value binary")
    writer(df, mock_broker, topic=topic).save()  # as format("kafka"): no .mode() needed
    writer(df, mock_broker, topic=topic).mode("error").save()
    assert kafka_reader(mock_broker, subscribe=topic).load().count() == 2
    with pytest.raises(ValueError, match=r'write with the default save mode or \.mode\("append"\)'):
        writer(df, mock_broker, topic=topic).mode("ignore").save()
    with pytest.raises(Exception, match=r"only be appended to; use .*mode\('append'\)"):
        writer(df, mock_broker, topic=topic).mode("overwrite").save()


def test_bad_columns_are_refused_before_writing(mock_broker, spark):
    with pytest.raises(Exception, match="needs a 'value' column"):
        writer(spark.createDataFrame([(b"k",)], "key binary"), mock_broker, topic="t") \
            .mode("append").save()
    with pytest.raises(Exception, match="column 'value' must be binary or string, not int"):
        writer(spark.createDataFrame([(1,)], "value int"), mock_broker, topic="t") \
            .mode("append").save()
    with pytest.raises(Exception, match="set the 'topic' option or give the DataFrame a 'topic'"):
        writer(spark.createDataFrame([(b"v",)], "value binary"), mock_broker) \
            .mode("append").save()


def test_a_failed_delivery_fails_the_task(mock_cluster, spark):
    mock_cluster.create_topic("refused", 1)
    mock_cluster.push_request_errors("Produce", ["TOPIC_AUTHORIZATION_FAILED"] * 50)
    df = spark.createDataFrame([(b"v%d" % i,) for i in range(10)], "value binary").coalesce(1)
    with pytest.raises(Exception) as ei:
        writer(df, mock_cluster, topic="refused").mode("append").save()
    text = str(ei.value)
    assert "DeliveryError" in text and "10 of 10 rows were not delivered" in text
    assert "TOPIC_AUTHORIZATION_FAILED" in text


def test_streaming_write_copies_a_topic(mock_broker, new_topic, produce, spark, kafka_reader,
                                        tmp_path):
    source, target = new_topic(mock_broker, 2), new_topic(mock_broker, 2)
    for p in range(2):
        produce(mock_broker, source, p, [(b"k%d" % i, b"v%d-%d" % (p, i)) for i in range(25)])
    df = kafka_reader(mock_broker, stream=True, subscribe=source,
                      startingOffsets="earliest").load()
    query = (df.select("key", "value", "partition").writeStream.format("rdkafka")
             .option("kafka.bootstrap.servers", mock_broker.bootstrap_servers)
             .option("topic", target)
             .option("checkpointLocation", str(tmp_path / "checkpoint"))
             .trigger(availableNow=True).start())
    try:
        assert query.awaitTermination(180)
    finally:
        query.stop()
    assert query.exception() is None
    copied = kafka_reader(mock_broker, subscribe=target).load().collect()
    assert sorted((r.partition, r.key, r.value) for r in copied) == sorted(
        (p, b"k%d" % i, b"v%d-%d" % (p, i)) for p in range(2) for i in range(25))
