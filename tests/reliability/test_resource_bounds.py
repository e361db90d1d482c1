"""Resource bounds: a consumer whose callback is slow holds no more than
queued_max_messages_kbytes plus a batch (RSS), and 100 create/stop cycles of Producer and
Consumer leak no threads, file descriptors or memory beyond noise."""

from __future__ import annotations

import gc
import itertools
import threading
import time

import psutil
import pytest
from helpers import wait_until

from rdk import Consumer, Producer
from rdk.mock import MockCluster

MIB = 1 << 20
# One Fetch response may land on top of librdkafka's full queue. Tansu ignores
# max.partition.fetch.bytes and answers whole record batches up to about fetch.max.bytes
# (with the default 50 MiB it sent 4.7 MiB responses), so both are kept small here.
FETCH_MAX = 1_100_000
PRODUCER_BATCH = 256 * 1024


class RssSampler(threading.Thread):
    """The process's peak RSS while it runs (sampled every 20 ms)."""

    def __init__(self) -> None:
        super().__init__(name="rss-sampler", daemon=True)
        self.proc = psutil.Process()
        self.peak = self.proc.memory_info().rss
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.wait(0.02):
            self.peak = max(self.peak, self.proc.memory_info().rss)


def slow_consume(bootstrap: str, topic: str, directory: str, kbytes: int, batch: int,
                 want: int) -> tuple[int, int]:
    """Consume ``want`` messages of partition 0 with a slow callback.

    Returns (RSS growth, the most bytes librdkafka's fetch queue held, per its stats)."""
    seen = []
    enough = threading.Event()
    fetchq = [0]

    def slow(b) -> None:
        seen.append(len(b))
        if sum(seen) >= want:
            enough.set()
        time.sleep(0.05)  # the slow processor under test

    def on_stats(info) -> None:
        entry = info.rdkafka_stats["topics"][topic]["partitions"]["0"]
        fetchq[0] = max(fetchq[0], entry["fetchq_size"])

    gc.collect()
    consumer = Consumer(bootstrap, topic, directory, slow, max_messages_per_callback=batch,
                        queued_max_messages_kbytes=kbytes, stats_callback=on_stats,
                        statistics_interval_ms=100,
                        driver_options={"log_level": 3, "fetch.max.bytes": FETCH_MAX})
    sampler = RssSampler()
    base = sampler.peak
    sampler.start()
    try:
        consumer.start()
        assert enough.wait(120), f"consumed {sum(seen)} of {want}"
    finally:
        consumer.stop(30)
        sampler.halt.set()
        sampler.join()
    return sampler.peak - base, fetchq[0]


@pytest.mark.timeout(300)
def test_slow_callback_consumer_stays_within_queued_max_messages_kbytes_plus_a_batch(
        tansu, new_topic, tmp_path):
    value = b"v" * 1024
    topic = new_topic(tansu, 1)
    total = 48_000  # 47 MiB of values on the broker
    with Producer(tansu.bootstrap_servers, driver_options={"batch.size": PRODUCER_BATCH}) as p:
        for _ in range(0, total, 4000):
            assert p.send(topic, 0, [value] * 4000).enqueued == 4000
        assert p.flush(60) == 0
    batch = 500  # about 0.5 MiB per callback
    kbytes = 4096

    def run(name: str, bound: int) -> tuple[int, int]:
        return slow_consume(tansu.bootstrap_servers, topic, str(tmp_path / name), bound, batch,
                            want=15_000)

    run("warm-up", 1)  # the allocator's pools grow once; what follows measures growth beyond
    # a consumer that buffers nothing: what any consumer costs (librdkafka's handle and
    # threads, rdk's threads and batch buffers)
    rss_fixed, _ = run("minimal", 1)
    rss, fetchq = run("bounded", kbytes)
    rss_control, fetchq_control = run("control", 1_000_000)  # the default lets librdkafka pull all
    one_batch = batch * (len(value) + 200)
    # librdkafka stops fetching once its queue holds kbytes; one fetch response may land on top
    response = FETCH_MAX + PRODUCER_BATCH
    assert fetchq <= kbytes * 1024 + response, f"librdkafka queued {fetchq / MIB:.1f} MiB"
    assert fetchq_control > 30 * MIB, "the control run did not pre-fetch: nothing is measured"
    # RSS: that fixed cost, the queue (plus librdkafka's ~200 bytes per message), the batch in
    # the callback and the converted batches waiting for it (up to 3), and glibc allocator
    # noise (arenas per thread: identical runs differ by up to ~5 MiB here)
    limit = rss_fixed + int((kbytes * 1024 + response) * 1.2) + 4 * one_batch + 8 * MIB
    print(f"\nslow consumer: librdkafka queue peak {fetchq / MIB:.1f} MiB, RSS growth "
          f"{rss / MIB:.1f} MiB with queued_max_messages_kbytes={kbytes} (fixed cost "
          f"{rss_fixed / MIB:.1f} MiB, limit {limit / MIB:.1f} MiB); default bound: queue "
          f"{fetchq_control / MIB:.1f} MiB, RSS {rss_control / MIB:.1f} MiB")
    assert rss <= limit, f"RSS grew {rss / MIB:.1f} MiB > {limit / MIB:.1f} MiB"
    assert rss_control > rss + 20 * MIB


def _census() -> tuple[int, int, int, set[str]]:
    gc.collect()
    proc = psutil.Process()
    return (proc.num_threads(), proc.num_fds(), proc.memory_info().rss,
            {t.name for t in threading.enumerate()})


def _settled(base: tuple[int, int, int, set[str]]) -> tuple[int, int, int, set[str]]:
    """The census once threads and fds are back to ``base`` (or the deadline's reading)."""
    now = _census()
    deadline = time.monotonic() + 10
    while (now[0] > base[0] or now[1] > base[1]) and time.monotonic() < deadline:
        time.sleep(0.05)
        now = _census()
    return now


CYCLES = 100


def check_cycles(what: str, cycle) -> None:
    """Warm up, take a census, run CYCLES cycles, and compare once things settle."""
    for _ in range(10):  # warm-up: imports, allocator pools, librdkafka's globals
        cycle()
    base = _settled(_census())
    for _ in range(CYCLES):
        cycle()
    after = _settled(base)
    print(f"\n{CYCLES} {what} cycles: threads {base[0]} -> {after[0]}, fds {base[1]} -> "
          f"{after[1]}, RSS {(after[2] - base[2]) / MIB:+.1f} MiB")
    assert after[0] == base[0] and after[3] == base[3], sorted(after[3] - base[3])
    assert after[1] == base[1]
    assert after[2] - base[2] < 16 * MIB


@pytest.mark.timeout(300)
def test_100_producer_cycles_leak_no_threads_fds_or_memory():
    with MockCluster(1) as mc:
        mc.create_topic("cycles", 2)

        def cycle() -> None:
            p = Producer(mc.bootstrap_servers, driver_options={"log_level": 3},
                         stats_callback=lambda info: None, statistics_interval_ms=100)
            assert p.send("cycles", None, [b"x" * 100] * 100).enqueued == 100
            assert p.stop(10) == 0

        check_cycles("Producer", cycle)


@pytest.mark.timeout(300)
def test_100_consumer_cycles_leak_no_threads_fds_or_memory(tmp_path):
    with MockCluster(1) as mc:
        mc.create_topic("cycles", 2)
        with Producer(mc.bootstrap_servers) as p:
            for part in (0, 1):
                p.send("cycles", part, [b"y" * 100] * 1000)
            assert p.flush(10) == 0
        dirs = (str(tmp_path / f"offsets-{i}") for i in itertools.count())

        def cycle() -> None:  # a fresh offset directory: each cycle reads from the start
            got = threading.Event()
            c = Consumer(mc.bootstrap_servers, "cycles", next(dirs), lambda b: got.set(),
                         stats_callback=lambda info: None, statistics_interval_ms=100,
                         start_offset="earliest", driver_options={"log_level": 3})
            c.start()
            wait_until(lambda: got.is_set() or c.error, 10, what="a first batch")
            c.stop(10)
            assert c.closed

        check_cycles("Consumer", cycle)
