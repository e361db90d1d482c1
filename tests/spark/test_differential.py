"""Spark's own JVM Kafka connector (``format("kafka")``) against rdkafka on the same topics.

The same query runs with both formats in the ONE session of tests/spark/conftest.py (the JVM
connector's jars come from scripts/setup.sh, scripts/spark-kafka/pom.xml, through
``spark.jars``): same schema, same rows, on the session's Apache Kafka (``kafka_cluster``,
which indexes record timestamps, so the timestamp options have exact answers). Writes go the
other way too: what one sink wrote, both sources read identically, and both sinks wrote the
same records. Rows are compared as sets keyed by (topic, partition, offset), since Spark
defines no order across partitions.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import time
import uuid

import pytest
from conftest import send_all, spark_kafka_jars
from helpers import wait_until

from rdk import Admin
from rdk.spark.stream import rate_limit

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

if not spark_kafka_jars():
    pytest.skip("Spark's JVM Kafka connector is not installed: run scripts/setup.sh "
                "(it fetches scripts/spark-kafka/pom.xml's jars)", allow_module_level=True)

FORMATS = ("kafka", "rdkafka")
PER_PARTITION = 6
BASE_MS = int(time.time() * 1000) - 3_600_000  # an hour ago: explicit, distinct timestamps


def stamp(topic_index: int, partition: int, i: int) -> int:
    return BASE_MS + 1000 * i + 10 * topic_index + partition


def record(topic_index: int, partition: int, i: int):
    """Binary and null keys, null and empty values, headers with a null value and a repeated
    name, and none at all."""
    from rdk import Message

    key = None if i % 3 == 0 else b"k\x00\xff%d-%d" % (partition, i)
    value = None if i % 4 == 1 else (b"" if i % 4 == 3 else b"v%d-%d-%d\x00" % (topic_index, partition, i))
    headers = ([("h", b"\x00x"), ("h", b"y"), ("n", None)] if i % 2 == 0 else None)
    return Message(value, key, headers, stamp(topic_index, partition, i))


@pytest.fixture(scope="module")
def topics(kafka_cluster, new_topic):
    """Two topics under one prefix (2 partitions and 1), PER_PARTITION records each partition."""
    prefix = f"diff{uuid.uuid4().hex[:6]}"
    made = [new_topic(kafka_cluster, 2, prefix=prefix), new_topic(kafka_cluster, 1, prefix=prefix)]
    for t, name in enumerate(made):
        for p in range(2 if t == 0 else 1):
            send_all(kafka_cluster.bootstrap_servers, name, p,
                     [record(t, p, i) for i in range(PER_PARTITION)])
    return prefix, made


@pytest.fixture(scope="module")
def new_topic():  # module scope for the topics fixture (tests/conftest.py's is per test)
    def make(broker, partitions: int = 1, prefix: str = "t") -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:10]}"
        broker.create_topic(name, partitions)
        return name

    return make


def load(spark, fmt: str, bootstrap: str, stream: bool = False, **options):
    reader = (spark.readStream if stream else spark.read).format(fmt)
    reader = reader.option("kafka.bootstrap.servers", bootstrap)
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def canonical(row) -> tuple:
    """A hashable, comparable row: binary as bytes, headers as tuples."""
    out = []
    for v in row:
        if isinstance(v, bytearray):
            v = bytes(v)
        elif isinstance(v, list):
            v = tuple(tuple(bytes(x) if isinstance(x, bytearray) else x for x in h) for h in v)
        out.append(v)
    return tuple(out)


def rows_of(df) -> list[tuple]:
    rows = [canonical(r) for r in df.collect()]
    fields = df.schema.fieldNames()
    if {"topic", "partition", "offset"} <= set(fields):
        at = [fields.index(f) for f in ("topic", "partition", "offset")]
        return sorted(rows, key=lambda r: tuple(r[i] for i in at))
    return sorted(rows, key=repr)


def differences(spark, bootstrap: str, **options) -> list[str]:
    """Run the batch read with both formats; what differs (empty: identical)."""
    got = {fmt: load(spark, fmt, bootstrap, **options) for fmt in FORMATS}
    found = []
    if got["kafka"].schema != got["rdkafka"].schema:
        found.append(f"{options}: schema {got['kafka'].schema} != {got['rdkafka'].schema}")
    rows = {fmt: rows_of(df) for fmt, df in got.items()}
    if rows["kafka"] != rows["rdkafka"]:
        only_jvm = [r for r in rows["kafka"] if r not in rows["rdkafka"]]
        only_rdk = [r for r in rows["rdkafka"] if r not in rows["kafka"]]
        found.append(f"{options}: {len(rows['kafka'])} vs {len(rows['rdkafka'])} rows; "
                     f"only kafka {only_jvm[:3]}; only rdkafka {only_rdk[:3]}")
    if not rows["kafka"]:
        found.append(f"{options}: no rows at all (the case tests nothing)")
    return found


def test_batch_reads_give_the_same_schema_and_rows(spark, kafka_cluster, topics):
    prefix, (a, b) = topics
    bootstrap = kafka_cluster.bootstrap_servers
    mid = stamp(0, 0, 2)  # between records 1 and 2 of every partition... records 2.. on
    cases = [
        # subscribe, earliest / latest (the batch defaults), headers
        {"subscribe": f"{a},{b}", "includeHeaders": "true"},
        # subscribePattern with JSON offsets (-2 earliest, -1 latest, per topic, per partition)
        {"subscribePattern": f"{prefix}-.*", "includeHeaders": "false",
         "startingOffsets": json.dumps({a: {"0": 1, "1": -2}, b: {"0": 2}}),
         "endingOffsets": json.dumps({a: {"0": 5, "1": -1}, b: {"0": 4}})},
        # assign, explicit earliest / latest
        {"assign": json.dumps({a: [1], b: [0]}), "startingOffsets": "earliest",
         "endingOffsets": "latest", "includeHeaders": "true"},
        # a global starting timestamp
        {"subscribe": a, "startingTimestamp": str(mid)},
        # timestamps per partition, start and end
        {"assign": json.dumps({a: [0, 1]}),
         "startingOffsetsByTimestamp": json.dumps({a: {"0": stamp(0, 0, 1), "1": stamp(0, 1, 3)}}),
         "endingOffsetsByTimestamp": json.dumps({a: {"0": stamp(0, 0, 4), "1": stamp(0, 1, 5)}})},
    ]
    found = []
    for options in cases:
        found += differences(spark, bootstrap, **options)
    assert not found, "\n".join(found)


def test_available_now_stream_with_max_offsets_per_trigger(spark, kafka_cluster, topics, tmp_path):
    _, (a, b) = topics
    results = {}
    for fmt in FORMATS:
        name = f"diff_{fmt}_{uuid.uuid4().hex[:6]}"
        df = load(spark, fmt, kafka_cluster.bootstrap_servers, stream=True,
                  subscribe=f"{a},{b}", startingOffsets="earliest", maxOffsetsPerTrigger=5)
        query = (df.writeStream.format("memory").queryName(name)
                 .option("checkpointLocation", str(tmp_path / fmt))
                 .trigger(availableNow=True).start())
        try:
            assert query.awaitTermination(300), f"{fmt}: the AvailableNow query did not finish"
        finally:
            query.stop()
        assert query.exception() is None, query.exception()
        sizes = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
        results[fmt] = (df.schema, sizes, rows_of(spark.table(name)))
    total = 3 * PER_PARTITION
    assert sum(results["kafka"][1]) == total, results["kafka"][1]
    assert results["kafka"][0] == results["rdkafka"][0]
    assert results["kafka"][2] == results["rdkafka"][2]  # the same rows in the end
    # KNOWN DIFFERENCE (listed in docs/guide/spark.md): how maxOffsetsPerTrigger is shared.
    # Spark's connector gives each partition floor(limit * lag / total lag) (ceil when below 1),
    # so it may admit fewer rows than the limit (here 3 of 5: three partitions with equal
    # backlog get 1 each); rdkafka shares the limit by backlog with the largest remainders
    # taking the leftover rows, so every micro-batch but the last admits exactly the limit.
    # Both never exceed it and read every row once.
    begin = {(a, 0): 0, (a, 1): 0, (b, 0): 0}
    available = dict.fromkeys(begin, PER_PARTITION)
    assert results["kafka"][1] == batch_sizes(jvm_rate_limit, begin, available, 5) == [3] * 6
    assert results["rdkafka"][1] == batch_sizes(rate_limit, begin, available, 5) == [5, 5, 5, 3]


def jvm_rate_limit(begin: dict, available: dict, limit: int) -> dict:
    """KafkaMicroBatchStream.rateLimit of Spark's connector, for the sizes it must give."""
    lag = {tp: available[tp] - begin[tp] for tp in available}
    total = sum(lag.values())
    if total <= limit:
        return dict(available)
    ends = {}
    for tp, size in lag.items():
        prorate = limit * (size / total)
        ends[tp] = min(available[tp], begin[tp] + (math.ceil(prorate) if prorate < 1
                                                   else math.floor(prorate)))
    return ends


def batch_sizes(limiter, begin: dict, available: dict, limit: int) -> list[int]:
    sizes = []
    while begin != available:
        end = limiter(begin, available, limit)
        sizes.append(sum(end[tp] - begin[tp] for tp in end))
        begin = end
    return sizes


def test_what_either_sink_wrote_both_sources_read_the_same(spark, kafka_cluster, new_topic):
    from pyspark.sql.types import ArrayType, BinaryType, IntegerType, StringType, StructField, StructType

    bootstrap = kafka_cluster.bootstrap_servers
    target = {fmt: new_topic(kafka_cluster, 2, prefix=f"sink-{fmt}") for fmt in FORMATS}
    header = StructType([StructField("key", StringType()), StructField("value", BinaryType())])
    schema = StructType([StructField("topic", StringType()), StructField("partition", IntegerType()),
                         StructField("key", BinaryType()), StructField("value", BinaryType()),
                         StructField("headers", ArrayType(header))])
    rows = ([(None, 1, None, b"null key, partition 1", [("h", b"1"), ("h", None)]),
             (None, 0, b"\x00\xff", None, None),
             (None, 0, None, b"", [])]
            + [(None, None, b"k%d" % i, b"murmur2 %d" % i, [("i", b"%d" % i)]) for i in range(10)])

    def frame(topic_column: str | None):
        data = [(topic_column, *r[1:]) for r in rows]
        return spark.createDataFrame(data, schema).coalesce(1)

    for fmt in FORMATS:
        # the topic option wins over a topic column (which names a topic that does not exist)
        (frame(f"nowhere-{uuid.uuid4().hex[:6]}").write.format(fmt)
         .option("kafka.bootstrap.servers", bootstrap).option("topic", target[fmt])
         .mode("append").save())
        # then the topic column alone
        (frame(target[fmt]).write.format(fmt).option("kafka.bootstrap.servers", bootstrap)
         .mode("append").save())

    read = {(src, fmt): rows_of(load(spark, fmt, bootstrap, subscribe=target[src],
                                     includeHeaders="true"))
            for src in FORMATS for fmt in FORMATS}
    for src in FORMATS:  # what one sink wrote, both sources read the same
        assert read[(src, "kafka")] == read[(src, "rdkafka")], src
        assert len(read[(src, "kafka")]) == 2 * len(rows)

    # both sinks wrote the same records to the same partitions in the same order
    def content(r):  # key, value, topic, partition, offset, timestamp, timestampType, headers
        return (r[0], r[1], r[3], r[4], r[6], r[7])

    assert [content(r) for r in read[("kafka", "kafka")]] == \
        [content(r) for r in read[("rdkafka", "kafka")]]


# -- deleted data, failOnDataLoss -------------------------------------------------------------


def delete_records(cluster, topic: str, before: dict[int, int], folder) -> None:
    """Kafka's DeleteRecords: move each partition's log start offset to ``before[p]``.

    rdk.Admin has no DeleteRecords (librdkafka's rd_kafka_DeleteRecords is not bound), and
    topic retention cannot do it in bounded time here: the session's broker checks retention
    every log.retention.check.interval.ms (5 minutes by default). So the request goes through
    Apache Kafka's own kafka-delete-records tool (its class, in the broker's jars)."""
    spec = folder / f"delete-{topic}.json"
    spec.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": p, "offset": o} for p, o in before.items()]}))
    done = subprocess.run(
        [cluster.java, "-Xmx128m", "-cp", f"{cluster.libs}/*", "org.apache.kafka.tools.DeleteRecordsCommand",
         "--bootstrap-server", cluster.bootstrap_servers, "--offset-json-file", str(spec)],
        capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    with Admin(cluster.bootstrap_servers) as admin:
        wait_until(lambda: all(admin.watermarks(topic, p)[0] == o for p, o in before.items()),
                   timeout=30, what=f"the log start offsets of {topic} to reach {before}")


def stream_rows(spark, fmt: str, bootstrap: str, checkpoint, **options) -> tuple:
    """Run an AvailableNow stream to its end into a memory sink: (schema, rows, batch sizes)."""
    name = f"diff_{fmt}_{uuid.uuid4().hex[:6]}"
    df = load(spark, fmt, bootstrap, stream=True, **options)
    query = (df.writeStream.format("memory").queryName(name)
             .option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
    try:
        assert query.awaitTermination(180), f"{fmt}: the AvailableNow query did not finish"
    finally:
        query.stop()
    assert query.exception() is None, f"{fmt}: {query.exception()}"
    sizes = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    return df.schema, rows_of(spark.table(name)), sizes


def test_save_modes_write_or_refuse_as_the_built_in_sink(spark, kafka_cluster, new_topic):
    """df.write.format(...).save() with each save mode (none: Spark's default), as a user
    copies it from Spark's Kafka guide: both sinks write, or both refuse."""
    bootstrap = kafka_cluster.bootstrap_servers
    df = spark.createDataFrame([(b"v",)], "value binary").coalesce(1)
    outcome: dict[str, dict[str | None, str]] = {}
    for fmt in FORMATS:
        topic = new_topic(kafka_cluster, 1, prefix=f"modes-{fmt}")
        for mode in (None, "error", "errorifexists", "append", "ignore", "overwrite"):
            w = df.write.format(fmt).option("kafka.bootstrap.servers", bootstrap) \
                .option("topic", topic)
            if mode is not None:
                w = w.mode(mode)
            before = rows_of(load(spark, fmt, bootstrap, subscribe=topic))
            try:
                w.save()
                result = "wrote"
            except Exception:  # which modes refuse is what is compared
                result = "refused"
            after = rows_of(load(spark, fmt, bootstrap, subscribe=topic))
            outcome.setdefault(fmt, {})[mode] = f"{result} {len(after) - len(before)}"
    assert outcome["rdkafka"] == outcome["kafka"], outcome
    assert outcome["kafka"][None] == "wrote 1"


def test_deleted_records_and_fail_on_data_loss(spark, kafka_cluster, new_topic, tmp_path):
    """A topic whose first records were deleted (DeleteRecords: log start 4 and 7 of 10), read
    from offsets below its log start: with failOnDataLoss=true both formats fail (batch and an
    AvailableNow stream); with false both read exactly what is left, batch and stream."""
    bootstrap = kafka_cluster.bootstrap_servers
    topic = new_topic(kafka_cluster, 2, prefix="lost")
    count = 10
    for p in range(2):
        send_all(bootstrap, topic, p, [record(0, p, i) for i in range(count)])
    gone = {0: 4, 1: 7}  # the new log start offsets
    delete_records(kafka_cluster, topic, gone, tmp_path)
    below = {"startingOffsets": json.dumps({topic: {"0": 1, "1": 0}}),  # below the log start
             "endingOffsets": "latest", "assign": json.dumps({topic: [0, 1]})}

    # failOnDataLoss=true (the default): both fail, batch and stream, both saying that records
    # of the topic's partition are lost / gone and naming the option (not the same words:
    # Spark's "Some data may have been lost ... Could not read records in offset [0, 10) for
    # topic partition t-1", rdkafka's "offsets [0, 7) of t-1 are gone ...")
    errors = {}
    for fmt in FORMATS:
        df = load(spark, fmt, bootstrap, failOnDataLoss="true", **below)
        with pytest.raises(Exception) as caught:
            df.collect()
        errors[("batch", fmt)] = str(caught.value)
        with pytest.raises(Exception) as caught:
            stream_rows(spark, fmt, bootstrap, tmp_path / f"fail-{fmt}", failOnDataLoss="true",
                        subscribe=topic, startingOffsets=below["startingOffsets"])
        errors[("stream", fmt)] = str(caught.value)
    for what, text in errors.items():
        assert "failOnDataLoss" in text, f"{what}: {text[:2000]}"
        assert re.search(r"(?i)\b(lost|gone)\b", text), f"{what}: {text[:2000]}"
        assert re.search(rf"(?i)offsets? \[\d+, \d+\).* {topic}-[01]\b", text), f"{what}: {text[:2000]}"

    # failOnDataLoss=false: the same rows, exactly what is left
    found = differences(spark, bootstrap, failOnDataLoss="false", includeHeaders="true", **below)
    assert not found, "\n".join(found)
    left = rows_of(load(spark, "rdkafka", bootstrap, failOnDataLoss="false", **below))
    assert [(r[3], r[4]) for r in left] == [(p, o) for p in range(2) for o in range(gone[p], count)]

    # an AvailableNow stream from below the log start, failOnDataLoss=false: the same rows
    streamed = {fmt: stream_rows(spark, fmt, bootstrap, tmp_path / f"cp-{fmt}", failOnDataLoss="false",
                                 subscribe=topic, startingOffsets=below["startingOffsets"])
                for fmt in FORMATS}
    assert streamed["kafka"][0] == streamed["rdkafka"][0]
    assert streamed["kafka"][1] == streamed["rdkafka"][1] == left


# -- minOffsetsPerTrigger + maxTriggerDelay ---------------------------------------------------


def test_min_offsets_per_trigger_waits_for_max_trigger_delay(spark, kafka_cluster, new_topic, tmp_path):
    """A processing-time stream (1 s) with minOffsetsPerTrigger=10, maxTriggerDelay=4s: the
    first micro-batch always runs; fewer than 10 new offsets wait until maxTriggerDelay has
    passed since the last micro-batch; 10 or more go at the next trigger. (The JVM connector
    does not apply minOffsetsPerTrigger under Trigger.AvailableNow, nor does rdkafka.) The
    queries' progress (each micro-batch's trigger time) is what is checked."""
    try:
        from pyspark.sql.streaming.datasource import ReadMinRows  # noqa: F401
    except ImportError:
        pytest.skip("this pyspark has no admission control for Python sources (ReadMinRows): "
                    "rdkafka cannot offer minOffsetsPerTrigger")
    delay_ms, minimum, slack_ms = 4000, 10, 500
    results = {fmt: trickle(spark, fmt, kafka_cluster, new_topic, tmp_path, delay_ms, minimum)
               for fmt in FORMATS}
    report = {fmt: {k: v for k, v in r.items() if k not in ("schema", "rows")} for fmt, r in results.items()}
    for r in results.values():
        assert r["sizes"] == [2, 3, 3, minimum + 2], report
        # fewer than the minimum never ran before maxTriggerDelay had passed since the last
        # micro-batch (slack: the delay is measured from inside the trigger, not its start)...
        assert all(gap >= delay_ms - slack_ms for gap in r["gaps"]), report
        # ...although the data were there well before (at least one trigger interval)
        assert r["waited"][1] >= 1000 + slack_ms, report
        # the minimum did not wait for the delay
        assert r["prompt"] < delay_ms - slack_ms, report
    assert results["kafka"]["schema"] == results["rdkafka"]["schema"]
    # the same rows (each format read a topic of its own: the topic column aside)
    rows = {fmt: [r[:2] + r[3:] for r in results[fmt]["rows"]] for fmt in FORMATS}
    assert rows["kafka"] == rows["rdkafka"]
    assert len(rows["kafka"]) == 2 + 3 + 3 + minimum + 2


def trickle(spark, fmt: str, cluster, new_topic, tmp_path, delay_ms: int, minimum: int) -> dict:
    """One format's run of the minOffsetsPerTrigger test: 2 records, start the stream, then 3,
    3 and minimum + 2 records, each after the micro-batch before read its records."""
    bootstrap = cluster.bootstrap_servers
    topic = new_topic(cluster, 2, prefix=f"min-{fmt}")
    sent = [0, 0]

    def send(n: int) -> float:
        """n records shared by the two partitions; the wall-clock ms once delivered."""
        for p, k in ((0, (n + 1) // 2), (1, n // 2)):
            send_all(bootstrap, topic, p, [record(0, p, sent[p] + i) for i in range(k)])
            sent[p] += k
        return time.time() * 1000

    send(2)
    name = f"diff_min_{fmt}_{uuid.uuid4().hex[:6]}"
    df = load(spark, fmt, bootstrap, stream=True, subscribe=topic, startingOffsets="earliest",
              minOffsetsPerTrigger=minimum, maxTriggerDelay=f"{delay_ms // 1000}s")
    query = (df.writeStream.format("memory").queryName(name)
             .option("checkpointLocation", str(tmp_path / f"cp-{fmt}"))
             .trigger(processingTime="1 second").start())

    def batches() -> list[tuple[int, float]]:
        """(rows, trigger wall-clock ms) of every micro-batch that read something."""
        return [(p["numInputRows"], _ms(p["timestamp"])) for p in query.recentProgress
                if p["numInputRows"]]

    deadline = time.monotonic() + 30  # the whole run of one format, bounded

    def batch(n: int) -> tuple[int, float]:
        def ready():
            if query.exception() is not None:
                raise AssertionError(f"{fmt}: {query.exception()}")
            return len(batches()) >= n
        wait_until(ready, timeout=max(0.0, deadline - time.monotonic()),
                   what=f"{fmt}: micro-batch {n} with data (30 s for the whole run)", interval=0.1)
        return batches()[n - 1]

    try:
        first = batch(1)  # the first micro-batch always runs
        small = send(3)  # fewer than the minimum
        second = batch(2)
        small_again = send(3)  # fewer again: waits for the delay after the second
        third = batch(3)
        enough = send(minimum + 2)  # the minimum: goes at the next trigger
        fourth = batch(4)
        assert len(batches()) == 4, batches()
    finally:
        query.stop()
    assert query.exception() is None, query.exception()
    return {
        "schema": df.schema, "rows": rows_of(spark.table(name)),  # (key, value, topic, ...)
        "sizes": [first[0], second[0], third[0], fourth[0]],
        # how long after the previous micro-batch each one ran, and after its data came
        "gaps": [second[1] - first[1], third[1] - second[1]],
        "waited": [second[1] - small, third[1] - small_again],
        "prompt": fourth[1] - enough,
    }


def _ms(timestamp: str) -> float:
    """A query progress's ISO-8601 UTC timestamp as epoch ms."""
    from datetime import datetime, timezone

    at = datetime.strptime(timestamp.rstrip("Z"), "%Y-%m-%dT%H:%M:%S.%f")
    return at.replace(tzinfo=timezone.utc).timestamp() * 1000


# -- restart from a checkpoint ----------------------------------------------------------------


def test_restart_from_checkpoint_reads_exactly_the_new_records(spark, kafka_cluster, new_topic, tmp_path):
    """An AvailableNow stream run to its end, records added, run again from the same
    checkpoint (then once more with nothing new): each run reads exactly what came since the
    last, with both formats."""
    bootstrap = kafka_cluster.bootstrap_servers
    topic = new_topic(kafka_cluster, 2, prefix="restart")
    sent = [0, 0]

    def send(per_partition: list[int]) -> None:
        for p, n in enumerate(per_partition):
            send_all(bootstrap, topic, p, [record(0, p, sent[p] + i) for i in range(n)])
            sent[p] += n

    def run(fmt: str) -> list[tuple]:
        seen: list[tuple] = []
        df = load(spark, fmt, bootstrap, stream=True, subscribe=topic, startingOffsets="earliest",
                  includeHeaders="true")
        query = (df.writeStream.trigger(availableNow=True)
                 .foreachBatch(lambda b, _id: seen.extend(canonical(r) for r in b.collect()))
                 .option("checkpointLocation", str(tmp_path / f"cp-{fmt}")).start())
        try:
            assert query.awaitTermination(180), f"{fmt}: the AvailableNow query did not finish"
        finally:
            query.stop()
        assert query.exception() is None, f"{fmt}: {query.exception()}"
        return sorted(seen, key=lambda r: (r[3], r[4]))

    def offsets(rows) -> list[tuple[int, int]]:
        return [(r[3], r[4]) for r in rows]

    send([5, 3])
    runs = {fmt: [run(fmt)] for fmt in FORMATS}
    send([4, 6])
    for fmt in FORMATS:
        runs[fmt].append(run(fmt))
    for fmt in FORMATS:  # and once more, nothing new
        runs[fmt].append(run(fmt))
    expected = [[(0, o) for o in range(5)] + [(1, o) for o in range(3)],
                [(0, o) for o in range(5, 9)] + [(1, o) for o in range(3, 9)],
                []]
    for fmt in FORMATS:
        assert [offsets(rows) for rows in runs[fmt]] == expected, fmt
    assert runs["kafka"] == runs["rdkafka"]
