"""Record latency through a Spark stream: produce -> ``foreachBatch``, ``rdkafka`` against
Spark's JVM ``kafka`` connector.

A paced rdk producer (this process) sends ``--rate`` messages/s for ``--seconds`` to a
4-partition topic of an embedded Apache Kafka; each value starts with its send time
(``time.time_ns()``). A streaming query (its own driver process, a fresh ``local[2]`` Spark
per run) reads the topic from ``latest`` with ``trigger(processingTime=--trigger)`` into a
``foreachBatch`` that collects the rows and takes the clock once they are on the driver:
a row's latency is that time minus its send time (both clocks are this machine's). The first
``--warmup`` seconds of messages are sent and dropped from the figures (the first
micro-batches pay Spark's and the connector's start). Connectors alternate, ``--passes``
runs each; the result is each run's p50/p99/max and their medians.

    .venv/bin/python bench/spark_latency.py [--rate 2000] [--seconds 20] [--warmup 5]
        [--trigger "500 milliseconds"] [--passes 3] [--connectors rdkafka,kafka]
        [--broker kafka|HOST:PORT]
        [--json docs/data/spark_latency.json]

The broker and both connectors share the machine's cores, so the load average before and
after is in the result file.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONNECTORS = ("rdkafka", "kafka")
VALUE_SIZE = 100
STAMP = 19  # digits of time.time_ns() until 2286
READY_TIMEOUT = 300.0


def percentile(values: list[int], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values``, nearest rank."""
    ordered = sorted(values)
    return float(ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))])


# ---- the driver process of one run ---------------------------------------------------------
def run_query(fmt: str, bootstrap: str, topic: str, trigger: str, expected: int,
              timeout: float) -> dict:
    """(In the child.) Stream ``topic`` into foreachBatch until ``expected`` measured rows came."""
    sys.path.insert(0, str(ROOT / "examples"))
    from spark_pipeline import jvm_kafka_jars, spark_session

    jars = jvm_kafka_jars()
    if fmt == "kafka" and not jars:
        raise SystemExit("Spark's JVM Kafka connector is not installed (scripts/setup.sh)")
    spark = spark_session("local[2]", os.getcwd(), None, jars)
    latencies: list[int] = []
    batches: list[tuple[int, float]] = []
    warm = [0]
    enough = threading.Event()

    def collect(df, batch_id: int) -> None:
        started = time.perf_counter()
        rows = df.select("value").collect()
        now = time.time_ns()
        for r in rows:
            value = bytes(r.value)
            if value[STAMP:STAMP + 1] == b"w":
                warm[0] += 1
            else:
                latencies.append(now - int(value[:STAMP]))
        batches.append((len(rows), time.perf_counter() - started))
        if rows and len(batches) == 1:
            print("READY", flush=True)  # rows arrive: the producer's warm-up clock starts
        if len(latencies) >= expected:
            enough.set()

    query = (spark.readStream.format(fmt).option("kafka.bootstrap.servers", bootstrap)
             .option("subscribe", topic).option("startingOffsets", "latest").load()
             .writeStream.foreachBatch(collect).trigger(processingTime=trigger).start())
    try:
        enough.wait(timeout)
        if query.exception() is not None:
            raise SystemExit(f"the query failed: {query.exception()}")
        phases = micro_batch_phases(query.recentProgress)
    finally:
        query.stop()
        spark.stop()
    if len(latencies) < expected:
        raise SystemExit(f"{fmt}: {len(latencies)} of {expected} measured rows in {timeout:.0f} s")
    ms = [x / 1e6 for x in latencies]
    return {"connector": fmt, "rows": len(latencies), "warmup_rows": warm[0],
            "micro_batches": len(batches),
            "p50_ms": round(percentile(ms, 0.50), 1), "p90_ms": round(percentile(ms, 0.90), 1),
            "p99_ms": round(percentile(ms, 0.99), 1), "max_ms": round(max(ms), 1),
            "mean_ms": round(statistics.fmean(ms), 1), "micro_batch_ms": phases}


def micro_batch_phases(progress: list) -> dict[str, float]:
    """Median ``durationMs`` of each phase over the micro-batches that read rows (Spark's
    progress reports: latestOffset, getBatch, queryPlanning, addBatch, walCommit, ...)."""
    reports = [dict(p.durationMs) for p in progress if p.numInputRows]
    keys = sorted({k for d in reports for k in d})
    return {k: statistics.median(d.get(k, 0) for d in reports) for k in keys}


# ---- the parent: broker, paced producer, alternation ---------------------------------------
def paced_send(bootstrap: str, topic: str, rate: int, seconds: float, warmup: float,
               ready: threading.Event) -> int:
    """Send ``rate`` messages/s: marked warm-up ones until the query has ``ready`` (its first
    rows came) and ``warmup`` seconds more, then ``seconds`` of measured ones (each value
    starts with its send time). Returns the measured count."""
    from rdk import Producer

    pad = b"." * (VALUE_SIZE - STAMP - 1)
    tick = 0.01  # 100 sends a second, rate/100 messages each
    per_tick = max(1, round(rate * tick))
    measured = 0
    began = time.monotonic()
    with Producer(bootstrap, driver_options={"linger.ms": 1}) as producer:
        for phase, length in ((b"w", warmup), (b"m", seconds)):
            start = time.monotonic()
            ticks = round(length / tick)
            i = 0
            while i < ticks or (phase == b"w" and not ready.is_set()):
                if not ready.is_set() and time.monotonic() - began > READY_TIMEOUT:
                    raise SystemExit("the query read none of the warm-up messages")
                target = start + i * tick
                delay = target - time.monotonic()
                if delay > 0:
                    time.sleep(delay)  # pacing, not synchronisation
                now = str(time.time_ns()).encode()
                payloads = [now + phase + pad] * per_tick
                if producer.send(topic, None, payloads).enqueued < per_tick:
                    raise SystemExit("the producer's queue is full: lower --rate")
                if phase == b"m":
                    measured += per_tick
                if phase == b"m" or ready.is_set():
                    i += 1
                else:
                    start += tick  # the warm-up's seconds count from the query's first rows
        left = producer.flush(60)
    if left:
        raise SystemExit(f"the producer left {left} messages undelivered")
    return measured


def one_run(fmt: str, bootstrap: str, args: argparse.Namespace, admin) -> dict:
    topic = f"latency-{fmt}-{uuid.uuid4().hex[:6]}"
    admin.create_topics({topic: 4})
    expected = round(args.rate * 0.01) * round(args.seconds / 0.01)
    cmd = [sys.executable, __file__, "--child", fmt, bootstrap, topic, args.trigger,
           str(expected)]
    with tempfile.TemporaryFile("w+") as err:
        child = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True, cwd=ROOT)
        ready, lines = threading.Event(), []

        def read_stdout() -> None:
            for line in child.stdout:
                lines.append(line.strip())
                if line.strip() == "READY":
                    ready.set()
            ready.set()  # the child ended (failed): the sender stops waiting

        reader = threading.Thread(target=read_stdout, daemon=True)
        reader.start()
        try:
            paced_send(bootstrap, topic, args.rate, args.seconds, args.warmup, ready)
            child.wait(READY_TIMEOUT)
            reader.join(10)
            if child.returncode:
                err.seek(0)
                raise SystemExit(f"{fmt}: the query failed: {err.read()[-3000:]}")
            return json.loads(lines[-1])
        finally:
            if child.poll() is None:
                child.kill()
                child.wait(30)
            admin.delete_topics([topic])


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        fmt, bootstrap, topic, trigger, expected = argv[1:6]
        print(json.dumps(run_query(fmt, bootstrap, topic, trigger, int(expected),
                                   READY_TIMEOUT)), flush=True)
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rate", type=int, default=2000, help="messages per second (default 2000)")
    ap.add_argument("--seconds", type=float, default=20.0, help="measured seconds (default 20)")
    ap.add_argument("--warmup", type=float, default=5.0, help="seconds sent first, not measured")
    ap.add_argument("--trigger", default="500 milliseconds", help="the processingTime trigger")
    ap.add_argument("--passes", type=int, default=3, help="runs per connector (default 3)")
    ap.add_argument("--connectors", default=",".join(CONNECTORS),
                    help="a comma list of rdkafka and kafka (default: both)")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--broker", default="kafka",
                    help="kafka (an embedded Apache Kafka, the default) or HOST:PORT of a "
                         "running cluster (Spark's connector cannot run on Tansu)")
    args = ap.parse_args(argv)
    if args.rate < 100 or args.seconds <= 0 or args.warmup < 0 or args.passes < 1:
        ap.error("--rate >= 100, --seconds > 0, --warmup >= 0, --passes >= 1")
    connectors = tuple(c.strip() for c in args.connectors.split(","))
    if not connectors or not set(connectors) <= set(CONNECTORS):
        ap.error(f"--connectors: a comma list of {', '.join(CONNECTORS)}")

    from rdk import Admin
    from rdk.mock import start_broker

    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    load_before = [round(x, 2) for x in os.getloadavg()]
    runs: list[dict] = []
    with start_broker(args.broker) as broker, Admin(broker.bootstrap_servers) as admin:
        for n in range(args.passes):
            order = connectors if n % 2 == 0 else connectors[::-1]
            for fmt in order:
                r = one_run(fmt, broker.bootstrap_servers, args, admin)
                r["pass"] = n
                runs.append(r)
                print(f"pass {n} {fmt:8} p50 {r['p50_ms']:8.1f} ms  p99 {r['p99_ms']:8.1f} ms  "
                      f"max {r['max_ms']:8.1f} ms  ({r['rows']} rows, {r['micro_batches']} "
                      "micro-batches)", flush=True)
    summary = {}
    for fmt in connectors:
        mine = [r for r in runs if r["connector"] == fmt]
        summary[fmt] = {k: statistics.median(r[k] for r in mine)
                        for k in ("p50_ms", "p90_ms", "p99_ms", "max_ms")}
    for fmt, s in summary.items():
        print(f"median of {args.passes}: {fmt:8} p50 {s['p50_ms']:.1f} ms  p99 {s['p99_ms']:.1f} ms")
    if args.json:
        report = {"command": shlex.join(["python", "bench/spark_latency.py", *argv]),
                  "date": started, "machine": {"cpus": os.cpu_count(), "load_before": load_before,
                                               "load_after": [round(x, 2) for x in os.getloadavg()]},
                  "broker": ("Apache Kafka (rdk.testing.KafkaCluster, 1 node)"
                             if args.broker == "kafka" else args.broker),
                  "rate": args.rate, "seconds": args.seconds, "trigger": args.trigger,
                  "median": summary, "runs": runs}
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
