"""rdk as a benchmark contender, through its public API.

produce: ``Producer.send(topic, partition, payloads)`` once per chunk, ``flush()`` at the
end (failures counted by ``delivery_report_callback``). consume: ``Consumer`` with a
``receive_callback`` getting lists of ``rdk.Message`` (offset files in a temporary
directory, as kafka-native keeps them). arrow: ``rdk._binding.fetch.Fetcher`` batches turned into
``pyarrow.RecordBatch`` by ``rdk.arrow.record_batch`` (the Spark source's path).
latency: the same Producer and Consumer. paused_rss: ``consumer.pause()`` in the first
callback. A module rdk does not have yet makes the scenario report "unavailable".

Scale-family options (``job.options``): ``any_partition`` sends with ``partition=None``
through the producer's ``balancer``; ``offset_store: "noop"`` gives the Consumer a store
whose commit does nothing (the cost of the offset files by difference); ``workers: N``
consumes with an ``rdk.workers.WorkerPool`` of N processes (scenario ``workers``). Consume
runs report the offset store's figures (``offset_files_per_s``, ``sync_calls_per_s``) and
how long ``Consumer.start()`` took (``start_seconds``: locks and reads of the offset files).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
import resource
import tempfile
import threading
import time
from typing import Any

from common import (
    WARMUP_FRACTION,
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


def new_producer(job: Job) -> tuple[Any, list[Any]]:
    """(producer, [failures, first error name])."""
    Producer = need("rdk.producer").Producer
    failures: list[Any] = [0, ""]

    def on_report(info: Any) -> None:
        failures[0] += len(info.errors)
        if info.errors and not failures[1]:
            failures[1] = getattr(info.errors[0][1], "name", str(info.errors[0][1]))

    kw, driver = split(job.producer, _PRODUCER_KEYWORDS)
    if job.options.get("balancer"):
        kw["balancer"] = job.options["balancer"]
    p = Producer(job.bootstrap, delivery_report_callback=on_report, on_queue_full="block",
                 driver_options=driver, **kw)
    p.partition_count(job.topic, timeout=30)  # connected before the clock starts
    return p, failures


class NoopStore:
    """An offset store that keeps nothing: what consuming costs without offset files."""

    def read(self, partitions: Any) -> dict[int, int]:
        return {}

    def commit(self, offsets: Any) -> None:
        pass


def new_consumer(job: Job, callback: Any, offset_dir: str, **extra: Any) -> Any:
    Consumer = need("rdk.consumer").Consumer
    kw, driver = split(job.consumer, _CONSUMER_KEYWORDS)
    if job.options.get("offset_store") == "noop":
        extra["offset_store"] = NoopStore()
    return Consumer(job.bootstrap, job.topic, offset_dir, callback,
                    max_messages_per_callback=job.batch, driver_options=driver, **kw, **extra)


def file_store(job: Job, offset_dir: str) -> Any:
    """The consumer's offset files as an ``rdk.FileOffsetStore`` the bench holds, to read its
    public counters; None with ``offset_store=noop``."""
    if job.options.get("offset_store") == "noop":
        return None
    return need("rdk.offsets").FileOffsetStore(offset_dir, job.topic)


def store_figures(store: Any, seconds: float) -> dict[str, Any]:
    """The FileOffsetStore's counters over the consumer's life, per second of it."""
    if store is None or seconds <= 0:
        return {}
    return {"offset_flushes": store.flushes, "offset_files_written": store.files_written,
            "offset_sync_calls": store.sync_calls,
            "offset_flushes_per_s": store.flushes / seconds,
            "offset_files_per_s": store.files_written / seconds,
            "sync_calls_per_s": store.sync_calls / seconds}


def produce(job: Job) -> dict[str, Any]:
    p, failures = new_producer(job)
    pool = payload_pool(job.size, job.chunk)
    plan = chunks(job)
    send, topic = p.send, job.topic
    anywhere = bool(job.options.get("any_partition"))
    enqueued = 0
    watch = Stopwatch()
    watch.start()
    for part, n in plan:
        enqueued += send(topic, None if anywhere else part,
                         pool[:n] if n < len(pool) else pool).enqueued
    watch.enqueued()
    left = p.flush(job.timeout)
    watch.stop()
    p.stop()
    count = enqueued - left - failures[0]
    return {"count": count, "bytes": count * job.size, **watch.fields(),
            "errors": failures[0] + (job.count - enqueued), "error": failures[1]}


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

    if job.options.get("workers"):
        return pool_consume(job)
    given = job.options.get("offset_dir")  # bench/java_peer.py removes it after this process
    with contextlib.nullcontext(given) if given else tempfile.TemporaryDirectory(
            prefix="rdk-bench-") as offsets:
        store = file_store(job, offsets)
        c = new_consumer(job, receive, offsets, **({} if store is None else {"offset_store": store}))
        t0 = time.perf_counter()
        c.start()
        started = time.perf_counter() - t0
        progress = Progress(job)
        while not done.wait(0.2) and progress.alive(state["count"]):
            pass
        c.stop()
        life = time.perf_counter() - t0
    return clock.result(state["count"], errors=0, bad_size=state["bad_size"],
                        start_seconds=started, **store_figures(store, life))


# ---- rdk.workers: a pool of consumer processes ----------------------------------------

def pool_worker(job_json: str, shared: Any, worker_slot: int = 0, num_workers: int = 1) -> Any:
    """The WorkerPool's consumer_factory (runs in the worker): a Consumer of its slot. Under
    ``shared``'s lock each batch adds its count to ``shared[slot]``, its end time to
    ``shared[n + slot]``; the batch that brings the pool's total past 10 % of the messages
    sets the clock's start (``shared[2n]``, time; ``shared[2n + 1]``, the total then), as
    ConsumeClock does for one consumer. ``shared[2n + 2]`` counts batches of a wrong size."""
    import json

    job = Job(**json.loads(job_json))
    n = num_workers
    warmup = int(job.count * WARMUP_FRACTION)
    lock = shared.get_lock()

    def receive(batch: Any) -> None:
        arrived = time.monotonic_ns()
        msgs = batch.messages
        bad = len(msgs[-1].value or b"") != job.size
        with lock:
            shared[worker_slot] += len(msgs)
            if not shared[2 * n]:
                total = sum(shared[:n])
                if total > warmup:
                    shared[2 * n], shared[2 * n + 1] = arrived, total
            shared[2 * n + 2] += bad
            shared[n + worker_slot] = time.monotonic_ns()

    offsets = os.path.join(job.options["offset_dir"], f"slot-{worker_slot}")
    return new_consumer(job, receive, offsets, worker_slot=worker_slot,
                        num_workers=num_workers)


def proc_cpu_seconds(pid: int) -> float | None:
    """CPU time of process ``pid``'s live threads, in nanoseconds' resolution from
    /proc/PID/task/*/schedstat (utime + stime of /proc/PID/stat counts 10 ms ticks, too
    coarse for a short timed window); the ticks where schedstat is missing."""
    try:
        total = 0
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        return total / 1e9
    except (OSError, ValueError, IndexError):
        pass
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pool_consume(job: Job) -> dict[str, Any]:
    """Consume the topic with ``job.options["workers"]`` processes; the pool's throughput
    (timed by the workers like ConsumeClock, see pool_worker) and each worker's CPU
    (/proc) in that window."""
    import json
    import multiprocessing

    workers_mod = need("rdk.workers")
    n = int(job.options["workers"])
    # a synchronized Array: it pickles while the pool spawns its workers (a RawArray does not)
    shared = multiprocessing.get_context("spawn").Array("q", 2 * n + 3)
    with tempfile.TemporaryDirectory(prefix="rdk-bench-") as offsets:
        spec = json.dumps({**job.__dict__, "options": {**job.options, "offset_dir": offsets}})
        pool = workers_mod.WorkerPool(n, functools.partial(pool_worker, spec, shared),
                                      max_restarts=0)
        pool.start()
        progress = Progress(job)
        cpu0: dict[int, float | None] = {}
        total = 0
        while total < job.count and progress.alive(total) and not pool.wait(0):
            total = sum(shared[:n])
            if not cpu0 and shared[2 * n]:
                cpu0 = {pid: proc_cpu_seconds(pid) for pid in pool.pids.values()}
            time.sleep(0.002)
        cpu1 = {pid: proc_cpu_seconds(pid) for pid in pool.pids.values()}
        parts = pool.partitions
        pool.stop(60)
        error = str(pool.error) if pool.error else ""
        total = sum(shared[:n])
        t_first, first_n, bad = shared[2 * n], shared[2 * n + 1], shared[2 * n + 2]
        t_end = max(shared[n:2 * n])
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    window = [cpu1[p] - c for p, c in cpu0.items() if c is not None and cpu1.get(p) is not None]
    seconds = (t_end - t_first) / 1e9 if t_first else 0.0
    timed = total - first_n if t_first else 0
    return {"count": total, "timed_count": timed, "bytes": total * job.size,
            "seconds": seconds, "cpu_seconds": sum(window) if len(window) == n else None,
            "worker_cpu_seconds": window,
            "cpu_us_per_msg_per_process": ([w / timed * 1e6 for w in window]
                                           if timed else None),
            "children_cpu_seconds": children.ru_utime + children.ru_stime,
            "workers": n, "partitions_per_worker": {str(k): len(v) for k, v in parts.items()},
            "errors": 1 if error else 0, "error": error, "bad_size": bad}


def arrow(job: Job) -> dict[str, Any]:
    binding = need("rdk._binding")
    fetch = need("rdk._binding.fetch")
    rdk_arrow = need("rdk.arrow")
    import pyarrow.compute as pc
    lib = binding.lib
    client = binding.Client("consumer", {"bootstrap.servers": job.bootstrap,
                                         "enable.partition.eof": False, **job.consumer})
    client.partition_count(job.topic, timeout=30)
    fetcher = fetch.Fetcher(client, job.topic, job.batch, keep=True)  # one copy per payload
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
