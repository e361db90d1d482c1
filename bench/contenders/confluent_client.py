"""confluent-kafka (PyPI) as a benchmark contender, with its idiomatic calls.

produce: ``Producer.produce(topic, value, partition=p)`` per message, ``poll(0)`` after
each chunk, ``flush()`` at the end; no per-message delivery callback (its fastest honest
mode: the harness checks the broker's high watermarks instead). consume: ``assign`` at
the beginning, ``consume(num_messages, timeout)`` in a loop, ``error()`` checked on each
message as the API requires. latency: ``poll(timeout)`` per message (``consume`` waits
until it has ``num_messages``). paused_rss: ``pause(assignment())`` after the first batch.
With ``job.options["any_partition"]`` produce leaves out ``partition=`` (librdkafka's default
partitioner chooses).
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
    current_rss,
    payload_pool,
    peak_rss,
    run,
)
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition


def new_producer(job: Job) -> Producer:
    p = Producer({"bootstrap.servers": job.bootstrap, **job.producer})
    p.list_topics(job.topic, timeout=30)  # connected before the clock starts
    return p


def new_consumer(job: Job) -> Consumer:
    c = Consumer({"bootstrap.servers": job.bootstrap, "group.id": "rdk-bench",
                  "enable.auto.commit": False, "enable.partition.eof": False, **job.consumer})
    c.list_topics(job.topic, timeout=30)
    return c


def assign_all(c: Consumer, job: Job) -> None:
    c.assign([TopicPartition(job.topic, p, OFFSET_BEGINNING) for p in range(job.partitions)])


def produce(job: Job) -> dict[str, Any]:
    p = new_producer(job)
    pool = payload_pool(job.size, job.chunk)
    plan = chunks(job)
    send, topic = p.produce, job.topic
    anywhere = bool(job.options.get("any_partition"))
    watch = Stopwatch()
    watch.start()
    for part, n in plan:
        for value in pool[:n]:
            while True:
                try:
                    if anywhere:
                        send(topic, value)
                    else:
                        send(topic, value, partition=part)
                    break
                except BufferError:
                    p.poll(0.01)
        p.poll(0)
    watch.enqueued()
    left = p.flush(job.timeout)
    watch.stop()
    return {"count": job.count - left, "bytes": (job.count - left) * job.size, **watch.fields()}


def consume(job: Job) -> dict[str, Any]:
    count = errors = bad_size = 0
    wait = job.wait_ms / 1000
    c = new_consumer(job)
    assign_all(c, job)
    clock = ConsumeClock(job)
    progress = Progress(job)
    while count < job.count and progress.alive(count):
        msgs = c.consume(job.batch, wait)
        if not msgs:
            continue
        clock.arrived(len(msgs))
        for m in msgs:
            if m.error() is not None:
                errors += 1
        count += len(msgs)
        if len(msgs[-1].value() or b"") != job.size:
            bad_size += 1
        clock.processed()
    c.close()
    return clock.result(count - errors, errors=errors, bad_size=bad_size)


def latency(job: Job) -> dict[str, Any]:
    total = int(job.rate * job.duration)
    p = new_producer(job)
    c = new_consumer(job)
    assign_all(c, job)
    topic = job.topic

    def send_tick(part: int, payloads: list[bytes]) -> None:
        for v in payloads:
            p.produce(topic, v, partition=part)
        p.poll(0)


    rec = LatencyRecorder(total, job.warmup, job.size)
    t0 = time.perf_counter()
    sender = PacedSender(job, send_tick, lambda: p.flush(job.timeout))
    sender.start()
    progress = Progress(job)
    wait = job.wait_ms / 1000
    while not rec.done and (progress.alive(rec.received) or sender.is_alive()):
        m = c.poll(wait)
        if m is None:
            continue
        if m.error() is not None:
            raise KafkaException(m.error())
        rec.add([m.value()], time.monotonic_ns())
    sender.join()
    c.close()
    return rec.result(sender.produced, time.perf_counter() - t0)


def paused_rss(job: Job) -> dict[str, Any]:
    c = new_consumer(job)
    baseline = current_rss()
    assign_all(c, job)
    progress = Progress(job)
    received = 0
    while received == 0 and progress.alive(0):
        received = len(c.consume(job.batch, job.wait_ms / 1000))
    c.pause(c.assignment())
    after = 0
    end = time.perf_counter() + job.hold_seconds
    while time.perf_counter() < end:
        after += len(c.consume(job.batch, 0.1))
    result = {"count": received, "after_pause": after, "peak_rss": peak_rss(),
              "baseline_rss": baseline, "seconds": job.hold_seconds, "bytes": 0}
    c.close()
    return result


if __name__ == "__main__":
    raise SystemExit(run({"produce": produce, "consume": consume, "latency": latency,
                          "paused_rss": paused_rss}))
