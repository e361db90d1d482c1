"""Spark and Kafka: rdk's ``rdkafka`` source against Spark's JVM connector, the naive way and
Spark's in-memory ceiling, in every scenario of issue 29.

Workload: 1 M messages of ``--value-size`` bytes (default 100; 10 000 distinct keys) in 4
partitions, a ``local[2]`` Spark; rows/s and MB/s (value bytes) per contender and scenario.

Scenarios (``--scenarios``, a comma list; default ``count,groupby``, as before):

- ``count``: ``df.count()`` of the batch read;
- ``groupby``: ``df.groupBy("key").count().collect()``;
- ``parquet``: ``df.select(value, key, topic, partition, offset, timestamp)
  .write.mode("overwrite").parquet(dir)`` of the whole read (checked by reading it back, the
  directory removed after each run);
- ``stream``: ``spark.readStream`` (``startingOffsets=earliest``, ``maxOffsetsPerTrigger``
  from ``--max-offsets-per-trigger``) into the ``noop`` sink with ``Trigger.AvailableNow``,
  timed from ``start()`` to the query's end, a fresh checkpoint directory per run, checked by
  the progress reports' ``numInputRows``;
- ``stream20``: the same stream in 20 micro-batches (``maxOffsetsPerTrigger`` =
  messages / 20); with ``stream`` it gives each contender's fixed cost of one micro-batch,
  ``per_micro_batch_s`` in the results: (stream20 - stream) / (20 - stream's micro-batches);
- ``sink``: ``df.write`` of ``--sink-messages`` rows (default ``--messages``; key and value
  of the ceiling's rows, built once and cached) to a fresh topic, checked afterwards by the
  topic's watermarks (the run fails when the topic does not hold exactly that many messages).

Contenders, in the same run and the same SparkSession:

- ``rdk``: ``format("rdkafka")`` (executors fetch with librdkafka into Arrow, or produce
  with rdk.Producer from Arrow);
- ``jvm``: Spark's own Kafka connector, ``format("kafka")`` with the same options (when
  scripts/setup.sh fetched its jars; handed to Spark with ``spark.jars``);
- ``ceiling``: a Python data source (``arrow_ceiling``) that yields in-memory Arrow batches
  of the same schema and shape (value size, keys) without touching Kafka: the most any Python
  data source can deliver here. For ``stream`` it is a micro-batch stream reader over the
  same in-memory batches with the same read limit and trigger (Python streaming source
  overhead, no I/O); for ``sink`` a Python Arrow writer that counts and drops the rows;
- ``naive`` (``count`` and ``groupby`` only, local mode only): a driver-side
  confluent-kafka consumer reads everything, then ``spark.createDataFrame``.

Targets: rdk >= 10 x naive, >= 0.6 x ceiling and >= 1.0 x the JVM connector. The broker
(``--broker``) is Tansu by default (started here; the mock cluster keeps only ~5 MiB per
partition, too little for 100 MB), ``kafka`` (an embedded Apache Kafka, which the JVM
connector needs: Tansu's ListOffsets(latest) is wrong) or HOST:PORT; ``RDK_BROKERS`` too.

With ``--master spark://HOST:PORT`` (a standalone cluster, e.g. scripts/spark-cluster.sh
start's), the same queries run there too, after local mode, and both are reported side by
side; executors get rdk from the packed environment of the recipe of docs/guide/spark.md (``--archive``, or
scripts/spark-cluster.sh env). The naive way is measured in local mode only: its read is
on the driver wherever Spark runs.

``--profile OUT.html`` (needs pyinstrument, in the ``bench`` extra) profiles rdk's reader
outside Spark: the ``rdkafka`` source's ``read()`` of one partition of the benchmark topic in
this process, as a Python worker runs it; writes the HTML and OUT.txt (the text tree) and
prints its top frames (librdkafka fetch in C, Arrow building, per-batch Python).

    .venv/bin/python bench/spark_bench.py [--messages 1000000] [--repeat 5] [--warmup 3]
        [--value-size 100] [--scenarios count,groupby,parquet,stream,sink]
        [--max-offsets-per-trigger 200000] [--sink-messages N] [--broker kafka]
        [--master spark://... [--archive ENV.tar.gz] [--cluster-only]] [--profile out.html] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shlex
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from rdk.mock import start_broker

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))
# the client-mode recipe of docs/guide/spark.md, shared with the main job
from spark_pipeline import ship_rdk, unpack_for_driver  # noqa: E402

PARTITIONS = 4
VALUE_SIZE = 100  # the default of --value-size
KEYS = 10_000
SCENARIOS = ("count", "groupby", "parquet", "stream", "stream20", "sink")
STREAM20_BATCHES = 20  # micro-batches of the stream20 scenario
PARQUET_COLUMNS = ["value", "key", "topic", "partition", "offset", "timestamp"]


# ---- Spark's ceiling: a Python data source with batches already in memory ----------------
def ceiling_batch(n: int, value_size: int, partition: int, first: int = 0) -> pa.RecordBatch:
    """n rows of the Kafka schema, the benchmark topic's shape (keys cycle over KEYS)."""
    from rdk.arrow import kafka_schema

    keys = pa.array([b"key-%05d" % ((first + i) % KEYS) for i in range(n)], pa.binary())
    values = pa.array([bytes(value_size)] * n, pa.binary())
    now = int(time.time() * 1_000_000)
    return pa.RecordBatch.from_arrays([
        keys, values, pa.array(["bench"] * n, pa.string()), pa.array([partition] * n, pa.int32()),
        pa.array(range(first, first + n), pa.int64()),
        pa.array([now] * n, pa.timestamp("us", tz="UTC")),
        pa.array([0] * n, pa.int32())], schema=kafka_schema())


def ceiling_rows(batch: pa.RecordBatch, rows: int):
    """``rows`` rows as slices of one in-memory batch."""
    n = batch.num_rows
    done = 0
    while done < rows:
        take = min(n, rows - done)
        yield batch if take == n else batch.slice(0, take)
        done += take


class CeilingSource(DataSource):
    """Yields Arrow batches of the Kafka schema built once in memory; no I/O at all. Reads
    (batch and micro-batch stream) and writes (a writer that counts and drops the rows)."""

    @classmethod
    def name(cls) -> str:
        return "arrow_ceiling"

    def schema(self):
        from rdk.spark import kafka_schema

        return kafka_schema()

    def _shape(self) -> tuple[int, int, int, int]:
        o = self.options
        return (int(o["rows"]), int(o["partitions"]), int(o.get("batch", 20000)),
                int(o.get("value_size", VALUE_SIZE)))

    def reader(self, schema):
        return CeilingReader(*self._shape())

    def streamReader(self, schema):
        return CeilingStreamReader(*self._shape(), int(self.options.get("maxOffsetsPerTrigger", 0)))

    def writer(self, schema, overwrite):
        return CeilingWriter()


class CeilingReader(DataSourceReader):
    def __init__(self, rows: int, partitions: int, batch: int, value_size: int) -> None:
        self.rows, self.n_parts, self.batch, self.value_size = rows, partitions, batch, value_size

    def partitions(self):
        return [InputPartition(p) for p in range(self.n_parts)]

    def read(self, partition):
        rows = self.rows // self.n_parts
        batch = ceiling_batch(min(self.batch, rows), self.value_size, partition.value)
        yield from ceiling_rows(batch, rows)


class CeilingStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """The same in-memory rows as a micro-batch stream: offsets per partition, the read limit
    (maxOffsetsPerTrigger, spread evenly over the partitions) and Trigger.AvailableNow honoured
    as by the Kafka sources, so it costs what Python streaming costs without any I/O."""

    def __init__(self, rows: int, partitions: int, batch: int, value_size: int,
                 max_rows: int = 0) -> None:
        self.per_part, self.n_parts = rows // partitions, partitions
        self.batch, self.value_size, self.max_rows = batch, value_size, max_rows

    def initialOffset(self) -> dict:
        return {"o": [0] * self.n_parts}

    def getDefaultReadLimit(self):
        """maxOffsetsPerTrigger as the Kafka sources take it (without this, Spark hands a
        Python stream reader ReadAllAvailable and the whole stream is one micro-batch)."""
        return ReadMaxRows(self.max_rows) if self.max_rows else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        """The data never grows: the target is the end."""

    def latestOffset(self, start: dict, limit) -> dict:
        begin = list(start["o"])
        if isinstance(limit, ReadMaxRows):
            each = max(1, limit.max_rows // self.n_parts)
            return {"o": [min(self.per_part, b + each) for b in begin]}
        return {"o": [self.per_part] * self.n_parts}

    def partitions(self, start: dict, end: dict):
        return [InputPartition((p, s, e)) for p, (s, e) in enumerate(zip(start["o"], end["o"],
                                                                         strict=True)) if e > s]

    def read(self, partition):
        p, s, e = partition.value
        batch = ceiling_batch(min(self.batch, e - s), self.value_size, p, s)
        yield from ceiling_rows(batch, e - s)

    def commit(self, end: dict) -> None:
        pass


class CeilingWriter(DataSourceArrowWriter):
    """Counts the rows Spark hands over as Arrow and drops them."""

    def write(self, iterator):
        n = 0
        for batch in iterator:
            n += batch.num_rows
        return WriterCommitMessage()


# ---- helpers -----------------------------------------------------------------------------
def produce(bootstrap: str, topic: str, messages: int, value_size: int = VALUE_SIZE) -> float:
    from rdk.producer import Producer

    per_part = messages // PARTITIONS
    value = bytes(value_size)
    failures: list = []
    start = time.perf_counter()
    with Producer(bootstrap, on_queue_full="block",
                  driver_options={"linger.ms": 5, "batch.num.messages": 10000,
                                  "queue.buffering.max.messages": 2_000_000}) as producer:
        chunk = 50_000
        for p in range(PARTITIONS):
            for lo in range(0, per_part, chunk):
                payloads = [(b"key-%05d" % ((lo + i) % KEYS), value)
                            for i in range(min(chunk, per_part - lo))]
                producer.send(topic, p, payloads, on_delivery=lambda d, f: failures.extend(f))
        left = producer.flush(120)
    if left or failures:
        raise SystemExit(f"produce failed: {left} undelivered, {len(failures)} failed")
    return time.perf_counter() - start


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def topic_messages(bootstrap: str, topic: str) -> int:
    """Messages in ``topic``: high - low watermark summed over its partitions."""
    from rdk import Admin

    with Admin(bootstrap) as admin:
        parts = admin.partition_count(topic)
        return sum(hi - lo for lo, hi in (admin.watermarks(topic, p) for p in range(parts)))


def naive_dataframe(spark, bootstrap: str, topic: str, messages: int):
    """The jar-less workaround: consume on the driver, then spark.createDataFrame."""
    from confluent_kafka import Consumer, TopicPartition

    from rdk.spark import kafka_schema

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"naive-{uuid.uuid4()}",
                         "enable.auto.commit": False, "enable.partition.eof": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    rows = []
    deadline = time.monotonic() + 600
    try:
        while len(rows) < messages and time.monotonic() < deadline:
            for m in consumer.consume(10000, 1.0):
                if m.error():
                    continue
                kind, ms = m.timestamp()
                rows.append((m.key(), m.value(), m.topic(), m.partition(), m.offset(),
                             datetime.fromtimestamp(ms / 1000, timezone.utc), kind - 1))
    finally:
        consumer.close()
    if len(rows) != messages:
        raise SystemExit(f"naive consumer read {len(rows)} of {messages}")
    return spark.createDataFrame(rows, kafka_schema())


def jvm_connector_jars() -> list[str]:
    """Jars of Spark's own Kafka connector (format("kafka")) that scripts/setup.sh fetched into
    .deps/spark-sql-kafka-<version>/jars, or [] (then the ``jvm`` contender is left out)."""
    root = Path(__file__).resolve().parents[1]
    for folder in sorted(root.glob(".deps/spark-sql-kafka-*"), reverse=True):
        if (folder / ".rdk-fetched").is_file():
            return sorted(str(j) for j in (folder / "jars").glob("*.jar"))
    return []


def start_spark(master: str = "local[2]", archive: str = "", jars: list[str] | None = None):
    """The session every contender runs in, rdkafka and arrow_ceiling registered (and Spark's
    JVM Kafka connector on the classpath when ``jars``)."""
    from pyspark.sql import SparkSession

    import rdk.spark

    builder = (SparkSession.builder.master(master).appName("rdk-spark-bench")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "4")
               .config("spark.driver.memory", "4g")
               .config("spark.ui.showConsoleProgress", "false"))
    if jars:
        builder = builder.config("spark.jars", ",".join(jars))
    if master.startswith("local"):
        os.environ["PYSPARK_PYTHON"] = sys.executable
    else:
        builder = ship_rdk(builder, master, archive)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    rdk.spark.register(spark)
    spark.dataSource.register(CeilingSource)
    return spark


# ---- the scenarios: each run times itself and checks its result ---------------------------
class Scenarios:
    """Per scenario, per contender, a function that runs it once and returns its seconds."""

    def __init__(self, spark, bootstrap: str, topic: str, args: argparse.Namespace,
                 workdir: str, jvm: bool) -> None:
        self.spark, self.bootstrap, self.topic, self.args = spark, bootstrap, topic, args
        self.workdir, self.jvm = workdir, jvm
        self.keys = min(KEYS, args.messages // PARTITIONS)  # each partition cycles the keys
        self.sink_checks: dict[str, list[int]] = {}
        self._sink_input = None

    # DataFrames
    def kafka_df(self, fmt: str, stream: bool = False, per_trigger: int | None = None):
        r = self.spark.readStream if stream else self.spark.read
        r = (r.format(fmt).option("kafka.bootstrap.servers", self.bootstrap)
             .option("subscribe", self.topic))
        if stream:
            r = (r.option("startingOffsets", "earliest")
                 .option("maxOffsetsPerTrigger", per_trigger or self.args.max_offsets_per_trigger))
        return r.load()

    def ceiling_df(self, stream: bool = False, rows: int | None = None,
                   per_trigger: int | None = None):
        r = self.spark.readStream if stream else self.spark.read
        r = (r.format("arrow_ceiling").option("rows", rows or self.args.messages)
             .option("partitions", PARTITIONS).option("value_size", self.args.value_size))
        if stream:
            r = r.option("maxOffsetsPerTrigger", per_trigger or self.args.max_offsets_per_trigger)
        return r.load()

    def make(self, name: str, stream: bool = False, per_trigger: int | None = None):
        if name == "ceiling":
            return self.ceiling_df(stream, per_trigger=per_trigger)
        return self.kafka_df("rdkafka" if name == "rdk" else "kafka", stream, per_trigger)

    def micro_batches(self, scenario: str) -> int:
        """How many micro-batches a stream scenario reads the topic in."""
        if scenario == "stream20":
            return STREAM20_BATCHES
        return math.ceil(self.args.messages / self.args.max_offsets_per_trigger)

    def contenders(self, scenario: str) -> list[str]:
        return ["ceiling", "rdk"] + (["jvm"] if self.jvm else [])

    def rows(self, scenario: str) -> int:
        return self.args.sink_messages if scenario == "sink" else self.args.messages

    def run(self, scenario: str, name: str) -> float:
        return getattr(self, f"run_{scenario}")(name)

    # the runs
    def run_count(self, name: str) -> float:
        t, n = timed(lambda: self.make(name).count())
        assert n == self.args.messages, (name, n)
        return t

    def run_groupby(self, name: str) -> float:
        t, g = timed(lambda: self.make(name).groupBy("key").count().collect())
        assert len(g) == self.keys and sum(r["count"] for r in g) == self.args.messages, name
        return t

    def run_parquet(self, name: str) -> float:
        out = tempfile.mkdtemp(prefix=f"parquet-{name}-", dir=self.workdir)
        try:
            df = self.make(name).select(*PARQUET_COLUMNS)
            t, _ = timed(lambda: df.write.mode("overwrite").parquet(out))
            n = self.spark.read.parquet(out).count()
        finally:
            shutil.rmtree(out, ignore_errors=True)
        assert n == self.args.messages, (name, n)
        return t

    def run_stream20(self, name: str) -> float:
        """The stream scenario in 20 micro-batches: with ``stream``, the fixed cost of one
        micro-batch (``per_micro_batch`` in the results)."""
        return self.run_stream(name, math.ceil(self.args.messages / STREAM20_BATCHES))

    def run_stream(self, name: str, per_trigger: int | None = None) -> float:
        checkpoint = tempfile.mkdtemp(prefix=f"checkpoint-{name}-", dir=self.workdir)
        try:
            writer = (self.make(name, stream=True, per_trigger=per_trigger)
                      .writeStream.format("noop")
                      .option("checkpointLocation", checkpoint).trigger(availableNow=True))
            start = time.perf_counter()
            query = writer.start()
            query.awaitTermination()
            t = time.perf_counter() - start
            if query.exception():
                raise RuntimeError(f"{name} stream failed: {query.exception()}")
            progress = query.recentProgress
            n = sum(_field(p, "numInputRows") for p in progress)
        finally:
            shutil.rmtree(checkpoint, ignore_errors=True)
        limit = int(self.spark.conf.get("spark.sql.streaming.numRecentProgressUpdates", "100"))
        assert n == self.args.messages or len(progress) >= limit, (name, n)
        # every contender honours the read limit: a stream read in fewer micro-batches than
        # it allows would make its fixed cost per micro-batch look smaller than it is
        batches = sum(1 for p in progress if _field(p, "numInputRows"))
        want = math.ceil(self.args.messages / (per_trigger or self.args.max_offsets_per_trigger))
        assert batches >= want or len(progress) >= limit, (
            f"{name}: {batches} micro-batches with rows, the read limit allows no fewer than {want}")
        return t

    def sink_input(self):
        """key and value of the ceiling's rows, built once and cached."""
        if self._sink_input is None:
            self._sink_input = self.ceiling_df(rows=self.args.sink_messages).select(
                "key", "value").cache()
            assert self._sink_input.count() == self.args.sink_messages
        return self._sink_input

    def run_sink(self, name: str) -> float:
        df = self.sink_input()
        if name == "ceiling":
            t, _ = timed(lambda: df.write.format("arrow_ceiling").mode("append").save())
            return t
        from rdk import Admin

        topic = f"spark-sink-{name}-{uuid.uuid4().hex[:8]}"
        with Admin(self.bootstrap) as admin:
            admin.create_topics({topic: PARTITIONS})
        fmt = "rdkafka" if name == "rdk" else "kafka"
        writer = (df.write.format(fmt).mode("append")
                  .option("kafka.bootstrap.servers", self.bootstrap).option("topic", topic))
        t, _ = timed(writer.save)
        n = topic_messages(self.bootstrap, topic)
        if n != self.args.sink_messages:
            raise SystemExit(f"sink {name}: topic {topic} holds {n} messages, "
                             f"not {self.args.sink_messages}")
        self.sink_checks.setdefault(name, []).append(n)
        try:
            with Admin(self.bootstrap) as admin:
                admin.delete_topics([topic])
        except Exception as e:  # only housekeeping
            print(f"(could not delete {topic}: {e})", flush=True)
        return t


def _field(progress, name: str):
    try:
        return progress[name]
    except (TypeError, KeyError):
        return getattr(progress, name)


def time_scenarios(sc: Scenarios, args: argparse.Namespace) -> dict[str, dict[str, list[float]]]:
    """Every scenario of every contender, warmed up, then interleaved runs: {scenario:
    {contender: [seconds, ...]}}."""
    # warm-up: Python workers, connections, and the JVM's JIT, which goes on compiling
    # the scan and aggregation code for several queries
    for _ in range(args.warmup):
        for scenario in args.scenarios:
            for name in sc.contenders(scenario):
                sc.run(scenario, name)
    times = {s: {name: [] for name in sc.contenders(s)} for s in args.scenarios}
    # interleaved, so every contender sees the same background load
    for _ in range(args.repeat):
        for scenario in args.scenarios:
            for name in sc.contenders(scenario):
                times[scenario][name].append(sc.run(scenario, name))
                print(f"  {scenario:8} {name:8} {sc.rows(scenario) / times[scenario][name][-1]:>12,.0f}"
                      " rows/s", flush=True)
    return times


def time_naive(spark, bootstrap: str, topic: str, args: argparse.Namespace, keys: int) -> dict:
    """The naive way: a driver-side read into a DataFrame, then the same two queries."""
    total = []
    for _ in range(max(1, min(args.repeat, 2))):
        t0 = time.perf_counter()
        df = naive_dataframe(spark, bootstrap, topic, args.messages)
        t1 = time.perf_counter()
        assert df.count() == args.messages
        t2 = time.perf_counter()
        g = df.groupBy("key").count().collect()
        t3 = time.perf_counter()
        assert len(g) == keys
        total.append((t1 - t0, t2 - t1, t3 - t2))
    fetch, count, group = (statistics.median(x) for x in zip(*total, strict=True))
    print(f"naive    count {args.messages / (fetch + count):>12,.0f} rows/s   "
          f"groupBy {args.messages / (fetch + group):>12,.0f} rows/s "
          f"(driver-side read: {fetch:.1f} s)", flush=True)
    # the naive way pays its driver-side read once for both queries
    return {"fetch_s": fetch, "count_s": fetch + count, "groupby_s": fetch + group,
            "both_s": fetch + count + group}


def scenario_figures(times: dict[str, dict[str, list[float]]], sc: Scenarios,
                     args: argparse.Namespace, naive: dict | None) -> dict[str, dict]:
    """{scenario: {contender: {seconds, best_seconds, runs, rows, rows_per_s, mb_per_s},
    "ratios": {"rdk/jvm": x, "rdk/ceiling": x}}}; a ratio is rdk's rows/s over the other's."""
    out: dict[str, dict] = {}
    for scenario, by_name in times.items():
        rows = sc.rows(scenario)
        figures: dict[str, dict] = {}
        for name, ts in by_name.items():
            med = statistics.median(ts)
            figures[name] = {"seconds": med, "best_seconds": min(ts), "runs": ts, "rows": rows,
                             "rows_per_s": rows / med,
                             "mb_per_s": rows * args.value_size / med / 1e6}
            if scenario == "sink" and name != "ceiling":
                checked = sc.sink_checks.get(name, [])
                figures[name]["topic_messages"] = checked
                figures[name]["verified"] = bool(checked) and all(n == rows for n in checked)
        if naive and scenario in ("count", "groupby"):
            med = naive[f"{scenario}_s"]
            figures["naive"] = {"seconds": med, "best_seconds": med, "runs": [med], "rows": rows,
                                "rows_per_s": rows / med,
                                "mb_per_s": rows * args.value_size / med / 1e6,
                                "driver_fetch_s": naive["fetch_s"]}
        ratios = {}
        for other in ("jvm", "ceiling", "naive"):
            if other in figures and "rdk" in figures:
                ratios[f"rdk/{other}"] = figures["rdk"]["rows_per_s"] / figures[other]["rows_per_s"]
        figures["ratios"] = ratios
        out[scenario] = figures
    return out


def per_micro_batch(times: dict[str, dict[str, list[float]]], sc: Scenarios) -> dict[str, float]:
    """Seconds one more micro-batch costs each contender reading the same rows: the
    difference of the 20-micro-batch and the ``stream`` medians over the difference of their
    micro-batch counts (the rows, hence the per-row work, are the same in both)."""
    extra = sc.micro_batches("stream20") - sc.micro_batches("stream")
    if extra <= 0:
        return {}
    return {name: (statistics.median(times["stream20"][name])
                   - statistics.median(times["stream"][name])) / extra
            for name in times["stream20"] if name in times["stream"]}


def legacy_results(times: dict, naive: dict | None) -> dict[str, dict[str, float]]:
    """The keys scripts/plots.py reads (count_s, groupby_s, both_s and the best ones) per
    contender, plus ``<scenario>_s`` of the other scenarios."""
    results: dict[str, dict[str, float]] = {}
    for scenario, by_name in times.items():
        for name, ts in by_name.items():
            r = results.setdefault(name, {})
            r[f"{scenario}_s"] = statistics.median(ts)
            if scenario in ("count", "groupby"):
                r[f"{scenario}_best_s"] = min(ts)
    for r in results.values():
        if "count_s" in r and "groupby_s" in r:
            r["both_s"] = r["count_s"] + r["groupby_s"]
    if naive:
        results["naive"] = naive
    return results


def report(scen: dict[str, dict], args: argparse.Namespace) -> None:
    """The summary table (rows/s, MB/s, ratios) and the targets."""
    print(f"\n{'scenario':9} {'contender':10} {'rows/s':>13} {'MB/s':>9} {'seconds':>9}")
    for scenario, figures in scen.items():
        for name, f in figures.items():
            if name == "ratios":
                continue
            extra = "  (topic count verified)" if f.get("verified") else ""
            print(f"{scenario:9} {name:10} {f['rows_per_s']:>13,.0f} {f['mb_per_s']:>9,.1f} "
                  f"{f['seconds']:>9.3f}{extra}")
        ratios = ", ".join(f"{k} {v:.2f}x" for k, v in figures["ratios"].items())
        print(f"{'':9} {'ratios':10} {ratios}")
    print("targets: rdk/ceiling >= 0.6x, rdk/jvm >= 1.0x, rdk/naive >= 10x")


def side_by_side(by_master: dict[str, dict]) -> None:
    """rows/s of each contender under each master, one line each."""
    print(f"\n{'master':26} {'scenario':9} {'contender':10} {'rows/s':>13} {'MB/s':>9} "
          f"{'vs ceiling':>11}")
    for master, scen in by_master.items():
        for scenario, figures in scen.items():
            for name, f in figures.items():
                if name == "ratios":
                    continue
                ratio = f["rows_per_s"] / figures["ceiling"]["rows_per_s"]
                print(f"{master:26} {scenario:9} {name:10} {f['rows_per_s']:>13,.0f} "
                      f"{f['mb_per_s']:>9,.1f} {ratio:>10.2f}x")


def profile_reader(bootstrap: str, topic: str, out: str) -> dict:
    """rdk's reader outside Spark: read() of one input partition of the benchmark topic in this
    process under pyinstrument; the HTML, OUT.txt and the top frames printed."""
    try:
        from pyinstrument import Profiler
    except ImportError:
        raise SystemExit("--profile needs pyinstrument: pip install pyinstrument "
                         "(it is in rdk's bench extra)") from None
    from pyspark.sql.datasource import CaseInsensitiveDict

    from rdk.spark.source import KafkaDataSource

    source = KafkaDataSource(CaseInsensitiveDict({"kafka.bootstrap.servers": bootstrap,
                                                  "subscribe": topic}))
    reader = source.reader(source.schema())
    part = reader.partitions()[0]
    first = reader.read(part)  # imports and lazy set-up (pyarrow.compute) out of the way
    next(first, None)
    first.close()
    profiler = Profiler(interval=0.0005)
    rows = batches = 0
    start = time.perf_counter()
    profiler.start()
    for batch in reader.read(part):
        rows += batch.num_rows
        batches += 1
    profiler.stop()
    seconds = time.perf_counter() - start
    Path(out).write_text(profiler.output_html())
    text = profiler.output_text(unicode=False, color=False)
    txt = str(Path(out).with_suffix(".txt"))
    Path(txt).write_text(text)
    print(f"\nprofile of rdk's reader, {part!r}: {rows:,} rows in {batches} batches, "
          f"{seconds:.2f} s ({rows / seconds:,.0f} rows/s, under the profiler) -> {out}, {txt}")
    print("\n".join(text.splitlines()[:40]))
    shares = profile_shares(profiler.last_session.root_frame())
    print("where the reader's time goes: " + ", ".join(
        f"{k} {v:.0%}" for k, v in shares.items()))
    return {"html": out, "text": txt, "partition": repr(part), "rows": rows,
            "batches": batches, "seconds": seconds, "shares": shares}


#: frames that stand for a part of the reader's work (their callees included)
PROFILE_PARTS = {"rdk_consume_batch": "librdkafka fetch (C)",
                 "record_batch": "Arrow building"}


def profile_shares(root) -> dict[str, float]:
    """Shares of the profiled time: librdkafka's fetch, Arrow building, and the rest (the
    per-batch Python around them, set-up and close)."""
    total = root.time if root else 0.0
    sums = dict.fromkeys(PROFILE_PARTS.values(), 0.0)
    stack = [root] if root else []
    while stack:
        frame = stack.pop()
        part = PROFILE_PARTS.get((frame.function or "").rsplit(".", 1)[-1])
        if part:
            sums[part] += frame.time
        else:
            stack.extend(frame.children)
    if not total:
        return {}
    shares = {k: v / total for k, v in sums.items()}
    shares["per-batch Python and the rest"] = max(0.0, 1 - sum(shares.values()))
    return shares


def parse_scenarios(text: str) -> list[str]:
    names = [s.strip() for s in text.split(",") if s.strip()]
    unknown = [s for s in names if s not in SCENARIOS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown scenarios {unknown}; pick from "
                                         f"{','.join(SCENARIOS)}")
    return list(dict.fromkeys(names))


def versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": platform.python_version()}
    for dist in ("rdk", "pyspark", "pyarrow"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            out[dist] = "unknown"
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--messages", type=int, default=1_000_000)
    ap.add_argument("--value-size", type=int, default=VALUE_SIZE,
                    help="bytes per value, for Kafka and the ceiling alike (default 100)")
    ap.add_argument("--scenarios", type=parse_scenarios, default=["count", "groupby"],
                    help=f"comma list of {','.join(SCENARIOS)} (default count,groupby)")
    ap.add_argument("--max-offsets-per-trigger", type=int, default=200_000,
                    help="maxOffsetsPerTrigger of the stream scenario (default 200 000)")
    ap.add_argument("--sink-messages", type=int,
                    help="rows the sink scenario writes per run (default --messages)")
    ap.add_argument("--repeat", type=int, default=5,
                    help="timed runs per contender, interleaved (median; default 5)")
    ap.add_argument("--skip-naive", action="store_true", help="leave out the slow naive way")
    ap.add_argument("--warmup", type=int, default=3,
                    help="untimed rounds of every scenario per contender first (default 3)")
    ap.add_argument("--master", help="also run on this standalone cluster (spark://HOST:PORT), "
                                     "after local[2]")
    ap.add_argument("--archive", help="with --master: the packed environment to ship "
                                      "(default: scripts/spark-cluster.sh env builds it)")
    ap.add_argument("--json", help="also write the figures to this file")
    ap.add_argument("--profile", metavar="OUT.html",
                    help="profile rdk's reader of one partition outside Spark (pyinstrument)")
    ap.add_argument("--broker", default=os.environ.get("RDK_BROKERS") or "tansu",
                    help="tansu (default), kafka, or HOST:PORT of a running cluster")
    ap.add_argument("--cluster-only", action="store_true",
                    help="with --master: leave out the local[2] run (a smoke run of the cluster path)")
    ap.add_argument("--skip-jvm", action="store_true",
                    help="leave out Spark's own JVM Kafka connector (format('kafka'); always left "
                         "out on Tansu, whose ListOffsets(latest) answers wrong)")
    args = ap.parse_args(argv)
    if args.sink_messages is None:
        args.sink_messages = args.messages
    meta = {"command": shlex.join([sys.executable, *sys.argv]),
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                        "host": platform.node()},
            "loadavg_start": os.getloadavg(), "versions": versions()}
    topic = f"spark-bench-{uuid.uuid4().hex[:8]}"
    masters = (([] if args.cluster_only and args.master else ["local[2]"])
               + ([args.master] if args.master else []))
    by_master: dict[str, dict] = {}
    scen_by_master: dict[str, dict] = {}
    profile = None
    cwd = os.getcwd()
    with start_broker(args.broker, {topic: PARTITIONS}) as broker, \
            tempfile.TemporaryDirectory(prefix="rdk-bench-") as workdir:
        bootstrap = broker.bootstrap_servers
        secs = produce(bootstrap, topic, args.messages, args.value_size)
        print(f"produced {args.messages:,} x {args.value_size} B into {PARTITIONS} partitions "
              f"of {topic} on {bootstrap} in {secs:.1f} s", flush=True)
        archive = unpack_for_driver(args.archive, workdir) if args.master else ""
        try:
            for master in masters:
                print(f"\n== {master}: {','.join(args.scenarios)}", flush=True)
                jvm = not args.skip_jvm and broker.kind != "tansu"  # Tansu: wrong ListOffsets
                jars = jvm_connector_jars() if jvm else []
                if jvm and not jars:
                    print("(Spark's JVM Kafka connector is not fetched: run scripts/setup.sh; "
                          "the jvm contender is left out)", flush=True)
                spark = start_spark(master, archive, jars)
                try:
                    meta["versions"]["spark"] = spark.version
                    by_master[master], scen_by_master[master] = run_contenders(
                        spark, bootstrap, topic, args, workdir,
                        naive=master.startswith("local"), jvm=bool(jars))
                finally:
                    spark.stop()
            if args.profile:
                profile = profile_reader(bootstrap, topic, args.profile)
        finally:
            os.chdir(cwd)
    if len(by_master) > 1:
        side_by_side(scen_by_master)
    meta["loadavg_end"] = os.getloadavg()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({**meta, "messages": args.messages, "partitions": PARTITIONS,
                       "value_size": args.value_size, "keys": KEYS,
                       "master": args.master or "local[2]", "masters_run": masters,
                       "scenario_names": args.scenarios,
                       "max_offsets_per_trigger": args.max_offsets_per_trigger,
                       "sink_messages": args.sink_messages,
                       "broker": broker.kind if broker.kind in ("tansu", "kafka") else bootstrap,
                       "results": by_master[masters[0]],
                       "masters": by_master,
                       "scenarios": scen_by_master[masters[0]],
                       "scenarios_by_master": scen_by_master,
                       "profile": profile}, f, indent=2)
    return 0


def run_contenders(spark, bootstrap: str, topic: str, args: argparse.Namespace, workdir: str,
                   naive: bool, jvm: bool = False) -> tuple[dict, dict]:
    """(the count/groupBy results of old, the figures of every scenario)."""
    sc = Scenarios(spark, bootstrap, topic, args, workdir, jvm)
    times = time_scenarios(sc, args)
    naive_r = None
    if naive and not args.skip_naive and {"count", "groupby"} & set(args.scenarios):
        naive_r = time_naive(spark, bootstrap, topic, args, sc.keys)
    if sc._sink_input is not None:
        sc._sink_input.unpersist()
    scen = scenario_figures(times, sc, args, naive_r)
    report(scen, args)
    results = legacy_results(times, naive_r)
    if "stream" in times and "stream20" in times:  # the fixed cost of one micro-batch
        for name, seconds in per_micro_batch(times, sc).items():
            results[name]["per_micro_batch_s"] = seconds
            print(f"per micro-batch  {name:8} {seconds * 1000:8.0f} ms", flush=True)
    return results, scen


if __name__ == "__main__":
    sys.exit(main())
