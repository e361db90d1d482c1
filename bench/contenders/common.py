"""What every Python contender shares: the job it is given, the payloads, the result line.

A contender runs as its own process: ``python bench/contenders/<name>_client.py '<job json>'``.
The job names a scenario and its parameters (see ``Job``); the contender does the work
with its library's idiomatic calls and prints one line ``RESULT {json}`` last.

Result fields: ``count`` (messages produced and delivered, or consumed), ``bytes``
(value bytes), ``seconds`` (the timed part only), and per scenario ``p50_ms``/``p99_ms``
(latency), ``peak_rss`` / ``baseline_rss`` (bytes; paused_rss), ``errors``.
"""

from __future__ import annotations

import json
import os
import resource
import struct
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

RESULT_PREFIX = "RESULT "
STAMP = struct.Struct("<Qq")  # (sequence number, send time in CLOCK_MONOTONIC ns)


@dataclass
class Job:
    """One run of one scenario by one contender (all fields come from bench/run.py)."""

    scenario: str  # produce | consume | arrow | latency | paused_rss
    bootstrap: str
    topic: str
    partitions: int
    count: int = 0
    size: int = 100
    chunk: int = 10000  # messages per send call; chunk i goes to partition i % partitions
    batch: int = 10000  # most messages per consume call
    wait_ms: int = 1000  # how long one consume call may wait
    rate: int = 10000  # latency: messages per second
    duration: float = 1.0  # latency: seconds of sending
    warmup: int = 0  # latency: first sequence numbers not measured
    hold_seconds: float = 2.0  # paused_rss: how long the paused consumer is watched
    timeout: float = 120.0  # the most one run may take
    idle: float = 20.0  # a consumer gives up after this long without a new message
    producer: dict[str, Any] = field(default_factory=dict)  # librdkafka property names
    consumer: dict[str, Any] = field(default_factory=dict)
    # scale family: "any_partition" (send with partition=None / the library's partitioner),
    # "balancer" (rdk's), "offset_store": "noop", "workers" (rdk.workers pool size)
    options: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_argv(cls, argv: list[str] | None = None) -> Job:
        argv = sys.argv[1:] if argv is None else argv
        if len(argv) != 1:
            raise SystemExit("usage: <contender>.py '<job json>'")
        return cls(**json.loads(argv[0]))


def payload_pool(size: int, n: int) -> list[bytes]:
    """``n`` payloads of ``size`` bytes (sent again for every chunk): byte ``k`` of payload
    ``i`` is ``(7 * (i * size + k) + i) % 26 + 97`` for ``i < 1024``, then repeating, as in
    native.c. There are at most 26 distinct ones, shared, so 1 MiB payloads stay cheap."""
    base = bytes((7 * k) % 26 + 97 for k in range(size + 26))
    shared: dict[int, bytes] = {}
    out = []
    for i in range(n):
        shift = (7 * (i % 1024) * size + i % 1024) % 26  # 7 * k0 = shift (mod 26); 15 = 7^-1
        if shift not in shared:
            k0 = shift * 15 % 26
            shared[shift] = base[k0:k0 + size]
        out.append(shared[shift])
    return out


def chunks(job: Job) -> list[tuple[int, int]]:
    """(partition, message count) of every send call, in order."""
    out, left, i = [], job.count, 0
    while left > 0:
        n = min(job.chunk, left)
        out.append((i % job.partitions, n))
        left -= n
        i += 1
    return out


def stamp(seq: int, size: int) -> bytes:
    """A latency payload: sequence number and send time, padded to ``size``."""
    return STAMP.pack(seq, time.monotonic_ns()).ljust(size, b".")


class Progress:
    """Tells a consume loop to give up once nothing new arrived for ``job.idle`` seconds
    (or the run's ``timeout`` passed), so a broken contender fails fast instead of hanging."""

    def __init__(self, job: Job) -> None:
        self.idle = job.idle
        self.deadline = time.monotonic() + job.timeout
        self.last = time.monotonic()
        self.seen = 0

    def alive(self, count: int) -> bool:
        now = time.monotonic()
        if count != self.seen:
            self.seen, self.last = count, now
        return now - self.last < self.idle and now < self.deadline


WARMUP_FRACTION = 0.1


class Stopwatch:
    """Wall time and CPU time (every thread of this process, librdkafka's included) of the
    timed part. CPU per message is the steadier figure on a busy machine."""

    def __init__(self) -> None:
        self.t0 = self.c0 = 0.0
        self.seconds = self.cpu_seconds = 0.0
        self.enqueue_seconds: float | None = None

    def start(self) -> None:
        self.t0, self.c0 = time.perf_counter(), time.process_time()

    def enqueued(self) -> None:
        """Mark the end of a producer's enqueue phase: what follows is flush(), waiting
        for the broker's acknowledgements."""
        self.enqueue_seconds = time.perf_counter() - self.t0

    def stop(self) -> None:
        self.seconds = time.perf_counter() - self.t0
        self.cpu_seconds = time.process_time() - self.c0

    def fields(self) -> dict[str, float]:
        out = {"seconds": self.seconds, "cpu_seconds": self.cpu_seconds}
        if self.enqueue_seconds is not None:
            out["enqueue_seconds"] = self.enqueue_seconds
        return out


class ConsumeClock:
    """Times steady consumption the same way for every contender: the clock starts when the
    batch that brings the count past the first 10 % (``WARMUP_FRACTION``) reaches the
    application and stops when the last batch is processed; only the messages after that
    batch are counted. Start-up, offset lookup and first fetches stay out, whatever batch
    sizes a client hands over."""

    def __init__(self, job: Job) -> None:
        self.size = job.size
        self.warmup = int(job.count * WARMUP_FRACTION)
        self.watch = Stopwatch()
        self.started = False
        self.seen = 0
        self.first = 0

    def arrived(self, n: int) -> None:
        self.seen += n
        if not self.started and self.seen > self.warmup:
            self.started, self.first = True, self.seen
            self.watch.start()

    def processed(self) -> None:
        if self.started:
            self.watch.stop()

    def result(self, count: int, **extra: Any) -> dict[str, Any]:
        return {"count": count, "timed_count": max(0, count - self.first),
                "bytes": count * self.size, **self.watch.fields(), **extra}


class LatencyRecorder:
    """Collects receive-minus-send times of stamped payloads, ignoring the warm-up ones."""

    def __init__(self, total: int, warmup: int, size: int) -> None:
        self.total, self.warmup, self.size = total, warmup, size
        self.seen = bytearray(total)
        self.received = 0
        self.duplicates = 0
        self.latencies: list[int] = []

    def add(self, values: list[bytes], now_ns: int) -> None:
        unpack = STAMP.unpack_from
        for v in values:
            seq, sent = unpack(v)
            if seq >= self.total or self.seen[seq]:
                self.duplicates += 1
                continue
            self.seen[seq] = 1
            self.received += 1
            if seq >= self.warmup:
                self.latencies.append(now_ns - sent)

    @property
    def done(self) -> bool:
        return self.received >= self.total

    def result(self, produced: int, seconds: float) -> dict[str, Any]:
        lat = sorted(self.latencies)

        def pct(q: int) -> float:
            return round(lat[(len(lat) - 1) * q // 100] / 1e6, 3) if lat else -1.0

        return {"count": self.received, "produced": produced, "measured": len(lat),
                "duplicates": self.duplicates, "p50_ms": pct(50), "p99_ms": pct(99),
                "max_ms": pct(100), "bytes": self.received * self.size, "seconds": seconds}


def paced_send(job: Job, send_tick) -> int:
    """Call ``send_tick(partition, payloads)`` every millisecond with the messages due."""
    total = int(job.rate * job.duration)
    start = time.monotonic_ns()
    sent = tick = 0
    while sent < total:
        due = min(total, (time.monotonic_ns() - start) * job.rate // 1_000_000_000)
        if due > sent:
            send_tick(tick % job.partitions, [stamp(s, job.size) for s in range(sent, due)])
            sent = due
        tick += 1
        delay = start + tick * 1_000_000 - time.monotonic_ns()
        if delay > 0:
            time.sleep(delay / 1e9)
    return sent


class PacedSender(threading.Thread):
    """A thread running ``paced_send(job, send_tick)`` then ``flush()``; ``produced`` after."""

    def __init__(self, job: Job, send_tick, flush) -> None:
        super().__init__(name="paced-sender", daemon=True)
        self.job, self.send_tick, self.flush = job, send_tick, flush
        self.produced = 0

    def run(self) -> None:
        self.produced = paced_send(self.job, self.send_tick)
        self.flush()


def peak_rss() -> int:
    """This process's peak resident set size so far, in bytes: ``VmHWM`` of its own memory.
    Not ``ru_maxrss``, which on Linux also carries the peak of the memory held before
    ``exec`` (the parent's, when started under vfork)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # no /proc: the old way


def current_rss() -> int:
    with open(f"/proc/{os.getpid()}/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def report(result: dict[str, Any]) -> None:
    print(RESULT_PREFIX + json.dumps(result), flush=True)


def run(handlers: dict[str, Any], argv: list[str] | None = None) -> int:
    """Run the job's scenario with ``handlers[scenario](job) -> result dict``."""
    job = Job.from_argv(argv)
    handler = handlers.get(job.scenario)
    if handler is None:
        report({"unsupported": True, "reason": f"no {job.scenario} scenario for this contender"})
        return 0
    result = handler(job)
    report(result)
    return 0
