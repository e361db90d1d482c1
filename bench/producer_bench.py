"""Producer throughput: rdk's send() against confluent-kafka's Producer.produce loop.

Each client runs in its own process against the same broker with the same settings
(linger, batch size, queue size, acks); the figure is messages per second from the
first send until every message is delivered (flush returned 0).

    .venv/bin/python bench/producer_bench.py                    # mock cluster and Tansu
    .venv/bin/python bench/producer_bench.py --broker mock --messages 4000000
    .venv/bin/python bench/producer_bench.py --broker HOST:PORT  # a running cluster

The mock cluster is served by ``python -m rdk.mock`` in a separate process, so it does
not share the producer's interpreter.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
import uuid

from rdk.mock import start_broker

HERE = os.path.dirname(os.path.abspath(__file__))


# ---- workers (each in its own process) ----------------------------------------------


def cpu_seconds() -> float:
    """CPU time of this process, all threads (user + system)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def run_rdk(a: argparse.Namespace) -> dict:
    import rdk
    from rdk.producer import Producer

    payloads = [os.urandom(a.size) for _ in range(a.batch)]
    with Producer(a.bootstrap, queue_buffering_max_ms=a.linger_ms,
                  queue_buffering_max_messages=a.queue, on_queue_full="block",
                  driver_options={"batch.num.messages": a.batch_messages}) as p:
        p.send(a.topic, None, payloads[:10])  # connect and learn metadata outside the timing
        if p.flush(30):
            raise SystemExit("warm-up messages were not delivered")
        sends = a.messages // a.batch
        cpu0, start = cpu_seconds(), time.perf_counter()
        for _ in range(sends):
            p.send(a.topic, None, payloads)
        enqueued = time.perf_counter()
        left = p.flush(120)
        end, cpu = time.perf_counter(), cpu_seconds() - cpu0
    return {"client": f"rdk {rdk.__version__}", "messages": sends * a.batch, "seconds": end - start,
            "enqueue_seconds": enqueued - start, "undelivered": left, "cpu_seconds": cpu}


def run_confluent(a: argparse.Namespace) -> dict:
    import confluent_kafka

    payloads = [os.urandom(a.size) for _ in range(a.batch)]
    p = confluent_kafka.Producer({
        "bootstrap.servers": a.bootstrap, "linger.ms": a.linger_ms,
        "queue.buffering.max.messages": a.queue, "batch.num.messages": a.batch_messages,
    })
    p.produce(a.topic, payloads[0])
    if p.flush(30):
        raise SystemExit("warm-up message was not delivered")
    produce, poll = p.produce, p.poll
    sends = a.messages // a.batch
    cpu0, start = cpu_seconds(), time.perf_counter()
    for _ in range(sends):
        for v in payloads:
            try:
                produce(a.topic, v)
            except BufferError:  # queue full: serve delivery reports, then retry once room is made
                while True:
                    poll(0.01)
                    try:
                        produce(a.topic, v)
                        break
                    except BufferError:
                        continue
        poll(0)
    enqueued = time.perf_counter()
    left = p.flush(120)
    end, cpu = time.perf_counter(), cpu_seconds() - cpu0
    return {"client": f"confluent-kafka {confluent_kafka.version()[0]}", "messages": sends * a.batch,
            "seconds": end - start, "enqueue_seconds": enqueued - start, "undelivered": left,
            "cpu_seconds": cpu}


WORKERS = {"rdk": run_rdk, "confluent": run_confluent}


# ---- driver ------------------------------------------------------------------------


def run_worker(client: str, bootstrap: str, topic: str, a: argparse.Namespace) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", client, "--bootstrap", bootstrap,
           "--topic", topic, "--messages", str(a.messages), "--batch", str(a.batch),
           "--size", str(a.size), "--linger-ms", str(a.linger_ms), "--queue", str(a.queue),
           "--batch-messages", str(a.batch_messages)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise SystemExit(f"{client} worker failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--broker", action="append",
                    help="mock, tansu or HOST:PORT (repeatable; default: mock and tansu)")
    ap.add_argument("--clients", default="rdk,confluent", help="comma-separated: rdk,confluent")
    ap.add_argument("--messages", type=int, default=2_000_000)
    ap.add_argument("--batch", type=int, default=10_000, help="messages per rdk send() call")
    ap.add_argument("--size", type=int, default=100, help="value size in bytes")
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--linger-ms", type=float, default=5.0)
    ap.add_argument("--queue", type=int, default=500_000, help="queue.buffering.max.messages")
    ap.add_argument("--batch-messages", type=int, default=10_000, help="batch.num.messages")
    ap.add_argument("--rounds", type=int, default=1, help="runs per client (best is reported)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--bootstrap", help=argparse.SUPPRESS)
    ap.add_argument("--topic", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.messages < a.batch:  # whole batches are sent: fewer would send nothing
        ap.error(f"--messages ({a.messages}) must be at least --batch ({a.batch})")

    if a.worker:
        print(json.dumps(WORKERS[a.worker](a)))
        return 0

    clients = [c.strip() for c in a.clients.split(",") if c.strip()]
    results = []
    for kind in a.broker or ["mock", "tansu"]:
        topic = f"bench-{uuid.uuid4().hex[:8]}"
        broker = start_broker(kind, {topic: a.partitions})
        try:
            best: dict[str, dict] = {}
            for _ in range(a.rounds):  # clients take turns, so both meet the same machine load
                for client in clients:
                    r = run_worker(client, broker.bootstrap_servers, topic, a)
                    if client not in best or r["seconds"] < best[client]["seconds"]:
                        best[client] = r
            for client in clients:
                r = best[client]
                r["broker"] = kind
                r["msgs_per_s"] = r["messages"] / r["seconds"]
                results.append(r)
                print(f"{kind:>6}  {r['client']:<24} {r['msgs_per_s'] / 1e6:6.2f} M msg/s "
                      f"({r['messages']} x {a.size} B in {r['seconds']:.2f} s, enqueue "
                      f"{r['enqueue_seconds']:.2f} s, client CPU "
                      f"{r['cpu_seconds'] / r['messages'] * 1e9:.0f} ns/msg, "
                      f"undelivered {r['undelivered']})", flush=True)
        finally:
            broker.close()
    by = {(r["broker"], r["client"].split()[0]): r["msgs_per_s"] for r in results}
    for kind in a.broker or ["mock", "tansu"]:
        if (kind, "rdk") in by and (kind, "confluent-kafka") in by:
            ratio = by[(kind, "rdk")] / by[(kind, "confluent-kafka")]
            print(f"{kind:>6}  rdk / confluent-kafka = {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
