"""rdk.Consumer under broker faults on librdkafka's mock cluster, with a producer feeding
the topic throughout: the leader broker down for STATS_WHILE_DOWN statistics intervals (no
busy spin meanwhile, stats keep coming), partition leaders moved, errors pushed onto Fetch
requests. Afterwards every offset was delivered exactly once, in order, with no gap.

"No busy spin" is a count, not a CPU percentage over a window: while the broker is down the
fetch thread's calls are counted (the pipeline's fetch sequence number) across the stats
intervals. Each empty fetch waits FETCH_TIMEOUT_MS (100 ms) inside librdkafka, so a
non-spinning loop makes about 2 calls per 200 ms interval; a loop that spins makes thousands.
"""

from __future__ import annotations

import threading
import time

import pytest
from helpers import wait_until

from rdk import Consumer, Producer
from rdk.mock import MockCluster
from rdk.offsets import offset_file_path, read_offset_file

PARTITIONS = 4
TOPIC = "cfaults"
STATS_WHILE_DOWN = 10       # statistics callbacks (200 ms apart) awaited with the leader down
MAX_FETCHES_PER_INTERVAL = 40  # a 100 ms fetch wait allows ~2; 40 leaves room for a loaded host


class Feed(threading.Thread):
    """Produces ``per_tick`` messages per partition every 20 ms while ``running`` is set."""

    def __init__(self, producer: Producer, per_tick: int = 50) -> None:
        super().__init__(name="feed", daemon=True)
        self.producer, self.per_tick = producer, per_tick
        self.running = threading.Event()
        self.halt = threading.Event()
        self.sent = [0] * PARTITIONS
        self.error: BaseException | None = None  # re-raised in the test thread by check()

    def run(self) -> None:
        try:
            self._feed()
        except BaseException as e:
            self.error = e

    def check(self) -> None:
        """Re-raise, in the calling (test) thread, what made the feed thread stop."""
        if self.error is not None:
            raise AssertionError(f"feed thread failed: {self.error!r}") from self.error

    def _feed(self) -> None:
        while not self.halt.is_set():
            if not self.running.wait(0.05):
                continue
            for p in range(PARTITIONS):
                n = self.sent[p]
                values = [b"%d:%d" % (p, i) for i in range(n, n + self.per_tick)]
                enqueued = self.producer.send(TOPIC, p, values).enqueued
                assert enqueued == self.per_tick, f"partition {p}: enqueued {enqueued} of {self.per_tick}"
                self.sent[p] = n + self.per_tick
            time.sleep(0.02)  # the feed's pace


class Received:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.rows: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(PARTITIONS)}
        self.repeats = self.misses = 0
        self.stats = 0
        self.stats_cond = threading.Condition()

    def on_batch(self, batch) -> None:
        with self.lock:
            self.repeats += batch.repeats
            self.misses += batch.misses
            for m in batch.messages:
                self.rows[m.partition].append((m.offset, m.value))

    def on_stats(self, info) -> None:
        with self.stats_cond:
            self.stats += 1
            self.stats_cond.notify_all()

    def wait_stats(self, n: int, timeout: float) -> None:
        """Wait for statistics callback number ``n`` (``timeout``: a deadline against hangs)."""
        with self.stats_cond:
            assert self.stats_cond.wait_for(lambda: self.stats >= n, timeout), (
                f"{self.stats} statistics callbacks, waited for {n}")

    def count(self) -> int:
        with self.lock:
            return sum(map(len, self.rows.values()))


@pytest.mark.timeout(180)
def test_consumer_rides_out_broker_faults_without_loss_gaps_or_busy_spin(tmp_path):
    got = Received()
    with MockCluster(3) as mc:
        mc.create_topic(TOPIC, PARTITIONS, 3)
        for p in range(PARTITIONS):
            mc.partition_set_leader(TOPIC, p, 1)
        producer = Producer(mc.bootstrap_servers, queue_buffering_max_ms=5,
                            driver_options={"enable.idempotence": True, "log_level": 3,
                                            "message.timeout.ms": 120000})
        feed = Feed(producer)
        feed.start()
        consumer = Consumer(mc.bootstrap_servers, TOPIC, str(tmp_path / "offsets"), got.on_batch,
                            stats_callback=got.on_stats, statistics_interval_ms=200,
                            max_messages_per_callback=1000,
                            driver_options={"log_level": 3, "reconnect.backoff.max.ms": 1000})
        try:
            assert consumer.start() == list(range(PARTITIONS))
            feed.running.set()
            wait_until(lambda: (feed.check(), got.count() > 5000)[1], 30, what="consumption mid-stream")

            # 1. the leader of every partition goes down, with fetches in flight
            feed.running.clear()
            mc.broker_set_down(1)
            pipeline = consumer._assignment.pipeline  # its _seq counts the fetch thread's C calls
            first = got.stats + 1  # the first callback that surely starts after the fault
            got.wait_stats(first, 30)
            fetches_at_first = pipeline._seq
            got.wait_stats(first + STATS_WHILE_DOWN, 60)  # stats keep coming, broker down
            fetches_down = pipeline._seq - fetches_at_first
            mc.broker_set_up(1)
            before = got.count()
            feed.running.set()
            wait_until(lambda: (feed.check(), got.count() > before + 2000)[1], 30,
                       what="consumption after broker up")

            # 2. leaders move to the other brokers, then 3. Fetch requests fail (retriable)
            for p in range(PARTITIONS):
                mc.partition_set_leader(TOPIC, p, 2 + p % 2)
            before = got.count()
            wait_until(lambda: (feed.check(), got.count() > before + 2000)[1], 30,
                       what="consumption after leader move")
            mc.push_request_errors("Fetch", ["NOT_LEADER_FOR_PARTITION", "REQUEST_TIMED_OUT",
                                             "LEADER_NOT_AVAILABLE", "UNKNOWN_LEADER_EPOCH"])
            before = got.count()
            wait_until(lambda: (feed.check(), got.count() > before + 2000)[1], 30,
                       what="consumption after Fetch errors")

            feed.running.clear()
            feed.halt.set()
            feed.join(10)
            assert not feed.is_alive(), "feed thread did not stop"
            feed.check()
            assert producer.flush(60) == 0
            total = sum(feed.sent)
            wait_until(lambda: got.count() >= total, 60, what="every produced message consumed")
        finally:
            feed.halt.set()
            consumer.stop(30)
            producer.stop(10)

    # no loss, no gap, no duplicate, in order, per partition
    for p in range(PARTITIONS):
        rows = got.rows[p]
        assert [o for o, _ in rows] == list(range(feed.sent[p])), f"partition {p} offsets"
        assert [v for _, v in rows] == [b"%d:%d" % (p, i) for i in range(feed.sent[p])]
        stored = read_offset_file(offset_file_path(tmp_path / "offsets", TOPIC, p))
        assert stored == feed.sent[p] - 1
    assert got.repeats == 0 and got.misses == 0
    # the consumer did not spin while the broker was down (stats kept coming: waited above)
    assert fetches_down <= MAX_FETCHES_PER_INTERVAL * STATS_WHILE_DOWN, (
        f"{fetches_down} fetch calls in {STATS_WHILE_DOWN} statistics intervals with the broker down")
    print(f"\nconsumer faults: {total} messages, lost 0, duplicates 0, gaps 0; broker down for "
          f"{STATS_WHILE_DOWN} stats intervals with {fetches_down} fetch calls")
