"""rdk.Producer under broker faults injected mid-stream on librdkafka's mock cluster: a
broker set down then up, partition leaders moved, retriable errors pushed onto Produce
requests. Everything sent is read back from the broker and compared."""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest
from helpers import read_log, wait_until

from rdk import Producer
from rdk.mock import MockCluster

PARTITIONS = 4
CHUNKS = 60          # send() calls per partition
CHUNK = 250          # messages per send()
RETRIABLE = ["NOT_LEADER_FOR_PARTITION", "REQUEST_TIMED_OUT", "NOT_ENOUGH_REPLICAS",
             "LEADER_NOT_AVAILABLE", "NOT_ENOUGH_REPLICAS_AFTER_APPEND", "KAFKA_STORAGE_ERROR"]


class Accounting:
    """Per-send on_delivery results and delivery_report_callback failures."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.sends: dict[tuple[int, int], tuple[int, list]] = {}
        self.calls = Counter()
        self.reported: list = []
        self.errinfo = Counter()

    def on_delivery(self, key):
        def settle(delivered: int, failures: list) -> None:
            with self.lock:
                self.calls[key] += 1
                self.sends[key] = (delivered, failures)
        return settle

    def report(self, info) -> None:
        with self.lock:
            self.reported.extend(info.errors)
            for e in info.rdkafka_errinfo:
                self.errinfo[e["errname"]] += e["count"]

    @property
    def delivered(self) -> int:
        return sum(d for d, _ in self.sends.values())

    @property
    def failures(self) -> list:
        return [f for _, fs in self.sends.values() for f in fs]


def payload(p: int, i: int) -> bytes:
    return b"%d:%d" % (p, i)


def stream_with_faults(mc: MockCluster, producer: Producer, topic: str, acc: Accounting,
                       faults: dict) -> None:
    """Send CHUNKS x CHUNK messages per partition, running ``faults[chunk]()`` between sends."""
    for c in range(CHUNKS):
        if c in faults:
            faults[c]()
        for p in range(PARTITIONS):
            values = [payload(p, c * CHUNK + i) for i in range(CHUNK)]
            res = producer.send(topic, p, values, on_delivery=acc.on_delivery((p, c)))
            assert res.enqueued == CHUNK
        time.sleep(0.01)  # the load's pace, so the faults land mid-stream


def fault_schedule(mc: MockCluster, topic: str) -> tuple[dict, list]:
    """Broker 1 down for 1.5 s, then leaders moved, then retriable Produce errors."""
    done: list[str] = []

    def broker_down():
        mc.broker_set_down(1)
        done.append("broker 1 down")
        t = threading.Timer(1.5, lambda: (mc.broker_set_up(1), done.append("broker 1 up")))
        t.daemon = True
        t.start()

    def move_leaders():
        for p in range(PARTITIONS):
            mc.partition_set_leader(topic, p, 1 + (p + 1) % 3)
        done.append("leaders moved")

    def push_errors():
        mc.push_request_errors("Produce", RETRIABLE)
        done.append(f"{len(RETRIABLE)} retriable Produce errors")

    return {10: broker_down, 30: move_leaders, 45: push_errors}, done


@pytest.fixture
def cluster():
    with MockCluster(3) as mc:
        mc.create_topic("faults", PARTITIONS, 3)
        for p in range(PARTITIONS):
            mc.partition_set_leader("faults", p, 1)  # broker 1 leads all, so its fault hits all
        yield mc


@pytest.mark.timeout(120)
def test_idempotent_producer_delivers_everything_exactly_once_in_order_through_faults(cluster):
    acc = Accounting()
    faults, done = fault_schedule(cluster, "faults")
    with Producer(cluster.bootstrap_servers, delivery_report_callback=acc.report,
                  queue_buffering_max_ms=5,
                  driver_options={"enable.idempotence": True, "message.timeout.ms": 60000,
                                  "retry.backoff.ms": 50, "log_level": 3}) as producer:
        stream_with_faults(cluster, producer, "faults", acc, faults)
        assert producer.flush(60) == 0
    wait_until(lambda: len(done) == 4, 10, what="the whole fault schedule")
    assert sorted(done) == sorted(["broker 1 down", "broker 1 up", "leaders moved",
                                   f"{len(RETRIABLE)} retriable Produce errors"])
    total = PARTITIONS * CHUNKS * CHUNK
    assert len(acc.sends) == PARTITIONS * CHUNKS and set(acc.calls.values()) == {1}
    short = {k: (d, len(f), Counter(e.name for _, e in f)) for k, (d, f) in acc.sends.items() if d != CHUNK}
    assert short == {}
    assert acc.delivered == total and acc.failures == [] and acc.reported == []
    log = read_log(cluster.bootstrap_servers, "faults", range(PARTITIONS))
    for p in range(PARTITIONS):
        values = [v for _, _, v in log[p]]
        assert len(values) == CHUNKS * CHUNK, f"partition {p}: {len(values)} messages"
        assert values == [payload(p, i) for i in range(CHUNKS * CHUNK)], f"partition {p} order"
    print(f"\nidempotent: sent {total}, delivered {acc.delivered}, failed 0, duplicates 0, "
          f"faults: {', '.join(done)}")


@pytest.mark.timeout(120)
def test_producer_without_idempotence_reports_every_failure_and_the_log_holds_the_rest(cluster):
    """No retries: each pushed error fails the messages of one request, by name; the
    broker's log holds exactly the messages reported delivered."""
    acc = Accounting()
    with Producer(cluster.bootstrap_servers, delivery_report_callback=acc.report,
                  queue_buffering_max_ms=5,
                  driver_options={"enable.idempotence": False, "message.send.max.retries": 0,
                                  "log_level": 3}) as producer:
        faults = {10: lambda: cluster.push_request_errors("Produce", RETRIABLE),
                  30: lambda: [cluster.partition_set_leader("faults", p, 2) for p in range(PARTITIONS)],
                  45: lambda: cluster.push_request_errors("Produce", ["NOT_ENOUGH_REPLICAS"] * 3)}
        stream_with_faults(cluster, producer, "faults", acc, faults)
        flushed = producer.flush(60)
        assert flushed.queued == 0
    total = PARTITIONS * CHUNKS * CHUNK
    failures = acc.failures
    assert set(acc.calls.values()) == {1} and len(acc.sends) == PARTITIONS * CHUNKS
    assert acc.delivered + len(failures) == total
    assert flushed.failed == len(failures)  # flush() says how many were not delivered
    assert failures, "the pushed errors failed no message"
    names = Counter(err.name for _, err in failures)
    assert set(names) <= set(RETRIABLE) | {"NOT_LEADER_FOR_PARTITION"}, names
    # the same failures reached delivery_report_callback, counted per error name
    assert len(acc.reported) == len(failures) and acc.errinfo == names
    failed = Counter((m.partition, m.value) for m, _ in failures)
    log = read_log(cluster.bootstrap_servers, "faults", range(PARTITIONS))
    kept = Counter((p, v) for p, rows in log.items() for _, _, v in rows)
    sent = Counter((p, payload(p, i)) for p in range(PARTITIONS) for i in range(CHUNKS * CHUNK))
    assert kept + failed == sent  # nothing vanished, nothing doubled
    print(f"\nno idempotence, no retries: sent {total}, delivered {acc.delivered}, "
          f"failed {len(failures)} {dict(names)}, in log {sum(kept.values())}")


@pytest.mark.timeout(120)
def test_producer_without_idempotence_accounts_for_a_broker_down_past_the_message_timeout(cluster):
    acc = Accounting()
    with Producer(cluster.bootstrap_servers, delivery_report_callback=acc.report,
                  queue_buffering_max_ms=5,
                  driver_options={"enable.idempotence": False, "message.timeout.ms": 1500,
                                  "log_level": 3}) as producer:
        up = threading.Timer(3.0, cluster.broker_set_up, (1,))
        up.daemon = True

        def broker_down_for_3s():
            cluster.broker_set_down(1)
            up.start()

        stream_with_faults(cluster, producer, "faults", acc, {20: broker_down_for_3s})
        flushed = producer.flush(60)
        assert flushed.queued == 0
    up.join(10)
    assert not up.is_alive()
    total = PARTITIONS * CHUNKS * CHUNK
    failures = acc.failures
    assert set(acc.calls.values()) == {1}
    assert acc.delivered + len(failures) == total
    assert flushed.failed == len(failures)  # flush() says how many were not delivered
    assert failures and {err.name for _, err in failures} == {"_MSG_TIMED_OUT"}
    assert len(acc.reported) == len(failures)
    failed = {(m.partition, m.value) for m, _ in failures}
    log = read_log(cluster.bootstrap_servers, "faults", range(PARTITIONS))
    kept = Counter((p, v) for p, rows in log.items() for _, _, v in rows)
    sent = {(p, payload(p, i)) for p in range(PARTITIONS) for i in range(CHUNKS * CHUNK)}
    assert set(kept) <= sent
    delivered = sent - failed
    missing = [m for m in delivered if m not in kept]
    assert missing == [], f"{len(missing)} messages reported delivered are not in the log"
    print(f"\nno idempotence, broker down 3 s > message.timeout.ms: sent {total}, delivered "
          f"{acc.delivered}, failed {len(failures)} (_MSG_TIMED_OUT), in log {sum(kept.values())}, "
          f"failed but kept {len(failed & set(kept))}, duplicates {sum(kept.values()) - len(kept)}")


@pytest.mark.parametrize("case", ["too_large_local", "too_large_broker", "unknown_partition"])
def test_non_retriable_errors_surface_by_name(cluster, case):
    acc = Accounting()
    reported = threading.Event()
    options = {"message.max.bytes": 10000, "log_level": 3}

    def report(info):
        acc.report(info)
        reported.set()

    with Producer(cluster.bootstrap_servers, delivery_report_callback=report,
                  queue_buffering_max_ms=5, driver_options=options) as producer:
        partition, values, expected = 0, [b"ok-1", b"ok-2"], None
        if case == "too_large_local":
            values.insert(1, b"x" * 20000)
            expected = "MSG_SIZE_TOO_LARGE"
        elif case == "too_large_broker":
            cluster.push_request_errors("Produce", ["MSG_SIZE_TOO_LARGE"])
            values = [b"y"]
            expected = "MSG_SIZE_TOO_LARGE"
        else:
            partition, expected = 99, "_UNKNOWN_PARTITION"
        producer.send("faults", partition, values, on_delivery=acc.on_delivery(case))
        flushed = producer.flush(30)
        assert flushed.queued == 0 and flushed.failed == len(acc.failures) > 0
        assert reported.is_set()  # flush() returned after delivery_report_callback
    (delivered, failures), = acc.sends.values()
    names = {err.name for _, err in failures}
    assert names == {expected}, names
    assert acc.errinfo == {expected: len(failures)}
    if case == "too_large_local":
        assert delivered == 2 and [m.value[:1] for m, _ in failures] == [b"x"]
    elif case == "too_large_broker":
        assert delivered == 0 and [m.value for m, _ in failures] == [b"y"]
    else:
        assert delivered == 0 and len(failures) == 2
        assert all(m.partition == 99 for m, _ in failures)
