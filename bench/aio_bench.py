"""asyncio throughput and latency: rdk.aio against the sync rdk.Consumer and confluent-kafka's aio.

Scenarios (issue 40), each peer in a fresh process, peers alternated pass by pass, the
median of ``--passes`` (>= 3) reported:

- ``consume`` (100 B and 1 KiB, 4 partitions): ``rdk.aio.Consumer`` (``async for``, a Message
  object per message touched), the sync ``rdk.Consumer`` (``batches()``), confluent-kafka's
  ``AIOConsumer`` (``await consume(10000)``, when the installed confluent-kafka has it);
- ``produce`` (100 B and 1 KiB): ``await rdk.aio.Producer.send`` of 10,000-message lists, 8 in
  flight, against ``AIOProducer.produce`` (one awaitable per message, gathered per 10,000);
- ``latency``: a paced producer (one message every 2 ms, its send time in the payload) and a
  consumer reading it: p50/p99 of send→receive for ``rdk.aio.Consumer`` and the sync
  ``rdk.Consumer``; the difference of their p99 is the loop hop.

The broker is Apache Kafka (``rdk.testing.KafkaCluster``, 1 node) unless ``--broker mock``
(librdkafka's mock cluster in its own process: the quick run of the test suite's smoke).
Results: the table, and ``--out`` (default ``bench/aio_results.json``) with the command, the
date and the machine's load (``os.getloadavg``) before and after.

    .venv/bin/python bench/aio_bench.py                       # Apache Kafka, 3 passes
    .venv/bin/python bench/aio_bench.py --broker mock --messages 20000 --passes 1 --out /tmp/x.json
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid

import rdk
import rdk.aio

PARTITIONS = 4
SEND_BATCH = 10_000


# ---- peers (each runs in its own process: ``--peer NAME BOOTSTRAP TOPIC COUNT SIZE``) -----

def _rate(n: int, t0: float, t1: float) -> float:
    return n / max(t1 - t0, 1e-9)


def consume_rdk_aio(bootstrap: str, topic: str, count: int, size: int) -> dict:
    async def main() -> dict:
        tmp = tempfile.mkdtemp(prefix="rdk-aio-bench-")
        n, t0 = 0, None
        try:
            async with rdk.aio.Consumer(bootstrap, topic, tmp, statistics_interval_ms=0) as c:
                async for batch in c:
                    if t0 is None:
                        t0 = time.perf_counter()
                    for m in batch.messages:
                        m.value  # noqa: B018 - touch it, as every peer does
                    n += len(batch)
                    if n >= count:
                        break
            return {"msgs_per_s": _rate(n, t0 or 0.0, time.perf_counter()), "count": n}
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    return asyncio.run(main())


def consume_rdk_sync(bootstrap: str, topic: str, count: int, size: int) -> dict:
    tmp = tempfile.mkdtemp(prefix="rdk-sync-bench-")
    n, t0 = 0, None
    try:
        with rdk.Consumer(bootstrap, topic, tmp, statistics_interval_ms=0) as c:
            for batch in c.batches():
                if t0 is None:
                    t0 = time.perf_counter()
                for m in batch.messages:
                    m.value  # noqa: B018
                n += len(batch.messages)
                if n >= count:
                    break
        return {"msgs_per_s": _rate(n, t0 or 0.0, time.perf_counter()), "count": n}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def consume_confluent_aio(bootstrap: str, topic: str, count: int, size: int) -> dict:
    from confluent_kafka import OFFSET_BEGINNING, TopicPartition
    from confluent_kafka.aio import AIOConsumer

    async def main() -> dict:
        c = AIOConsumer({"bootstrap.servers": bootstrap, "group.id": f"b-{uuid.uuid4().hex[:6]}",
                         "enable.auto.commit": False, "fetch.queue.backoff.ms": 10})
        n, t0 = 0, None
        try:
            await c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
            while n < count:
                msgs = await c.consume(10000, 0.1)
                if not msgs:
                    continue
                if t0 is None:
                    t0 = time.perf_counter()
                for m in msgs:
                    m.value()
                n += len(msgs)
            return {"msgs_per_s": _rate(n, t0 or 0.0, time.perf_counter()), "count": n}
        finally:
            await c.close()

    return asyncio.run(main())


def produce_rdk_aio(bootstrap: str, topic: str, count: int, size: int) -> dict:
    async def main() -> dict:
        payload = os.urandom(size)
        async with rdk.aio.Producer(bootstrap, statistics_interval_ms=0) as p:
            await p.send(topic, 0, [payload])  # connected, metadata known
            t0 = time.perf_counter()
            sends, sent, delivered = [], 0, 0
            while sent < count:
                k = min(SEND_BATCH, count - sent)
                sends.append(asyncio.ensure_future(p.send(topic, sent // SEND_BATCH % PARTITIONS,
                                                          [payload] * k)))
                sent += k
                if len(sends) >= 8:
                    delivered += (await sends.pop(0)).delivered
            for s in sends:
                delivered += (await s).delivered
            return {"msgs_per_s": _rate(delivered, t0, time.perf_counter()), "count": delivered}

    return asyncio.run(main())


def produce_confluent_aio(bootstrap: str, topic: str, count: int, size: int) -> dict:
    from confluent_kafka.aio import AIOProducer

    async def main() -> dict:
        payload = os.urandom(size)
        p = AIOProducer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        try:
            await (await p.produce(topic, value=payload, partition=0))
            t0 = time.perf_counter()
            delivered, sent = 0, 0
            while sent < count:
                k = min(SEND_BATCH, count - sent)
                part = sent // SEND_BATCH % PARTITIONS
                futs = [await p.produce(topic, value=payload, partition=part) for _ in range(k)]
                await asyncio.gather(*futs)
                delivered += k
                sent += k
            return {"msgs_per_s": _rate(delivered, t0, time.perf_counter()), "count": delivered}
        finally:
            await p.close()

    return asyncio.run(main())


def _paced_producer(bootstrap: str, topic: str, count: int) -> threading.Thread:
    """A thread sending ``count`` messages, one every 2 ms, each holding its send time."""
    def run() -> None:
        p = rdk.Producer(bootstrap, queue_buffering_max_ms=0, statistics_interval_ms=0)
        try:
            for _ in range(count):
                p.send(topic, 0, [str(time.time_ns()).encode()])
                time.sleep(0.002)
        finally:
            p.stop(30)

    t = threading.Thread(target=run, name="paced-producer")
    t.start()
    return t


def _record(messages: list, lat: list[float], count: int) -> bool:
    """Each message's send→receive time in µs; True once ``count`` are in."""
    now = time.time_ns()
    lat.extend((now - int(m.value)) / 1000 for m in messages)
    return len(lat) >= count


def _latency_summary(lat_us: list[float]) -> dict:
    lat_us.sort()
    return {"p50_ms": lat_us[len(lat_us) // 2] / 1000, "p99_ms": lat_us[int(len(lat_us) * 0.99)] / 1000,
            "count": len(lat_us)}


def latency_rdk_aio(bootstrap: str, topic: str, count: int, size: int) -> dict:
    async def main() -> dict:
        tmp = tempfile.mkdtemp(prefix="rdk-aio-lat-")
        lat: list[float] = []
        try:
            async with rdk.aio.Consumer(bootstrap, topic, tmp, start_offset="latest",
                                        statistics_interval_ms=0) as c:
                it = c.batches(timeout=0.5)
                async for _ in it:  # ready: the assignment reads from "latest" now
                    pass
                t = _paced_producer(bootstrap, topic, count)
                async for batch in c.batches(timeout=30):
                    if _record(batch.messages, lat, count):
                        break
                t.join()
            return _latency_summary(lat)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    return asyncio.run(main())


def latency_rdk_sync(bootstrap: str, topic: str, count: int, size: int) -> dict:
    tmp = tempfile.mkdtemp(prefix="rdk-sync-lat-")
    lat: list[float] = []
    try:
        with rdk.Consumer(bootstrap, topic, tmp, start_offset="latest",
                          statistics_interval_ms=0) as c:
            for _ in c.batches(timeout=0.5):
                pass
            t = _paced_producer(bootstrap, topic, count)
            for batch in c.batches(timeout=30):
                if _record(batch.messages, lat, count):
                    break
            t.join()
        return _latency_summary(lat)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


PEERS = {
    "consume": {"rdk.aio": consume_rdk_aio, "rdk sync": consume_rdk_sync,
                "confluent AIOConsumer": consume_confluent_aio},
    "produce": {"rdk.aio": produce_rdk_aio, "confluent AIOProducer": produce_confluent_aio},
    "latency": {"rdk.aio": latency_rdk_aio, "rdk sync": latency_rdk_sync},
}
_ALL = {f"{s}:{name}": fn for s, peers in PEERS.items() for name, fn in peers.items()}


def _has_confluent_aio() -> bool:
    try:
        import confluent_kafka.aio  # noqa: F401
    except ImportError:
        return False
    return True


# ---- the driver ------------------------------------------------------------------------

def run_peer(peer: str, bootstrap: str, topic: str, count: int, size: int, timeout: float) -> dict:
    done = subprocess.run([sys.executable, __file__, "--peer", peer, bootstrap, topic, str(count),
                           str(size)], capture_output=True, text=True, timeout=timeout, check=False)
    try:
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return {"error": done.stderr.strip()[-400:]}


def fill(bootstrap: str, topic: str, count: int, size: int) -> None:
    p = rdk.Producer(bootstrap, statistics_interval_ms=0)
    payload = os.urandom(size)
    per = count // PARTITIONS
    for part in range(PARTITIONS):
        for i in range(0, per, SEND_BATCH):
            p.send(topic, part, [payload] * min(SEND_BATCH, per - i))
    assert p.stop(120) == 0


def topics(args) -> dict[str, int]:
    """Every topic a run uses, made before it starts (the mock cluster has no CreateTopics)."""
    out = {}
    for size in args.sizes:
        out[f"aio-c{size}"] = PARTITIONS
        for i in range(args.passes):
            for name in PEERS["produce"]:
                out[_produce_topic(size, i, name)] = PARTITIONS
    for i in range(args.passes):
        for name in PEERS["latency"]:
            out[_latency_topic(i, name)] = 1
    return out


def _produce_topic(size: int, i: int, name: str) -> str:
    return f"aio-p{size}-{i}-{name.split()[0].replace('.', '-')}"


def _latency_topic(i: int, name: str) -> str:
    return f"aio-l-{i}-{name.replace(' ', '-').replace('.', '-')}"


def bench(bootstrap: str, args) -> dict:
    results: dict = {}
    skip = set() if _has_confluent_aio() else {"confluent AIOConsumer", "confluent AIOProducer"}
    for size in args.sizes:
        fill(bootstrap, f"aio-c{size}", args.messages, size)
        for scenario in ("consume", "produce"):
            rows: dict[str, list] = {n: [] for n in PEERS[scenario] if n not in skip}
            for i in range(args.passes):
                for name in rows:  # alternating peers, pass by pass
                    t = _produce_topic(size, i, name) if scenario == "produce" else f"aio-c{size}"
                    rows[name].append(run_peer(f"{scenario}:{name}", bootstrap, t,
                                               args.messages, size, args.timeout))
            results[f"{scenario} {size} B"] = _medians(rows, "msgs_per_s")
    lat_rows: dict[str, list] = {n: [] for n in PEERS["latency"]}
    for i in range(args.passes):
        for name in lat_rows:
            lat_rows[name].append(run_peer(f"latency:{name}", bootstrap, _latency_topic(i, name),
                                           args.latency_messages, 0, args.timeout))
    results["latency"] = {n: {k: _median(r, k) for k in ("p50_ms", "p99_ms")}
                          for n, r in lat_rows.items()}
    results["latency"]["errors"] = [r["error"] for rs in lat_rows.values() for r in rs if "error" in r]
    return results


def _median(rows: list[dict], key: str) -> float | None:
    got = [r[key] for r in rows if key in r]
    return statistics.median(got) if got else None


def _medians(rows: dict[str, list[dict]], key: str) -> dict:
    out = {name: {"median": _median(rs, key), "passes": [r.get(key) for r in rs],
                  "errors": [r["error"] for r in rs if "error" in r]} for name, rs in rows.items()}
    return out


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--peer"]:
        peer, bootstrap, topic, count, size = argv[1:6]
        print(json.dumps(_ALL[peer](bootstrap, topic, int(count), int(size))))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--broker", choices=("kafka", "mock"), default="kafka")
    ap.add_argument("--messages", type=int, default=500_000)
    ap.add_argument("--latency-messages", type=int, default=2000)
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 1024])
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "aio_results.json"))
    args = ap.parse_args(argv)
    load_before = os.getloadavg()
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    if args.broker == "mock":
        from rdk.testing import MockClusterProcess

        cm = MockClusterProcess(topics(args), num_brokers=1)
    else:
        from rdk.testing import KafkaCluster

        cm = KafkaCluster(1)
    with cm as broker:
        if args.broker != "mock":
            for name, partitions in topics(args).items():
                broker.create_topic(name, partitions)
        results = bench(broker.bootstrap_servers, args)
    report = {"command": " ".join([os.path.relpath(sys.executable), *sys.argv]), "date": started,
              "load_before": load_before, "load_after": os.getloadavg(),
              "cpus": os.cpu_count(), "broker": args.broker, "messages": args.messages,
              "passes": args.passes, "results": results}
    with open(args.out, "w") as f:
        json.dump(report, f, indent=1)
    for name, rows in results.items():
        print(name, json.dumps({k: (v["median"] if isinstance(v, dict) and "median" in v else v)
                                for k, v in rows.items()}))
    print(f"load {load_before} -> {report['load_after']}; written {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
