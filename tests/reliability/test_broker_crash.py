"""A broker killed with SIGKILL and started again on the same port: Tansu with its data in
moto's S3 server (``TansuBroker(durable=True)``), which outlives the broker process.

- the durable broker itself: acknowledged data survives kill() + restart(), close() stops
  the broker and the S3 server, memory storage starts empty after a restart;
- a plain (non-idempotent) producer sending 200 000 messages while the broker is killed:
  nothing lost;
- a worker-slot consumer (offset files) reading while the broker is killed: nothing lost,
  duplicates at most the batches in flight, its offset files at the end afterwards.

The idempotent producer's crash test (each message once, in order, across SIGKILLs) runs
against Apache Kafka in test_kafka_failures.py, strictly. It used to run here and had to
tolerate data loss: Tansu 0.6's S3 engine is not crash-atomic (for an idempotent batch it
stores the producer's sequence and the high watermark before the batch itself, so a SIGKILL
in between loses an acknowledged batch and the retry is answered DUPLICATE_SEQUENCE_NUMBER).
A broker that loses acknowledged data cannot tell whether the client keeps it, so that test
was dropped here instead of being kept behind an expected failure.
"""
from __future__ import annotations

import threading
import time

import psutil
import pytest
from helpers import produce, read_log, wait_until

from rdk import Admin, BrokerOffsetStore, Consumer, KafkaError, Producer, _binding
from rdk._binding import ffi, lib
from rdk._binding.fetch import Fetcher
from rdk.errors import RdkError
from rdk.mock import S3Server, TansuBroker, start_broker
from rdk.offsets import offset_file_path, read_offset_file

PARTITIONS = 4


@pytest.fixture
def durable():
    with TansuBroker(durable=True) as broker:
        yield broker


def gone(pid: int | None) -> bool:
    """True once ``pid`` has exited (a zombie counts as exited)."""
    if pid is None:
        return True
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def read_values(bootstrap: str, topic: str, want: dict[int, int],
                timeout: float = 60.0) -> dict[int, list[bytes]]:
    """Values of each partition from its start, until ``want[p]`` distinct values arrived
    (a batch written twice repeats values: counting every value stopped the read short, and
    the rest looked lost) or the read reached the partition's high watermark. Not done
    within ``timeout``: AssertionError, never a short read."""
    with Admin(bootstrap) as admin:
        highs = {p: admin.watermarks(topic, p)[1] for p in want}
    client = _binding.Client("consumer", {"bootstrap.servers": bootstrap, "log_level": 3})
    fetcher = Fetcher(client, topic)
    rows: dict[int, list[bytes]] = {p: [] for p in want}
    distinct: dict[int, set[bytes]] = {p: set() for p in want}
    last = dict.fromkeys(want, -1)

    def done(p: int) -> bool:
        return len(distinct[p]) >= want[p] or last[p] >= highs[p] - 1

    try:
        for p in want:
            fetcher.start(p, lib.RD_KAFKA_OFFSET_BEGINNING)
        deadline = time.monotonic() + timeout
        while not all(map(done, want)) and time.monotonic() < deadline:
            b = fetcher.fetch(200)
            vo = b.value_offsets
            for i in range(b.n):
                assert b.err[i] == 0, _binding.err_name(b.err[i])
                p = b.partition[i]
                rows[p].append(ffi.unpack(b.values + vo[i], vo[i + 1] - vo[i]))
                distinct[p].add(rows[p][-1])
                last[p] = max(last[p], b.offset[i])
        assert all(map(done, want)), (
            f"reading {topic} took over {timeout} s: {({p: len(rows[p]) for p in want})} read "
            f"of {want}, up to offsets {last}, high watermarks {highs}")
    finally:
        fetcher.close()
        client.close()
    return rows


# ---- the durable broker --------------------------------------------------------------------


def test_durable_tansu_keeps_acknowledged_data_across_sigkill_and_restart(durable):
    durable.create_topic("keep", 2)
    produce(durable, "keep", 0, [b"a%d" % i for i in range(1000)])
    produce(durable, "keep", 1, [b"b%d" % i for i in range(10)])
    bootstrap, pid, s3_pid = durable.bootstrap_servers, durable.pid, durable.s3.pid
    durable.kill()
    assert gone(pid) and not durable.running
    assert not gone(s3_pid)  # the S3 server outlives the broker
    durable.restart()
    assert durable.bootstrap_servers == bootstrap and durable.pid != pid  # same port, new process
    rows = read_log(bootstrap, "keep", [0, 1])
    assert [v for _, _, v in rows[0]] == [b"a%d" % i for i in range(1000)]
    assert [v for _, _, v in rows[1]] == [b"b%d" % i for i in range(10)]
    produce(durable, "keep", 0, [b"after"])  # the log continues where it was
    assert read_log(bootstrap, "keep", [0])[0][-1][0] == 1000
    pid, s3_pid = durable.pid, durable.s3.pid
    durable.close()
    assert gone(pid) and gone(s3_pid)  # close() stops both
    durable.close()  # idempotent
    with pytest.raises(RdkError, match="closed"):
        durable.restart()


def test_memory_tansu_starts_empty_after_a_restart():
    with TansuBroker() as broker:
        broker.create_topic("lost", 1)
        produce(broker, "lost", 0, [b"x"])
        broker.kill()
        broker.restart()
        with Producer(broker.bootstrap_servers) as p, \
                pytest.raises(KafkaError, match="UNKNOWN_TOPIC_OR_PART"):
            p.partition_count("lost", timeout=5)


def test_durable_broker_arguments_are_checked():
    with pytest.raises(TypeError, match="durable must be bool"):
        TansuBroker(durable="yes")
    with pytest.raises(TypeError, match="bucket must be str"):
        S3Server(bucket=b"tansu")
    with pytest.raises(ValueError, match="not a legal S3 bucket name"):
        S3Server(bucket="B")
    with start_broker("tansu-durable", {"made": 2}) as broker:
        assert isinstance(broker, TansuBroker) and broker.durable and broker.s3 is not None
        with Producer(broker.bootstrap_servers) as p:
            assert p.partition_count("made") == 2
    with S3Server(bucket="rdk-b1") as s3:
        assert s3.env()["AWS_ENDPOINT"] == s3.endpoint and s3.endpoint.startswith("http://127.0.0.1:")
        pid = s3.pid
    assert gone(pid)


# ---- a producer across a broker crash ------------------------------------------------------


class CrashingFeed:
    """Sends ``total`` messages in chunks, round robin over the partitions, and kills and
    restarts ``broker`` once a quarter of them is delivered (from its own thread)."""

    def __init__(self, broker: TansuBroker, producer: Producer, total: int, chunk: int) -> None:
        self.broker, self.producer, self.total, self.chunk = broker, producer, total, chunk
        self.sent: dict[int, list[int]] = {p: [] for p in range(PARTITIONS)}
        self.delivered = 0
        self.failures: list = []
        self.lock = threading.Lock()
        self.quarter = threading.Event()
        self.restarted = threading.Event()

    def on_delivery(self, n: int, failed: list) -> None:
        with self.lock:
            self.delivered += n
            self.failures.extend(failed)
            if self.delivered >= self.total // 4:
                self.quarter.set()

    def crash(self) -> None:
        if self.quarter.wait(120):
            self.broker.kill()  # SIGKILL with produce requests in flight
            self.broker.restart()
            self.restarted.set()

    def run(self, topic: str) -> None:
        killer = threading.Thread(target=self.crash, name="killer")
        killer.start()
        try:
            for start in range(0, self.total, self.chunk):
                p = (start // self.chunk) % PARTITIONS
                seqs = range(start, start + self.chunk)
                self.producer.send(topic, p, [b"%d:%d" % (p, i) for i in seqs],
                                   on_delivery=self.on_delivery)
                self.sent[p].extend(seqs)
            killer.join(150)
            assert self.restarted.is_set(), "the broker was not killed and restarted mid-stream"
            assert self.producer.flush(120) == 0
        finally:
            self.quarter.set()
            killer.join(30)
            self.producer.stop(10)


@pytest.mark.timeout(300)
def test_plain_producer_loses_nothing_across_broker_sigkill(durable):
    """Without idempotence Tansu's write order cannot lose an acknowledged batch: a batch cut
    off by the SIGKILL is written again by librdkafka's retry (at most a duplicate batch, or a
    hole of offsets below the high watermark that readers skip)."""
    durable.create_topic("plain", PARTITIONS)
    producer = Producer(durable.bootstrap_servers, queue_buffering_max_ms=5, on_queue_full="block",
                        driver_options={"enable.idempotence": False, "log_level": 2,
                                        "max.in.flight.requests.per.connection": 1,
                                        "message.timeout.ms": 120000})
    feed = CrashingFeed(durable, producer, 200_000, 1000)
    feed.run("plain")
    assert feed.failures == [] and feed.delivered == 200_000
    rows = read_values(durable.bootstrap_servers, "plain", {p: len(feed.sent[p]) for p in feed.sent})
    for p in range(PARTITIONS):
        seqs = [int(v.split(b":")[1]) for v in rows[p]]
        assert set(seqs) == set(feed.sent[p]), f"partition {p}: lost messages"
        assert len(seqs) - len(set(seqs)) <= 10_000, f"partition {p}: more than one batch repeated"


# ---- a worker-slot consumer across a broker crash --------------------------------------------


@pytest.mark.timeout(300)
@pytest.mark.parametrize("mode", ["slot", "group"])
def test_consumer_loses_nothing_across_broker_sigkill(durable, tmp_path, mode):
    """Slot mode (offset files) and group mode (offsets committed to the group on the
    durable broker): a broker SIGKILL and restart loses nothing, and only in-flight batches
    come twice."""
    per_partition, batch = 20_000, 500
    topic = f"feed-{mode}"
    durable.create_topic(topic, PARTITIONS)
    for p in range(PARTITIONS):
        produce(durable, topic, p, [b"%d:%d" % (p, i) for i in range(per_partition)])
    total = per_partition * PARTITIONS
    got: dict[int, list[int]] = {p: [] for p in range(PARTITIONS)}
    lock = threading.Lock()
    count = [0]
    quarter = threading.Event()

    def on_batch(b) -> None:
        with lock:
            for m in b.messages:
                got[m.partition].append(m.offset)
            count[0] += len(b.messages)
            if count[0] >= total // 4:
                quarter.set()

    offsets = tmp_path / "offsets"
    driver = {"log_level": 2, "reconnect.backoff.max.ms": 500}
    if mode == "group":  # Tansu holds a JoinGroup for about the session timeout
        driver.update({"session.timeout.ms": 6000, "max.poll.interval.ms": 10000})
        consumer = Consumer(durable.bootstrap_servers, topic, None, on_batch, group_id=f"g-{topic}",
                            max_messages_per_callback=batch, driver_options=driver)
    else:
        consumer = Consumer(durable.bootstrap_servers, topic, str(offsets), on_batch,
                            max_messages_per_callback=batch, driver_options=driver)
    try:
        started = consumer.start()
        assert started == ([] if mode == "group" else list(range(PARTITIONS)))
        assert quarter.wait(90), "the consumer did not get going"
        durable.kill()  # SIGKILL with fetches in flight
        with lock:
            at_kill = count[0]
        durable.restart()
        wait_until(lambda: all(len(set(got[p])) >= per_partition for p in got), 180,
                   what="every message consumed after the broker restart")
        # and it keeps consuming what arrives after the crash
        produce(durable, topic, 0, [b"0:after"])
        wait_until(lambda: per_partition in got[0], 60, what="a message produced after the restart")
    finally:
        consumer.stop(30)

    dups = sum(len(got[p]) - len(set(got[p])) for p in got)
    print(f"\n{mode} consumer: {at_kill} of {total} messages consumed when the broker was killed; "
          f"{dups} duplicates")
    assert at_kill < total, "the broker was killed only after everything was consumed"
    in_flight = batch * 4  # the batches a consumer may hold between fetch and callback
    if mode == "group":
        stored = BrokerOffsetStore(f"g-{topic}", broker=durable.bootstrap_servers, topic=topic)
        try:
            last = stored.read(list(range(PARTITIONS)))
        finally:
            stored.close()
    else:
        last = {p: read_offset_file(offset_file_path(offsets, topic, p)) for p in range(PARTITIONS)}
    for p in range(PARTITIONS):
        end = per_partition + (1 if p == 0 else 0)
        assert set(got[p]) == set(range(end)), f"partition {p}: lost offsets"
        assert len(got[p]) - len(set(got[p])) <= in_flight, f"partition {p}: too many duplicates"
        assert last[p] == end - 1, f"partition {p}: stored {last[p]}, expected {end - 1}"
