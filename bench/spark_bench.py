"""Spark batch read of Kafka: rdk's ``rdkafka`` source against the naive way and Spark's ceiling.

Workload: 1 M messages of 100 bytes (10 000 distinct keys) in 4 partitions, read by a
``local[2]`` Spark with ``df.count()`` and ``df.groupBy("key").count()``; rows/s.

Contenders, in the same run and the same SparkSession:

- ``rdk``: ``spark.read.format("rdkafka")`` (executors fetch with librdkafka into Arrow);
- ``naive``: a driver-side confluent-kafka consumer reads everything, then
  ``spark.createDataFrame`` (the usual jar-less workaround);
- ``ceiling``: a Python data source that yields in-memory Arrow batches of the same schema
  and shape without touching Kafka: the most any Python data source can deliver here;
- ``jvm``: Spark's own Kafka connector, ``spark.read.format("kafka")`` with the same options
  (when scripts/setup.sh fetched its jars; handed to Spark with ``spark.jars``).

Targets: rdk >= 10 x naive, >= 0.6 x ceiling and >= 1.0 x the JVM connector. The broker
(``--broker``) is Tansu by default (started here; the mock cluster keeps only ~5 MiB per
partition, too little for 100 MB), ``kafka`` (an embedded Apache Kafka, which the JVM
connector needs: Tansu's ListOffsets(latest) is wrong) or HOST:PORT; ``RDK_BROKERS`` too.

With ``--master spark://HOST:PORT`` (a standalone cluster, e.g. scripts/spark-cluster.sh
start's), the same queries run there too, after local mode, and both are reported side by
side; executors get rdk from the packed environment of the recipe of docs/guide/spark.md (``--archive``, or
scripts/spark-cluster.sh env). The naive way is measured in local mode only: its read is
on the driver wherever Spark runs.

    .venv/bin/python bench/spark_bench.py [--messages 1000000] [--repeat 5] [--warmup 3]
                                          [--master spark://...] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from rdk.mock import start_broker

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))
# the client-mode recipe of docs/guide/spark.md, shared with the main job
from spark_pipeline import ship_rdk, unpack_for_driver  # noqa: E402

PARTITIONS = 4
VALUE_SIZE = 100
KEYS = 10_000


# ---- Spark's ceiling: a Python data source with batches already in memory ----------------
class CeilingSource(DataSource):
    """Yields Arrow batches of the Kafka schema built once in memory; no I/O at all."""

    @classmethod
    def name(cls) -> str:
        return "arrow_ceiling"

    def schema(self):
        from rdk.spark import kafka_schema

        return kafka_schema()

    def reader(self, schema):
        return CeilingReader(int(self.options["rows"]), int(self.options["partitions"]),
                             int(self.options.get("batch", 20000)))


class CeilingReader(DataSourceReader):
    def __init__(self, rows: int, partitions: int, batch: int) -> None:
        self.rows, self.n_parts, self.batch = rows, partitions, batch

    def partitions(self):
        return [InputPartition(p) for p in range(self.n_parts)]

    def read(self, partition):
        from rdk.arrow import kafka_schema

        p = partition.value
        rows = self.rows // self.n_parts
        n = min(self.batch, rows)
        keys = pa.array([b"key-%05d" % (i % KEYS) for i in range(n)], pa.binary())
        values = pa.array([bytes(VALUE_SIZE)] * n, pa.binary())
        now = int(time.time() * 1_000_000)
        batch = pa.RecordBatch.from_arrays([
            keys, values, pa.array(["bench"] * n, pa.string()), pa.array([p] * n, pa.int32()),
            pa.array(range(n), pa.int64()), pa.array([now] * n, pa.timestamp("us", tz="UTC")),
            pa.array([0] * n, pa.int32())], schema=kafka_schema())
        done = 0
        while done < rows:
            take = min(n, rows - done)
            yield batch if take == n else batch.slice(0, take)
            done += take


# ---- helpers -----------------------------------------------------------------------------
def produce(bootstrap: str, topic: str, messages: int) -> float:
    from rdk.producer import Producer

    per_part = messages // PARTITIONS
    value = bytes(VALUE_SIZE)
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


def time_sources(makers: dict, args: argparse.Namespace, keys: int) -> dict[str, dict[str, float]]:
    """count() and groupBy() of each DataFrame maker, warmed up, then interleaved runs (median)."""
    results: dict[str, dict[str, float]] = {}
    times: dict[str, dict[str, list[float]]] = {
        name: {"count": [], "groupby": []} for name in makers}
    # warm-up: Python workers, connections, and the JVM's JIT, which goes on compiling
    # the scan and aggregation code for several queries
    for _ in range(args.warmup):
        for make in makers.values():
            make().count()
            make().groupBy("key").count().collect()
    # interleaved, so both contenders see the same background load
    for _ in range(args.repeat):
        for name, make in makers.items():
            t, n = timed(lambda make=make: make().count())
            assert n == args.messages, (name, n)
            times[name]["count"].append(t)
        for name, make in makers.items():
            t, g = timed(lambda make=make: make().groupBy("key").count().collect())
            assert len(g) == keys and sum(r["count"] for r in g) == args.messages, name
            times[name]["groupby"].append(t)
    for name, t in times.items():
        results[name] = {"count_s": statistics.median(t["count"]),
                         "groupby_s": statistics.median(t["groupby"]),
                         "count_best_s": min(t["count"]),
                         "groupby_best_s": min(t["groupby"])}
        print(f"{name:8} count {args.messages / results[name]['count_s']:>12,.0f} rows/s   "
              f"groupBy {args.messages / results[name]['groupby_s']:>12,.0f} rows/s   "
              f"(best {args.messages / results[name]['count_best_s']:,.0f} / "
              f"{args.messages / results[name]['groupby_best_s']:,.0f})", flush=True)
    return results


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


def report(results: dict[str, dict[str, float]], n: int) -> None:
    """The summary table and the ratios against the targets."""
    for r in results.values():
        r.setdefault("both_s", r["count_s"] + r["groupby_s"])
    print()
    print(f"{'contender':10} {'count rows/s':>14} {'groupBy rows/s':>15} {'count+groupBy rows/s':>22}")
    for name, r in results.items():
        print(f"{name:10} {n / r['count_s']:>14,.0f} {n / r['groupby_s']:>15,.0f} "
              f"{n / r['both_s']:>22,.0f}")
    rdk_r, ceil_r = results["rdk"], results["ceiling"]
    print()
    vs_ceiling = ceil_r["both_s"] / rdk_r["both_s"]
    print(f"rdk / ceiling: count {ceil_r['count_s'] / rdk_r['count_s']:.2f}x, "
          f"groupBy {ceil_r['groupby_s'] / rdk_r['groupby_s']:.2f}x, "
          f"both {vs_ceiling:.2f}x (target >= 0.6x)")
    if "jvm" in results:
        vs_jvm = results["jvm"]["both_s"] / rdk_r["both_s"]
        print(f"rdk / Spark's JVM connector: count {results['jvm']['count_s'] / rdk_r['count_s']:.2f}x, "
              f"groupBy {results['jvm']['groupby_s'] / rdk_r['groupby_s']:.2f}x, "
              f"both {vs_jvm:.2f}x (target >= 1.0x)")
    if "naive" in results:
        vs_naive = results["naive"]["both_s"] / rdk_r["both_s"]
        print(f"rdk / naive: {vs_naive:.1f}x for count+groupBy (target >= 10x)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--messages", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5,
                    help="timed runs per contender, interleaved (median; default 5)")
    ap.add_argument("--skip-naive", action="store_true", help="leave out the slow naive way")
    ap.add_argument("--warmup", type=int, default=3,
                    help="untimed rounds of both queries per contender first (default 3)")
    ap.add_argument("--master", help="also run on this standalone cluster (spark://HOST:PORT), "
                                     "after local[2]")
    ap.add_argument("--archive", help="with --master: the packed environment to ship "
                                      "(default: scripts/spark-cluster.sh env builds it)")
    ap.add_argument("--json", help="also write the figures to this file")
    ap.add_argument("--broker", default=os.environ.get("RDK_BROKERS") or "tansu",
                    help="tansu (default), kafka, or HOST:PORT of a running cluster")
    ap.add_argument("--skip-jvm", action="store_true",
                    help="leave out Spark's own JVM Kafka connector (format('kafka'); always left "
                         "out on Tansu, whose ListOffsets(latest) answers wrong)")
    args = ap.parse_args(argv)
    topic = f"spark-bench-{uuid.uuid4().hex[:8]}"
    masters = ["local[2]"] + ([args.master] if args.master else [])
    by_master: dict[str, dict] = {}
    cwd = os.getcwd()
    with start_broker(args.broker, {topic: PARTITIONS}) as broker, \
            tempfile.TemporaryDirectory(prefix="rdk-bench-") as workdir:
        bootstrap = broker.bootstrap_servers
        secs = produce(bootstrap, topic, args.messages)
        print(f"produced {args.messages:,} x {VALUE_SIZE} B into {PARTITIONS} partitions "
              f"of {topic} on {bootstrap} in {secs:.1f} s", flush=True)
        archive = unpack_for_driver(args.archive, workdir) if args.master else ""
        try:
            for master in masters:
                print(f"\n== {master}", flush=True)
                jvm = not args.skip_jvm and broker.kind != "tansu"  # Tansu: wrong ListOffsets
                jars = jvm_connector_jars() if jvm else []
                if jvm and not jars:
                    print("(Spark's JVM Kafka connector is not fetched: run scripts/setup.sh; "
                          "the jvm contender is left out)", flush=True)
                spark = start_spark(master, archive, jars)
                try:
                    by_master[master] = run_contenders(spark, bootstrap, topic, args,
                                                       naive=master.startswith("local"),
                                                       jvm=bool(jars))
                finally:
                    spark.stop()
        finally:
            os.chdir(cwd)
    if len(by_master) > 1:
        side_by_side(by_master, args.messages)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"messages": args.messages, "partitions": PARTITIONS,
                       "value_size": VALUE_SIZE,
                       "broker": broker.kind if broker.kind in ("tansu", "kafka") else bootstrap,
                       "results": by_master["local[2]"],
                       "masters": by_master}, f, indent=2)
    return 0


def run_contenders(spark, bootstrap: str, topic: str, args: argparse.Namespace,
                   naive: bool, jvm: bool = False) -> dict[str, dict[str, float]]:
    def rdk_df():
        return (spark.read.format("rdkafka").option("kafka.bootstrap.servers", bootstrap)
                .option("subscribe", topic).load())

    def jvm_df():  # Spark's own connector, the same options
        return (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
                .option("subscribe", topic).load())

    def ceiling_df():
        return (spark.read.format("arrow_ceiling").option("rows", args.messages)
                .option("partitions", PARTITIONS).load())

    keys = min(KEYS, args.messages // PARTITIONS)  # each partition cycles through the keys
    makers = {"ceiling": ceiling_df, "rdk": rdk_df}
    if jvm:
        makers["jvm"] = jvm_df
    results = time_sources(makers, args, keys)
    if naive and not args.skip_naive:
        results["naive"] = time_naive(spark, bootstrap, topic, args, keys)
    report(results, args.messages)
    return results


def side_by_side(by_master: dict[str, dict], n: int) -> None:
    """rows/s of each contender under each master, one line each."""
    print(f"\n{'master':26} {'contender':10} {'count rows/s':>14} {'groupBy rows/s':>15} "
          f"{'count+groupBy rows/s':>22} {'vs ceiling':>11}")
    for master, results in by_master.items():
        for name, r in results.items():
            ratio = results["ceiling"]["both_s"] / r["both_s"]
            print(f"{master:26} {name:10} {n / r['count_s']:>14,.0f} {n / r['groupby_s']:>15,.0f} "
                  f"{n / r['both_s']:>22,.0f} {ratio:>10.2f}x")


if __name__ == "__main__":
    sys.exit(main())
