"""The executor-side client cache (rdk.spark._cache): a Python worker keeps its librdkafka
clients between tasks and micro-batches, one task at a time, and closes idle or failed ones.

Most tests call the executor-side functions (read_range, write_batches) in this process, as a
Spark Python worker does; one checks that Spark really runs data source tasks in reused
workers, so the cache is hit across tasks."""

from __future__ import annotations

import os
import threading

import pyarrow as pa
import pytest
from helpers import wait_until

import rdk.spark.reader as reader_module
import rdk.spark.writer as writer_module
from rdk._binding import Client
from rdk.spark._cache import ClientCache
from rdk.spark.options import parse_read_options, parse_write_options
from rdk.spark.planner import OffsetRange
from rdk.spark.reader import DataLossError, read_range
from rdk.spark.writer import DeliveryError, write_batches

pytestmark = pytest.mark.spark


@pytest.fixture
def consumers(monkeypatch):
    """A fresh cache for read_range, so counts are this test's."""
    cache: ClientCache = ClientCache("consumer", 300.0, lambda c: c.close())
    monkeypatch.setattr(reader_module, "CONSUMERS", cache)
    yield cache
    cache.close_all()


def read_opts(broker, **extra):
    return parse_read_options({"kafka.bootstrap.servers": broker.bootstrap_servers,
                               "subscribe": "unused", **extra}, streaming=False)


def values(opts, r):
    return [v for b in read_range(opts, r) for v in b.column("value").to_pylist()]


def test_ranges_of_one_configuration_reuse_one_client(mock_broker, new_topic, produce,
                                                      consumers):
    topic = new_topic(mock_broker, 2)
    for p in range(2):
        produce(mock_broker, topic, p, [b"%d-%d" % (p, i) for i in range(20)])
    opts = read_opts(mock_broker)
    assert values(opts, OffsetRange(topic, 0, 0, 20)) == [b"0-%d" % i for i in range(20)]
    assert (consumers.created, consumers.reused, consumers.idle()) == (1, 0, 1)
    # the next range (another partition, then the same one again) takes the idle client; its
    # own fetch queue sees nothing of the earlier task's
    assert values(opts, OffsetRange(topic, 1, 5, 20)) == [b"1-%d" % i for i in range(5, 20)]
    assert values(opts, OffsetRange(topic, 0, 10, 15)) == [b"0-%d" % i for i in range(10, 15)]
    assert (consumers.created, consumers.reused, consumers.idle()) == (1, 2, 1)
    # includeHeaders is not the client's configuration: the same client serves it
    assert values(read_opts(mock_broker, includeHeaders="true"), OffsetRange(topic, 1, 0, 3)) \
        == [b"1-0", b"1-1", b"1-2"]
    assert (consumers.created, consumers.reused) == (1, 3)
    # another client configuration is another client
    assert values(read_opts(mock_broker, **{"kafka.client.id": "other"}),
                  OffsetRange(topic, 1, 0, 2)) == [b"1-0", b"1-1"]
    assert (consumers.created, consumers.idle()) == (2, 2)


def test_a_failed_task_closes_its_client_and_the_next_task_gets_a_new_one(
        mock_broker, new_topic, produce, consumers):
    topic = new_topic(mock_broker, 1)
    produce(mock_broker, topic, 0, [b"v%d" % i for i in range(5)])
    opts = read_opts(mock_broker, **{"kafkaConsumer.pollTimeoutMs": "300"})
    made: list[Client] = []
    real = reader_module._binding.Client

    def record(*args, **kwargs):
        made.append(real(*args, **kwargs))
        return made[-1]

    reader_module._binding.Client = record  # type: ignore[misc]
    try:
        with pytest.raises(DataLossError):  # offsets 5..9 do not exist: the task fails
            values(opts, OffsetRange(topic, 0, 0, 10))
        assert made[0].closed and consumers.idle() == 0 and consumers.discarded == 1
        assert values(opts, OffsetRange(topic, 0, 0, 5)) == [b"v%d" % i for i in range(5)]
    finally:
        reader_module._binding.Client = real  # type: ignore[misc]
    assert len(made) == 2 and not made[1].closed and consumers.idle() == 1


def test_a_range_closed_early_gives_its_client_back(mock_broker, new_topic, produce, consumers):
    topic = new_topic(mock_broker, 1)
    produce(mock_broker, topic, 0, [b"v%d" % i for i in range(5)])
    it = read_range(read_opts(mock_broker), OffsetRange(topic, 0, 0, 5))
    next(it)
    it.close()  # what a limit() does: the generator is closed, not failed
    assert consumers.idle() == 1 and consumers.discarded == 0


def test_idle_clients_are_closed_after_the_idle_timeout(mock_broker):
    cache: ClientCache = ClientCache("consumer", 0.2, lambda c: c.close())
    with cache.lease("k", lambda: Client("consumer", {"bootstrap.servers":
                                                      mock_broker.bootstrap_servers})) as c:
        pass
    assert cache.idle() == 1 and not c.closed
    wait_until(lambda: c.closed, 30, "the reaper closes the idle client")
    assert cache.idle() == 0 and cache.evicted == 1


def test_two_tasks_at_once_never_share_a_client():
    cache: ClientCache = ClientCache("x", 300.0, lambda c: None)
    inside = threading.Barrier(2)
    held: list[object] = []

    def task():
        with cache.lease("k", object) as c:
            held.append(c)
            inside.wait(30)  # both leases are held at once

    threads = [threading.Thread(target=task) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(held) == 2 and held[0] is not held[1]
    assert (cache.created, cache.idle()) == (2, 2)


def test_a_forked_child_forgets_the_parents_clients(mock_broker, new_topic, produce, consumers):
    """The child gets a client of its own (here a stand-in: a new librdkafka client in a
    child of a process with librdkafka threads could deadlock on a lock they held at fork)."""
    topic = new_topic(mock_broker, 1)
    produce(mock_broker, topic, 0, [b"v%d" % i for i in range(5)])
    opts = read_opts(mock_broker)
    assert values(opts, OffsetRange(topic, 0, 0, 5)) == [b"v%d" % i for i in range(5)]
    (key,) = consumers._idle
    pid = os.fork()
    if pid == 0:  # the child forgets the parent's client and never touches it (librdkafka
        code = 1  # handles do not survive fork; Spark forks workers from a daemon without any)
        try:
            idle_before = consumers.idle()
            with consumers.lease(key, object) as own:
                pass
            ok = (idle_before, consumers.created, consumers.reused, consumers.idle()) == (0, 1, 0, 1)
            code = 0 if ok and type(own) is object else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    # the parent's cached client still works
    assert values(opts, OffsetRange(topic, 0, 3, 5)) == [b"v3", b"v4"]
    assert (consumers.created, consumers.reused) == (1, 1)


def test_the_sink_reuses_its_producer_and_drops_it_after_a_failed_delivery(
        mock_cluster, monkeypatch):
    producers: ClientCache = ClientCache("producer", 300.0, lambda p: p.stop(0))
    monkeypatch.setattr(writer_module, "PRODUCERS", producers)
    mock_cluster.create_topic("ok", 1)
    mock_cluster.create_topic("refused", 1)
    batch = pa.RecordBatch.from_pydict({"value": [b"a", b"b"]})

    def write(topic):
        opts = parse_write_options({"kafka.bootstrap.servers": mock_cluster.bootstrap_servers,
                                    "topic": topic, "kafka.message.timeout.ms": "3000"})
        return write_batches(opts, iter([batch])).rows

    assert write("ok") == 2 and write("ok") == 2
    assert (producers.created, producers.reused, producers.idle()) == (1, 1, 1)
    mock_cluster.push_request_errors("Produce", ["TOPIC_AUTHORIZATION_FAILED"] * 50)
    with pytest.raises(DeliveryError, match="2 of 2 rows were not delivered"):
        write("refused")
    assert producers.idle() == 0 and producers.discarded == 1


def test_spark_reuses_python_workers_for_data_source_tasks(mock_broker, new_topic, produce,
                                                            spark, kafka_reader):
    """What makes the cache pay: Spark runs successive rdkafka read tasks in the same
    Python worker processes (spark.python.worker.reuse, on by default)."""
    topic = new_topic(mock_broker, 4)
    for p in range(4):
        produce(mock_broker, topic, p, [b"x"] * 10)
    df = kafka_reader(mock_broker, subscribe=topic).load()
    assert df.count() == 40 and df.count() == 40  # 8 tasks on local[2]

    def report(batches):
        import sys

        cache = sys.modules.get("rdk.spark._cache")
        for _ in batches:
            pass
        c = cache.CONSUMERS if cache else None
        yield pa.RecordBatch.from_pydict({"pid": [os.getpid()],
                                          "created": [c.created if c else 0],
                                          "reused": [c.reused if c else 0]})

    rows = (spark.range(0, 8, 1, 8)
            .mapInArrow(report, "pid long, created long, reused long").collect())
    by_pid = {r.pid: (r.created, r.reused) for r in rows}
    created = sum(c for c, _ in by_pid.values())
    reused = sum(r for _, r in by_pid.values())
    # the 8 read tasks ran in these workers: fewer clients were built than tasks ran
    assert created >= 1 and reused >= 1 and created + reused >= 8, by_pid
