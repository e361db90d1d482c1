"""Scenarios of Spark's own Kafka connector suites (see SPARK_SUITE.md), on our brokers."""

from __future__ import annotations

import json

import pytest
from pyspark.sql.functions import col, count, struct, to_json, window

from rdk import Admin
from rdk.spark.options import parse_read_options
from rdk.spark.stream import KafkaStreamReader, rate_limit

pytestmark = pytest.mark.spark


def values(df):
    return sorted(r.value.decode() for r in df.select("value").collect())


def test_a_dataframe_binds_offsets_when_it_first_runs(mock_broker, new_topic, produce,
                                                     kafka_reader):
    """KafkaRelationSuite "explicit earliest to latest offsets", "explicit offsets" and
    "reuse same dataframe in query". One difference, pyspark's: it plans a Python data
    source's partitions once per DataFrame, so "latest" is bound when a DataFrame first runs
    and a DataFrame run again reads the same ranges; a new load() binds anew."""
    topic = new_topic(mock_broker, 3)

    def load(**options):
        return kafka_reader(mock_broker, subscribe=topic, **options).load()

    df = load(startingOffsets="earliest", endingOffsets="latest")  # nothing planned yet
    produce(mock_broker, topic, 0, [b"%d" % i for i in range(10)])
    produce(mock_broker, topic, 1, [b"%d" % i for i in range(10, 20)])
    produce(mock_broker, topic, 2, [b"20"])
    pinned = load(startingOffsets=json.dumps({topic: {"0": -2, "1": -2, "2": 0}}),
                  endingOffsets=json.dumps({topic: {"0": -1, "1": -1, "2": 1}}))
    every = sorted(str(i) for i in range(21))
    assert values(df) == values(pinned) == every  # bound at the first run, not at load()
    produce(mock_broker, topic, 2, [b"%d" % i for i in range(21, 30)])
    assert values(df) == every  # the same DataFrame: the same ranges (pyspark)
    assert df.union(df).count() == 42
    assert values(load()) == sorted(str(i) for i in range(30))  # a new load(): late binding
    assert values(load(startingOffsets=json.dumps({topic: {"0": -2, "1": -2, "2": 0}}),
                       endingOffsets=json.dumps({topic: {"0": -1, "1": -1, "2": 1}}))) == every


def test_resolved_start_after_the_end_fails(mock_broker, new_topic, kafka_reader):
    """KafkaRelationSuite "resolved start offset greater than end offset (with latest)"."""
    topic = new_topic(mock_broker, 3)
    df = kafka_reader(mock_broker, subscribe=topic,
                      startingOffsets=json.dumps({topic: {"0": 1, "1": 1, "2": 1}})).load()
    with pytest.raises(Exception, match=f"for {topic}-0 the starting offset 1 is after the "
                                        "ending offset 0"):
        df.collect()


def test_big_values_through_a_small_producer_buffer(mock_broker, new_topic, spark):
    """KafkaSinkSuite "generic - write big data with small producer buffer" (30 values of
    15 000 bytes through a 16 KiB queue: the sink blocks, never fails) and "SPARK-20496:
    batch - enforce analyzed plans"."""
    topic = new_topic(mock_broker, 1)
    big = spark.range(30).selectExpr("unhex(repeat('ab', 15000)) AS value").coalesce(1)
    (big.write.format("rdkafka").option("kafka.bootstrap.servers", mock_broker.bootstrap_servers)
     .option("topic", topic).option("kafka.queue.buffering.max.kbytes", "16")
     .mode("append").save())
    events = spark.range(1, 1000).select(to_json(struct("*")).alias("value"))
    (events.write.format("rdkafka").option("kafka.bootstrap.servers", mock_broker.bootstrap_servers)
     .option("topic", topic).mode("append").save())
    with Admin(mock_broker.bootstrap_servers) as admin:
        assert admin.watermarks(topic, 0) == (0, 1029)


def test_streaming_sink_topic_option_wins_over_the_column(mock_broker, new_topic, produce,
                                                          kafka_reader, tmp_path):
    """KafkaSinkSuite "streaming - topic field and topic option", "with topic field" and
    "sink progress is produced"."""
    source, by_option, by_column = (new_topic(mock_broker, 1) for _ in range(3))
    produce(mock_broker, source, 0, [b"%d" % i for i in range(1, 6)])

    def copy(checkpoint, **options):
        """Copy ``source`` with AvailableNow; return the query's sink row counts."""
        df = kafka_reader(mock_broker, stream=True, subscribe=source,
                          startingOffsets="earliest").load()
        w = (df.selectExpr(f"'{by_column}' AS topic", "value").writeStream.format("rdkafka")
             .option("kafka.bootstrap.servers", mock_broker.bootstrap_servers)
             .option("checkpointLocation", str(tmp_path / checkpoint))
             .trigger(availableNow=True))
        for k, v in options.items():
            w = w.option(k, v)
        query = w.start()
        try:
            assert query.awaitTermination(120)
        finally:
            query.stop()
        assert query.exception() is None
        return [p.sink.numOutputRows for p in query.recentProgress]

    assert copy("a", topic=by_option) == [5]  # "streaming - sink progress is produced"
    assert values(kafka_reader(mock_broker, subscribe=by_option).load()) == list("12345")
    assert values(kafka_reader(mock_broker, subscribe=by_column).load()) == []
    copy("b")
    assert values(kafka_reader(mock_broker, subscribe=by_column).load()) == list("12345")


def test_event_time_watermark_on_the_timestamp_column(mock_broker, new_topic, produce,
                                                      kafka_reader, spark, tmp_path):
    """KafkaMicroBatchSourceSuite "KafkaSource with watermark"."""
    import time

    now = time.time()
    topic = new_topic(mock_broker, 1)
    produce(mock_broker, topic, 0, [b"1"])
    rows: list = []
    windowed = (kafka_reader(mock_broker, stream=True, subscribe=topic,
                             startingOffsets="earliest").load()
                .withWatermark("timestamp", "10 seconds")
                .groupBy(window(col("timestamp"), "5 seconds").alias("w"))
                .agg(count("*").alias("n")).select(col("w.start").alias("start"), "n"))
    query = (windowed.writeStream.outputMode("complete").trigger(availableNow=True)
             .foreachBatch(lambda b, _id: rows.extend(b.collect()))
             .option("checkpointLocation", str(tmp_path / "cp")).start())
    try:
        assert query.awaitTermination(120)
    finally:
        query.stop()
    assert query.exception() is None
    assert len(rows) == 1 and rows[0].n == 1
    assert rows[0].start.timestamp() >= now - 5


def test_options_are_case_insensitive_and_the_rate_limit_cannot_overflow():
    """KafkaSourceProviderSuite "options should be handled as case-insensitive";
    KafkaMicroBatchSourceSuite "SPARK-26718 Rate limit set to Long.Max"; "get offsets from
    case insensitive parameters"."""
    for case in (str.upper, str.lower):
        o = parse_read_options({
            "kafka.bootstrap.servers": "h:1", "subscribe": "t",
            case("kafkaConsumer.pollTimeoutMs"): "1111", case("maxOffsetsPerTrigger"): "1111",
            case("minOffsetsPerTrigger"): "1111", case("maxTriggerDelay"): "1111",
            case("fetchOffset.numRetries"): "1111", case("fetchOffset.retryIntervalMs"): "1111",
            case("startingOffsets"): '{"t":"eArLiEst"}'}, streaming=True)
        assert (o.poll_timeout_ms, o.max_offsets_per_trigger, o.min_offsets_per_trigger,
                o.max_trigger_delay_ms, o.fetch_offset_retries,
                o.fetch_offset_retry_interval_ms) == (1111,) * 6
        assert o.starting == {"t": -2}
    assert parse_read_options({"kafka.bootstrap.servers": "h:1", "subscribe": "t",
                               "startingOffsets": "earLiEst", "endingOffsets": "laTest"},
                              streaming=False).starting == "earliest"
    long_max = 2**63 - 1
    o = parse_read_options({"kafka.bootstrap.servers": "h:1", "subscribe": "t",
                            "maxOffsetsPerTrigger": str(long_max)}, streaming=True)
    assert o.max_offsets_per_trigger == long_max
    assert rate_limit({("t", 0): 5}, {("t", 0): 10}, long_max) == {("t", 0): 10}


def test_no_latest_offset_is_reported_before_one_was_fetched():
    """KafkaMicroBatchSourceSuite "SPARK-57438: metrics should not NPE when
    latestPartitionOffsets is null"."""
    reader = KafkaStreamReader(parse_read_options(
        {"kafka.bootstrap.servers": "127.0.0.1:9", "subscribe": "t"}, streaming=True))
    assert reader.reportLatestOffset() is None
    reader.stop()


def run_available_now(df, checkpoint, seen):
    """Run ``df`` (value column) with Trigger.AvailableNow into ``seen``; return the error."""
    query = (df.select("value").writeStream.trigger(availableNow=True)
             .foreachBatch(lambda b, _id: seen.extend(values(b)))
             .option("checkpointLocation", checkpoint).start())
    try:
        query.awaitTermination(120)
    except Exception as e:  # returned for the caller to judge
        return e
    finally:
        query.stop()
    return query.exception()


def recreate(broker, topic, partitions, payloads):
    with Admin(broker.bootstrap_servers) as admin:
        admin.delete_topics([topic])
    broker.create_topic(topic, partitions)
    if payloads:
        from conftest import send_all  # tests/spark/conftest.py

        send_all(broker.bootstrap_servers, topic, 0, payloads)


def test_topics_deleted_or_recreated_between_runs(tansu, new_topic, produce, kafka_reader,
                                                  tmp_path):
    """KafkaMicroBatchSourceSuite "subscribe topic by pattern with topic recreation between
    batches", "subscribing topic by pattern with topic deletions" and "SPARK-41375: empty
    partitions should not record to latest offset" (on Tansu, which deletes topics)."""
    import uuid

    prefix = "rc" + uuid.uuid4().hex[:8]
    good, bad = new_topic(tansu, 1, prefix=prefix), new_topic(tansu, 1, prefix=prefix)
    produce(tansu, good, 0, [b"1", b"3"])
    produce(tansu, bad, 0, [b"2", b"4"])

    def stream(**options):
        return kafka_reader(tansu, stream=True, subscribePattern=f"{prefix}-.*",
                            startingOffsets="earliest", **options).load()

    seen: list = []
    assert run_available_now(stream(), str(tmp_path / "strict"), seen) is None
    assert sorted(seen) == ["1", "2", "3", "4"]
    lenient_seen: list = []
    assert run_available_now(stream(failOnDataLoss="false"), str(tmp_path / "lenient"),
                             lenient_seen) is None
    recreate(tansu, bad, 1, [b"6"])
    error = run_available_now(stream(), str(tmp_path / "strict"), seen)
    assert error is not None and f"the offset of {bad}-0 went back from 2 to 1" in str(error)

    with Admin(tansu.bootstrap_servers) as admin:  # the lenient query goes on
        admin.delete_topics([good])
    later = new_topic(tansu, 1, prefix=prefix)
    produce(tansu, later, 0, [b"7", b"8"])
    lenient_seen.clear()
    assert run_available_now(stream(failOnDataLoss="false"), str(tmp_path / "lenient"),
                             lenient_seen) is None
    assert sorted(lenient_seen) == ["7", "8"]  # bad went back (skipped), good is gone

    with Admin(tansu.bootstrap_servers) as admin:
        admin.delete_topics([later])
    # a vanished topic keeps its offsets: the offset never becomes {}. (A fresh reader: a
    # librdkafka 2.12 handle that fetched a topic Tansu then deletes crashes in its
    # metadata cache, rd_kafka_metadata_cache_find; see SPARK_SUITE.md.)
    reader = KafkaStreamReader(parse_read_options(
        {"kafka.bootstrap.servers": tansu.bootstrap_servers, "subscribe": later},
        streaming=True))
    try:
        start = {later: {"0": 2}}
        assert reader.latestOffset(start, reader.getDefaultReadLimit()) == start
    finally:
        reader.stop()


@pytest.mark.parametrize(("partitions", "payloads", "message"), [
    (3, 15, "partitions of its target are gone"),
    (5, 10, "below its target 15"),
])
def test_available_now_fails_when_its_target_vanishes(tansu, new_topic, produce, kafka_reader,
                                                      tmp_path, partitions, payloads, message):
    """KafkaMicroBatchSourceSuite "Query with Trigger.AvailableNow should throw error when
    topic partitions got unavailable during subsequent batches" and "... when offset(s) in
    planned topic partitions got unavailable ..." (whatever failOnDataLoss says)."""
    topic = new_topic(tansu, 5)
    produce(tansu, topic, 0, [b"foo-%d" % i for i in range(15)])
    done: list[int] = []

    def first_batch_recreates(batch, batch_id):
        if not done:
            done.append(batch_id)
            recreate(tansu, topic, partitions, [b"foo-%d" % i for i in range(payloads)])

    df = kafka_reader(tansu, stream=True, subscribe=topic, startingOffsets="earliest",
                      maxOffsetsPerTrigger="5", failOnDataLoss="false").load()
    query = (df.writeStream.trigger(availableNow=True).foreachBatch(first_batch_recreates)
             .option("checkpointLocation", str(tmp_path / "cp")).start())
    with pytest.raises(Exception, match=message):
        try:
            query.awaitTermination(120)
        finally:
            query.stop()
    assert done == [0]


def test_partition_column_beats_the_partitioner_and_null_topics_fail(mock_broker, new_topic,
                                                                     spark, kafka_reader):
    """KafkaSinkSuite "batch - partition column and partitioner priorities" (librdkafka's
    kafka.partitioner stands for the Java partitioner class) and "batch - null topic field
    value, and no topic option"."""
    from pyspark.sql.functions import lit

    t1, t2, t3, t4 = (new_topic(mock_broker, 4) for _ in range(4))
    df = spark.createDataFrame([(f"{n}", f"{n}") for n in range(5)], "key string, value string")

    def write(frame, topic, **options):
        w = (frame.write.format("rdkafka").option("kafka.bootstrap.servers",
                                                  mock_broker.bootstrap_servers)
             .option("topic", topic).mode("append"))
        for k, v in options.items():
            w = w.option(k, v)
        w.save()

    def partitions(topic):
        return {r.partition for r in kafka_reader(mock_broker, subscribe=topic).load().collect()}

    write(df, t1)
    assert len(partitions(t1)) > 1  # murmur2 of the keys spreads them
    write(df, t2, **{"kafka.partitioner": "fnv1a"})  # another partitioner: other partitions
    assert len(partitions(t2)) > 1
    write(df.withColumn("partition", lit(2)), t3, **{"kafka.partitioner": "fnv1a"})
    assert partitions(t3) == {2}  # the column wins over the partitioner
    write(df.withColumn("partition", lit(None).cast("int")), t4)
    assert partitions(t4) == partitions(t1)  # null partitions: as if there were no column
    nulls = spark.createDataFrame([(None, "1")], "topic string, value string")
    with pytest.raises(Exception, match="a row has a null 'topic' and no 'topic' option"):
        (nulls.write.format("rdkafka")
         .option("kafka.bootstrap.servers", mock_broker.bootstrap_servers)
         .mode("append").save())


def test_a_union_of_rate_limited_streams_goes_on_when_one_runs_dry(mock_broker, new_topic,
                                                                  produce, kafka_reader,
                                                                  tmp_path):
    """KafkaMicroBatchSourceSuite "SPARK-22956: currentPartitionOffsets should be set when no
    new data comes in": two sources of 5 offsets per trigger; the smaller runs dry first."""
    small, big = new_topic(mock_broker, 1), new_topic(mock_broker, 1)
    produce(mock_broker, small, 0, [b"%d" % i for i in range(10)])
    produce(mock_broker, big, 0, [b"%d" % i for i in range(100, 120)])

    def source(topic):
        return kafka_reader(mock_broker, stream=True, subscribe=topic, startingOffsets="earliest",
                            maxOffsetsPerTrigger="5").load().selectExpr("CAST(value AS STRING) v")

    batches: list[list[int]] = []

    def run():
        query = (source(small).union(source(big)).writeStream.trigger(availableNow=True)
                 .foreachBatch(lambda b, _id: batches.append(sorted(int(r.v) for r in b.collect())))
                 .option("checkpointLocation", str(tmp_path / "cp")).start())
        try:
            assert query.awaitTermination(120)
        finally:
            query.stop()
        assert query.exception() is None

    run()
    assert [b for b in batches if b] == [
        [0, 1, 2, 3, 4, 100, 101, 102, 103, 104], [5, 6, 7, 8, 9, 105, 106, 107, 108, 109],
        [110, 111, 112, 113, 114], [115, 116, 117, 118, 119]]
    produce(mock_broker, big, 0, [b"%d" % i for i in range(120, 125)])
    batches.clear()
    run()  # restarted: only the new records of the big topic
    assert [b for b in batches if b] == [[120, 121, 122, 123, 124]]


def test_a_topic_deleted_while_a_task_runs(tansu, new_topic, produce, kafka_reader, tmp_path):
    """KafkaMicroBatchSourceSuite "delete a topic when a Spark job is running": with
    failOnDataLoss=false the query goes on."""
    class RecreateOnOpen:  # local: pickled by value for the workers
        """A ForeachWriter whose first open() (in any worker) re-creates the topic: the task
        then reads offsets that no longer exist."""

        def __init__(self, bootstrap: str, topic: str, marker: str) -> None:
            self.bootstrap, self.topic, self.marker = bootstrap, topic, marker

        def open(self, partition_id, epoch_id):
            import os

            try:
                fd = os.open(self.marker, os.O_CREAT | os.O_EXCL)
            except FileExistsError:
                return True
            os.close(fd)
            from rdk import Admin

            with Admin(self.bootstrap) as admin:
                admin.delete_topics([self.topic])
                admin.create_topics({self.topic: 1})
            return True

        def process(self, row):
            pass

        def close(self, error):
            pass

    topic = new_topic(tansu, 1)
    produce(tansu, topic, 0, [b"%d" % i for i in range(1, 11)])
    df = kafka_reader(tansu, stream=True, subscribe=topic, startingOffsets="earliest",
                      failOnDataLoss="false", **{"kafkaConsumer.pollTimeoutMs": "1000"}).load()
    marker = str(tmp_path / "recreated")
    query = (df.writeStream.foreach(RecreateOnOpen(tansu.bootstrap_servers, topic, marker))
             .trigger(processingTime="100 milliseconds")
             .option("checkpointLocation", str(tmp_path / "cp")).start())
    try:
        query.processAllAvailable()
        assert query.exception() is None and query.isActive
    finally:
        query.stop()
    import os

    assert os.path.exists(marker)  # the topic was re-created under the running task


def test_a_stream_written_to_a_missing_topic_fails(mock_broker, new_topic, produce,
                                                  kafka_reader, tmp_path):
    """KafkaSinkSuite "streaming - write to non-existing topic" (the mock cluster creates
    no topic on demand; librdkafka gives up after topic.metadata.propagation.max.ms)."""
    source = new_topic(mock_broker, 1)
    produce(mock_broker, source, 0, [b"1", b"2"])
    df = kafka_reader(mock_broker, stream=True, subscribe=source,
                      startingOffsets="earliest").load()
    query = (df.select("value").writeStream.format("rdkafka")
             .option("kafka.bootstrap.servers", mock_broker.bootstrap_servers)
             .option("kafka.topic.metadata.propagation.max.ms", "500")
             .option("topic", "no-such-topic-" + source)
             .option("checkpointLocation", str(tmp_path / "cp")).trigger(availableNow=True).start())
    with pytest.raises(Exception, match=r"DeliveryError.*2 of 2 rows were not delivered"):
        try:
            query.awaitTermination(120)
        finally:
            query.stop()


def test_a_timestamp_in_nanoseconds_fails_with_a_clear_error(mock_broker, new_topic, produce,
                                                             kafka_reader):
    """KafkaMicroBatchSourceSuite "SPARK-56243: malformed record timestamp throws detailed
    error" (batch read; the stream reads through the same read_range)."""
    from rdk.message import Message

    topic = new_topic(mock_broker, 1)
    nanos = 1712345678123456789
    produce(mock_broker, topic, 0, [Message(b"fine"), Message(b"value", timestamp=nanos)])
    with pytest.raises(Exception, match=rf"MalformedRecordError.*{topic}-0 offsets \[0, 1\].*"
                                        rf"the timestamp {nanos} \(ms"):
        kafka_reader(mock_broker, subscribe=topic).load().collect()


@pytest.mark.parametrize(("strategy", "fail_on_data_loss"), [
    ("assign", "true"), ("subscribe", "false"), ("subscribePattern", "true")])
def test_streams_from_specific_offsets_for_every_strategy(mock_broker, new_topic, produce,
                                                          kafka_reader, tmp_path, strategy,
                                                          fail_on_data_loss):
    """KafkaMicroBatchSourceSuite "assign / subscribing topic by name / by pattern from
    specific offsets (failOnDataLoss: ...)": -2, -1 and explicit offsets, a restart from the
    checkpoint, records added later."""
    import uuid

    prefix = "sp" + uuid.uuid4().hex[:8]
    topic = new_topic(mock_broker, 5, prefix=prefix)
    for p, vals in enumerate(([-20, -21, -22], [-10, -11, -12], [0, 1, 2], [10, 11, 12],
                              [20, 21, 22])):
        produce(mock_broker, topic, p, [b"%d" % v for v in vals])
    where = {"assign": json.dumps({topic: list(range(5))}), "subscribe": topic,
             "subscribePattern": f"{prefix}-.*"}[strategy]
    starting = json.dumps({topic: {"0": -2, "1": -1, "2": 0, "3": 1, "4": 2}})
    seen: list = []

    def run():
        df = kafka_reader(mock_broker, stream=True, startingOffsets=starting,
                          failOnDataLoss=fail_on_data_loss, **{strategy: where}).load()
        assert run_available_now(df, str(tmp_path / "cp"), seen) is None
        got = sorted(int(v) for v in seen)
        seen.clear()
        return got

    assert run() == [-22, -21, -20, 0, 1, 2, 11, 12, 22]
    assert run() == []  # restarted from the checkpoint: nothing twice
    for p in range(5):
        produce(mock_broker, topic, p, [b"%d" % (30 + p)])
    assert run() == [30, 31, 32, 33, 34]
