"""The exactly-once Spark sink against the at-least-once one: a Kafka-to-Kafka stream.

Each run is its own driver process (a fresh local[2] Spark) that streams ``--messages`` rows
of ``--value-size`` bytes from a 4-partition input topic to a new output topic through
``format("rdkafka")`` with ``Trigger.AvailableNow`` and ``maxOffsetsPerTrigger``, with or
without ``exactlyOnce``; the figure is the query's wall time (start to termination), so
Spark's start-up is left out. Sinks alternate, ``--repeats`` each; medians are reported, with
the output verified (every row once under read_committed).

    .venv/bin/python bench/spark_eos_bench.py [--messages 200000] [--value-size 100]
        [--repeats 3] [--max-offsets-per-trigger 50000] [--out docs/data/spark_eos.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODES = ("at-least-once", "exactly-once")


def one_run(bootstrap: str, source: str, mode: str, trigger_rows: int, messages: int) -> float:
    """(In the child process.) Stream ``source`` to a new topic once; return the seconds."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import rdk
    import rdk.spark

    spark = (SparkSession.builder.master("local[2]").appName("rdk-eos-bench")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    rdk.spark.register(spark)
    output = f"eos-bench-out-{uuid.uuid4().hex[:8]}"
    with rdk.Admin(bootstrap) as admin:
        admin.create_topics({output: 4})
    checkpoint = f"/tmp/{output}"
    writer = (spark.readStream.format("rdkafka").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", source).option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", str(trigger_rows)).load().select("key", "value")
              .writeStream.format("rdkafka").option("kafka.bootstrap.servers", bootstrap)
              .option("topic", output).option("checkpointLocation", checkpoint)
              .trigger(availableNow=True))
    if mode == "exactly-once":
        writer = writer.option("exactlyOnce", "true")
    started = time.perf_counter()
    writer.start().awaitTermination()
    seconds = time.perf_counter() - started
    from pyspark.sql import functions as F

    row = (spark.read.format("rdkafka").option("kafka.bootstrap.servers", bootstrap)
           .option("subscribe", output).option("kafka.isolation.level", "read_committed")
           .load().agg(F.count("*").alias("rows"), F.countDistinct("key").alias("keys"))
           .first())
    spark.stop()
    if (row["rows"], row["keys"]) != (messages, messages):  # keys are distinct, values alike
        raise SystemExit(f"{mode}: {row['rows']} rows with {row['keys']} distinct keys in "
                         f"{output}, not {messages} of each")
    return seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=200_000)
    ap.add_argument("--value-size", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--max-offsets-per-trigger", type=int, default=50_000)
    ap.add_argument("--out", default="")
    ap.add_argument("--child", nargs=3, metavar=("BOOTSTRAP", "SOURCE", "MODE"))
    args = ap.parse_args()
    if args.child:
        bootstrap, source, mode = args.child
        print(json.dumps(one_run(bootstrap, source, mode, args.max_offsets_per_trigger,
                                 args.messages)))
        return

    import rdk
    from rdk.testing import KafkaCluster

    load = os.getloadavg()
    times: dict[str, list[float]] = {m: [] for m in MODES}
    with KafkaCluster() as cluster:
        bootstrap = cluster.bootstrap_servers
        source = f"eos-bench-in-{uuid.uuid4().hex[:8]}"
        cluster.create_topic(source, 4)
        payload = os.urandom(args.value_size)
        with rdk.Producer(bootstrap, on_queue_full="block") as producer:
            for i in range(0, args.messages, 10_000):
                n = min(10_000, args.messages - i)
                producer.send(source, i // 10_000 % 4,
                              [(str(i + j).encode(), payload) for j in range(n)])
            assert producer.flush(120) == 0
        for r in range(args.repeats):
            for mode in MODES if r % 2 == 0 else MODES[::-1]:
                out = subprocess.run(
                    [sys.executable, __file__, "--messages", str(args.messages),
                     "--max-offsets-per-trigger", str(args.max_offsets_per_trigger),
                     "--child", bootstrap, source, mode],
                    capture_output=True, text=True, check=False, cwd=ROOT)
                if out.returncode:
                    raise SystemExit(f"{mode} run failed:\n{out.stderr[-3000:]}")
                times[mode].append(json.loads(out.stdout.strip().splitlines()[-1]))
                print(f"{mode}: {times[mode][-1]:.2f} s", flush=True)
    medians = {m: statistics.median(v) for m, v in times.items()}
    result = {
        "command": "bench/spark_eos_bench.py " + " ".join(sys.argv[1:]),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "load_before": [round(x, 2) for x in load],
        "load_after": [round(x, 2) for x in os.getloadavg()],
        "broker": "Apache Kafka (rdk.testing.KafkaCluster, 1 node)",
        "messages": args.messages, "value_size": args.value_size,
        "micro_batches": -(-args.messages // args.max_offsets_per_trigger),
        "seconds": times, "median_seconds": medians,
        "rows_per_second": {m: args.messages / s for m, s in medians.items()},
        "exactly_once_vs_at_least_once": medians["at-least-once"] / medians["exactly-once"],
    }
    print(json.dumps(result, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
