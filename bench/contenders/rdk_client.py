"""rdk as a benchmark contender, through its public API.

produce: ``Producer.send(topic, partition, payloads)`` once per chunk, ``flush()`` at the
end (failures counted by ``delivery_report_callback``). consume: ``Consumer`` with a
``receive_callback`` getting lists of ``rdk.Message`` (offset files in a temporary
directory, as kafka-native keeps them). arrow: ``rdk._fetch.Fetcher`` batches turned into
``pyarrow.RecordBatch`` by ``rdk.arrow.record_batch`` (the Spark source's path).
latency: the same Producer and Consumer. paused_rss: ``consumer.pause()`` in the first
callback. A module rdk does not have yet makes the scenario report "unavailable".
"""

from __future__ import annotations

import importlib
import tempfile
import threading
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
    report,
    run,
)

# librdkafka settings rdk takes as keywords rather than driver_options
_PRODUCER_KEYWORDS = {"linger.ms": "queue_buffering_max_ms",
                      "queue.buffering.max.messages": "queue_buffering_max_messages"}
_CONSUMER_KEYWORDS = {"queued.max.messages.kbytes": "queued_max_messages_kbytes"}


def need(module: str) -> Any:
    """Import an rdk module, or report this scenario unavailable and exit."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        report({"unavailable": True, "reason": f"{module} cannot be imported ({e})"})
        raise SystemExit(0) from None


def split(props: dict[str, Any], keywords: dict[str, str]) -> tuple[dict[str, Any], dict[str, Any]]:
    kw = {keywords[k]: v for k, v in props.items() if k in keywords}
    driver = {k: v for k, v in props.items() if k not in keywords}
    return kw, driver


def new_producer(job: Job) -> tuple[Any, list[int]]:
    Producer = need("rdk.producer").Producer
    failures = [0]

    def on_report(info: Any) -> None:
        failures[0] += len(info.errors)

    kw, driver = split(job.producer, _PRODUCER_KEYWORDS)
    p = Producer(job.bootstrap, delivery_report_callback=on_report, on_queue_full="block",
                 driver_options=driver, **kw)
    p.partition_count(job.topic, timeout=30)  # connected before the clock starts
    return p, failures


def new_consumer(job: Job, callback: Any, offset_dir: str) -> Any:
    Consumer = need("rdk.consumer").Consumer
    kw, driver = split(job.consumer, _CONSUMER_KEYWORDS)
    return Consumer(job.bootstrap, job.topic, offset_dir, callback,
                    max_messages_per_callback=job.batch, driver_options=driver, **kw)


def produce(job: Job) -> dict[str, Any]:
    p, failures = new_producer(job)
    pool = payload_pool(job.size, job.chunk)
    plan = chunks(job)
    send, topic = p.send, job.topic
    enqueued = 0
    watch = Stopwatch()
    watch.start()
    for part, n in plan:
        enqueued += send(topic, part, pool[:n] if n < len(pool) else pool).enqueued
    left = p.flush(job.timeout)
    watch.stop()
    p.stop()
    count = enqueued - left - failures[0]
    return {"count": count, "bytes": count * job.size, **watch.fields(),
            "errors": failures[0] + (job.count - enqueued)}


def consume(job: Job) -> dict[str, Any]:
    done = threading.Event()
    state = {"count": 0, "bad_size": 0}

    clock = ConsumeClock(job)

    def receive(batch: Any) -> None:
        msgs = batch.messages
        clock.arrived(len(msgs))
        state["count"] += len(msgs)
        if len(msgs[-1].value or b"") != job.size:
            state["bad_size"] += 1
        clock.processed()
        if state["count"] >= job.count:
            done.set()

    with tempfile.TemporaryDirectory(prefix="rdk-bench-") as offsets:
        c = new_consumer(job, receive, offsets)
        c.start()
        progress = Progress(job)
        while not done.wait(0.2) and progress.alive(state["count"]):
            pass
        c.stop()
    return clock.result(state["count"], errors=0, bad_size=state["bad_size"])


def arrow(job: Job) -> dict[str, Any]:
    binding = need("rdk._binding")
    fetch = need("rdk._fetch")
    rdk_arrow = need("rdk.arrow")
    import pyarrow.compute as pc
    lib = binding.lib
    client = binding.Client("consumer", {"bootstrap.servers": job.bootstrap,
                                         "enable.partition.eof": False, **job.consumer})
    client.partition_count(job.topic, timeout=30)
    fetcher = fetch.Fetcher(client, job.topic, job.batch)
    count = bad_size = errors = 0
    for p in range(job.partitions):
        fetcher.start(p, lib.RD_KAFKA_OFFSET_BEGINNING)
    clock = ConsumeClock(job)
    progress = Progress(job)
    while count < job.count and progress.alive(count):
        b = fetcher.fetch(job.wait_ms)
        if b.n == 0:
            continue
        clock.arrived(b.n)
        rb = rdk_arrow.record_batch(b, job.topic)
        if b.n_errors:
            errors += b.n_errors
            rb = rb.filter(rdk_arrow.error_mask(b))
        count += rb.num_rows
        if pc.sum(pc.binary_length(rb.column(1))).as_py() != job.size * rb.num_rows:
            bad_size += 1
        clock.processed()
    fetcher.close()
    client.close()
    return clock.result(count, errors=errors, bad_size=bad_size)


def latency(job: Job) -> dict[str, Any]:
    total = int(job.rate * job.duration)
    p, _failures = new_producer(job)
    rec = LatencyRecorder(total, job.warmup, job.size)
    done = threading.Event()

    def receive(batch: Any) -> None:
        rec.add([m.value for m in batch.messages], time.monotonic_ns())
        if rec.done:
            done.set()

    topic = job.topic

    with tempfile.TemporaryDirectory(prefix="rdk-bench-") as offsets:
        c = new_consumer(job, receive, offsets)
        c.start()
        t0 = time.perf_counter()
        sender = PacedSender(job, lambda part, payloads: p.send(topic, part, payloads),
                             lambda: p.flush(job.timeout))
        sender.start()
        progress = Progress(job)
        while not done.wait(0.2) and (progress.alive(rec.received) or sender.is_alive()):
            pass
        sender.join()
        c.stop()
    p.stop()
    return rec.result(sender.produced, time.perf_counter() - t0)


def paused_rss(job: Job) -> dict[str, Any]:
    first = threading.Event()
    state = {"received": 0, "after": 0}
    holder: dict[str, Any] = {}

    def receive(batch: Any) -> None:
        if first.is_set():
            state["after"] += len(batch.messages)
            return
        state["received"] += len(batch.messages)
        holder["consumer"].pause()
        first.set()

    with tempfile.TemporaryDirectory(prefix="rdk-bench-") as offsets:
        c = holder["consumer"] = new_consumer(job, receive, offsets)
        baseline = current_rss()
        c.start()
        first.wait(min(job.timeout, job.idle))
        time.sleep(job.hold_seconds)  # the measurement: what a paused consumer holds over time
        result = {"count": state["received"], "after_pause": state["after"],
                  "peak_rss": peak_rss(), "baseline_rss": baseline,
                  "seconds": job.hold_seconds, "bytes": 0}
        c.stop()
    return result


if __name__ == "__main__":
    raise SystemExit(run({"produce": produce, "consume": consume, "arrow": arrow,
                          "latency": latency, "paused_rss": paused_rss}))
