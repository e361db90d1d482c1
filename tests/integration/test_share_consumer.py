"""rdk.ShareConsumer (KIP-932 share groups) on the session's Apache Kafka (4.3, share groups on).

Every wait is bounded and waits for an event (wait_until), never a fixed sleep.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
import uuid

import pytest
from helpers import produce, values, wait_until

import rdk

pytestmark = pytest.mark.timeout(240)


def _group() -> str:
    return f"g-{uuid.uuid4().hex[:10]}"


class Seen:
    """Thread-safe record of what the callbacks saw: (value, delivery_count, member)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.rows: list[tuple[bytes, int, int]] = []

    def add(self, member: int, info) -> None:
        with self.lock:
            self.rows.extend((m.value, m.delivery_count, member) for m in info.messages)

    def values(self) -> list[bytes]:
        with self.lock:
            return [v for v, _, _ in self.rows]

    def counts(self, value: bytes) -> list[int]:
        with self.lock:
            return [c for v, c, _ in self.rows if v == value]


def _consumer(kafka_cluster, topic, callback, group, **kw):
    kw.setdefault("start_offset", "earliest")
    return rdk.ShareConsumer(kafka_cluster.bootstrap_servers, topic, callback, group_id=group, **kw)


def test_share_consumer_receives_with_delivery_count(kafka_cluster, new_topic):
    topic = new_topic(kafka_cluster, 1, prefix="share")
    produce(kafka_cluster, topic, 0, values(20))
    seen, stats = Seen(), []
    with _consumer(kafka_cluster, topic, lambda info: seen.add(0, info), _group(),
                   stats_callback=stats.append, statistics_interval_ms=200) as c:
        c.start()
        wait_until(lambda: len(seen.values()) >= 20, 60, "20 messages")
        wait_until(lambda: any(s.accepted == 20 for s in stats), 30, "stats after the batch")
        assert stats[-1].rdkafka.get("type") == "consumer" and stats[-1].in_flight_batches == 0
        assert sorted(seen.values()) == sorted(values(20))
        assert all(cnt == 1 for _, cnt, _ in seen.rows)
    s = c.stats()
    assert s.delivered == 20 and s.accepted == 20 and s.released == 0


def test_four_members_together_receive_every_message_once(kafka_cluster, new_topic):
    topic = new_topic(kafka_cluster, 2, prefix="share4")
    group, seen = _group(), Seen()

    def member(i):
        def callback(info):
            seen.add(i, info)
            time.sleep(0.02)  # a little work, so that the others get their share
        return callback

    consumers = [_consumer(kafka_cluster, topic, member(i), group, max_messages_per_callback=20)
                 for i in range(4)]
    sent: list[bytes] = []
    try:
        for c in consumers:
            c.start()
        deadline = time.monotonic() + 90
        round_ = 0
        # produce in rounds until at least 3 of the 4 members received some (they join at
        # their own pace), then check the whole
        while time.monotonic() < deadline:
            batch = values(100, start=round_ * 100)
            for p in (0, 1):
                produce(kafka_cluster, topic, p, batch[p::2])
            sent += batch
            total = len(sent)
            wait_until(lambda total=total: len(seen.values()) >= total, 60, "every message so far")
            with seen.lock:
                members = {m for _, _, m in seen.rows}
            round_ += 1
            if len(members) >= 3:
                break
        assert len(members) >= 3, f"only members {members} received messages"
    finally:
        for c in consumers:
            c.stop(30)
    got = seen.values()
    assert sorted(got) == sorted(sent)          # every message...
    assert len(got) == len(set(got))           # ...once: all were accepted
    assert sum(c.stats().accepted for c in consumers) == len(sent)


def test_raising_callback_releases_the_batch_which_comes_back_counted(kafka_cluster, new_topic):
    topic = new_topic(kafka_cluster, 1, prefix="share-raise")
    produce(kafka_cluster, topic, 0, values(30))
    seen, accepted = Seen(), []

    def callback(info):
        seen.add(0, info)
        if any(m.delivery_count == 1 for m in info.messages):
            raise RuntimeError("first sight: not yet")
        accepted.extend(m.value for m in info.messages)

    with _consumer(kafka_cluster, topic, callback, _group(), max_messages_per_callback=10) as c:
        c.start()
        wait_until(lambda: len(accepted) >= 30, 60, "every message accepted")
        produce(kafka_cluster, topic, 0, [b"marker"])
        wait_until(lambda: b"marker" in accepted, 60, "the marker")
    for v in values(30):
        counts = seen.counts(v)
        assert counts[:2] == [1, 2], (v, counts)
        assert counts == list(range(1, len(counts) + 1)), (v, counts)
    assert sorted(accepted) == sorted([*values(30), b"marker"])  # accepted once, never again
    s = c.stats()
    assert s.released >= 30 and s.redelivered >= 30 and s.accepted == 31


def test_rejected_message_never_comes_back(kafka_cluster, new_topic):
    topic = new_topic(kafka_cluster, 1, prefix="share-reject")
    produce(kafka_cluster, topic, 0, values(10))
    seen = Seen()

    def callback(info):
        seen.add(0, info)
        for m in info.messages:
            if m.value == b"m3":
                info.reject(m)
                with pytest.raises(ValueError, match="already rejected"):
                    info.accept(m)

    with _consumer(kafka_cluster, topic, callback, _group()) as c:
        c.start()
        wait_until(lambda: set(values(10)) <= set(seen.values()), 60, "10 messages")
        produce(kafka_cluster, topic, 0, values(5, prefix=b"after"))
        wait_until(lambda: set(values(5, prefix=b"after")) <= set(seen.values()), 60, "markers")
    assert seen.counts(b"m3") == [1]
    assert c.stats().rejected == 1


def test_always_failing_message_stops_at_the_delivery_limit(kafka_cluster, new_topic):
    # the broker's group.share.delivery.count.limit: 5 by default
    topic = new_topic(kafka_cluster, 1, prefix="share-poison")
    produce(kafka_cluster, topic, 0, values(10))
    seen = Seen()

    def callback(info):
        seen.add(0, info)
        for m in info.messages:
            if m.value == b"m2":
                info.release(m)

    with _consumer(kafka_cluster, topic, callback, _group()) as c:
        c.start()
        wait_until(lambda: seen.counts(b"m2")[-1:] == [5], 90, "5 deliveries of the poison")
        produce(kafka_cluster, topic, 0, values(5, prefix=b"after"))
        wait_until(lambda: set(values(5, prefix=b"after")) <= set(seen.values()), 60, "markers")
    assert seen.counts(b"m2") == [1, 2, 3, 4, 5]
    for v in values(10):
        if v != b"m2":
            assert seen.counts(v) == [1], v   # the others flowed on, once
    assert c.stats().released == 5


def test_stop_with_callback_in_flight_flushes_acknowledgements(kafka_cluster, new_topic):
    topic = new_topic(kafka_cluster, 1, prefix="share-stop")
    group = _group()
    produce(kafka_cluster, topic, 0, values(20))
    entered, gate, first = threading.Event(), threading.Event(), Seen()

    def slow(info):
        first.add(0, info)
        entered.set()
        assert gate.wait(60)

    c1 = _consumer(kafka_cluster, topic, slow, group)
    c1.start()
    assert entered.wait(60)
    stopper = threading.Thread(target=c1.stop, args=(60,))
    stopper.start()
    wait_until(lambda: c1._stop_event.is_set(), 10, "stop() began")
    gate.set()
    stopper.join(70)
    assert not stopper.is_alive() and c1.closed
    assert c1.stats().accepted == len(first.values()) > 0

    # a second member of the group gets what c1 had not taken, and nothing c1 accepted
    second = Seen()
    produce(kafka_cluster, topic, 0, [b"marker"])
    with _consumer(kafka_cluster, topic, lambda info: second.add(1, info), group) as c2:
        c2.start()
        wait_until(lambda: b"marker" in second.values(), 60, "the marker")
    assert not set(first.values()) & set(second.values())
    assert sorted(first.values() + second.values()) == sorted([*values(20), b"marker"])


def test_stop_from_the_callback_ends_run_and_accepts_the_batch(kafka_cluster, new_topic):
    topic = new_topic(kafka_cluster, 1, prefix="share-run")
    produce(kafka_cluster, topic, 0, values(10))
    seen = Seen()
    consumer: rdk.ShareConsumer

    def receive(info):
        seen.add(0, info)
        if len(seen.values()) >= 10:
            consumer.stop()          # from the callback: only asks; run() must then return

    consumer = _consumer(kafka_cluster, topic, receive, _group())
    runner = threading.Thread(target=consumer.run)
    runner.start()
    runner.join(90)
    assert not runner.is_alive(), "run() did not return after stop() from the callback"
    assert consumer.closed
    assert sorted(seen.values()) == sorted(values(10))
    assert consumer.stats().accepted == 10


def test_future_result_settles_the_batch(kafka_cluster, new_topic):
    import concurrent.futures

    topic = new_topic(kafka_cluster, 1, prefix="share-future")
    produce(kafka_cluster, topic, 0, values(5))
    seen, pool = Seen(), concurrent.futures.ThreadPoolExecutor(2)

    def work(info):
        if any(m.delivery_count == 1 for m in info.messages):
            raise RuntimeError("fails the first time")

    def callback(info):
        seen.add(0, info)
        return pool.submit(work, info)

    try:
        with _consumer(kafka_cluster, topic, callback, _group()) as c:
            c.start()
            wait_until(lambda: all(2 in seen.counts(v) for v in values(5)), 60, "redelivery")
            wait_until(lambda: c.stats().accepted == 5, 30, "accepted")
        stats = c.stats()
    finally:
        pool.shutdown()
    # a Future that raised released its batch, one that returned accepted it: every record
    # was delivered 1, 2, ... times in order, accepted once, released at each other delivery
    deliveries = {v: seen.counts(v) for v in values(5)}
    assert all(counts == list(range(1, len(counts) + 1)) and len(counts) >= 2
               for counts in deliveries.values()), deliveries
    assert (stats.accepted, stats.released, stats.rejected) == (
        5, sum(len(c) for c in deliveries.values()) - 5, 0), (stats, deliveries)


def test_batches_iterator(kafka_cluster, new_topic):
    topic = new_topic(kafka_cluster, 1, prefix="share-iter")
    produce(kafka_cluster, topic, 0, values(10))
    got = []
    with rdk.ShareConsumer(kafka_cluster.bootstrap_servers, [topic], None, group_id=_group(),
                           start_offset="earliest", decode="utf-8") as c:
        for info in c.batches(timeout=30):
            got += [m.value for m in info]
            assert all(isinstance(m, rdk.ShareMessage) and m.topic == topic for m in info)
            if len(got) >= 10:
                break
    assert sorted(got) == sorted(v.decode() for v in values(10))


def test_bad_input_is_named_at_construction_or_start(kafka_cluster):
    broker = kafka_cluster.bootstrap_servers

    def cb(info):
        return None

    with pytest.raises(ValueError, match="group_id"):
        rdk.ShareConsumer(broker, "t", cb, group_id="")
    with pytest.raises(TypeError, match="receive_callback"):
        rdk.ShareConsumer(broker, "t", 42, group_id="g")
    with pytest.raises(ValueError, match="start_offset"):
        rdk.ShareConsumer(broker, "t", cb, group_id="g", start_offset="middle")
    with pytest.raises(ValueError, match="topics"):
        rdk.ShareConsumer(broker, [], cb, group_id="g")
    with pytest.raises(ValueError, match="legal Kafka topic"):
        rdk.ShareConsumer(broker, "bad topic", cb, group_id="g")
    with pytest.raises(rdk.ConfigError, match=r"group\.id"):
        rdk.ShareConsumer(broker, "t", cb, group_id="g", driver_options={"group.id": "x"})
    with pytest.raises(rdk.ConfigError, match=r"no\.such\.property"):
        rdk.ShareConsumer(broker, "t", cb, group_id="g", driver_options={"no.such.property": 1})
    with pytest.raises(ValueError, match="max_messages_per_callback"):
        rdk.ShareConsumer(broker, "t", cb, group_id="g", max_messages_per_callback=0)
    c = rdk.ShareConsumer(broker, f"missing-{uuid.uuid4().hex[:8]}", cb, group_id=_group())
    with pytest.raises(rdk.KafkaError, match="UNKNOWN_TOPIC_OR_PART"):
        c.start()
    with pytest.raises(NotImplementedError, match="pause"):
        c.pause()
    c.stop()


def test_settling_twice_or_a_foreign_message_is_a_value_error():
    m1 = tuple.__new__(rdk.ShareMessage, (b"a", None, None, 1, "t", 0, 0, 1))
    m2 = tuple.__new__(rdk.ShareMessage, (b"a", None, None, 1, "t", 0, 0, 1))  # equal, not it
    info = rdk.ShareBatch([m1])
    assert m1.delivery_count == 1 and m1.value == b"a"
    info.accept(m1)
    with pytest.raises(ValueError, match="already accepted"):
        info.release(m1)
    with pytest.raises(ValueError, match="not a message of this batch"):
        info.reject(m2)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_forked_child_gets_closed_error(kafka_cluster, new_topic):
    topic = new_topic(kafka_cluster, 1, prefix="share-fork")
    c = _consumer(kafka_cluster, topic, lambda info: None, _group())
    c.start()
    try:
        pid = os.fork()
        if pid == 0:  # the child: every use raises ClosedError, stop() returns at once
            code = 1
            try:
                c.batches()
            except rdk.ClosedError:
                c.stop()
                code = 0
            except BaseException:
                code = 2
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        c.stop()


def test_share_consumer_left_running_at_exit_exits_cleanly(kafka_cluster, new_topic):
    topic = new_topic(kafka_cluster, 1, prefix="share-exit")
    produce(kafka_cluster, topic, 0, values(3))
    script = textwrap.dedent(f"""
        import threading, rdk
        got = threading.Event()
        c = rdk.ShareConsumer({kafka_cluster.bootstrap_servers!r}, {topic!r},
                              lambda info: got.set(), group_id={_group()!r},
                              start_offset="earliest")
        c.start()
        assert got.wait(60)
        print("received", flush=True)
        # no stop(): rdk's exit handler stops it
    """)
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "received" in proc.stdout
    assert time.monotonic() - started < 100


def test_aio_share_consumer_accepts_releases_rejects_and_its_iterator_survives_a_cancel(
        kafka_cluster, new_topic):
    import asyncio

    import rdk.aio

    topic = new_topic(kafka_cluster, 1, prefix="share-aio")
    produce(kafka_cluster, topic, 0, values(6))

    async def main():
        async with rdk.aio.ShareConsumer(kafka_cluster.bootstrap_servers, [topic],
                                         group_id=_group(), start_offset="earliest") as c:
            seen = []
            it = c.batches(timeout=60)
            async for batch in it:
                for m in batch:
                    seen.append((m.value, m.delivery_count))
                    if m.value == b"m0" and m.delivery_count == 1:
                        batch.release(m)
                    elif m.value == b"m1":
                        batch.reject(m)
                await batch.commit()  # the rest accepted
                if (b"m0", 2) in seen:
                    break
            # an idle wait on the consumer's fd, cancelled: the same iterator goes on
            pending = asyncio.create_task(it.__anext__())
            while not c._waker._waiting:
                await asyncio.sleep(0.01)
            pending.cancel()
            with pytest.raises(asyncio.CancelledError):
                await pending
            await asyncio.to_thread(produce, kafka_cluster, topic, 0, [b"late"])
            late = await asyncio.wait_for(it.__anext__(), 60)
            return seen, [m.value for m in late], c.consumer.stats()

    seen, late, stats = asyncio.run(main())
    assert sorted(seen) == sorted([(v, 1) for v in values(6)] + [(b"m0", 2)])
    assert late == [b"late"]
    assert stats.released >= 1 and stats.rejected == 1


def test_aio_share_consumer_starts_and_stops_on_its_share_thread(kafka_cluster, new_topic,
                                                                 monkeypatch):
    """No thread is started only for the start or the stop of rdk.aio.ShareConsumer: every
    thread started meanwhile is recorded; the one that ran the start is the share thread,
    which also does the stop's work and then ends."""
    import asyncio

    import rdk.aio

    topic = new_topic(kafka_cluster, 1, prefix="share-aio-threads")
    produce(kafka_cluster, topic, 0, values(3))
    started: list[threading.Thread] = []
    start = threading.Thread.start

    def recording_start(self):
        started.append(self)
        start(self)

    async def main():
        c = rdk.aio.ShareConsumer(kafka_cluster.bootstrap_servers, [topic], group_id=_group(),
                                  start_offset="earliest")
        monkeypatch.setattr(threading.Thread, "start", recording_start)
        got = []
        async for batch in c.batches(timeout=60):
            got.extend(m.value for m in batch)
            await batch.commit()
            if len(got) == 3:
                break
        share = c.consumer._thread
        await c.stop()
        monkeypatch.undo()
        return got, share

    got, share = asyncio.run(main())
    assert got == values(3)
    own = [t for t in started if not t.name.startswith("rdk-events-")]  # librdkafka clients'
    assert own == [share], [t.name for t in started]
    share.join(60)
    assert not share.is_alive()
