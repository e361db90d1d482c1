"""kafka-python (PyPI) as a benchmark contender, with its idiomatic calls.

produce: ``KafkaProducer.send(topic, value, partition=p)`` per message, ``flush()`` at the
end. consume: ``assign`` + ``seek_to_beginning``, ``poll(timeout_ms, max_records)`` in a
loop. latency: the same poll loop (it returns as soon as records are ready). The shared
librdkafka settings are mapped to kafka-python's keyword names (``KAFKA_PYTHON_NAMES``).
"""

from __future__ import annotations

import time
from typing import Any

from common import (
    ConsumeClock,
    Job,
    LatencyRecorder,
    PacedSender,
    Progress,
    Stopwatch,
    chunks,
    payload_pool,
    run,
)
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

# librdkafka property -> (kafka-python keyword, converter)
KAFKA_PYTHON_NAMES = {
    "linger.ms": ("linger_ms", int),
    "batch.size": ("batch_size", int),
    "acks": ("acks", lambda v: "all" if v in ("all", "-1", -1) else int(v)),
    "compression.type": ("compression_type", lambda v: None if v == "none" else v),
    "fetch.wait.max.ms": ("fetch_max_wait_ms", int),
    "fetch.min.bytes": ("fetch_min_bytes", int),
    "fetch.max.bytes": ("fetch_max_bytes", int),
    "max.partition.fetch.bytes": ("max_partition_fetch_bytes", int),
    "enable.idempotence": ("enable_idempotence", lambda v: str(v).lower() == "true"),
}


def mapped(props: dict[str, Any]) -> dict[str, Any]:
    """The settings kafka-python has an equivalent for (the rest have none)."""
    out = {}
    for name, value in props.items():
        if name in KAFKA_PYTHON_NAMES:
            key, convert = KAFKA_PYTHON_NAMES[name]
            out[key] = convert(value)
    return out


# kafka-python's ApiVersions v3+ probe cannot parse the answer of librdkafka's mock
# cluster; 2.3 protocol versions (record batch v2, Fetch v10) work on both brokers.
API_VERSION = (2, 3)


def new_producer(job: Job) -> KafkaProducer:
    p = KafkaProducer(bootstrap_servers=job.bootstrap, api_version=API_VERSION,
                      **mapped(job.producer))
    p.partitions_for(job.topic)  # connected and metadata known before the clock starts
    return p


def new_consumer(job: Job) -> tuple[KafkaConsumer, list[TopicPartition]]:
    c = KafkaConsumer(bootstrap_servers=job.bootstrap, api_version=API_VERSION,
                      group_id=None, enable_auto_commit=False,
                      auto_offset_reset="earliest", max_poll_records=job.batch,
                      **mapped(job.consumer))
    c.partitions_for_topic(job.topic)
    return c, [TopicPartition(job.topic, p) for p in range(job.partitions)]


def produce(job: Job) -> dict[str, Any]:
    p = new_producer(job)
    pool = payload_pool(job.size, job.chunk)
    plan = chunks(job)
    send, topic = p.send, job.topic
    futures = []
    keep = futures.append
    watch = Stopwatch()
    watch.start()
    for part, n in plan:
        for value in pool[:n]:
            keep(send(topic, value, partition=part))
    watch.enqueued()
    p.flush(job.timeout)
    watch.stop()
    p.close()
    failed = [f for f in futures if not f.succeeded()]  # counted after the clock stopped
    count = job.count - len(failed)
    result = {"count": count, "bytes": count * job.size, **watch.fields(), "errors": len(failed)}
    if failed:
        result["error"] = repr(failed[0].exception)
    return result


def consume(job: Job) -> dict[str, Any]:
    count = bad_size = 0
    c, tps = new_consumer(job)
    c.assign(tps)
    c.seek_to_beginning(*tps)
    clock = ConsumeClock(job)
    progress = Progress(job)
    while count < job.count and progress.alive(count):
        got = c.poll(timeout_ms=job.wait_ms, max_records=job.batch)
        if not got:
            continue
        clock.arrived(sum(map(len, got.values())))
        for records in got.values():
            count += len(records)
            if len(records[-1].value) != job.size:
                bad_size += 1
        clock.processed()
    c.close()
    return clock.result(count, errors=0, bad_size=bad_size)


def latency(job: Job) -> dict[str, Any]:
    total = int(job.rate * job.duration)
    p = new_producer(job)
    c, tps = new_consumer(job)
    c.assign(tps)
    c.seek_to_beginning(*tps)
    c.poll(timeout_ms=0)  # positions resolved before sending starts
    topic = job.topic

    def send_tick(part: int, payloads: list[bytes]) -> None:
        for v in payloads:
            p.send(topic, v, partition=part)


    rec = LatencyRecorder(total, job.warmup, job.size)
    t0 = time.perf_counter()
    sender = PacedSender(job, send_tick, lambda: p.flush(job.timeout))
    sender.start()
    progress = Progress(job)
    while not rec.done and (progress.alive(rec.received) or sender.is_alive()):
        got = c.poll(timeout_ms=job.wait_ms, max_records=job.batch)
        now = time.monotonic_ns()
        for records in got.values():
            rec.add([r.value for r in records], now)
    sender.join()
    c.close()
    p.close()
    return rec.result(sender.produced, time.perf_counter() - t0)


if __name__ == "__main__":
    raise SystemExit(run({"produce": produce, "consume": consume, "latency": latency}))
