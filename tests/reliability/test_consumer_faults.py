"""rdk.Consumer under broker faults on librdkafka's mock cluster, with a producer feeding
the topic throughout: the leader broker down for a few seconds (no busy spin meanwhile,
stats keep coming), partition leaders moved, errors pushed onto Fetch requests. Afterwards
every offset was delivered exactly once, in order, with no gap."""

from __future__ import annotations

import threading
import time

import psutil
import pytest
from helpers import wait_until

from rdk import Consumer, Producer
from rdk.mock import MockCluster
from rdk.offsets import offset_file_path, read_offset_file

PARTITIONS = 4
TOPIC = "cfaults"
DOWN_SECONDS = 3.0


class Feed(threading.Thread):
    """Produces ``per_tick`` messages per partition every 20 ms while ``running`` is set."""

    def __init__(self, producer: Producer, per_tick: int = 50) -> None:
        super().__init__(name="feed", daemon=True)
        self.producer, self.per_tick = producer, per_tick
        self.running = threading.Event()
        self.halt = threading.Event()
        self.sent = [0] * PARTITIONS

    def run(self) -> None:
        while not self.halt.is_set():
            if not self.running.wait(0.05):
                continue
            for p in range(PARTITIONS):
                n = self.sent[p]
                values = [b"%d:%d" % (p, i) for i in range(n, n + self.per_tick)]
                assert self.producer.send(TOPIC, p, values).enqueued == self.per_tick
                self.sent[p] = n + self.per_tick
            time.sleep(0.02)  # the feed's pace


class Received:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.rows: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(PARTITIONS)}
        self.repeats = self.misses = 0
        self.stats_at: list[float] = []

    def on_batch(self, batch) -> None:
        with self.lock:
            self.repeats += batch.repeats
            self.misses += batch.misses
            for m in batch.messages:
                self.rows[m.partition].append((m.offset, m.value))

    def on_stats(self, info) -> None:
        self.stats_at.append(time.monotonic())

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
            wait_until(lambda: got.count() > 5000, 30, what="consumption mid-stream")

            # 1. the leader of every partition goes down, with fetches in flight
            feed.running.clear()
            mc.broker_set_down(1)
            proc = psutil.Process()
            proc.cpu_percent(None)
            down_at = time.monotonic()
            time.sleep(DOWN_SECONDS)  # the fault's length (nothing to await: nothing happens)
            cpu = proc.cpu_percent(None)
            stats_in_window = [t for t in got.stats_at if t > down_at]
            mc.broker_set_up(1)
            before = got.count()
            feed.running.set()
            wait_until(lambda: got.count() > before + 2000, 30, what="consumption after broker up")

            # 2. leaders move to the other brokers, then 3. Fetch requests fail (retriable)
            for p in range(PARTITIONS):
                mc.partition_set_leader(TOPIC, p, 2 + p % 2)
            before = got.count()
            wait_until(lambda: got.count() > before + 2000, 30, what="consumption after leader move")
            mc.push_request_errors("Fetch", ["NOT_LEADER_FOR_PARTITION", "REQUEST_TIMED_OUT",
                                             "LEADER_NOT_AVAILABLE", "UNKNOWN_LEADER_EPOCH"])
            before = got.count()
            wait_until(lambda: got.count() > before + 2000, 30, what="consumption after Fetch errors")

            feed.running.clear()
            feed.halt.set()
            feed.join(10)
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
    # stats kept coming while the broker was down; the consumer did not spin
    assert len(stats_in_window) >= int(DOWN_SECONDS / 0.2) // 2, stats_in_window
    gaps = [b - a for a, b in zip([down_at, *stats_in_window], stats_in_window, strict=False)]
    assert max(gaps) < 1.0, gaps
    assert cpu < 20.0, f"{cpu:.1f} % CPU while the broker was down"
    print(f"\nconsumer faults: {total} messages, lost 0, duplicates 0, gaps 0; broker down "
          f"{DOWN_SECONDS:.0f} s at {cpu:.1f} % CPU with {len(stats_in_window)} stats callbacks")
