"""A streaming query for tests/spark/test_exactly_once.py, run as its own driver process so
that a test can SIGKILL it: input topic -> mapInArrow (fault injection) -> rdkafka sink.

    python eos_query.py BOOTSTRAP INPUT OUTPUT CHECKPOINT MARKERS --faults worker:0,driver:1
        [--at-least-once] [--read]

Each fault fires once (a file MARKERS/fired-* records it). ``worker``, ``driver`` and
``broker`` fire in task 0 of their micro-batch (several of one micro-batch in turn, one per
attempt of task 0) after the sink took some of that task's rows (they reached task 0's
staging partition, 0, of the exactly-once sink, or the output topic of the at-least-once
one): ``worker`` SIGKILLs the Python worker that runs the mapInArrow upstream
of the sink (Spark retries the task; the sink's writer sees its input end early, as if it
were complete), ``driver`` creates MARKERS/kill-driver and blocks until the test kills this
process group, ``broker`` writes MARKERS/kill-broker (JSON: the topic task 0 writes, its
partition 0) and goes on once the test removed it (having killed a broker). ``txn`` fires in
the exactly-once sink's commit of its micro-batch, once the copy's rows are sent and
delivered inside its open transaction: MARKERS/kill-broker names the copy's transactional
id, and the commit goes on once the test removed it. ``--read`` prints the output topic's
values read back with ``kafka.isolation.level=read_committed`` as one JSON line after the
query finished.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser()
    for name in ("bootstrap", "input", "output", "checkpoint", "markers"):
        ap.add_argument(name)
    ap.add_argument("--faults", default="")
    ap.add_argument("--at-least-once", action="store_true")
    ap.add_argument("--read", action="store_true")
    ap.add_argument("--control-jvm", metavar="TOPIC",
                    help="then write the input to TOPIC with Spark's JVM sink under a worker "
                         "kill and print its values read back on a line 'JVM <json>'")
    args = ap.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

    from pyspark.sql import SparkSession

    import rdk.spark

    builder = SparkSession.builder
    if args.control_jvm:
        from conftest import spark_kafka_jars  # tests/spark/conftest.py

        builder = builder.config("spark.jars", ",".join(spark_kafka_jars()))
    spark = (builder.master("local[2,4]")  # 2 cores, a task tried up to 4 times
             .appName("rdk-eos-test")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.sql.execution.arrow.maxRecordsPerBatch", "50")
             .config("spark.driver.memory", "512m")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    rdk.spark.register(spark)
    faults = parse_plan(args.faults)
    watched = args.output if args.at_least_once else f"{args.output}.rdk-staging"
    inject = _injector(args.bootstrap, watched, Path(args.markers), faults,
                       staged=not args.at_least_once)
    sink = "rdkafka"
    if any("txn" in kinds for kinds in faults.values()):
        sink = _register_txn_faults(spark, Path(args.markers), faults)

    source = (spark.readStream.format("rdkafka")
              .option("kafka.bootstrap.servers", args.bootstrap)
              .option("subscribe", args.input)
              .option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", "800")
              .load()
              .select("value")
              .mapInArrow(inject, "value binary"))
    writer = (source.writeStream.format(sink)
              .option("kafka.bootstrap.servers", args.bootstrap)
              .option("topic", args.output)
              .option("checkpointLocation", args.checkpoint)
              .trigger(availableNow=True))
    if not args.at_least_once:
        writer = writer.option("exactlyOnce", "true")
    writer.start().awaitTermination()
    if args.control_jvm:
        _jvm_control(spark, args)
    if args.read:
        print(json.dumps(_read_values(spark, args.bootstrap, args.output)), flush=True)
    spark.stop()


def _read_values(spark, bootstrap: str, topic: str) -> list[str]:
    """The values of ``topic`` (without their padding), read with read_committed, sorted."""
    rows = (spark.read.format("rdkafka")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic)
            .option("kafka.isolation.level", "read_committed")
            .load().select("value").collect())
    return sorted(bytes(r.value).split(b"|")[0].decode() for r in rows)


def _jvm_control(spark, args) -> None:
    """The input written to ``--control-jvm`` by format("kafka") in 1 micro-batch, the
    mapInArrow's Python worker SIGKILLed once in micro-batch 0 after the sink wrote some of
    task 0's rows; its values printed as 'JVM <json>'."""
    markers = Path(args.markers) / "jvm"
    markers.mkdir(exist_ok=True)
    inject = _injector(args.bootstrap, args.control_jvm, markers, {0: ["worker"]}, staged=False)
    (spark.readStream.format("rdkafka")
     .option("kafka.bootstrap.servers", args.bootstrap)
     .option("subscribe", args.input)
     .option("startingOffsets", "earliest")
     .load().select("value").mapInArrow(inject, "value binary")
     .writeStream.format("kafka")
     .option("kafka.bootstrap.servers", args.bootstrap)
     .option("topic", args.control_jvm)
     .option("checkpointLocation", f"{args.checkpoint}-jvm")
     .trigger(availableNow=True)
     .start().awaitTermination())
    fired = sorted(p.name for p in markers.glob("fired-*"))
    values = _read_values(spark, args.bootstrap, args.control_jvm)
    print("JVM " + json.dumps({"fired": fired, "values": values}), flush=True)


PAD = b"|" + b"." * 2048


def _injector(bootstrap: str, watched: str, markers: Path, faults: dict[int, list[str]],
              staged: bool):
    def written(admin) -> int:
        """The log end of task 0's staging partition (0), or of every partition of the
        at-least-once sink's output, summed."""
        parts = [0] if staged else range(admin.partition_count(watched))
        return sum(admin.query_watermarks(watched, p)[1] for p in parts)

    def inject(batches):
        import pyarrow as pa
        from pyspark import TaskContext

        ctx = TaskContext.get()
        batch_id = int(ctx.getLocalProperty("streaming.sql.batchId"))
        # the task faults of this micro-batch fire in turn, one per attempt of task 0
        due = [(k, markers / name) for k, name in _task_faults(faults, batch_id)
               if not (markers / name).exists()]
        kind, fired = due[0] if due and ctx.partitionId() == 0 else (None, markers / "none")
        armed = kind is not None
        if armed:
            import rdk

            # read_uncommitted: the log end, open transactions included (not the stable offset)
            admin = rdk.Admin(bootstrap, {"isolation.level": "read_uncommitted"})
            before = written(admin)
        for n, batch in enumerate(batches, 1):
            # 2 KiB rows: the worker's 64 KiB output buffer flushes after a few of them, so
            # the sink gets rows while this task is still running
            values = pa.array([v + PAD for v in batch.column(0).to_pylist()], pa.binary())
            yield pa.RecordBatch.from_arrays([values], names=["value"])
            if armed and n == 3:  # batches 1-2 reached the JVM in full, so the sink has 1
                deadline = time.monotonic() + 60
                while written(admin) <= before:  # the sink's first rows of this task are in the log
                    if time.monotonic() > deadline:
                        raise RuntimeError("the sink wrote nothing of this task within 60 s")
                    time.sleep(0.05)
                admin.close()
                fired.touch()
                if kind == "worker":
                    os.kill(os.getpid(), signal.SIGKILL)
                if kind == "broker":
                    _hold_for_broker_kill(markers, {"kind": kind, "topic": watched, "partition": 0})
                    continue
                (markers / "kill-driver").touch()
                time.sleep(300)  # the test kills this process group now
                raise RuntimeError("the test did not kill the driver")

    return inject


TASK_FAULTS = ("worker", "driver", "broker")


def parse_plan(plan: str) -> dict[int, list[str]]:
    """"worker:0,worker:0,driver:1,txn:4" -> {micro-batch: its fault kinds, in order}."""
    faults: dict[int, list[str]] = {}
    for kind, batch in (f.split(":") for f in plan.split(",") if f):
        if kind not in (*TASK_FAULTS, "txn"):
            raise ValueError(f"unknown fault kind {kind!r} in {plan!r}")
        faults.setdefault(int(batch), []).append(kind)
    return faults


def _task_faults(faults: dict[int, list[str]], batch: int) -> list[tuple[str, str]]:
    """(kind, marker name) of ``batch``'s task faults, in firing order."""
    kinds = [k for k in faults.get(batch, []) if k != "txn"]
    return [(k, f"fired-{k}-{batch}-{i}") for i, k in enumerate(kinds)]


def fired_names(plan: str) -> list[str]:
    """The marker names the faults of ``plan`` leave once all fired, sorted."""
    faults = parse_plan(plan)
    names = [name for b in faults for _, name in _task_faults(faults, b)]
    names += [f"fired-txn-{b}" for b, kinds in faults.items() if "txn" in kinds]
    return sorted(names)


def _hold_for_broker_kill(markers: Path, info: dict) -> None:
    """Ask the test to kill a broker (MARKERS/kill-broker holds ``info``); return once it
    removed the file."""
    ask = markers / "kill-broker"
    tmp = markers / "kill-broker.tmp"
    tmp.write_text(json.dumps(info))
    tmp.rename(ask)  # the test never reads half a file
    deadline = time.monotonic() + 240
    while ask.exists():
        if time.monotonic() > deadline:
            raise RuntimeError("the test did not kill a broker within 240 s")
        time.sleep(0.05)


def _register_txn_faults(spark, markers: Path, faults: dict[int, list[str]]) -> str:
    """Register format("rdkafka-txn-faults"): format("rdkafka") whose exactly-once commit of
    each ``txn`` micro-batch holds, once, between sending the copy's rows (delivered, in the
    open transaction) and committing, until the test killed a broker."""
    from rdk.spark import _exactly_once as eos
    from rdk.spark.source import KafkaDataSource
    from rdk.spark.stream_writer import KafkaStreamWriter

    batches = {b for b, kinds in faults.items() if "txn" in kinds}

    class HoldingWriter(KafkaStreamWriter):
        def commit(self, messages, batchId):
            fired = markers / f"fired-txn-{batchId}"
            if batchId not in batches or fired.exists():
                return super().commit(messages, batchId)
            staged = [m for m in messages if isinstance(m, eos.StagedCommitMessage)]
            tid = eos.marker_name(self.opts, staged[0].query_id)
            copy = eos._copy_attempts

            def copy_then_hold(*args):
                got = copy(*args)  # every row sent and delivered inside the open transaction
                fired.touch()
                _hold_for_broker_kill(markers, {"kind": "txn", "transactional_id": tid,
                                                "topic": self.opts.topic})
                return got

            eos._copy_attempts = copy_then_hold
            try:
                return super().commit(messages, batchId)
            finally:
                eos._copy_attempts = copy

    class HoldingSource(KafkaDataSource):
        @classmethod
        def name(cls):
            return "rdkafka-txn-faults"

        def streamWriter(self, schema, overwrite):
            writer = super().streamWriter(schema, overwrite)
            writer.__class__ = HoldingWriter
            return writer

    spark.dataSource.register(HoldingSource)
    return HoldingSource.name()


if __name__ == "__main__":
    main()
