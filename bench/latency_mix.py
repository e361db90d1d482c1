"""End-to-end latency with every producer x consumer pairing of rdk and confluent-kafka.

bench/run.py's latency scenario measures each library against itself; when one library's
tail is worse, this tells which side it comes from. One Tansu broker (or RDK_BROKERS), a
fresh 4-partition topic per run; a paced thread sends stamped 100-byte messages at
``--rate`` for ``--seconds`` while the consumer reads them in the same process (librdkafka
settings as in bench/run.py's latency scenario: ``fetch.wait.max.ms=10``,
``fetch.queue.backoff.ms=10``, ``linger.ms=5``). The first second's messages are not timed.

    .venv/bin/python bench/latency_mix.py [--rounds 3] [--rate 10000] [--seconds 8]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "contenders"))
from common import STAMP  # the harness's stamp: (sequence, send time)

import rdk
from rdk.mock import start_broker

PARTITIONS = 4
SIZE = 100
CONSUMER = {"fetch.wait.max.ms": 10, "fetch.queue.backoff.ms": 10, "fetch.min.bytes": 1}
PRODUCER = {"linger.ms": 5, "batch.num.messages": 10000, "acks": "all",
            "enable.idempotence": "false"}
KINDS = ("rdk", "confluent")


class Latencies:
    """Receive-minus-send times of stamped values; ``done`` once ``total`` arrived."""

    def __init__(self, total: int, warmup: int) -> None:
        self.total, self.warmup = total, warmup
        self.received = 0
        self.ns: list[int] = []
        self.done = threading.Event()

    def add(self, values, now_ns: int) -> None:
        for v in values:
            seq, sent = STAMP.unpack_from(v)
            self.received += 1
            if seq >= self.warmup:
                self.ns.append(now_ns - sent)
        if self.received >= self.total:
            self.done.set()

    def percentiles(self) -> tuple[float, float, float]:
        lat = sorted(self.ns)
        if not lat:
            return float("nan"), float("nan"), float("nan")
        return lat[len(lat) // 2] / 1e6, lat[(len(lat) - 1) * 99 // 100] / 1e6, lat[-1] / 1e6


def start_consumer(kind: str, bootstrap: str, topic: str, rec: Latencies, workdir: str):
    """Start reading ``topic`` from the beginning; returns a function that stops it."""
    if kind == "rdk":
        c = rdk.Consumer(bootstrap, topic, workdir,
                         lambda info: rec.add([m.value for m in info.messages],
                                              time.monotonic_ns()),
                         driver_options=CONSUMER)
        c.start()
        return c.stop
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"lat-{uuid.uuid4()}",
                  "enable.auto.commit": False, **CONSUMER})
    c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    stop = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            m = c.poll(0.1)
            if m is not None and m.error() is None:
                rec.add([m.value()], time.monotonic_ns())

    t = threading.Thread(target=loop, name="confluent-poll", daemon=True)
    t.start()

    def close() -> None:
        stop.set()
        t.join()
        c.close()

    return close


def make_producer(kind: str, bootstrap: str, topic: str):
    """(send(partition, values), flush(), close())."""
    if kind == "rdk":
        p = rdk.Producer(bootstrap, driver_options=PRODUCER)
        return (lambda part, values: p.send(topic, part, values)), (lambda: p.flush(30)), p.stop
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, **PRODUCER})

    def send(part: int, values: list[bytes]) -> None:
        for v in values:
            p.produce(topic, v, partition=part)
        p.poll(0)

    return send, (lambda: p.flush(30)), (lambda: None)


def one_run(bootstrap: str, producer: str, consumer: str, rate: int, seconds: int):
    topic = f"latency-mix-{uuid.uuid4().hex[:8]}"
    with rdk.Admin(bootstrap) as admin:
        admin.create_topics({topic: PARTITIONS})
    total = rate * seconds
    rec = Latencies(total, warmup=rate)
    with tempfile.TemporaryDirectory(prefix="rdk-latency-") as workdir:
        stop_consumer = start_consumer(consumer, bootstrap, topic, rec, workdir)
        send, flush, close = make_producer(producer, bootstrap, topic)
        try:
            start, sent, tick = time.monotonic_ns(), 0, 0
            while sent < total:  # every millisecond, what is due
                due = min(total, (time.monotonic_ns() - start) * rate // 1_000_000_000)
                if due > sent:
                    pad = bytes(SIZE - STAMP.size)
                    send(tick % PARTITIONS,
                         [STAMP.pack(s, time.monotonic_ns()) + pad for s in range(sent, due)])
                    sent = due
                tick += 1
                delay = start + tick * 1_000_000 - time.monotonic_ns()
                if delay > 0:
                    time.sleep(delay / 1e9)
            flush()
            if not rec.done.wait(60):
                raise SystemExit(f"{producer} -> {consumer}: {rec.received} of {total} arrived")
        finally:
            close()
            stop_consumer()
    return rec.percentiles()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3, help="runs of each pairing (median)")
    ap.add_argument("--rate", type=int, default=10000, help="messages per second")
    ap.add_argument("--seconds", type=int, default=8, help="seconds of sending per run")
    args = ap.parse_args(argv)
    results: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    with start_broker(os.environ.get("RDK_BROKERS") or "tansu", {}) as broker:
        for _ in range(args.rounds):
            for producer in KINDS:
                for consumer in KINDS:
                    r = one_run(broker.bootstrap_servers, producer, consumer, args.rate, args.seconds)
                    results.setdefault((producer, consumer), []).append(r)
                    print(f"producer {producer:9} consumer {consumer:9} p50 {r[0]:6.1f} "
                          f"p99 {r[1]:7.1f} max {r[2]:7.1f} ms", flush=True)
    print("\nmedians over runs (ms):")
    print(f"{'producer':10} {'consumer':10} {'p50':>7} {'p99':>7}  p99 of each run")
    for (producer, consumer), runs in results.items():
        print(f"{producer:10} {consumer:10} {statistics.median(r[0] for r in runs):7.1f} "
              f"{statistics.median(r[1] for r in runs):7.1f}  "
              f"{', '.join(f'{r[1]:.1f}' for r in runs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
