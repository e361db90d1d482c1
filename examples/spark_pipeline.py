"""rdk's main job: a click stream through Kafka and Spark, on an embedded broker.

1. Produce a synthetic click stream keyed by user with ``rdk.Producer``.
2. A Spark batch job reads it through the ``rdkafka`` data source, aggregates per user
   and writes the aggregates to an output topic.
3. A Structured Streaming query (Trigger.AvailableNow, a checkpoint, maxOffsetsPerTrigger)
   processes the same topic incrementally: once, then again after more clicks arrive,
   reading only the new ones.
4. Two worker-slot consumers (``rdk.Consumer`` with offset files) read the output topic.
5. Results: checks against what was produced, the top users, and the time of each step.

When scripts/setup.sh fetched Spark's own JVM Kafka connector (.deps/spark-sql-kafka-*/jars),
the session gets its jars (``spark.jars``) and step 2b reads the click topic with both
``format("kafka")`` and ``format("rdkafka")``, printing both connectors' rows/s side by side.

    bash scripts/setup.sh && .venv/bin/python examples/spark_pipeline.py [--events N | --million]
    .venv/bin/python examples/spark_pipeline.py --master "$(scripts/spark-cluster.sh start)"

Without ``RDK_BROKERS`` it starts Apache Kafka (``rdk.testing.KafkaCluster``, one KRaft node from
the jars scripts/setup.sh fetched); ``--broker tansu`` starts a Tansu broker instead and
``--broker mock`` librdkafka's mock cluster in its own process. The work directory
(checkpoints, offset files) is temporary unless ``--workdir`` is given. Spark runs in
``local[2]`` unless ``--master`` names a standalone cluster: then executors get rdk from the
packed environment of the recipe of docs/guide/spark.md (``scripts/spark-cluster.sh env``,
or ``--archive``), shipped with ``spark.archives``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from contextlib import ExitStack
from datetime import datetime, timezone
from itertools import accumulate
from pathlib import Path

from _broker import start_broker
from rich.console import Console
from rich.table import Table

console = Console(highlight=False)

PAGES = 50
STEP_TIMEOUT = 600.0
# attempts per Spark task in local mode: a Python worker that does not connect back within
# Spark's timeout (a loaded or freshly set-up machine) fails its task, and local[N] alone
# would fail the whole job with it
LOCAL_TASK_ATTEMPTS = 3
ROOT = Path(__file__).resolve().parents[1]


def say(text: str) -> None:
    console.print(text)


# ---- 1. produce ----------------------------------------------------------------------------
class ClickStream:
    """Deterministic synthetic clicks: users drawn from a Zipf-like law (a few heavy users,
    a long tail), pages uniformly; event i has timestamp base_ms + i."""

    def __init__(self, users: int, seed: int = 42) -> None:
        import random

        self.rng = random.Random(seed)
        self.users = users
        self.cum = list(accumulate(1 / (rank ** 1.1) for rank in range(1, users + 1)))
        self.base_ms = int(time.time() * 1000) - 3_600_000  # an hour ago, 1 ms apart
        self.per_user: Counter = Counter()
        self.per_page: Counter = Counter()
        self.sent = 0

    def next_chunk(self, n: int) -> list[tuple[bytes, bytes]]:
        who = self.rng.choices(range(self.users), cum_weights=self.cum, k=n)
        where = self.rng.choices(range(PAGES), k=n)
        first = self.sent
        self.sent += n
        self.per_user.update(who)
        self.per_page.update(where)
        return [(b"u%06d" % u, b'{"user":"u%06d","page":"/p/%d","ts":%d}'
                 % (u, p, self.base_ms + first + i)) for i, (u, p) in enumerate(zip(who, where, strict=True))]


def produce_clicks(bootstrap: str, topic: str, clicks: ClickStream, count: int) -> float:
    from rdk import Producer

    failures: list = []
    start = time.perf_counter()
    chunk = 50_000
    done = 0
    with Producer(bootstrap, on_queue_full="block", balancer="murmur2_random",
                  driver_options={"linger.ms": 5, "batch.num.messages": 10000}) as producer:
        while done < count:
            n = min(chunk, count - done)
            producer.send(topic, None, clicks.next_chunk(n),
                          on_delivery=lambda d, f: failures.extend(f))
            done += n
            if done % 200_000 == 0 or done == count:
                say(f"   sent {done:>9,} / {count:,}")
        left = producer.flush(120)
    if left or failures:
        raise SystemExit(f"produce: {left} undelivered, {len(failures)} failed "
                         f"(first: {failures[0][1] if failures else '-'})")
    return time.perf_counter() - start


# ---- 2. Spark batch ------------------------------------------------------------------------
def jvm_kafka_jars() -> list[str]:
    """Spark's own Kafka connector's jars (format("kafka")) that scripts/setup.sh fetched
    (scripts/spark-kafka/pom.xml), or [] when they are not there."""
    for folder in sorted(ROOT.glob(".deps/spark-sql-kafka-*"), reverse=True):
        if (folder / ".rdk-fetched").is_file():
            return sorted(str(j) for j in (folder / "jars").glob("*.jar"))
    return []


def spark_session(master: str = "local[2]", workdir: str = ".", archive: str | None = None,
                  jars: list[str] | None = None):
    from pyspark.sql import SparkSession

    import rdk.spark

    builder = SparkSession.builder
    local = re.fullmatch(r"local\[(\d+|\*)\]", master)
    if local:  # local mode retries no task unless told: survive a slow Python worker start
        master = f"local[{local.group(1)},{LOCAL_TASK_ATTEMPTS}]"
    if jars:  # local files, shipped to executors by Spark itself (no Ivy)
        builder = builder.config("spark.jars", ",".join(jars))
    builder = (builder.master(master).appName("rdk-spark-pipeline")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "4")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.driver.memory", "2g"))
    if master.startswith("local"):
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    else:
        builder = ship_rdk(builder, master, unpack_for_driver(archive, workdir))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    rdk.spark.register(spark)
    return spark


def unpack_for_driver(archive: str | None, workdir: str) -> str:
    """the client-mode recipe of docs/guide/spark.md from inside Python: the driver's JVM starts
    ./env/bin/python too (the data source's planning), relative to ITS working directory, so
    the packed environment is unpacked in ``workdir`` and we move there; call this before
    the first SparkSession starts the JVM. Returns the archive (None: scripts/spark-cluster.sh
    env builds it from this source tree's wheel, in a venv packed with venv-pack)."""
    if archive is None:
        archive = subprocess.run(["bash", str(ROOT / "scripts" / "spark-cluster.sh"), "env"],
                                 check=True, stdout=subprocess.PIPE, text=True).stdout.split()[-1]
    archive = os.path.abspath(archive)
    local = Path(workdir) / "env"
    if not (local / "bin" / "python").exists():
        local.mkdir(parents=True, exist_ok=True)
        subprocess.run(["tar", "-xzf", archive, "-C", str(local)], check=True)
    os.chdir(workdir)
    return archive


def ship_rdk(builder, master: str, archive: str):
    """Executors unpack the packed environment as ./env and run ./env/bin/python."""
    os.environ["PYSPARK_PYTHON"] = "./env/bin/python"
    builder = builder.config("spark.archives", f"{archive}#env")
    if master.split("://")[-1].startswith(("127.", "localhost")):  # keep the driver on loopback
        builder = (builder.config("spark.driver.host", "127.0.0.1")
                   .config("spark.driver.bindAddress", "127.0.0.1"))
    return builder


def batch_aggregate(spark, bootstrap: str, clicks: str, out_topic: str) -> int:
    from pyspark.sql import functions as F

    raw = (spark.read.format("rdkafka").option("kafka.bootstrap.servers", bootstrap)
           .option("subscribe", clicks).load())
    events = raw.select(F.col("key").cast("string").alias("user"),
                        F.from_json(F.col("value").cast("string"),
                                    "page string, ts long").alias("e")).select("user", "e.*")
    per_user = (events.groupBy("user")
                .agg(F.count("*").alias("clicks"), F.countDistinct("page").alias("pages"),
                     F.min("ts").alias("first_ts"), F.max("ts").alias("last_ts"))
                .cache())
    (per_user.select(F.col("user").cast("binary").alias("key"),
                     F.to_json(F.struct("user", "clicks", "pages", "first_ts", "last_ts"))
                     .cast("binary").alias("value"))
     .write.format("rdkafka").option("kafka.bootstrap.servers", bootstrap)
     .option("topic", out_topic).mode("append").save())
    users = per_user.count()
    per_user.unpersist()
    return users


def read_figures(spark, fmt: str, bootstrap: str, clicks: str) -> tuple[int, int, float]:
    """One batch read of the whole click topic with ``format(fmt)``: rows, value bytes, seconds.
    The same query for both connectors: every row and every value byte is read."""
    from pyspark.sql import functions as F

    t = time.perf_counter()
    row = (spark.read.format(fmt).option("kafka.bootstrap.servers", bootstrap)
           .option("subscribe", clicks).load()
           .agg(F.count("*").alias("rows"), F.sum(F.length("value")).alias("bytes")).first())
    return row["rows"], row["bytes"] or 0, time.perf_counter() - t


# ---- 3. Structured Streaming, AvailableNow, checkpoint ------------------------------------
def stream_once(spark, bootstrap: str, clicks: str, checkpoint: str, max_per_trigger: int,
                pages: Counter) -> list[int]:
    """Run the incremental query to the end of what Kafka holds now; micro-batch sizes."""
    from pyspark.sql import functions as F

    sizes: list[int] = []

    def per_batch(df, batch_id: int) -> None:
        rows = df.groupBy("page").count().collect()
        for r in rows:
            pages[r["page"]] += r["count"]
        sizes.append(sum(r["count"] for r in rows))

    stream = (spark.readStream.format("rdkafka").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", clicks).option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", max_per_trigger).load())
    query = (stream.select(F.get_json_object(F.col("value").cast("string"), "$.page")
                           .alias("page"))
             .writeStream.foreachBatch(per_batch).option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start())
    try:
        if not query.awaitTermination(STEP_TIMEOUT):
            raise SystemExit("the streaming query did not finish in time")
    finally:
        query.stop()
    if query.exception() is not None:
        raise SystemExit(f"the streaming query failed: {query.exception()}")
    return [s for s in sizes if s]


# ---- 4. worker-slot consumers with offset files -------------------------------------------
STALL_SECONDS = 60.0  # no new aggregate for this long, with some still missing: fail, saying why


class AggregateReading:
    """What step 4's consumers read so far, and why they fall short when they do."""

    def __init__(self, admin, topic: str, partitions: int, workers: int) -> None:
        self.admin, self.topic, self.partitions = admin, topic, partitions
        self.progress = threading.Condition()
        self.got: dict[str, dict] = {}
        self.per_slot = [0] * workers
        self.position: dict[int, int] = {}  # partition -> next offset to read
        self.first: dict[int, int] = {}  # partition -> first offset read
        self.errors: list[BaseException] = []
        self.consumers: list = []
        self.marks = self.watermarks()  # {partition: (low, high)} before reading

    def watermarks(self) -> dict[int, tuple[int, int]]:
        """``{partition: (low, high)}``: the Fetch high watermarks (right on every broker; the
        low is the broker's ListOffsets(earliest), wrong on Tansu)."""
        return {p: self.admin.watermarks(self.topic, p, timeout=30) for p in range(self.partitions)}

    def receiver(self, slot: int):
        def receive(info) -> None:
            try:
                records = [json.loads(m.value) for m in info.messages]
            except ValueError as e:  # stop waiting: the job cannot finish
                with self.progress:
                    self.errors.append(e)
                    self.progress.notify_all()
                raise
            with self.progress:
                self.per_slot[slot] += len(records)
                for r in records:
                    self.got[r["user"]] = r
                for p, (first, last) in info.offsets.items():
                    self.position[p] = max(self.position.get(p, 0), last + 1)
                    self.first[p] = min(self.first.get(p, first), first)
                self.progress.notify_all()
        return receive

    def why(self, headline: str) -> str:
        """The headline, then each partition's position against its watermarks, and errors."""
        from rdk import KafkaError

        lines = [headline]
        try:
            now = self.watermarks()
        except KafkaError as e:  # the broker itself may be the trouble: say so
            now = {}
            lines[0] += f" (no watermarks now: {e})"
        for p, (low, high) in sorted(self.marks.items()):
            pos = self.position.get(p, 0)
            later = f", now {now[p][1]}" if p in now and now[p][1] != high else ""
            first = f", first read {self.first[p]}" if p in self.first else ""
            lines.append(f"  partition {p}: position {pos} of high watermark {high}{later} "
                         f"(low {low}{first}), {high - pos} behind")
            if low > 0:  # nothing was deleted from this run's topic: its log starts at 0
                lines.append(f"    the broker's low watermark is {low} on a fresh topic: Tansu "
                             "answers ListOffsets by the order it stored the batches, not by "
                             "offset (docs/limitations.md); step 4 reads from offset 0")
        for slot, c in enumerate(self.consumers):
            lines.append(f"  slot {slot}: partitions {c.partitions}, read {self.per_slot[slot]}, "
                         f"error {c.error!r}")
        if self.errors:
            lines.append(f"  receive callback: {self.errors[0]!r}")
        return "\n".join(lines)

    def problem(self, expected: int, last_change: float) -> str | None:
        """Why waiting longer cannot help, or None while it still can (lock held)."""
        read = (f"consumers read {len(self.got)} of {expected} users' aggregates "
                f"({sum(self.per_slot)} records)")
        if self.errors or any(c.error is not None for c in self.consumers):
            return f"{read} and stopped with an error"
        if all(self.position.get(p, 0) >= high for p, (_, high) in self.marks.items()):
            return f"{read}, having reached the end of every partition"
        idle = time.monotonic() - last_change
        if idle > STALL_SECONDS:
            return f"{read}, none for {idle:.0f} s"
        return None

    def wait(self, expected: int, timeout: float) -> None:
        """Until ``expected`` records came; SystemExit saying why as soon as they cannot."""
        # a fresh topic holds offsets 0 .. high - 1 (its low, ListOffsets(earliest), is not
        # trusted: Tansu may answer a later batch)
        stored = sum(high for _, high in self.marks.values())
        if stored < expected:  # the write lost records: no reader can find them
            raise SystemExit(self.why(f"the output topic holds {stored} records for "
                                      f"{expected} aggregates written"))
        deadline = time.monotonic() + timeout
        last_change, seen = time.monotonic(), 0
        with self.progress:
            while len(self.got) < expected:  # (a retried Spark task may write some twice)
                if sum(self.per_slot) != seen:
                    seen, last_change = sum(self.per_slot), time.monotonic()
                why = self.problem(expected, last_change)
                if why is None and time.monotonic() > deadline:
                    why = (f"consumers read {len(self.got)} of {expected} users' aggregates "
                           f"in {timeout:.0f} s")
                if why is not None:
                    raise SystemExit(self.why(why))
                self.progress.wait(1.0)


def consume_aggregates(bootstrap: str, topic: str, expected: int, offsets_dir: str,
                       partitions: int = 4, workers: int = 2
                       ) -> tuple[dict[str, dict], list[tuple[int, list[int], int]]]:
    """Read the output topic with ``workers`` worker-slot consumers until every aggregate is in.

    Fails at once, saying why (per-partition positions against the high watermarks and each
    consumer's error), when the topic holds fewer records than were written, when the
    consumers reached the end of every partition short of ``expected``, when a consumer
    stopped with an error, or when no record came for STALL_SECONDS.
    """
    from rdk import Admin, Consumer
    from rdk.offsets import FileOffsetStore

    # start at offset 0 of this fresh topic (last processed -1), not at the broker's
    # ListOffsets(earliest): Tansu answers the batch it stored first, and two Spark tasks
    # write each partition at once, so "earliest" may skip a partition's first batch
    FileOffsetStore(offsets_dir, topic).commit({p: -1 for p in range(partitions)})
    with Admin(bootstrap) as admin:
        reading = AggregateReading(admin, topic, partitions, workers)
        reading.consumers = [
            Consumer(bootstrap, topic, offsets_dir, reading.receiver(slot), num_workers=workers,
                     worker_slot=slot, start_offset="earliest")
            for slot in range(workers)]
        owned = []
        try:
            for c in reading.consumers:
                owned.append(c.start())
            reading.wait(expected, STEP_TIMEOUT)
        finally:
            for c in reading.consumers:
                c.stop()
    for p, (low, _) in sorted(reading.marks.items()):
        if low > 0:  # read from 0 all the same: say what "earliest" would have skipped
            say(f"   note: partition {p}'s low watermark is {low} on this fresh topic (Tansu "
                "answers ListOffsets by the order it stored the batches); read from offset 0")
    return reading.got, [(slot, owned[slot], reading.per_slot[slot]) for slot in range(workers)]


# ---- the job -------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="rdk's main job: Kafka -> Spark -> Kafka.")
    ap.add_argument("--events", type=int, default=200_000, help="click events (default 200000)")
    ap.add_argument("--million", action="store_const", const=1_000_000, dest="events",
                    help="1 000 000 events")
    ap.add_argument("--users", type=int, default=10_000,
                    help="users to draw clicks from, Zipf-like (default 10000)")
    ap.add_argument("--partitions", type=int, default=4, help="partitions of the click topic")
    ap.add_argument("--broker", choices=("kafka", "tansu", "mock"), default="kafka",
                    help="embedded broker when RDK_BROKERS is unset: kafka (Apache Kafka in "
                         "KRaft mode, the default), tansu or mock")
    ap.add_argument("--workdir", help="keep checkpoints and offset files here")
    ap.add_argument("--master", default="local[2]",
                    help="Spark master (default local[2]); spark://HOST:PORT for a standalone "
                         "cluster, e.g. scripts/spark-cluster.sh start's")
    ap.add_argument("--archive", help="on a cluster: the packed environment to ship "
                                      "(default: scripts/spark-cluster.sh env builds it)")
    args = ap.parse_args(argv)
    if args.events < 1 or args.users < 1 or args.partitions < 2:
        ap.error("--events and --users must be >= 1, --partitions >= 2")
    events, late = args.events, max(1, args.events // 10)

    timings: list[tuple[str, int, float]] = []
    ok = True
    with ExitStack() as stack:
        workdir = args.workdir or stack.enter_context(tempfile.TemporaryDirectory(prefix="rdk-"))
        workdir = os.path.abspath(workdir)
        Path(workdir).mkdir(parents=True, exist_ok=True)
        stack.callback(os.chdir, os.getcwd())  # a cluster's driver works in workdir
        t0 = time.perf_counter()
        kind = "RDK_BROKERS" if os.environ.get("RDK_BROKERS") else args.broker
        partitions = args.partitions
        if kind == "mock":  # the mock cluster keeps ~5 MiB per partition: spread the data
            partitions = max(partitions, math.ceil((events + late) * 100 / (3 << 20)))
        run = uuid.uuid4().hex[:6]
        clicks, aggregates = f"clicks-{run}", f"user-clicks-{run}"
        # Apache Kafka, Tansu, the mock cluster (its own process) or RDK_BROKERS's cluster:
        # see examples/_broker.py
        target = os.environ["RDK_BROKERS"] if kind == "RDK_BROKERS" else kind
        broker = stack.enter_context(start_broker(target, {clicks: partitions, aggregates: 4}))
        bootstrap = broker.bootstrap_servers
        say(f"[bold]rdk pipeline[/] on {kind} ({bootstrap}); topics {clicks} "
            f"({partitions} partitions) and {aggregates} (4); work dir {workdir}")

        say(f"\n[bold]1. produce[/] {events:,} clicks by up to {args.users:,} users "
            "with rdk.Producer")
        stream = ClickStream(args.users)
        secs = produce_clicks(bootstrap, clicks, stream, events)
        users = len(stream.per_user)
        expected_users = Counter({f"u{u:06d}": n for u, n in stream.per_user.items()})
        timings.append(("1. produce clicks (rdk.Producer)", events, secs))

        say("\n[bold]2. Spark batch[/]: read with format('rdkafka'), aggregate per user, "
            "write to the output topic")
        t = time.perf_counter()
        jars = jvm_kafka_jars()
        spark = spark_session(args.master, workdir, args.archive, jars)
        stack.callback(spark.stop)
        say(f"   Spark {spark.version} on {spark.sparkContext.master} started in "
            f"{time.perf_counter() - t:.1f} s")
        t = time.perf_counter()
        n_users = batch_aggregate(spark, bootstrap, clicks, aggregates)
        secs = time.perf_counter() - t
        timings.append(("2. Spark batch read + aggregate + write*", events, secs))
        say(f"   {events:,} clicks -> {n_users:,} per-user rows written in {secs:.1f} s")
        ok &= check(n_users == users, f"one aggregate per user ({n_users:,} == {users:,})")

        if jars and kind == "mock":
            say("   (Spark's JVM Kafka connector is installed, but cannot read from librdkafka's "
                "mock cluster: its Java admin client times out waiting for a node assignment "
                "(listNodes); step 2b runs on Tansu, Apache Kafka or RDK_BROKERS)")
        elif jars:
            say("\n[bold]2b. the same read with both connectors[/]: format('rdkafka') and "
                "Spark's JVM format('kafka') (" + Path(jars[0]).parent.parent.name + ")")
            figures = {fmt: read_figures(spark, fmt, bootstrap, clicks)
                       for fmt in ("rdkafka", "kafka")}
            side = Table(title="batch read of the click topic, side by side")
            for col in ("connector", "rows", "value bytes", "seconds", "rows/s"):
                side.add_column(col, justify="right")
            for fmt, label in (("rdkafka", "rdkafka (rdk, librdkafka)"),
                               ("kafka", "kafka (Spark's JVM connector)")):
                n, size, s = figures[fmt]
                side.add_row(label, f"{n:,}", f"{size:,}", f"{s:.2f}",
                             f"{n / s:,.0f}" if s > 0 else "-")
                timings.append((f"2b. read only, format('{fmt}')", n, s))
            console.print(side)
            ok &= check(figures["rdkafka"][0] == events,
                        f"format('rdkafka') read every click ({figures['rdkafka'][0]:,})")
            if figures["kafka"][:2] == figures["rdkafka"][:2]:
                say("   both connectors read the same clicks and value bytes")
            else:  # informational: the JVM connector's "latest" is the broker's ListOffsets answer
                say(f"   [yellow]note[/] format('kafka') read {figures['kafka'][0]:,} of "
                    f"{events:,} clicks: its 'latest' is the broker's ListOffsets answer, which "
                    "some brokers give short of the end (Tansu: its last batch's base offset "
                    "+ 1); rdkafka uses the Fetch high watermark. On Apache Kafka both read "
                    "every click.")
        else:
            say("   (Spark's JVM Kafka connector is not installed: scripts/setup.sh fetches it "
                "for a side-by-side read)")

        say("\n[bold]3. Structured Streaming[/] with Trigger.AvailableNow and a checkpoint")
        checkpoint = str(Path(workdir) / "checkpoint")
        pages: Counter = Counter()
        per_trigger = max(1, events // 4)
        t = time.perf_counter()
        sizes = stream_once(spark, bootstrap, clicks, checkpoint, per_trigger, pages)
        secs = time.perf_counter() - t
        timings.append(("3a. stream, first run", sum(sizes), secs))
        say(f"   run 1: {sum(sizes):,} clicks in {len(sizes)} micro-batches "
            f"(maxOffsetsPerTrigger={per_trigger:,}): {sizes}")
        say(f"   {late:,} more clicks arrive ...")
        produce_clicks(bootstrap, clicks, stream, late)
        t = time.perf_counter()
        sizes2 = stream_once(spark, bootstrap, clicks, checkpoint, per_trigger, pages)
        secs = time.perf_counter() - t
        timings.append(("3b. stream, second run (new clicks only)", sum(sizes2), secs))
        say(f"   run 2 (same checkpoint): {sum(sizes2):,} clicks in {len(sizes2)} micro-batch(es)")
        ok &= check(sum(sizes) == events and sum(sizes2) == late,
                    "each click streamed exactly once across both runs "
                    f"({sum(sizes):,} + {sum(sizes2):,} == {events:,} + {late:,})")
        expected_pages = Counter({f"/p/{p}": n for p, n in stream.per_page.items()})
        ok &= check(pages == expected_pages, "streamed page counts equal the produced ones")

        say("\n[bold]4. worker-slot consumers[/] (rdk.Consumer, num_workers=2, offset files) "
            "read the output topic")
        offsets_dir = str(Path(workdir) / "offsets")
        t = time.perf_counter()
        got, slots = consume_aggregates(bootstrap, aggregates, n_users, offsets_dir)
        secs = time.perf_counter() - t
        timings.append(("4. worker-slot consumers read aggregates", len(got), secs))
        for slot, owned, count in slots:
            say(f"   slot {slot}: partitions {owned}, {count:,} aggregates")
        files = sorted(Path(offsets_dir).glob("*.offset"))
        say("   offset files: " + ", ".join(f"{f.name}={f.read_text().strip()}" for f in files))
        ok &= check(len(got) == users and all(got[u]["clicks"] == c
                                              for u, c in expected_users.items()),
                    "every user's click count matches what was produced")

        say("\n[bold]5. results[/]")
        top = Table(title="top users by clicks (from the output topic)")
        for col in ("user", "clicks", "distinct pages", "first click (UTC)", "last click"):
            top.add_column(col, justify="right")
        for r in sorted(got.values(), key=lambda r: (-r["clicks"], r["user"]))[:5]:
            top.add_row(r["user"], f"{r['clicks']:,}", str(r["pages"]), clock(r["first_ts"]),
                        clock(r["last_ts"]))
        console.print(top)
        steps = Table(title="steps")
        steps.add_column("step")
        steps.add_column("records", justify="right")
        steps.add_column("seconds", justify="right")
        steps.add_column("records/s", justify="right")
        for name, n, s in timings:
            steps.add_row(name, f"{n:,}", f"{s:.1f}", f"{n / s:,.0f}" if s > 0 else "-")
        console.print(steps)
        say("* includes Spark's first-query warm-up (Python workers, code generation)")
        say(f"total {time.perf_counter() - t0:.1f} s; "
            + ("[green]all checks passed[/]" if ok else "[red]some checks FAILED[/]"))
    return 0 if ok else 1


def clock(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%H:%M:%S.%f")[:-3]


def check(condition: bool, what: str) -> bool:
    say(("   [green]ok[/]   " if condition else "   [red]FAIL[/] ") + what)
    return condition


if __name__ == "__main__":
    sys.exit(main())
