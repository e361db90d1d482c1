"""Consumer throughput: rdk.Consumer vs confluent-kafka, on the mock cluster and on Tansu.

Workload (issue 4): 100-byte messages in 4 partitions, consumed from the beginning.

- ``rdk``: ``rdk.Consumer`` with a ``receive_callback`` that receives Message objects
  (offsets recorded in a fresh offset directory, as in real use);
- ``confluent``: confluent-kafka ``Consumer.consume(10000)`` plus a ``.value()`` loop;
- ``confluent-fqb10``: the same with ``fetch.queue.backoff.ms=10``, rdk's default (librdkafka's
  is 1 s: a partition whose queue holds ``queued.min.messages`` is not fetched for a second,
  which Tansu's large fetch responses trigger at once);
- ``rdk-fetch``: the C batch helper alone (no Python objects): the ceiling for rdk.

Each pass runs one client in a fresh process (so no client inherits another's allocator,
garbage-collector or librdkafka state); the rate counts the messages after the first batch
over the time from the first batch to the last message, so connection set-up is left out;
the CPU time of the whole process over the same span, per message, is the steadier figure
on a busy machine.
The mock cluster keeps only ~5 MiB per partition, so a pass there is ~180k messages;
several passes are alternated between clients and the median is reported.

    .venv/bin/python bench/consumer_bench.py                  # both brokers
    .venv/bin/python bench/consumer_bench.py --broker mock --passes 7
    .venv/bin/python bench/consumer_bench.py --broker tansu --messages 2000000

The mock cluster runs in a separate process (``python -m rdk.mock --brokers 1 --topic
bench:4``), so its broker threads do not share this process's GIL.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import rdk
from rdk import _binding
from rdk._binding import lib
from rdk._binding.fetch import Fetcher
from rdk.mock import start_broker

TOPIC = "bench"
PARTITIONS = 4


def produce(bootstrap: str, per_partition: int, size: int) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 100, "batch.num.messages": 100000,
                  "batch.size": 1000000, "queue.buffering.max.messages": 1000000,
                  "compression.codec": "none"})
    payload = os.urandom(size)
    for part in range(PARTITIONS):
        for i in range(per_partition):
            while True:
                try:
                    p.produce(TOPIC, payload, partition=part)
                    break
                except BufferError:
                    p.poll(0.05)
            if i % 10000 == 0:
                p.poll(0)
    left = p.flush(60)
    if left:
        raise SystemExit(f"{left} messages not delivered")


def watermarks(bootstrap: str) -> list[tuple[int, int]]:
    with rdk.Admin(bootstrap) as admin:
        return [admin.watermarks(TOPIC, p) for p in range(PARTITIONS)]


class Clock:
    """First-batch-to-last-message timing shared by the three clients."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.count = 0
        self.first_n = 0
        self.t0 = 0.0
        self.t1 = 0.0
        self.done = threading.Event()

    def add(self, n: int) -> None:
        if self.count == 0:
            self.t0 = time.perf_counter()
            self.c0 = time.process_time()
            self.first_n = n
        self.count += n
        if self.count >= self.total and not self.done.is_set():
            self.t1 = time.perf_counter()
            self.c1 = time.process_time()
            self.done.set()

    def rate(self) -> float:
        # nothing after the first batch (a pass too small to time) measures nothing
        if not self.done.is_set() or self.t1 <= self.t0 or self.count <= self.first_n:
            return float("nan")
        return (self.count - self.first_n) / (self.t1 - self.t0)

    def cpu_us(self) -> float:
        """CPU time of the whole process (every thread) per message, in microseconds."""
        if not self.done.is_set() or self.count <= self.first_n:
            return float("nan")
        return (self.c1 - self.c0) / (self.count - self.first_n) * 1e6


def run_rdk(bootstrap: str, total: int, timeout: float) -> Clock:
    clock = Clock(total)
    tmp = tempfile.mkdtemp(prefix="rdk-bench-")

    def receive(info) -> None:
        n = 0
        for m in info.messages:  # a Message object per message, as confluent's loop has
            m.value  # noqa: B018 - touch it, as the confluent loop calls .value()
            n += 1
        clock.add(n)

    try:
        c = rdk.Consumer(bootstrap, TOPIC, tmp, receive)
        c.start()
        clock.done.wait(timeout)
        c.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return clock


def run_rdk_fetch(bootstrap: str, total: int, timeout: float) -> Clock:
    clock = Clock(total)
    client = _binding.Client("consumer", {"bootstrap.servers": bootstrap,
                                          "fetch.queue.backoff.ms": 10})
    fetcher = Fetcher(client, TOPIC, 10000)
    try:
        for p in range(PARTITIONS):
            fetcher.start(p, lib.RD_KAFKA_OFFSET_BEGINNING)
        deadline = time.monotonic() + timeout
        while not clock.done.is_set() and time.monotonic() < deadline:
            b = fetcher.fetch(100)
            if b.n:
                clock.add(b.n)
    finally:
        fetcher.close()
        client.close()
    return clock


def run_confluent(bootstrap: str, total: int, timeout: float, extra: dict | None = None) -> Clock:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    clock = Clock(total)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-ck",
                  "enable.auto.commit": False, "enable.partition.eof": False, **(extra or {})})
    try:
        c.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
        deadline = time.monotonic() + timeout
        while not clock.done.is_set() and time.monotonic() < deadline:
            msgs = c.consume(10000, 0.1)
            if not msgs:
                continue
            for m in msgs:
                m.value()
            clock.add(len(msgs))
    finally:
        c.close()
    return clock


def run_confluent_backoff(bootstrap: str, total: int, timeout: float) -> Clock:
    """confluent-kafka with rdk's default fetch.queue.backoff.ms (10 ms instead of 1 s)."""
    return run_confluent(bootstrap, total, timeout, {"fetch.queue.backoff.ms": 10})


CLIENTS = {"rdk": run_rdk, "confluent": run_confluent, "confluent-fqb10": run_confluent_backoff,
           "rdk-fetch": run_rdk_fetch}


FAILED: list[str] = []  # clients whose pass failed (not "too small to time"): exit 1


def run_pass(name: str, bootstrap: str, total: int, timeout: float) -> tuple[float, float]:
    """One client's pass in a fresh process: (msg/s, CPU us per message), NaN if it failed."""
    done = subprocess.run(
        [sys.executable, __file__, "--pass", name, bootstrap, str(total), str(timeout)],
        capture_output=True, text=True, timeout=timeout + 60, check=False)
    try:
        rate, cpu = json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        print(f"  {name}: pass failed: {done.stderr.strip()[-500:]}", file=sys.stderr)
        FAILED.append(name)
        return float("nan"), float("nan")
    return rate, cpu


def bench_broker(kind: str, args) -> dict:
    with start_broker(kind, {TOPIC: PARTITIONS}) as broker:
        bootstrap = broker.bootstrap_servers
        per_partition = args.messages // PARTITIONS
        if kind == "mock":
            per_partition = min(per_partition, 45000)  # the mock keeps ~5 MiB
        produce(bootstrap, per_partition, args.size)
        marks = watermarks(bootstrap)
        if any(lo != 0 for lo, _ in marks):
            raise SystemExit(f"{kind}: the broker dropped old messages: {marks}")
        total = sum(hi for _, hi in marks)
        rates: dict[str, list[float]] = {name: [] for name in args.clients}
        cpu: dict[str, list[float]] = {name: [] for name in args.clients}
        for _ in range(args.passes):
            for name in args.clients:
                rate, cpu_us = run_pass(name, bootstrap, total, args.timeout)
                rates[name].append(rate)
                cpu[name].append(cpu_us)
        result = {"broker": kind, "messages_per_pass": total, "size": args.size,
                  "passes": args.passes}
        for name, values in rates.items():
            ok = [v for v in values if not math.isnan(v)]
            cpu_ok = [v for v in cpu[name] if not math.isnan(v)]
            result[name] = {"median": statistics.median(ok) if ok else None,
                            "best": max(ok) if ok else None,
                            "all": [None if math.isnan(v) else round(v) for v in values],
                            "cpu_us_per_msg": round(statistics.median(cpu_ok), 3) if cpu_ok else None}
        mine = result.get("rdk", {}).get("median")
        for other in ("confluent", "confluent-fqb10"):
            theirs = result.get(other, {}).get("median")
            if mine and theirs:
                result[f"rdk_vs_{other}"] = round(mine / theirs, 2)
        return result


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--pass"]:  # one pass of one client, in this (fresh) process
        name, bootstrap, total, timeout = argv[1], argv[2], int(argv[3]), float(argv[4])
        clock = CLIENTS[name](bootstrap, total, timeout)
        print(json.dumps([clock.rate(), clock.cpu_us()]))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--broker", choices=["mock", "tansu", "both"], default="both")
    ap.add_argument("--messages", type=int, default=1_000_000,
                    help="messages to produce (the mock cluster caps a pass at ~180k)")
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--passes", type=int, default=5)
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per pass")
    ap.add_argument("--clients", nargs="+",
                    default=["rdk", "confluent", "confluent-fqb10", "rdk-fetch"],
                    choices=sorted(CLIENTS))
    args = ap.parse_args(argv)
    kinds = ["mock", "tansu"] if args.broker == "both" else [args.broker]
    for kind in kinds:
        result = bench_broker(kind, args)
        print(json.dumps(result))
        for name in args.clients:
            r = result[name]
            if r["median"]:
                print(f"  {kind:5} {name:15} median {r['median'] / 1e6:5.2f} M msg/s "
                      f"(best {r['best'] / 1e6:.2f}), CPU {r['cpu_us_per_msg']:.2f} us/msg",
                      file=sys.stderr)
        for other in ("confluent", "confluent-fqb10"):
            if f"rdk_vs_{other}" in result:
                print(f"  {kind:5} rdk / {other} = {result[f'rdk_vs_{other}']}x", file=sys.stderr)
    if FAILED:
        print(f"failed passes: {', '.join(FAILED)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
